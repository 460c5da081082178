package affinity

import (
	"context"
	"time"

	"switchyard/internal/config"
)

// Key identifies one binding: a session of one API key on one route. The same
// session id under another key or route is another binding (seed 000 keys its
// map by (apiKeyId, scope, sessionId)).
type Key struct {
	// APIKey is the name of the client API key (keys[].name), not its secret.
	APIKey string `json:"key"`
	// Route is the route's model as configured (routes[].model, a glob
	// allowed), or the requested model when it falls back to defaults.
	Route string `json:"route"`
	// Session is the id Extract found.
	Session string `json:"session"`
}

// Binding is one live entry of the sticky table, as the admin API shows it.
type Binding struct {
	Key
	// Upstream is the name of the bound upstream: the session's home.
	Upstream string `json:"upstream"`
	// StandIn is the upstream that serves the session while its home is
	// unavailable (docs/routing.md#2-candidates-and-session-affinity); "" when
	// none has had to.
	StandIn string `json:"stand_in,omitempty"`
	// CreatedAt is when the session was bound to Upstream. Rebinding to the
	// same upstream keeps it; rebinding to another resets it.
	CreatedAt time.Time `json:"created_at"`
	// LastUsed is the last Get hit or Bind.
	LastUsed time.Time `json:"last_used"`
	// ExpiresAt is when the binding expires unless used again: the earlier of
	// LastUsed + Policy.Sliding and CreatedAt + Policy.Absolute. Zero when
	// neither limit applies.
	ExpiresAt time.Time `json:"expires_at,omitzero"`
}

// Bound is where a session goes: its home and, once the home has been
// unavailable, the stand-in that served it meanwhile
// (docs/routing.md#2-candidates-and-session-affinity).
type Bound struct {
	Home, StandIn string
}

// Policy holds the TTLs of one route. Pass it on every call so that per-route
// overrides and configuration reloads apply at once.
type Policy struct {
	// Sliding expires a binding unused for this long (idle expiry). ≤ 0
	// disables the limit. Default 5m.
	Sliding time.Duration
	// Absolute expires a binding this long after it was made to its current
	// upstream, however often it is used, so that a session is never stuck on
	// one upstream for ever. ≤ 0 disables the limit. Default 30m.
	Absolute time.Duration
	// FailBack: a session returns to its home when the home is available
	// again (affinity.fail_back); false makes the stand-in its new home.
	FailBack bool
}

// DefaultPolicy holds the default TTLs of docs/config.md#affinity: sliding 5m,
// absolute 30m.
var DefaultPolicy = Policy{Sliding: 5 * time.Minute, Absolute: 30 * time.Minute, FailBack: true}

// DefaultMaxEntries is the default bound of a Table (affinity.max_entries).
const DefaultMaxEntries = 10000

// PolicyFor resolves a route's affinity settings: the route's overrides where
// set (non-nil Enabled, non-zero TTLs), the global block otherwise.
func PolicyFor(global config.Affinity, route config.RouteAffinity) (pol Policy, enabled bool) {
	pol = Policy{Sliding: global.SlidingTTL, Absolute: global.AbsoluteTTL, FailBack: global.FailBack}
	if route.SlidingTTL != 0 {
		pol.Sliding = route.SlidingTTL
	}
	if route.AbsoluteTTL != 0 {
		pol.Absolute = route.AbsoluteTTL
	}
	enabled = global.Enabled
	if route.Enabled != nil {
		enabled = *route.Enabled
	}
	return pol, enabled
}

// expired reports whether a binding created at created and last used at
// lastUsed has expired at now under p: idle for Sliding or more, or Absolute
// or more since it was made.
func (p Policy) expired(created, lastUsed, now time.Time) bool {
	return p.Sliding > 0 && now.Sub(lastUsed) >= p.Sliding ||
		p.Absolute > 0 && now.Sub(created) >= p.Absolute
}

// expiresAt returns when a binding expires under p unless used again, or the
// zero time when neither limit applies.
func (p Policy) expiresAt(created, lastUsed time.Time) time.Time {
	var at time.Time
	if p.Sliding > 0 {
		at = lastUsed.Add(p.Sliding)
	}
	if p.Absolute > 0 {
		if abs := created.Add(p.Absolute); at.IsZero() || abs.Before(at) {
			at = abs
		}
	}
	return at
}

