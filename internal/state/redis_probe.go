package state

import (
	"context"
	"time"

	"switchyard/internal/health"
	"switchyard/internal/outcome"
)

// ProbeGate implements Driver: the shared breaker while Redis answers, so
// that an active probe's success closes the half-open breaker of every
// instance; the local breakers (which it keeps fed) while Redis is down.
func (d *RedisDriver) ProbeGate() health.Gate { return redisGate{d} }

// redisGate is the active prober's way to the shared breaker.
type redisGate struct{ d *RedisDriver }

var _ health.Gate = redisGate{}

// AcquireProbe implements health.Gate: the shared breaker decides while
// Redis answers, the local one otherwise. The probe's outcome goes to the
// local breaker (kept warm) and, when Redis admitted it, to the shared one,
// each in the generation it was admitted in.
func (g redisGate) AcquireProbe(ctx context.Context, name string) (health.Probe, bool) {
	r, local := g.d.r, g.d.local.breakers
	if !r.Up() {
		r.fallback(OpAdmit)
		return local.AcquireProbe(ctx, name)
	}
	t := r.newTicket(Admission{Upstream: name})
	res, err := r.admitOnce(ctx, &t, Admission{Upstream: name}, false, true, nil)
	if !r.result(ctx, OpAdmit, err) || len(res) < 3 {
		return local.AcquireProbe(ctx, name)
	}
	if ok, _ := res[0].(int64); ok != 1 {
		var until time.Time
		if ms, _ := res[2].(int64); ms > 0 {
			until = r.clk.Now().Add(time.Duration(ms) * time.Millisecond)
		}
		return health.Probe{Until: until}, false
	}
	if len(res) > 3 {
		t.gen, _ = res[3].(int64)
	}
	permit := local.Current(name)
	return health.Probe{Slot: res[1] == int64(1), Done: func(ctx context.Context, o outcome.Outcome) {
		local.Record(name, permit, o)
		r.settleProbe(ctx, t, o)
	}}, true
}

// settleProbe feeds the outcome of the active probe t to its upstream's
// shared breaker: one round trip; nothing else is counted.
func (r *Redis) settleProbe(ctx context.Context, t Ticket, o outcome.Outcome) {
	if !r.up.Load() {
		r.fallback(OpSettle)
		return
	}
	now := r.clk.Now()
	rctx, cancel := r.opCtx(ctx)
	defer cancel()
	b := r.batch()
	tr := r.settleIn(rctx, b, t, o, now, 0, 0, true)
	if !r.result(ctx, OpSettle, b.exec(rctx)) {
		return
	}
	if to, _ := tr.res.Text(); to != "" && r.opts.OnTransition != nil {
		r.opts.OnTransition(t.upstream, transitionName(to), o.Detail)
	}
}
