package config

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
	"unicode"
)

// Bounds enforced by Validate.
const (
	maxRetries          = 10
	maxDefaultMaxTokens = 1_000_000
	maxBodyBytesLimit   = 1 << 30 // 1 GiB
	maxAffinityEntries  = 10_000_000
	maxWeight           = 100
	maxPriority         = 100
)

var (
	storeDrivers   = []string{"sqlite", "postgres"}
	stateDrivers   = []string{"memory", "redis"}
	logLevels      = []string{"debug", "info", "warn", "error"}
	logFormats     = []string{"json", "text"}
	probeKinds     = []string{"models", "chat"}
	periods        = []string{"day", "month"}
	migrationModes = []string{"never", "cross_tier", "always"}
)

// Validate checks every rule of the schema (docs/config.md) and returns each
// violation with its key path, in file order: top-level blocks as
// docs/config.md lists them, list elements by index, map entries by key. It
// never stops at the first problem. A route setting inherited unchanged from
// `defaults` is reported once, under defaults. Secrets (keys, DSNs, URLs with
// passwords) are never echoed in messages.
func (c *Config) Validate() Errors { return c.validate(false) }

// validate is Validate; simulated leaves out what only a serving gateway
// needs (credentials it reads, such as a Vertex key file).
func (c *Config) validate(simulated bool) Errors {
	v := &validator{simulated: simulated}
	c.validateServer(v)
	defaults := &validator{}
	c.Defaults.check(defaults, "")
	v.nest("defaults", defaults.errs)
	c.Affinity.check(v, "affinity")
	c.Health.check(v, "health")
	c.Circuit.check(v, "circuit")
	c.checkPricing(v)

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
	// simulated: the file configures a simulation (LoadForSimulation).
	simulated bool
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

// oneOf checks an enum-valued field: s must be one of allowed. A wrong
// value near an allowed one gets a suggestion, as an unknown key does
// (suggestValue).
func (v *validator) oneOf(path, s string, allowed []string) {
	switch {
	case s == "":
		v.add(path, "required; must be one of %s", strings.Join(allowed, ", "))
	case !slices.Contains(allowed, s):
		msg := fmt.Sprintf("must be one of %s; got %q", strings.Join(allowed, ", "), s)
		if near := suggestValue(s, allowed); len(near) > 0 {
			msg += "; did you mean " + orList(near) + "?"
		}
		v.add(path, "%s", msg)
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

// share checks a fraction in (0, 1].
func (v *validator) share(path string, f float64) {
	if math.IsNaN(f) || f <= 0 || f > 1 {
		v.add(path, "must be in (0, 1], got %v", f)
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
