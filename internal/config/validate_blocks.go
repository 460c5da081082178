package config

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"

	"golang.org/x/net/http/httpguts"

	"switchyard/internal/balancer"
)

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
	if c.State.Driver == "redis" {
		c.State.validateRedis(v)
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
	v.oneOf("log.format", c.Log.Format, logFormats)
	v.secret("metrics.token", c.Metrics.Token)
	c.Tracing.check(v, "tracing")
}

// tracingSchemes are the otlp_endpoint schemes: OTLP/HTTP and OTLP/gRPC.
var tracingSchemes = []string{"http", "https", "grpc", "grpcs"}

func (t *Tracing) check(v *validator, path string) {
	if t.OTLPEndpoint != "" {
		if msg := checkOTLPEndpoint(t.OTLPEndpoint); msg != "" {
			v.add(path+".otlp_endpoint", "%s", msg)
		}
	}
	if math.IsNaN(t.SampleRatio) || t.SampleRatio < 0 || t.SampleRatio > 1 {
		v.add(path+".sample_ratio", "must be 0–1, got %v", t.SampleRatio)
	}
	v.required(path+".service_name", t.ServiceName)
	for _, name := range sortedKeys(t.Headers) {
		switch hp := path + ".headers." + name; {
		case !httpguts.ValidHeaderFieldName(name):
			v.add(hp, "not a valid HTTP header name")
		case !httpguts.ValidHeaderFieldValue(t.Headers[name]):
			v.add(hp, "value must not contain line breaks or control characters")
		}
	}
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
	v.between(p("default_max_tokens"), s.DefaultMaxTokens, 1, maxDefaultMaxTokens)
	s.Hedge.check(v, p("hedge"), s.FirstByteTimeout)
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
	v.positive(path+".response_ttl", a.ResponseTTL)
	v.between(path+".conversation_max_bytes", int64(a.ConversationMaxBytes), 1024, 64<<20)
	v.between(path+".max_conversations", int64(a.MaxConversations), 1, maxAffinityEntries)
	v.between(path+".prefix.min_tokens", int64(a.Prefix.MinTokens), 1, maxPrefixMinTokens)
	v.positive(path+".prefix.ttl", a.Prefix.TTL)
	v.share(path+".prefix.max_share", a.Prefix.MaxShare)
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
	for j, t := range k.Tags {
		if t == "" {
			v.add(fmt.Sprintf("%s[%d]", p("tags"), j), "must not be empty")
		}
	}
	k.checkTenant(v, p, x)
}

// checkTenant validates the key's team, class, weight and own limits.
func (k *Key) checkTenant(v *validator, p func(string) string, x *crossRefs) {
	if k.Team != "" && x != nil && !slices.Contains(x.teamNames, k.Team) {
		msg := fmt.Sprintf("unknown team %q", k.Team)
		if near := suggestValue(k.Team, x.teamNames); len(near) > 0 {
			msg += "; did you mean " + orList(near) + "?"
		}
		v.add(p("team"), "%s", msg)
	}
	v.oneOf(p("class"), k.Class, keyClasses)
	v.between(p("weight"), int64(k.Weight), 1, maxWeight)
	v.atLeast(p("max_concurrency"), int64(k.MaxConcurrency), 0)
	v.atLeast(p("tpm"), int64(k.TPM), 0)
}

// check validates team i at path and records its name in x.
func (t *Team) check(v *validator, path string, i int, x *crossRefs) {
	p := func(key string) string { return subPath(path, key) }
	v.name(p("name"), t.Name)
	if t.Name != "" {
		if j := slices.Index(x.teamNames, t.Name); j >= 0 {
			v.add(p("name"), "duplicate team name %q (also teams[%d])", t.Name, j)
		}
		x.teamNames = append(x.teamNames, t.Name)
	}
	v.atLeast(p("rpm"), int64(t.RPM), 0)
	v.atLeast(p("tpm"), int64(t.TPM), 0)
	v.atLeast(p("max_concurrency"), int64(t.MaxConcurrency), 0)
	t.SpendLimit.check(v, p("spend_limit"))
	v.between(p("weight"), int64(t.Weight), 1, maxWeight)
}

// TeamByName returns the team named name, if there is one.
func (c *Config) TeamByName(name string) (Team, bool) {
	for _, t := range c.Teams {
		if t.Name == name {
			return t, true
		}
	}
	return Team{}, false
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
		case IsGlob(m):
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

	r.checkRules(v, path, x)

	a := r.Affinity
	if a.Prefix.MinTokens != 0 {
		v.between(p("affinity.prefix.min_tokens"), int64(a.Prefix.MinTokens), 1, maxPrefixMinTokens)
	}
	v.nonNegative(p("affinity.prefix.ttl"), a.Prefix.TTL)
	if a.Prefix.MaxShare != 0 {
		v.share(p("affinity.prefix.max_share"), a.Prefix.MaxShare)
	}
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

// maxHedges bounds hedge.max: each hedge is one more upstream call.
const maxHedges = 3

func (h *Hedge) check(v *validator, path string, firstByte time.Duration) {
	p := func(key string) string { return subPath(path, key) }
	if h.Delay != HedgeP95 {
		d, err := time.ParseDuration(h.Delay)
		switch {
		case err != nil || d < 0:
			v.add(p("delay"), "must be a duration such as 300ms (0s: off) or %q, got %q", HedgeP95, h.Delay)
		case d > 0 && firstByte > 0 && d >= firstByte:
			v.add(p("delay"), "must be less than first_byte_timeout (%s), got %s: a hedge would never start", firstByte, d)
		}
	}
	v.between(p("max"), int64(h.Max), 1, maxHedges)
	if math.IsNaN(h.Budget) || h.Budget < 0 || h.Budget > 1 {
		v.add(p("budget"), "must be 0–1, got %v", h.Budget)
	}
}
