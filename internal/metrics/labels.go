package metrics

import (
	"maps"
	"strings"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// Label values that stand in for names outside the bounded sets.
const (
	// Other replaces an upstream, model, route or key name that is not
	// configured, and a class value (status class, outcome, error class,
	// limit type, affinity result) outside its fixed set. A configured name
	// that is literally "other" shares its series.
	Other = "other"
	// None replaces an empty name: a request answered before any upstream
	// was chosen (401, 404 model_not_found, 503 …) has upstream "none", and
	// one without a model (400) has model "none".
	None = "none"
)

// nameSet is an immutable set of configured names. Lookups never allocate.
type nameSet map[string]struct{}

// newNameSet builds a set from the names, skipping "" and invalid UTF-8
// (Prometheus rejects such label values).
func newNameSet(lists ...[]string) nameSet {
	s := make(nameSet)
	for _, names := range lists {
		for _, n := range names {
			if n == "" || !utf8.ValidString(n) {
				continue
			}
			s[strings.Clone(n)] = struct{}{}
		}
	}
	return s
}

// equal reports whether s and o hold the same names.
func (s nameSet) equal(o nameSet) bool {
	if len(s) != len(o) {
		return false
	}
	for n := range s {
		if _, ok := o[n]; !ok {
			return false
		}
	}
	return true
}

// dropped returns the names of s that are not in next.
func (s nameSet) dropped(next nameSet) []string {
	var out []string
	for n := range s {
		if _, ok := next[n]; !ok {
			out = append(out, n)
		}
	}
	return out
}

// names is one snapshot of the configured label sets. It is replaced
// whole by Refresh and never mutated, so the hot path reads it through one
// atomic load.
type names struct {
	upstreams nameSet
	models    nameSet
	routes    nameSet // models plus the route names from WithRoutes
	keys      nameSet // nil: any non-empty key name is accepted
}

// changed reports whether n and o differ in any set.
func (n *names) changed(o *names) bool {
	if (n.keys == nil) != (o.keys == nil) {
		return true
	}
	return !n.upstreams.equal(o.upstreams) || !n.models.equal(o.models) ||
		!n.routes.equal(o.routes) || !n.keys.equal(o.keys)
}

// children caches the child collectors of one labelled family by label-value
// tuple. Reads are lock-free (one atomic load and a map lookup); a miss
// resolves the child through the vector and publishes a copy of the map with
// it added. Label values are bounded (see the package doc), so the map stays
// small and copies are rare: a few per label combination over the life of
// the process, plus one reset per configuration change.
type children[K comparable, V any] struct {
	resolve func(K) V // resolves a child through the vector; set once by New

	mu sync.Mutex // serialises writers: guards the copy-and-swap of m
	m  atomic.Pointer[map[K]V]
}

// newChildren returns an empty cache resolving misses with resolve.
func newChildren[K comparable, V any](resolve func(K) V) *children[K, V] {
	c := &children[K, V]{resolve: resolve}
	c.m.Store(&map[K]V{})
	return c
}

// get returns the child for k, resolving and caching it on a miss.
func (c *children[K, V]) get(k K) V {
	if v, ok := (*c.m.Load())[k]; ok {
		return v
	}
	return c.miss(k)
}

// miss resolves k and publishes a map that includes it.
func (c *children[K, V]) miss(k K) V {
	c.mu.Lock()
	defer c.mu.Unlock()
	old := *c.m.Load()
	if v, ok := old[k]; ok {
		return v
	}
	k = cloneKey(k) // the caller's strings may alias a larger buffer
	v := c.resolve(k)
	next := make(map[K]V, len(old)+1)
	maps.Copy(next, old)
	next[k] = v
	c.m.Store(&next)
	return v
}

// reset forgets every cached child, so that children deleted from the
// vector are resolved (and recreated) afresh.
func (c *children[K, V]) reset() {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.m.Store(&map[K]V{})
}

// cloneKey copies the strings of a label-value tuple.
func cloneKey[K comparable](k K) K {
	switch t := any(&k).(type) {
	case *[1]string:
		cloneStrings(t[:])
	case *[2]string:
		cloneStrings(t[:])
	case *[3]string:
		cloneStrings(t[:])
	case *[4]string:
		cloneStrings(t[:])
	}
	return k
}

func cloneStrings(s []string) {
	for i := range s {
		s[i] = strings.Clone(s[i])
	}
}

// validLabel returns v, or Other when Prometheus would reject it as a label
// value (invalid UTF-8).
func validLabel(v string) string {
	if utf8.ValidString(v) {
		return v
	}
	return Other
}

// codeClass returns the status class label of an HTTP status: "2xx", "3xx",
// "4xx", "5xx", or Other for anything outside 200–599.
func codeClass(status int) string {
	switch {
	case status >= 200 && status < 300:
		return "2xx"
	case status >= 300 && status < 400:
		return "3xx"
	case status >= 400 && status < 500:
		return "4xx"
	case status >= 500 && status < 600:
		return "5xx"
	}
	return Other
}

// boolLabel returns "true" or "false".
func boolLabel(b bool) string {
	if b {
		return "true"
	}
	return "false"
}

// Attempt outcome labels, the names of outcome.Class
// (docs/reference.md#outcome-classes).
const (
	// OutcomeSuccess is a 2xx answer.
	OutcomeSuccess = "success"
	// OutcomeClientError is a 4xx that is the caller's fault (400, 404, 413, 422).
	OutcomeClientError = "client_error"
	// OutcomeAuthError is a 401/403 from the upstream.
	OutcomeAuthError = "auth_error"
	// OutcomeRateLimited is a 429 from the upstream.
	OutcomeRateLimited = "rate_limited"
	// OutcomeServerError is a 5xx, a connection failure, a timeout or a malformed answer.
	OutcomeServerError = "server_error"
	// OutcomeCanceled means the client went away; it says nothing about the upstream.
	OutcomeCanceled = "canceled"
)

// outcomeLabel bounds an attempt outcome.
func outcomeLabel(o string) string {
	switch o {
	case OutcomeSuccess, OutcomeClientError, OutcomeAuthError, OutcomeRateLimited,
		OutcomeServerError, OutcomeCanceled:
		return o
	}
	return Other
}

// Upstream error class labels.
const (
	// ErrorConnection is a refused, reset or otherwise failed connection.
	ErrorConnection = "connection"
	// ErrorTimeout is the whole-request timeout expiring.
	ErrorTimeout = "timeout"
	// ErrorFirstByteTimeout is no response headers (or first SSE event) within first_byte_timeout.
	ErrorFirstByteTimeout = "first_byte_timeout"
	// ErrorStatus5xx is a 5xx status from the upstream.
	ErrorStatus5xx = "status_5xx"
	// ErrorAuth is a 401/403 from the upstream.
	ErrorAuth = "auth"
	// ErrorMalformed is an upstream answer that could not be parsed.
	ErrorMalformed = "malformed"
	// ErrorStreamInterrupted is a stream that broke after its first byte reached the client.
	ErrorStreamInterrupted = "stream_interrupted"
)

// errorClassLabel bounds an upstream error class.
func errorClassLabel(c string) string {
	switch c {
	case ErrorConnection, ErrorTimeout, ErrorFirstByteTimeout, ErrorStatus5xx, ErrorAuth,
		ErrorMalformed, ErrorStreamInterrupted:
		return c
	}
	return Other
}

// Rate-limit type labels (docs/reference.md#cooldowns-after-429: the limit a
// 429 reports).
const (
	// LimitRequests is a requests-per-minute limit.
	LimitRequests = "requests"
	// LimitTokens is a tokens-per-minute limit.
	LimitTokens = "tokens"
	// LimitUnknown is a 429 that does not say which limit it hit.
	LimitUnknown = "unknown"
)

// limitTypeLabel bounds a limit type; "" is LimitUnknown.
func limitTypeLabel(t string) string {
	switch t {
	case LimitRequests, LimitTokens, LimitUnknown:
		return t
	case "":
		return LimitUnknown
	}
	return Other
}

// Affinity result labels (docs/reference.md#session-affinity).
const (
	// AffinityHit means a live binding placed its upstream first, and it served the request.
	AffinityHit = "hit"
	// AffinityMiss means the session had no live binding.
	AffinityMiss = "miss"
	// AffinityFallthrough means the bound upstream was unavailable and another was chosen.
	AffinityFallthrough = "fallthrough"
	// AffinityMigrated means the binding moved to another upstream under the migration policy.
	AffinityMigrated = "migrated"
	// AffinityStandIn means the home was unavailable and the session's stand-in went first.
	AffinityStandIn = "stand_in"
	// AffinityYielded means a prefix binding's upstream carried more than
	// affinity.prefix.max_share of the route's in-flight requests, and
	// normal selection decided.
	AffinityYielded = "yielded"
)

// affinityResults lists the bounded affinity results, Other last.
var affinityResults = [...]string{AffinityHit, AffinityMiss, AffinityFallthrough, AffinityMigrated, AffinityStandIn, AffinityYielded, Other}

// affinityIndex returns the index of r in affinityResults.
func affinityIndex(r string) int {
	switch r {
	case AffinityHit:
		return 0
	case AffinityMiss:
		return 1
	case AffinityFallthrough:
		return 2
	case AffinityMigrated:
		return 3
	case AffinityStandIn:
		return 4
	case AffinityYielded:
		return 5
	}
	return 6
}

// Breaker state labels, the names of health.State.
const (
	// BreakerClosed lets traffic through.
	BreakerClosed = "closed"
	// BreakerOpen rejects traffic until open_duration has passed.
	BreakerOpen = "open"
	// BreakerHalfOpen lets probe requests through to test recovery.
	BreakerHalfOpen = "half_open"
)

// breakerStates lists the states switchyard_upstream_breaker_state reports.
var breakerStates = [...]string{BreakerClosed, BreakerOpen, BreakerHalfOpen}

// breakerIndex returns the index of s in breakerStates, or -1. "" is closed
// (an upstream the breaker has never seen failing).
func breakerIndex(s string) int {
	switch s {
	case BreakerClosed, "":
		return 0
	case BreakerOpen:
		return 1
	case BreakerHalfOpen, "half-open":
		return 2
	}
	return -1
}
