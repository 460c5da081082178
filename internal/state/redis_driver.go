package state

import (
	"context"
	"fmt"
	"net/http"
	"time"

	"switchyard/internal/health"
	"switchyard/internal/limits"
	"switchyard/internal/outcome"
)

// RedisDriver is the Driver of state.driver: redis. Redis decides
// admission (the shared breaker, windows, cooldown and leases) while it
// answers; the Local it wraps is fed every admission and outcome all the
// same — counting, not enforcing — so that it is warm when it has to take
// over. When Redis is down, or fails while an attempt asks it (even one
// waiting in the shared queue), the Local decides that attempt under its
// own limits — breaker, slots and queue — as state.driver: memory would:
// admission fails closed, never open (docs/scale-out.md#failure-modes).
type RedisDriver struct {
	r     *Redis
	local *Local
}

var _ Driver = (*RedisDriver)(nil)

// NewRedisDriver returns the driver deciding with r, falling back to local.
func NewRedisDriver(r *Redis, local *Local) *RedisDriver {
	return &RedisDriver{r: r, local: local}
}

// Admit implements Driver. While Redis answers: the local RPM/TPM check
// (which knows the limits learned from headers), then Redis, then the local
// count. Otherwise the local state decides alone, with whatever remains of
// the queue timeout the attempt already spent waiting in Redis's queue.
func (d *RedisDriver) Admit(ctx context.Context, a Admission) (Lease, error) {
	if !d.r.Up() {
		d.r.fallback(OpAdmit)
		return d.admitLocal(ctx, a, d.r.newTicket(a))
	}
	resv, wait, ok := d.local.limiter.Reserve(a.Upstream, a.Tokens)
	if !ok {
		return nil, &Denial{Reason: "rate", Wait: wait, Err: ErrRateLimited}
	}
	start := d.local.clk.Now()
	t, den := d.r.Admit(ctx, a)
	if den != nil {
		resv.Cancel()
		return nil, den
	}
	if t.Shared {
		d.local.stats.Dispatched(a.Upstream, d.local.clk.Now())
		return &redisLease{local: d.local.count(a.Upstream, resv), r: d.r, t: t}, nil
	}
	resv.Cancel() // the local admission reserves again
	if a.Wait && a.Queue.Timeout > 0 {
		if a.Queue.Timeout -= d.local.clk.Now().Sub(start); a.Queue.Timeout <= 0 {
			return nil, denial("queue_timeout", 0)
		}
	}
	return d.admitLocal(ctx, a, t)
}

// admitLocal decides a with the local state alone and, when it admits,
// holds the local ticket t, so that its lease is registered in Redis once
// Redis answers again.
func (d *RedisDriver) admitLocal(ctx context.Context, a Admission, t Ticket) (Lease, error) {
	l, err := d.local.admit(ctx, a)
	if err != nil {
		return nil, err
	}
	d.r.hold(t)
	d.local.stats.Dispatched(a.Upstream, d.local.clk.Now())
	return &redisLease{local: l, r: d.r, t: t}, nil
}

// redisLease is an attempt admitted by RedisDriver.
type redisLease struct {
	local *localLease
	r     *Redis
	t     Ticket
}

// Done implements Lease: the local state, then one round trip to Redis
// (which also writes the binding to the local sticky table). It returns
// once Redis has it, so that a client answered after Done finds its
// session bound on every instance.
func (l *redisLease) Done(o outcome.Outcome, e Ending) {
	if !l.local.finish(o) {
		return
	}
	s := Settlement{Outcome: o, Spend: e.Spend, SpendKey: e.SpendKey, SpendTeam: e.SpendTeam}
	if e.Bind.Key.Session != "" {
		b := e.Bind
		b.Upstream = l.local.name
		s.Bind = &b
	}
	l.r.Settle(l.t, s)
}

// Observe implements Driver with the local limiter (learned limits are per
// account, and every instance reads the same headers).
func (d *RedisDriver) Observe(upstream string, status int, h http.Header) {
	d.local.Observe(upstream, status, h)
}

// RateLimited implements Driver: the local cooldown now; the shared one
// starts when the attempt's lease is settled with its outcome.
func (d *RedisDriver) RateLimited(upstream string, h http.Header, body []byte, asked time.Duration) limits.Cooldown {
	return d.local.RateLimited(upstream, h, body, asked)
}

// Upstream implements Driver: this instance's state merged with the shared
// state of the last sync (mergeShared); the local state alone while Redis
// is down or before the upstream's first sync.
func (d *RedisDriver) Upstream(upstream string, tokens int64) UpstreamView {
	v := d.local.Upstream(upstream, tokens)
	if sv, ok := d.r.View(upstream); ok {
		mergeShared(&v, sv, d.local.clk.Now())
	}
	return v
}

// mergeShared is the one rule that merges an upstream's shared state sv
// into its local view v at now. The shared breaker replaces the local one
// (Redis decides admission; slow start stays local, as it follows the
// outcomes this instance saw), and the shared statistics the local ones.
// Counts take the larger of this instance's and all instances' totals.
// A shared cooldown extends the local one; a shared cooldown or a full
// shared window limits an upstream the local state does not, and then
// gives the reason and when it frees.
func mergeShared(v *UpstreamView, sv View, now time.Time) {
	b := health.View{State: breakerState(sv.Breaker), Open: !sv.Admits(now), Reason: sv.BreakerReason,
		SlowStart: v.Breaker.SlowStart, ProbeInFlight: sv.ProbeHeld}
	if b.Open {
		b.Until = sv.BreakerUntil
	}
	v.Breaker = b
	p95 := v.Stats.FirstByteP95 // this instance's own: Redis keeps no percentiles
	v.Stats = sv.Stats
	v.Stats.FirstByteP95 = p95
	v.InFlight, v.QueueDepth = max(v.InFlight, sv.InFlight), max(v.QueueDepth, int(sv.QueueDepth))
	lv := &v.Limits
	lv.RPMUsed, lv.TPMUsed = max(lv.RPMUsed, sv.RPMUsed), max(lv.TPMUsed, sv.TPMUsed)
	limited := lv.Limited()
	if sv.CooldownUntil.After(now) && sv.CooldownUntil.After(lv.CoolingUntil) {
		lv.CoolingUntil = sv.CooldownUntil
		if !limited {
			lv.Reason, lv.Until = "cooling down after 429 (shared)", sv.CooldownUntil
		}
		return
	}
	switch {
	case limited:
	case lv.RPMLimit > 0 && lv.RPMUsed >= lv.RPMLimit:
		lv.Exhausted, lv.LimitType = true, limits.LimitRequests
		lv.Reason, lv.Until = fmt.Sprintf("rpm %d/%d (shared)", lv.RPMUsed, lv.RPMLimit), sv.RPMFreeAt
	case lv.TPMLimit > 0 && lv.TPMUsed > 0 && lv.TPMUsed >= lv.TPMLimit:
		lv.Exhausted, lv.LimitType = true, limits.LimitTokens
		lv.Reason, lv.Until = fmt.Sprintf("tpm %d/%d (shared)", lv.TPMUsed, lv.TPMLimit), sv.TPMFreeAt
	}
}

// breakerState parses a View's breaker name.
func breakerState(s string) health.State {
	switch s {
	case "open":
		return health.Open
	case "half_open":
		return health.HalfOpen
	}
	return health.Closed
}

// Forget implements Driver: the local state; the shared state expires by itself.
func (d *RedisDriver) Forget(upstream string) { d.local.Forget(upstream) }