// Store is the sticky table the gateway uses: Table in process, a Redis
// implementation when state is shared between instances
// (docs/reference.md#state-drivers).
//
// The proxy calls Get (or the explain endpoint Peek) once per request that
// carries a session id, before planning, and Bind after a successful
// response; the admin API calls Lookup and DeleteSession. Implementations are
// safe for concurrent use and must return quickly: affinity is an
// optimisation, so an implementation that cannot reach its backend treats
// the call as a miss (or a no-op) rather than failing the request.
//
// A binding whose upstream is unavailable is not deleted by the gateway; it
// simply is not used for that request (seed 000). Only expiry, LRU eviction,
// a Bind to another upstream and DeleteSession end a binding.
type Store interface {
	// Get returns where k is bound if the binding is live under pol, and
	// marks it used (sliding TTL and LRU recency). An expired binding is
	// removed and reported as a miss. Hits and misses count in the stats.
	Get(k Key, pol Policy) (Bound, bool)
	// Peek returns the binding of k if it is live under pol, without marking
	// it used, removing it or counting it: for /admin/api/explain.
	Peek(k Key, pol Policy) (Binding, bool)
	// Bind binds k to upstream as its home, drops any stand-in and marks
	// it used. Rebinding to the same upstream keeps the creation time (the
	// absolute TTL keeps running); binding to another upstream, or
	// rebinding an expired binding, starts a new one. An empty session or
	// upstream is ignored.
	Bind(k Key, upstream string, pol Policy)
	// BindStandIn makes upstream the stand-in of k's live binding, keeping
	// its home and creation time, and marks it used; without a live
	// binding it binds upstream as the home.
	BindStandIn(k Key, upstream string, pol Policy)
	// DeleteSession removes every binding of session, under every key and
	// route, and returns how many live ones it removed.
	DeleteSession(session string) int
	// Lookup returns the live bindings of session, under every key and route,
	// ordered by route then key; never nil.
	Lookup(session string) []Binding
}

// ContextStore is Store for an implementation that does I/O, the table
// shared through Redis: every call takes the caller's context first, and
// ends early (as a miss, or a no-op) when it ends.
type ContextStore interface {
	// Get is Store.Get.
	Get(ctx context.Context, k Key, pol Policy) (Bound, bool)
	// Peek is Store.Peek.
	Peek(ctx context.Context, k Key, pol Policy) (Binding, bool)
	// Bind is Store.Bind.
	Bind(ctx context.Context, k Key, upstream string, pol Policy)
	// BindStandIn is Store.BindStandIn.
	BindStandIn(ctx context.Context, k Key, upstream string, pol Policy)
	// DeleteSession is Store.DeleteSession.
	DeleteSession(ctx context.Context, session string) int
	// Lookup is Store.Lookup.
	Lookup(ctx context.Context, session string) []Binding
}

// WithContext adapts a Store that does no I/O (Table) to ContextStore.
func WithContext(s Store) ContextStore { return ctxStore{s} }

// ctxStore is a Store seen as a ContextStore: the contexts go unused.
type ctxStore struct{ s Store }

var _ ContextStore = ctxStore{}

// Get implements ContextStore.
func (c ctxStore) Get(_ context.Context, k Key, pol Policy) (Bound, bool) { return c.s.Get(k, pol) }

// Peek implements ContextStore.
func (c ctxStore) Peek(_ context.Context, k Key, pol Policy) (Binding, bool) { return c.s.Peek(k, pol) }

// Bind implements ContextStore.
func (c ctxStore) Bind(_ context.Context, k Key, upstream string, pol Policy) {
	c.s.Bind(k, upstream, pol)
}

// BindStandIn implements ContextStore.
func (c ctxStore) BindStandIn(_ context.Context, k Key, upstream string, pol Policy) {
	c.s.BindStandIn(k, upstream, pol)
}

// DeleteSession implements ContextStore.
func (c ctxStore) DeleteSession(_ context.Context, session string) int {
	return c.s.DeleteSession(session)
}

// Lookup implements ContextStore.
func (c ctxStore) Lookup(_ context.Context, session string) []Binding { return c.s.Lookup(session) }
