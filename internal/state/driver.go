package state

import (
	"context"
	"errors"
	"net/http"
	"time"

	"switchyard/internal/affinity"
	"switchyard/internal/config"
	"switchyard/internal/health"
	"switchyard/internal/limits"
	"switchyard/internal/outcome"
)

// Driver is the live routing state of every upstream, behind one interface
// whichever state.driver runs (docs/reference.md#state-drivers): Local keeps it
// in this process; RedisDriver shares it with every instance on the same Redis
// prefix and falls back to the Local it wraps while Redis is down. The
// proxy, the admin API and the metrics gauges hold a Driver and never ask
// which one it is.
//
// Who calls what. The attempt loop calls Admit once per attempt, right
// before sending, and ends every granted Lease with exactly one Done; in
// between it reports the answer's headers with Observe and a 429 with
// RateLimited. Planning, the admin API and the metrics read Upstream.
// The active prober goes through ProbeGate (health.Gate). AllowKey is the
// client key's rpm, checked once per client request, and AllowN and
// AcquireTenant its and its team's other limits. The Pins record which
// upstream holds a Responses response or conversation (affinity.Pins says
// when the proxy asks and tells), the Conversations what the gateway keeps
// of the Responses chains it continues itself; with Redis both are shared.
//
// Blocking. Admit blocks only while the request waits in an upstream's
// queue (Admission.Wait), at most Queue.Timeout, and returns early when ctx
// ends. With Redis every call may make one round trip to it, bounded by
// state.redis_timeout; nothing else blocks. All methods are safe for
// concurrent use.
type Driver interface {
	// Admit claims what one attempt on a.Upstream needs — the breaker's
	// permission, an RPM/TPM reservation, a concurrency slot (waiting in
	// the queue when a.Wait) and, with Redis, the shared lease — all or
	// nothing. A refusal is a *Denial: classify it with errors.Is against
	// ErrBreakerOpen, ErrCoolingDown, ErrRateLimited,
	// limits.ErrConcurrencyFull, limits.ErrQueueFull, limits.ErrQueueTimeout,
	// or context.Canceled / context.DeadlineExceeded when ctx ended while
	// the request was queued (never a queue timeout).
	Admit(ctx context.Context, a Admission) (Lease, error)
	// Observe reads the rate-limit headers of an answer from upstream
	// (learned limits and remaining counts); status < 300 also ends the
	// upstream's run of consecutive 429s.
	Observe(upstream string, status int, h http.Header)
	// RateLimited records a 429 from upstream and returns the cooldown it
	// starts (limits.Limiter.RateLimited); asked is what the provider's
	// adapter read, 0 when nothing.
	RateLimited(upstream string, h http.Header, body []byte, asked time.Duration) limits.Cooldown
	// Upstream returns upstream's live state for a request of about tokens
	// tokens: the one merge of this instance's and the shared state.
	Upstream(upstream string, tokens int64) UpstreamView
	// AllowKey counts one request of the client key named key against rpm
	// requests per minute (≤ 0: no limit) and reports whether it may go;
	// when not, retryAfter (> 0) is when the window has room again.
	AllowKey(ctx context.Context, key string, rpm int) (ok bool, retryAfter time.Duration)
	// AllowN is AllowKey for any per-minute window: it counts n (a
	// request, or estimated tokens) in the window named name
	// (limits.CounterName: a team's rpm, a key's or a team's tpm) against
	// limit; n larger than the whole limit passes on an empty window.
	AllowN(ctx context.Context, name string, limit int, n int64) (ok bool, retryAfter time.Duration)
	// AcquireTenant takes one of limit slots of the counter named name
	// (limits.CounterName: a key's or a team's max_concurrency) for one
	// client request, without waiting; ok is false when all are taken
	// (never for limit ≤ 0). release gives the slot back: call it once, when
	// the request is over; later calls do nothing. With Redis the slots
	// are every instance's, and a dead instance's come back within
	// lease_ttl.
	AcquireTenant(ctx context.Context, name string, limit int) (release func(), ok bool)
	// ProbeGate is the breaker the active prober asks and tells.
	ProbeGate() health.Gate
	// Forget drops the state of an upstream that no longer exists.
	Forget(upstream string)
	// Pins records and finds the upstream holding stateful objects
	// (docs/routing.md#stateful-calls-pinned-not-sticky), for
	// affinity.response_ttl.
	affinity.Pins
	// Conversations keep the Responses conversations the gateway continues
	// itself (docs/routing.md#responses-chains-the-gateway-keeps), for
	// affinity.response_ttl; with Redis they are shared.
	affinity.Conversations
}

