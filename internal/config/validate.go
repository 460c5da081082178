package config

import (
	"fmt"
	"math"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"
	"unicode"

	"golang.org/x/net/http/httpguts"

	"switchyard/internal/balancer"
)

// Bounds enforced by Validate.
const (
	maxRetries         = 10
	maxBodyBytesLimit  = 1 << 30 // 1 GiB
	maxAffinityEntries = 10_000_000
	maxWeight          = 100
	maxPriority        = 100
)

var (
	storeDrivers   = []string{"sqlite", "postgres"}
	stateDrivers   = []string{"memory", "redis"}
	logLevels      = []string{"debug", "info", "warn", "error"}
	probeKinds     = []string{"models", "chat"}
	periods        = []string{"day", "month"}
	migrationModes = []string{"never", "cross_tier", "always"}
	providers      = []string{ProviderOpenAI, ProviderAnthropic, ProviderAzureOpenAI, ProviderOpenAICompatible}

	// reservedHeaders are set by the gateway (upstream auth, routing) or by
	// the HTTP transport; upstreams[].headers may not override them.
	reservedHeaders = []string{"Authorization", "X-Api-Key", "Api-Key", "Host",
		"Content-Length", "Transfer-Encoding", "Connection"}
)

// Validate checks every rule of the schema (docs/config.md) and returns each
// violation with its key path, in file order: top-level blocks as DESIGN.md §2
// lists them, list elements by index, map entries by key. It never stops at
// the first problem. A route setting inherited unchanged from `defaults` is
// reported once, under defaults. Secrets (keys, DSNs, URLs with passwords)
// are never echoed in messages.
func (c *Config) Validate() Errors {
	v := &validator{}
	c.validateServer(v)
	defaults := &validator{}
	c.Defaults.check(defaults, "")
	v.nest("defaults", defaults.errs)
	c.Affinity.check(v, "affinity")
	c.Health.check(v, "health")
	c.Circuit.check(v, "circuit")

	x := &crossRefs{
		upstreams:   c.Upstreams,
		upstreamIdx: map[string]int{},
		keyNames:    map[string]int{},
		keyHashes:   map[string]int{},
		routeModels: map[string]int{},
		defaultErrs: map[FieldError]bool{},
		affinity:    c.Affinity,
	}
	for _, e := range defaults.errs {
		x.defaultErrs[e] = true
	}
	for i, u := range c.Upstreams {
		if _, dup := x.upstreamIdx[u.Name]; !dup && u.Name != "" {
			x.upstreamIdx[u.Name] = i
		}
	}
	for i := range c.Keys {
		c.Keys[i].check(v, fmt.Sprintf("keys[%d]", i), i, x)
	}
	for i := range c.Routes {
		c.Routes[i].check(v, fmt.Sprintf("routes[%d]", i), i, x)
	}
	for i := range c.Upstreams {
		c.Upstreams[i].check(v, fmt.Sprintf("upstreams[%d]", i), i, x)
	}
	return v.errs
}

// Validate checks the rules that concern this upstream alone and returns each
// violation with a path relative to it ("weight: must be 1–100, got 0").
// Config.Validate adds the checks against the rest of the file (unique names).
func (u *Upstream) Validate() Errors {
	v := &validator{}
	u.check(v, "", 0, nil)
	return v.errs
}

// Validate checks the rules that concern this key alone and returns each
// violation with a path relative to it ("spend_limit.period: …").
// Config.Validate adds the checks against the rest of the file (unique names
// and secrets, allowed_upstreams naming configured upstreams).
func (k *Key) Validate() Errors {
	v := &validator{}
	k.check(v, "", 0, nil)
	return v.errs
}

// Validate checks the rules that concern this route alone and returns each
// violation with a path relative to it ("retries: must be 0–10, got 11").
// Config.Validate adds the checks against the rest of the file (unique
// models, fallback models served by an upstream, affinity TTLs against the
// global affinity block).
func (r *Route) Validate() Errors {
	v := &validator{}
	r.check(v, "", 0, nil)
	return v.errs
}

// validator collects FieldErrors.
type validator struct {
	errs Errors
}

