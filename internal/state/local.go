package state

import (
	"context"
	"errors"
	"net/http"
	"sync/atomic"
	"time"

	"switchyard/internal/affinity"
	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/health"
	"switchyard/internal/limits"
	"switchyard/internal/outcome"
)

// LocalOptions are the in-process pieces a Local is made of. Every field
// but Clock has a default, so that a caller that needs to see one of them
// (the simulator, tests) passes its own and the rest are made here.
type LocalOptions struct {
	// Clock tells the time. Required.
	Clock clock.Clock
	// Breakers are the circuit breakers. Default: config defaults.
	Breakers *health.Breakers
	// Limiter keeps the RPM/TPM windows and 429 cooldowns.
	Limiter *limits.Limiter
	// Slots count in-flight requests and queue for them.
	Slots *limits.Slots
	// Stats keep the EWMAs and the request window.
	Stats Stats
	// Keys enforce the client keys' rpm.
	Keys *limits.KeyLimiter
	// Sessions receives the bindings Done makes. Default: none.
	Sessions Binder
	// Pins record which upstream holds a stateful object. Default: a
	// table of affinity.DefaultMaxPins for affinity.DefaultResponseTTL.
	Pins *affinity.PinTable
	// Conversations keep the Responses conversations the gateway continues
	// itself. Default: a table of affinity.DefaultMaxConversations for
	// affinity.DefaultResponseTTL.
	Conversations *affinity.ConversationTable
}

// Binder binds sessions (affinity.Table, affinity.Store).
type Binder interface {
	Bind(k affinity.Key, upstream string, pol affinity.Policy)
	BindStandIn(k affinity.Key, upstream string, pol affinity.Policy)
}

// Local is the in-process Driver (state.driver: memory): the breakers,
// limiter, slots, statistics and key windows of this instance. RedisDriver
// wraps one and keeps it fed, to route on while Redis is down.
type Local struct {
	clk      clock.Clock
	breakers *health.Breakers
	limiter  *limits.Limiter
	slots    *limits.Slots
	stats    Stats
	keys     *limits.KeyLimiter
	sessions Binder
	pins     *affinity.PinTable
	convs    *affinity.ConversationTable
	tenants  *limits.Slots // the keys' and teams' requests in flight (AcquireTenant)
}

var _ Driver = (*Local)(nil)

// NewLocal returns the in-process driver made of opts.
func NewLocal(opts LocalOptions) *Local {
	d := &Local{
		clk: opts.Clock, breakers: opts.Breakers, limiter: opts.Limiter, slots: opts.Slots,
		stats: opts.Stats, keys: opts.Keys, sessions: opts.Sessions, pins: opts.Pins,
		convs: opts.Conversations, tenants: limits.NewSlotsWithClock(opts.Clock),
	}
	if d.convs == nil {
		d.convs = affinity.NewConversationTable(affinity.DefaultMaxConversations, affinity.DefaultResponseTTL, d.clk)
	}
	if d.pins == nil {
		d.pins = affinity.NewPinTable(affinity.DefaultMaxPins, affinity.DefaultResponseTTL, d.clk)
	}
	if d.breakers == nil {
		d.breakers = health.NewBreakers(config.Circuit{}, d.clk)
	}
	if d.limiter == nil {
		d.limiter = limits.NewLimiter(d.clk)
	}
	if d.slots == nil {
		d.slots = limits.NewSlotsWithClock(d.clk)
	}
	if d.stats == nil {
		d.stats = NewMemory(DefaultWindow)
	}
	if d.keys == nil {
		d.keys = limits.NewKeyLimiter(d.clk)
	}
	return d
}

// Configure sets upstream name's configured RPM and TPM limits (on start
// and every reload; see limits.Limiter.Configure).
func (d *Local) Configure(name string, rpm, tpm int) { d.limiter.Configure(name, rpm, tpm) }

// Admit implements Driver.
func (d *Local) Admit(ctx context.Context, a Admission) (Lease, error) {
	l, err := d.admit(ctx, a)
	if err != nil {
		return nil, err
	}
	d.stats.Dispatched(a.Upstream, d.clk.Now())
	return l, nil
}

// admit decides one attempt with the local state: the breaker's
// permission, a reservation, then a slot under a.MaxConcurrency (waiting
// in the queue for up to a.Queue.Timeout when a.Wait). Whatever it refuses
// gives back what it took.
func (d *Local) admit(ctx context.Context, a Admission) (*localLease, error) {
	name := a.Upstream
	permit, ok := d.breakers.Acquire(name)
	if !ok {
		return nil, &Denial{Reason: "breaker", Err: ErrBreakerOpen}
	}
	resv, wait, ok := d.limiter.Reserve(name, a.Tokens)
	if !ok {
		d.breakers.Record(name, permit, outcome.Of(outcome.Canceled, "not sent: rate limit"))
		return nil, &Denial{Reason: "rate", Wait: wait, Err: ErrRateLimited}
	}
	var release func()
	var err error
	if a.Wait {
		release, err = d.slots.AcquireAs(ctx, name, a.MaxConcurrency, a.Queue, a.Tenant)
	} else if release, ok = d.slots.TryAcquire(name, a.MaxConcurrency); !ok {
		err = limits.ErrConcurrencyFull
	}
	if err != nil {
		resv.Cancel()
		d.breakers.Record(name, permit, outcome.Of(outcome.Canceled, "not sent: "+err.Error()))
		return nil, &Denial{Reason: slotReason(err), Err: err}
	}
	return &localLease{d: d, name: name, release: release, resv: resv, permit: permit}, nil
}

