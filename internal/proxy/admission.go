package proxy

import (
	"cmp"
	"context"
	"errors"

	"switchyard/internal/limits"
	"switchyard/internal/outcome"
	"switchyard/internal/state"
)

// skip says why an upstream was not attempted.
type skip struct {
	reason string
	full   bool // every slot was taken (without queueing): it may be queued for later
}

// admit asks the state driver for one attempt on up — the breaker's
// permission, an RPM/TPM reservation, a concurrency slot (waiting in the
// queue for a waitable upstream) and, with shared state, the lease — and
// returns the lease to end with done, or says why it was refused.
func (x *exchange) admit(ctx context.Context, up *upstream, waitable bool) (state.Lease, skip) {
	lease, err := x.s.opts.State.Admit(ctx, state.Admission{
		Upstream: up.cfg.Name, Tokens: x.est, RPM: up.cfg.RateLimit.RPM, TPM: up.cfg.RateLimit.TPM,
		MaxConcurrency: up.cfg.MaxConcurrency, Queue: up.cfg.Queue, Wait: waitable,
	})
	if err != nil {
		return nil, x.denied(err, waitable)
	}
	return lease, skip{}
}

// denied notes why the driver refused an attempt and says why it was skipped.
func (x *exchange) denied(err error, waitable bool) skip {
	var d *state.Denial
	if errors.As(err, &d) {
		x.tally.noteRetry(d.Wait)
	}
	switch {
	case errors.Is(err, state.ErrBreakerOpen):
		return skip{reason: "breaker open"}
	case errors.Is(err, state.ErrCoolingDown):
		return skip{reason: "rate limited (cooling down)"}
	case errors.Is(err, state.ErrRateLimited):
		return skip{reason: "rate limit reached"}
	case errors.Is(err, limits.ErrQueueFull), errors.Is(err, limits.ErrQueueTimeout):
		if x.r.Context().Err() == nil {
			x.tally.queueErr = err
		}
		return skip{reason: "concurrency full (" + err.Error() + ")"}
	}
	// Every slot taken, or the caller left while queued.
	return skip{reason: "concurrency full (" + err.Error() + ")", full: !waitable}
}

// done ends lease with the attempt's outcome: the driver gives back the
// slot, settles the reservation and feeds the breaker and the statistics
// (with shared state, in one round trip that also binds the session and
// charges the spend); the metrics and the local spend are recorded here.
func (x *exchange) done(up *upstream, lease state.Lease, res outcome.Outcome, bind sessionBind) {
	o, name := &x.s.opts, up.cfg.Name
	o.Metrics.Attempt(name, res.Class.String())
	if res.Kind != "" {
		o.Metrics.UpstreamError(name, res.Kind)
	}
	var e state.Ending
	if bind != bindNone {
		e.Bind = state.Bind{Key: x.session.key, Upstream: name, Policy: x.session.policy, StandIn: bind == bindStandIn}
	}
	if res.Class == outcome.Success {
		if ttft := cmp.Or(res.TTFT, res.Headers); ttft > 0 {
			o.Metrics.TTFT(name, ttft)
		}
	}
	// Tokens are billed whenever the upstream reported them: a success, a
	// stream its client left, a hedge that lost after its first event.
	if in, out := res.InputTokens, res.OutputTokens; in > 0 || out > 0 {
		o.Metrics.Tokens(name, x.model, in, out)
		if cost := limits.Cost(in, out, up.cfg.Price); cost > 0 {
			o.Spend.Add(limits.ScopeUpstream, name, cost)
			o.Spend.Add(limits.ScopeKey, x.key.cfg.Name, cost)
			o.Metrics.Spend(name, x.key.cfg.Name, cost)
			e.Spend, e.SpendKey = cost, x.key.cfg.Name
		}
	}
	// Last, before the handler returns: a non-streaming answer waits in the
	// server's buffer until then, so the client has it only once its
	// session binding is in Redis for every instance.
	lease.Done(res, e)
}