// crossRefs is what checking one list element against the rest of the file
// needs. A nil *crossRefs skips those checks.
type crossRefs struct {
	upstreams   []Upstream
	upstreamIdx map[string]int      // upstream name → first index
	keyNames    map[string]int      // key name → first index
	keyHashes   map[string]int      // secret hash → first key index
	routeModels map[string]int      // route model → first index
	defaultErrs map[FieldError]bool // errors of `defaults`, relative paths
	affinity    Affinity            // the global block routes override
}

func (v *validator) add(path, format string, args ...any) {
	v.errs = append(v.errs, FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
}

// nest appends errs with their paths placed under prefix.
func (v *validator) nest(prefix string, errs Errors) {
	for _, e := range errs {
		v.errs = append(v.errs, FieldError{Path: subPath(prefix, e.Path), Msg: e.Msg})
	}
}

// subPath joins a prefix and a relative path; "" on either side is empty and
// an index ("[2]") attaches without a dot.
func subPath(prefix, rel string) string {
	switch {
	case prefix == "":
		return rel
	case rel == "":
		return prefix
	case rel[0] == '[':
		return prefix + rel
	}
	return prefix + "." + rel
}

func (v *validator) required(path, s string) bool {
	if s == "" {
		v.add(path, "required")
		return false
	}
	return true
}

func (v *validator) oneOf(path, s string, allowed []string) {
	switch {
	case s == "":
		v.add(path, "required; must be one of %s", strings.Join(allowed, ", "))
	case !slices.Contains(allowed, s):
		v.add(path, "must be one of %s; got %q", strings.Join(allowed, ", "), s)
	}
}

func (v *validator) between(path string, n, lo, hi int64) {
	if n < lo || n > hi {
		v.add(path, "must be %d–%d, got %d", lo, hi, n)
	}
}

func (v *validator) atLeast(path string, n, lo int64) {
	if n < lo {
		v.add(path, "must be ≥ %d, got %d", lo, n)
	}
}

func (v *validator) positive(path string, d time.Duration) {
	if d <= 0 {
		v.add(path, "must be > 0, got %s", d)
	}
}

func (v *validator) nonNegative(path string, d time.Duration) {
	if d < 0 {
		v.add(path, "must be ≥ 0, got %s", d)
	}
}

// amount checks a price or a spend cap: a finite number ≥ 0.
func (v *validator) amount(path string, f float64) {
	if math.IsNaN(f) || math.IsInf(f, 0) || f < 0 {
		v.add(path, "must be a number ≥ 0, got %v", f)
	}
}

// secret checks a value sent in a header: no whitespace (a trailing newline
// from a secrets file is the usual culprit). The value is never echoed.
func (v *validator) secret(path, s string) {
	if strings.ContainsFunc(s, unicode.IsSpace) {
		v.add(path, "must not contain whitespace (check for a trailing newline)")
	} else if strings.ContainsFunc(s, unicode.IsControl) {
		v.add(path, "must not contain control characters")
	}
}

// glob checks one pattern of a list such as models or allowed_models.
func (v *validator) glob(path, pattern string) {
	if pattern == "" {
		v.add(path, "must not be empty")
		return
	}
	if err := checkGlob(pattern); err != nil {
		v.add(path, "invalid pattern %q: %v", pattern, err)
	}
}

// name checks an upstream or key name, which appears in admin API URLs,
// response headers and metrics labels.
func (v *validator) name(path, s string) {
	if !v.required(path, s) {
		return
	}
	switch {
	case strings.ContainsFunc(s, unicode.IsSpace):
		v.add(path, "must not contain whitespace, got %q", s)
	case strings.ContainsFunc(s, unicode.IsControl):
		v.add(path, "must not contain control characters, got %q", s)
	case strings.ContainsAny(s, "/?#%"):
		v.add(path, "must not contain '/', '?', '#' or '%%', got %q", s)
	}
}

func (c *Config) validateServer(v *validator) {
	if v.required("listen", c.Listen) {
		if msg := checkHostPort(c.Listen); msg != "" {
			v.add("listen", "%s", msg)
		}
	}
	if c.Admin.Listen != "" {
		if msg := checkHostPort(c.Admin.Listen); msg != "" {
			v.add("admin.listen", "%s", msg)
		} else if checkHostPort(c.Listen) == "" && sameListener(c.Listen, c.Admin.Listen) {
			v.add("admin.listen", "uses the same port as listen (%s); leave it empty to serve the admin API under /admin on the main listener", c.Listen)
		}
	}
	v.secret("admin.token", c.Admin.Token)

	v.oneOf("store.driver", c.Store.Driver, storeDrivers)
	if v.required("store.dsn", c.Store.DSN) {
		switch {
		case c.Store.Driver == "postgres" && !validPostgresDSN(c.Store.DSN):
			v.add("store.dsn", "must be a postgres:// or postgresql:// URL or a key=value DSN (host=… dbname=…)")
		case c.Store.Driver == "sqlite" && looksPostgres(c.Store.DSN):
			v.add("store.dsn", "is a postgres URL but store.driver is sqlite; set store.driver: postgres")
		}
	}

	v.oneOf("state.driver", c.State.Driver, stateDrivers)
	if c.State.Driver == "redis" && v.required("state.redis_url", c.State.RedisURL) {
		if msg := checkRedisURL(c.State.RedisURL); msg != "" {
			v.add("state.redis_url", "%s", msg)
		}
	}
	if strings.ContainsFunc(c.State.RedisPrefix, unicode.IsSpace) {
		v.add("state.redis_prefix", "must not contain whitespace, got %q", c.State.RedisPrefix)
	}
	if c.State.LeaseTTL < time.Second {
		v.add("state.lease_ttl", "must be at least 1s, got %s", c.State.LeaseTTL)
	}
	if c.State.SyncInterval <= 0 {
		v.add("state.sync_interval", "must be positive, got %s", c.State.SyncInterval)
	} else if c.State.LeaseTTL >= time.Second && c.State.SyncInterval >= c.State.LeaseTTL/3 {
		v.add("state.sync_interval", "must be less than a third of state.lease_ttl (%s), got %s", c.State.LeaseTTL, c.State.SyncInterval)
	}
	if c.State.RedisTimeout <= 0 {
		v.add("state.redis_timeout", "must be positive, got %s", c.State.RedisTimeout)
	}

	if c.MemoryLimitMB != 0 && c.MemoryLimitMB < 16 {
		v.add("memory_limit_mb", "must be 0 (no limit) or at least 16, got %d", c.MemoryLimitMB)
	}
	v.oneOf("log.level", c.Log.Level, logLevels)
	v.secret("metrics.token", c.Metrics.Token)
}

// check validates route settings; path is "defaults", "routes[i]" or "".
func (s *RouteSettings) check(v *validator, path string) {
	p := func(key string) string { return subPath(path, key) }
	v.oneOf(p("strategy"), s.Strategy, balancer.StrategyNames())
	v.between(p("retries"), int64(s.Retries), 0, maxRetries)
	v.positive(p("timeout"), s.Timeout)
	v.positive(p("first_byte_timeout"), s.FirstByteTimeout)
	if s.Timeout > 0 && s.FirstByteTimeout > s.Timeout {
		v.add(p("first_byte_timeout"), "must be ≤ timeout (%s), got %s", s.Timeout, s.FirstByteTimeout)
	}
	if s.MaxBodyBytes < 1 || s.MaxBodyBytes > maxBodyBytesLimit {
		v.add(p("max_body_bytes"), "must be 1–%d (1 GiB), got %d", maxBodyBytesLimit, s.MaxBodyBytes)
	}
	v.positive(p("stream_idle_timeout"), s.StreamIdleTimeout)
	if math.IsNaN(s.RetryBudget) || s.RetryBudget < 0 || s.RetryBudget > 1 {
		v.add(p("retry_budget"), "must be 0–1, got %v", s.RetryBudget)
	}
	v.nonNegative(p("max_wait"), s.MaxWait)
	if s.Timeout > 0 && s.MaxWait >= s.Timeout {
		v.add(p("max_wait"), "must be less than timeout (%s), got %s", s.Timeout, s.MaxWait)
	}
}

func (a *Affinity) check(v *validator, path string) {
	v.positive(path+".sliding_ttl", a.SlidingTTL)
	if a.AbsoluteTTL <= 0 {
		v.positive(path+".absolute_ttl", a.AbsoluteTTL)
	} else if a.SlidingTTL > 0 && a.AbsoluteTTL < a.SlidingTTL {
		v.add(path+".absolute_ttl", "must be ≥ sliding_ttl (%s), got %s", a.SlidingTTL, a.AbsoluteTTL)
	}
	v.between(path+".max_entries", int64(a.MaxEntries), 1, maxAffinityEntries)
}

func (h *Health) check(v *validator, path string) {
	v.nonNegative(path+".interval", h.Interval)
	v.oneOf(path+".probe", h.Probe, probeKinds)
	v.positive(path+".timeout", h.Timeout)
	if h.Interval > 0 && h.Timeout > h.Interval {
		v.add(path+".timeout", "must be ≤ interval (%s), got %s", h.Interval, h.Timeout)
	}
}

func (c *Circuit) check(v *validator, path string) {
	v.atLeast(path+".failure_threshold", int64(c.FailureThreshold), 1)
	v.positive(path+".window", c.Window)
	v.positive(path+".open_duration", c.OpenDuration)
	v.positive(path+".probe_interval", c.ProbeInterval)
	v.atLeast(path+".success_threshold", int64(c.SuccessThreshold), 1)
	v.nonNegative(path+".slow_start", c.SlowStart)
}

func (s *SpendLimit) check(v *validator, path string) {
	v.amount(path+".usd", s.USD)
	v.oneOf(path+".period", s.Period, periods)
}

// check validates key i at path; x (nil for Key.Validate) adds the checks
// against other keys and the upstreams.
func (k *Key) check(v *validator, path string, i int, x *crossRefs) {
	p := func(key string) string { return subPath(path, key) }
	v.name(p("name"), k.Name)
	if x != nil && k.Name != "" {
		if j, dup := x.keyNames[k.Name]; dup {
			v.add(p("name"), "duplicate key name %q (also keys[%d])", k.Name, j)
		} else {
			x.keyNames[k.Name] = i
		}
	}

	var hash string
	switch {
	case k.Key == "" && k.KeySHA256 == "":
		v.add(p("key"), "one of key or key_sha256 is required")
	case k.Key != "" && k.KeySHA256 != "":
		v.add(p("key_sha256"), "set only one of key and key_sha256")
	}
	if k.Key != "" {
		v.secret(p("key"), k.Key)
		hash = HashKey(k.Key)
	}
	if k.KeySHA256 != "" {
		if msg := checkSHA256(k.KeySHA256); msg != "" {
			v.add(p("key_sha256"), "%s", msg)
		} else if hash == "" {
			hash = strings.ToLower(k.KeySHA256)
		}
	}
	if x != nil && hash != "" {
		field := "key"
		if k.Key == "" {
			field = "key_sha256"
		}
		if j, dup := x.keyHashes[hash]; dup {
			v.add(p(field), "same secret as keys[%d]; every key needs its own secret", j)
		} else {
			x.keyHashes[hash] = i
		}
	}

	for j, m := range k.AllowedModels {
		v.glob(fmt.Sprintf("%s[%d]", p("allowed_models"), j), m)
	}
	for j, name := range k.AllowedUpstreams {
		ep := fmt.Sprintf("%s[%d]", p("allowed_upstreams"), j)
		if name == "" {
			v.add(ep, "must not be empty")
		} else if x != nil {
			if _, ok := x.upstreamIdx[name]; !ok {
				v.add(ep, "unknown upstream %q", name)
			}
		}
	}
	v.atLeast(p("rpm"), int64(k.RPM), 0)
	k.SpendLimit.check(v, p("spend_limit"))
}

// check validates route i at path; x (nil for Route.Validate) adds the
// checks against other routes, the upstreams, defaults and global affinity.
func (r *Route) check(v *validator, path string, i int, x *crossRefs) {
	p := func(key string) string { return subPath(path, key) }
	if v.required(p("model"), r.Model) {
		if err := checkGlob(r.Model); err != nil {
			v.add(p("model"), "invalid pattern %q: %v", r.Model, err)
		}
		if x != nil {
			if j, dup := x.routeModels[r.Model]; dup {
				v.add(p("model"), "duplicate route for %q (also routes[%d])", r.Model, j)
			} else {
				x.routeModels[r.Model] = i
			}
		}
	}

	settings := &validator{}
	r.RouteSettings.check(settings, "")
	for _, e := range settings.errs {
		if x == nil || !x.defaultErrs[e] { // inherited: already reported under defaults
			v.add(subPath(path, e.Path), "%s", e.Msg)
		}
	}

	seen := map[string]int{}
	for j, m := range r.FallbackModels {
		ep := fmt.Sprintf("%s[%d]", p("fallback_models"), j)
		switch {
		case m == "":
			v.add(ep, "must not be empty")
		case m == r.Model:
			v.add(ep, "must not be the route's own model %q", m)
		case isGlob(m):
			v.add(ep, "must be a model name, not a pattern, got %q", m)
		default:
			if k, dup := seen[m]; dup {
				v.add(ep, "duplicate of fallback_models[%d]", k)
				continue
			}
			seen[m] = j
			if x != nil && !served(x.upstreams, m) {
				v.add(ep, "no upstream serves %q (no upstreams[].models pattern matches it)", m)
			}
		}
	}

	a := r.Affinity
	v.nonNegative(p("affinity.sliding_ttl"), a.SlidingTTL)
	v.nonNegative(p("affinity.absolute_ttl"), a.AbsoluteTTL)
	if a.SlidingTTL < 0 || a.AbsoluteTTL < 0 || (a.SlidingTTL == 0 && a.AbsoluteTTL == 0) {
		return
	}
	sliding, absolute := a.SlidingTTL, a.AbsoluteTTL
	if x != nil {
		sliding = cmp0(sliding, x.affinity.SlidingTTL)
		absolute = cmp0(absolute, x.affinity.AbsoluteTTL)
	}
	if sliding <= 0 || absolute <= 0 || absolute >= sliding {
		return
	}
	if a.AbsoluteTTL > 0 {
		v.add(p("affinity.absolute_ttl"), "must be ≥ sliding_ttl (%s), got %s", sliding, absolute)
	} else {
		v.add(p("affinity.sliding_ttl"), "must be ≤ affinity.absolute_ttl (%s), got %s", absolute, sliding)
	}
}

// cmp0 returns d, or fallback when d is zero (an override that is not set).
func cmp0(d, fallback time.Duration) time.Duration {
	if d == 0 {
		return fallback
	}
	return d
}

// served reports whether some upstream's models patterns match model.
func served(upstreams []Upstream, model string) bool {
	for _, u := range upstreams {
		if MatchAny(u.Models, model) {
			return true
		}
	}
	return false
}

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
	v.oneOf(p("provider"), u.Provider, providers)
	if v.required(p("base_url"), u.BaseURL) {
		if msg := checkBaseURL(u.BaseURL); msg != "" {
			v.add(p("base_url"), "%s", msg)
		}
	}
	switch {
	case u.APIKey != "":
		v.secret(p("api_key"), u.APIKey)
	case u.Provider == ProviderOpenAI || u.Provider == ProviderAnthropic || u.Provider == ProviderAzureOpenAI:
		v.add(p("api_key"), "required for provider %s", u.Provider)
	}
	if u.APIVersion != "" && (u.Provider == ProviderAzureOpenAI || u.Provider == ProviderAnthropic) &&
		!validAPIVersion(u.APIVersion) {
		v.add(p("api_version"), "must be a dated version such as 2024-10-21 or 2025-01-01-preview, got %q", u.APIVersion)
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
	v.amount(p("price.input_per_mtok"), u.Price.InputPerMTok)
	v.amount(p("price.output_per_mtok"), u.Price.OutputPerMTok)
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

// checkHostPort returns "" when addr is a listen address (host:port with an
// optional host and a numeric port), else the problem.
func checkHostPort(addr string) string {
	bad := fmt.Sprintf("must be host:port such as \":8080\" or \"127.0.0.1:8080\", got %q", addr)
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return bad
	}
	if n, err := strconv.Atoi(port); err != nil || n < 0 || n > 65535 {
		return fmt.Sprintf("port must be a number 0–65535, got %q", port)
	}
	if host != "" && !validHost(host) {
		return fmt.Sprintf("host must be an IP address or a host name, got %q", host)
	}
	return ""
}

// sameListener reports whether two valid listen addresses would bind the
// same port on overlapping interfaces.
func sameListener(a, b string) bool {
	ha, pa, _ := net.SplitHostPort(a)
	hb, pb, _ := net.SplitHostPort(b)
	if pa != pb || pa == "0" {
		return false
	}
	wildcard := func(h string) bool { return h == "" || h == "0.0.0.0" || h == "::" }
	return ha == hb || wildcard(ha) || wildcard(hb)
}

// validHost reports whether h is an IP address or a DNS host name.
func validHost(h string) bool {
	if _, err := netip.ParseAddr(h); err == nil {
		return true
	}
	if len(h) > 253 {
		return false
	}
	for _, label := range strings.Split(strings.TrimSuffix(h, "."), ".") {
		if label == "" || len(label) > 63 || label[0] == '-' || label[len(label)-1] == '-' {
			return false
		}
		for _, r := range label {
			if !(r == '-' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
				return false
			}
		}
	}
	return true
}

// checkBaseURL returns "" when s is an absolute http(s) URL with a host and
// without query, fragment or credentials, else the problem.
func checkBaseURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || u.Scheme == "" || u.Host == "" {
		if strings.ContainsFunc(s, unicode.IsSpace) {
			return "must be an absolute http(s) URL with a host; it contains whitespace"
		}
		return fmt.Sprintf("must be an absolute http(s) URL with a host, such as https://api.openai.com/v1, got %q", s)
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return fmt.Sprintf("scheme must be http or https, got %q", u.Scheme)
	case u.User != nil:
		return "must not contain credentials; use api_key"
	case u.Hostname() == "":
		return fmt.Sprintf("must name a host, got %q", s)
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return fmt.Sprintf("must not have a query or fragment (the gateway appends paths to it), got %q", s)
	}
	return ""
}