// count keeps count of an attempt another state decided (RedisDriver,
// while Redis answers) with its reservation resv: it takes a slot whatever
// max_concurrency says and does not ask the breaker, but the breaker hears
// the outcome in its current generation (health.Breakers.Current).
func (d *Local) count(name string, resv *limits.Reservation) *localLease {
	release, _ := d.slots.TryAcquire(name, 0)
	return &localLease{d: d, name: name, release: release, resv: resv, permit: d.breakers.Current(name)}
}

// slotReason names a slot error as the scripts do.
func slotReason(err error) string {
	switch {
	case errors.Is(err, limits.ErrQueueFull):
		return "queue_full"
	case errors.Is(err, limits.ErrQueueTimeout):
		return "queue_timeout"
	case errors.Is(err, limits.ErrShed):
		return "shed"
	case errors.Is(err, limits.ErrConcurrencyFull):
		return "full"
	}
	return "canceled"
}

// localLease is an attempt admitted by Local.
type localLease struct {
	d       *Local
	name    string
	release func()
	resv    *limits.Reservation
	permit  health.Permit // the breaker generation it was admitted in
	done    atomic.Bool
}

// Done implements Lease.
func (l *localLease) Done(o outcome.Outcome, e Ending) {
	if !l.finish(o) {
		return
	}
	if e.Bind.Key.Session != "" && l.d.sessions != nil {
		b := e.Bind
		b.Upstream = l.name
		b.writeTo(l.d.sessions)
	}
}

// finish gives back the slot and the reservation and feeds o to the
// breaker and the statistics; false when already done.
func (l *localLease) finish(o outcome.Outcome) bool {
	if !l.done.CompareAndSwap(false, true) {
		return false
	}
	l.release()
	l.d.stats.Observe(l.name, o, l.d.clk.Now())
	l.d.breakers.Record(l.name, l.permit, o)
	if o.Class == outcome.Success {
		l.resv.Commit(o.Tokens())
	} else {
		l.resv.Commit(0) // the request counted; its tokens did not
	}
	return true
}

// Observe implements Driver.
func (d *Local) Observe(upstream string, status int, h http.Header) {
	d.limiter.ObserveHeaders(upstream, h)
	if status < 300 {
		d.limiter.Succeeded(upstream)
	}
}

// RateLimited implements Driver.
func (d *Local) RateLimited(upstream string, h http.Header, body []byte, asked time.Duration) limits.Cooldown {
	return d.limiter.RateLimited(upstream, h, body, asked)
}

// Upstream implements Driver.
func (d *Local) Upstream(upstream string, tokens int64) UpstreamView {
	v := UpstreamView{
		Breaker:  d.breakers.View(upstream),
		Limits:   d.limiter.View(upstream, tokens),
		Stats:    d.stats.Snapshot(upstream, d.clk.Now()),
		InFlight: d.slots.InFlight(upstream), QueueDepth: d.slots.QueueDepth(upstream),
	}
	v.InFlightHere, v.QueueDepthHere = v.InFlight, v.QueueDepth
	return v
}

// AllowKey implements Driver.
func (d *Local) AllowKey(_ context.Context, key string, rpm int) (bool, time.Duration) {
	return d.keys.Allow(key, rpm)
}

// AllowN implements Driver.
func (d *Local) AllowN(_ context.Context, name string, limit int, n int64) (bool, time.Duration) {
	return d.keys.AllowN(name, limit, n)
}

// AcquireTenant implements Driver: this instance's slots.
func (d *Local) AcquireTenant(_ context.Context, name string, limit int) (func(), bool) {
	return d.tenants.TryAcquire(name, limit)
}

// ProbeGate implements Driver: the local breakers.
func (d *Local) ProbeGate() health.Gate { return d.breakers }

// Pin implements Driver: the in-process table.
func (d *Local) Pin(ctx context.Context, upstream string, refs ...affinity.StateRef) {
	d.pins.Pin(ctx, upstream, refs...)
}

// Holder implements Driver: the in-process table.
func (d *Local) Holder(ctx context.Context, refs ...affinity.StateRef) (string, affinity.StateRef, bool) {
	return d.pins.Holder(ctx, refs...)
}

// Forget implements Driver.
func (d *Local) Forget(upstream string) {
	d.breakers.Forget(upstream)
	d.stats.Forget(upstream)
}

// Keep implements Driver: the in-process table.
func (d *Local) Keep(ctx context.Context, id string, c affinity.Conversation) {
	d.convs.Keep(ctx, id, c)
}

// Conversation implements Driver: the in-process table.
func (d *Local) Conversation(ctx context.Context, id string) (affinity.Conversation, bool) {
	return d.convs.Conversation(ctx, id)
}

// ForgetKey implements Driver: the in-process table.
func (d *Local) ForgetKey(ctx context.Context, key string) { d.convs.ForgetKey(ctx, key) }