// Lease is one admitted attempt. Done gives back everything Admit took —
// the slot, the reservation (committed with o.Tokens() on success, 0
// otherwise), the breaker's permission (o is recorded) — feeds the
// statistics and, with Redis, settles the shared state, binding e.Bind and
// charging e.Spend in the same round trip. Call Done exactly once; later
// calls do nothing. It never blocks longer than one Redis round trip.
type Lease interface {
	Done(o outcome.Outcome, e Ending)
}

// Ending is what an attempt leaves besides its outcome.
type Ending struct {
	// Bind, when its Key.Session is set, binds the session to the upstream.
	Bind Bind
	// Spend is the attempt's cost in USD, charged to the upstream, to the
	// client key SpendKey and, when set, to its team SpendTeam in the
	// shared counters (the caller keeps the local ones).
	Spend     float64
	SpendKey  string
	SpendTeam string
}

// Admission is what Admit checks for one request to one upstream.
type Admission struct {
	// Upstream is the upstream's name.
	Upstream string
	// Tokens is the request's estimated tokens, reserved against TPM.
	Tokens int64
	// RPM and TPM are the configured limits; 0 means none.
	RPM, TPM int
	// MaxConcurrency bounds the leases in flight; 0 means none.
	MaxConcurrency int
	// Queue, when enabled and Wait is set, is the upstream's slot queue.
	Queue config.Queue
	// Wait waits in the queue for a slot instead of refusing when all are taken.
	Wait bool
	// Tenant is whom the request waits as: its class and flow (limits.Score).
	Tenant limits.Tenant
}

// Errors of Admit, besides the limits and context errors it wraps.
var (
	// ErrBreakerOpen: the upstream's circuit breaker refuses requests now.
	ErrBreakerOpen = errors.New("breaker open")
	// ErrCoolingDown: the upstream is cooling down after a 429.
	ErrCoolingDown = errors.New("cooling down after 429")
	// ErrRateLimited: the request would exceed an RPM or TPM limit.
	ErrRateLimited = errors.New("rate limit reached")
)

// Denial is Admit's refusal.
type Denial struct {
	// Reason is breaker, cooldown, rpm, tpm, rate, full, queue_full,
	// queue_timeout, shed or canceled, as the scripts and logs name it.
	Reason string
	// Wait is when the upstream is expected to take a request again; 0
	// when unknown.
	Wait time.Duration
	// Err is the cause, for errors.Is.
	Err error
}

// Error returns the cause's text.
func (d *Denial) Error() string { return d.Err.Error() }

// Unwrap returns the cause.
func (d *Denial) Unwrap() error { return d.Err }

// denial returns the Denial of a reason as the scripts and logs name it.
// canceled, which no script returns, stands for context.Canceled; a caller
// that knows its context uses canceled(ctx), which also tells a deadline.
func denial(reason string, wait time.Duration) *Denial {
	d := &Denial{Reason: reason, Wait: wait}
	switch reason {
	case "breaker":
		d.Err = ErrBreakerOpen
	case "cooldown":
		d.Err = ErrCoolingDown
	case "full":
		d.Err = limits.ErrConcurrencyFull
	case "queue_full":
		d.Err = limits.ErrQueueFull
	case "queue_timeout":
		d.Err = limits.ErrQueueTimeout
	case "shed":
		d.Err = limits.ErrShed
	case "canceled":
		d.Err = context.Canceled
	default: // rpm, tpm, rate
		d.Err = ErrRateLimited
	}
	return d
}

// UpstreamView is one upstream's live state as planning, the admin API and
// the metrics read it.
type UpstreamView struct {
	// Breaker is the circuit breaker; with Redis, the shared one (its
	// SlowStart, Trips, Failures stay this instance's).
	Breaker health.View
	// Limits are the RPM/TPM windows and the 429 cooldown; with Redis the
	// counts are the larger of this instance's and all instances' totals,
	// and a shared cooldown or full window limits it too.
	Limits limits.LimitView
	// Stats are the EWMAs, window and failure streak; with Redis, the shared ones.
	Stats Snapshot
	// InFlight and QueueDepth count across instances.
	InFlight   int64
	QueueDepth int
	// InFlightHere and QueueDepthHere count this instance's only (the
	// gauges, which a sum over instances adds up).
	InFlightHere   int64
	QueueDepthHere int
}