// checkRedisURL returns "" when s is a redis:// or rediss:// URL with a host
// and an optional numeric database, else the problem. s is never echoed.
func checkRedisURL(s string) string {
	const bad = "must be a redis:// or rediss:// URL such as redis://127.0.0.1:6379/0"
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "redis" && u.Scheme != "rediss") || u.Hostname() == "" {
		return bad
	}
	if db := strings.TrimPrefix(u.Path, "/"); db != "" {
		if n, err := strconv.Atoi(db); err != nil || n < 0 {
			return "database (the URL path) must be a number ≥ 0, as in redis://host:6379/0"
		}
	}
	return ""
}

// looksPostgres reports whether dsn is a postgres URL.
func looksPostgres(dsn string) bool {
	lower := strings.ToLower(dsn)
	return strings.HasPrefix(lower, "postgres://") || strings.HasPrefix(lower, "postgresql://")
}

// validPostgresDSN accepts a postgres:// or postgresql:// URL or a libpq
// key=value connection string (host=db user=app dbname=switchyard).
func validPostgresDSN(dsn string) bool {
	if looksPostgres(dsn) {
		_, err := url.Parse(dsn)
		return err == nil
	}
	return validKeyValueDSN(dsn)
}

// validKeyValueDSN parses a libpq key=value list: keys are identifiers,
// values are bare words or single-quoted strings with \ escapes.
func validKeyValueDSN(s string) bool {
	s = strings.TrimSpace(s)
	if s == "" {
		return false
	}
	for s != "" {
		eq := strings.IndexByte(s, '=')
		if eq < 0 {
			return false
		}
		key := strings.TrimRight(s[:eq], " \t")
		if !validEnvName(key) {
			return false
		}
		s = strings.TrimLeft(s[eq+1:], " \t")
		if strings.HasPrefix(s, "'") {
			end := -1
			for j := 1; j < len(s); j++ {
				if s[j] == '\\' {
					j++
					continue
				}
				if s[j] == '\'' {
					end = j
					break
				}
			}
			if end < 0 {
				return false
			}
			s = s[end+1:]
		} else if end := strings.IndexAny(s, " \t\n"); end >= 0 {
			s = s[end:]
		} else {
			s = ""
		}
		s = strings.TrimLeft(s, " \t\n")
	}
	return true
}

// checkSHA256 returns "" when s is 64 hex digits, else the problem.
func checkSHA256(s string) string {
	if len(s) != 64 {
		return fmt.Sprintf("must be 64 hex characters (the SHA-256 of the key), got %d characters", len(s))
	}
	for _, r := range s {
		if !(r >= '0' && r <= '9' || r >= 'a' && r <= 'f' || r >= 'A' && r <= 'F') {
			return "must be 64 hex characters (the SHA-256 of the key); found a non-hex character"
		}
	}
	return ""
}

// validAPIVersion accepts dated versions: 2024-10-21, 2025-01-01-preview.
func validAPIVersion(s string) bool {
	date, suffix, _ := strings.Cut(s, "-preview")
	if suffix != "" {
		return false
	}
	_, err := time.Parse("2006-01-02", date)
	return err == nil
}
