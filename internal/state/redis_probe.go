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

// AcquireProbe implements health.Gate.
func (g redisGate) AcquireProbe(ctx context.Context, name string) (ok, probe bool, until time.Time) {
	r, local := g.d.r, g.d.local.breakers
	if !r.Up() {
		r.fallback(OpAdmit)
		return local.AcquireProbe(ctx, name)
	}
	t := r.newTicket(name, 0)
	res, err := r.admitOnce(ctx, &t, Admission{Upstream: name}, false, true)
	if !r.result(ctx, OpAdmit, err) || len(res) != 3 {
		return local.AcquireProbe(ctx, name)
	}
	if ok, _ := res[0].(int64); ok == 1 {
		return true, res[1] == int64(1), time.Time{}
	}
	if ms, _ := res[2].(int64); ms > 0 {
		until = r.clk.Now().Add(time.Duration(ms) * time.Millisecond)
	}
	return false, false, until
}

// RecordProbe implements health.Gate: the local breaker, then the shared one.
func (g redisGate) RecordProbe(ctx context.Context, name string, o outcome.Outcome) {
	g.d.local.breakers.Record(name, o)
	g.d.r.SettleProbe(ctx, name, o)
}

// SettleProbe feeds an active probe's outcome to upstream's shared breaker:
// one round trip; nothing else is counted.
func (r *Redis) SettleProbe(ctx context.Context, upstream string, o outcome.Outcome) {
	if !r.up.Load() {
		r.fallback(OpSettle)
		return
	}
	now := r.clk.Now()
	rctx, cancel := r.opCtx(ctx)
	defer cancel()
	b := r.batch()
	tr := r.settleIn(rctx, b, r.newTicket(upstream, 0), o, now, 0, 0, true)
	if !r.result(ctx, OpSettle, b.exec(rctx)) {
		return
	}
	if to, _ := tr.res.Text(); to != "" && r.opts.OnTransition != nil {
		r.opts.OnTransition(upstream, transitionName(to), o.Detail)
	}
}
