package config

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"switchyard/internal/provider"

	"golang.org/x/net/http/httpguts"
)

var (
	// reservedHeaders are set by the gateway (upstream auth, routing) or by
	// the HTTP transport; upstreams[].headers may not override them.
	reservedHeaders = []string{"Authorization", "X-Api-Key", "Api-Key", "X-Goog-Api-Key", "Host",
		"Content-Length", "Transfer-Encoding", "Connection"}
)

// check validates upstream i at path; x (nil for Upstream.Validate) adds the
// checks against other upstreams.
func (u *Upstream) check(v *validator, path string, i int, x *crossRefs) {
	p := func(key string) string { return subPath(path, key) }
	v.name(p("name"), u.Name)
	if x != nil && u.Name != "" {
		if j := x.upstreamIdx[u.Name]; j != i {
			v.add(p("name"), "duplicate upstream name %q (also upstreams[%d])", u.Name, j)
		}
	}
	pr, known := provider.Builtin().Lookup(u.Provider)
	if !known {
		v.oneOf(p("provider"), u.Provider, provider.Builtin().Names())
	}
	// base_url is optional for a provider that knows its public endpoint.
	_, hasDefault := pr.(provider.BaseURLDefaulter)
	if u.BaseURL != "" || !hasDefault {
		if v.required(p("base_url"), u.BaseURL) {
			if msg := checkBaseURL(u.BaseURL); msg != "" {
				v.add(p("base_url"), "%s", msg)
			}
		}
	}
	if u.APIKey != "" {
		v.secret(p("api_key"), u.APIKey)
	}
	if known {
		// The provider's own rules (a required key, a dated api_version).
		a := u.Adapter()
		a.Simulated = v.simulated
		for _, prob := range append(pr.Check(a), provider.ForeignSettings(u.Provider, a)...) {
			v.add(p(prob.Field), "%s", prob.Message)
		}
	}

	if len(u.Models) == 0 {
		v.add(p("models"), "at least one model name or pattern is required")
	}
	for j, m := range u.Models {
		v.glob(fmt.Sprintf("%s[%d]", p("models"), j), m)
	}
	for _, from := range sortedKeys(u.ModelMap) {
		to := u.ModelMap[from]
		switch {
		case from == "":
			v.add(p("model_map"), "model names (keys) must not be empty")
		case to == "":
			v.add(p("model_map."+from), "must not be empty")
		case len(u.Models) > 0 && !MatchAny(u.Models, from):
			v.add(p("model_map."+from), "no pattern in models matches %q, so the mapping is never used", from)
		}
	}

	v.between(p("weight"), int64(u.Weight), 1, maxWeight)
	v.between(p("priority"), int64(u.Priority), 0, maxPriority)
	v.atLeast(p("max_concurrency"), int64(u.MaxConcurrency), 0)
	if u.Queue.Enabled {
		if u.MaxConcurrency <= 0 {
			v.add(p("queue.enabled"), "requires max_concurrency > 0 (the queue waits for a concurrency slot)")
		}
		v.positive(p("queue.timeout"), u.Queue.Timeout)
		v.atLeast(p("queue.max_length"), int64(u.Queue.MaxLength), 1)
	} else {
		v.nonNegative(p("queue.timeout"), u.Queue.Timeout)
		v.atLeast(p("queue.max_length"), int64(u.Queue.MaxLength), 0)
	}
	v.atLeast(p("rate_limit.rpm"), int64(u.RateLimit.RPM), 0)
	v.atLeast(p("rate_limit.tpm"), int64(u.RateLimit.TPM), 0)
	u.SpendLimit.check(v, p("spend_limit"))
	u.checkPrices(v, p)
	v.oneOf(p("affinity_migration.mode"), u.AffinityMigration.Mode, migrationModes)
	v.atLeast(p("affinity_migration.max_content_length"), u.AffinityMigration.MaxContentLength, 0)

	canonical := map[string]string{}
	for _, h := range sortedKeys(u.Headers) {
		hp := p("headers." + h)
		switch {
		case !httpguts.ValidHeaderFieldName(h):
			v.add(hp, "not a valid HTTP header name")
			continue
		case slices.ContainsFunc(reservedHeaders, func(r string) bool { return strings.EqualFold(r, h) }):
			v.add(hp, "is set by the gateway and cannot be overridden")
			continue
		case !httpguts.ValidHeaderFieldValue(u.Headers[h]):
			v.add(hp, "value must not contain line breaks or control characters")
		}
		lower := strings.ToLower(h)
		if first, dup := canonical[lower]; dup {
			v.add(hp, "duplicate of header %q (header names are case-insensitive)", first)
		} else {
			canonical[lower] = h
		}
	}
}

func sortedKeys(m map[string]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
