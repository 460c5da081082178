package proxy

import (
	"cmp"
	"context"
	"errors"

	"switchyard/internal/limits"
	"switchyard/internal/outcome"
	"switchyard/internal/state"
)

// admission is what one attempt took before it was sent — the breaker's
// permission, an RPM/TPM reservation, a concurrency slot and, with shared
// state, the lease — and must give back, all at once, in done.
type admission struct {
	x       *exchange
	up      *upstream
	release func()
	resv    *limits.Reservation
	ticket  *state.Ticket // the shared admission (state.driver: redis)
}

// skip says why an upstream was not attempted.
type skip struct {
	reason string
	full   bool // every slot was taken (without queueing): it may be queued for later
}

// admit claims the breaker's permission, an RPM/TPM reservation and a
// concurrency slot (waiting in the queue for a waitable upstream). With
// shared state it then asks Redis for the same three across instances, in
// one round trip; the local breaker and slot limits apply only while Redis
// is down. On failure it gives back what it took and says why.
func (x *exchange) admit(ctx context.Context, up *upstream, waitable bool) (*admission, skip) {
	name, o := up.cfg.Name, &x.s.opts
	shared := o.Shared != nil && o.Shared.Up()
	local := !shared // whether the local breaker was asked, and must be told
	if local {
		if ok, _ := o.Breakers.Acquire(name); !ok {
			return nil, skip{reason: "breaker open"}
		}
	}
	resv, ok := o.Limiter.Reserve(name, x.est)
	if !ok {
		if local {
			o.Breakers.Record(name, outcome.Of(outcome.Canceled, "not sent: rate limit"))
		}
		return nil, skip{reason: "rate limit reached"}
	}
	limit := up.cfg.MaxConcurrency
	if shared {
		limit = 0 // count only: the shared leases enforce it
	}
	var release func()
	var err error
	if waitable && !shared {
		release, err = o.Slots.Acquire(ctx, name, limit, up.cfg.Queue)
	} else if release, ok = o.Slots.TryAcquire(name, limit); !ok {
		err = limits.ErrConcurrencyFull
	}
	if err != nil {
		resv.Cancel()
		if local {
			o.Breakers.Record(name, outcome.Of(outcome.Canceled, "not sent: "+err.Error()))
		}
		if (errors.Is(err, limits.ErrQueueFull) || errors.Is(err, limits.ErrQueueTimeout)) && x.r.Context().Err() == nil {
			x.tally.queueErr = err
		}
		return nil, skip{reason: "concurrency full (" + err.Error() + ")", full: !waitable}
	}
	a := &admission{x: x, up: up, release: release, resv: resv}
	if o.Shared != nil {
		t, den := o.Shared.Admit(ctx, state.Admission{
			Upstream: name, Tokens: x.est, RPM: up.cfg.RateLimit.RPM, TPM: up.cfg.RateLimit.TPM,
			MaxConcurrency: up.cfg.MaxConcurrency, Queue: up.cfg.Queue, Wait: waitable,
		})
		if den != nil {
			release()
			resv.Cancel()
			return nil, x.sharedDenial(den, waitable)
		}
		a.ticket = &t
	}
	return a, skip{}
}

// sharedDenial notes why Redis refused an attempt and says why it was skipped.
func (x *exchange) sharedDenial(den *state.Denial, waitable bool) skip {
	x.tally.noteRetry(den.Wait)
	switch den.Reason {
	case "breaker":
		return skip{reason: "breaker open"}
	case "full":
		return skip{reason: "concurrency full (" + limits.ErrConcurrencyFull.Error() + ")", full: !waitable}
	case "queue_full":
		x.tally.queueErr = limits.ErrQueueFull
		return skip{reason: "concurrency full (" + limits.ErrQueueFull.Error() + ")"}
	case "queue_timeout":
		if x.r.Context().Err() == nil {
			x.tally.queueErr = limits.ErrQueueTimeout
		}
		return skip{reason: "concurrency full (" + limits.ErrQueueTimeout.Error() + ")"}
	case "cooldown":
		return skip{reason: "rate limited (cooling down)"}
	}
	return skip{reason: "rate limit reached"}
}

// done gives back the slot, settles the reservation with the real usage
// and feeds the outcome to the breaker, the statistics and the spend, and
// binds the session when bind is set. With shared state all of that also
// goes to Redis in one round trip.
func (a *admission) done(res outcome.Outcome, bind bool) {
	x := a.x
	o, name := &x.s.opts, a.up.cfg.Name
	a.release()
	now := o.Clock.Now()
	o.Stats.Observe(name, res, now)
	o.Breakers.Record(name, res)
	o.Metrics.Attempt(name, res.Class.String())
	if res.Kind != "" {
		o.Metrics.UpstreamError(name, res.Kind)
	}
	settle := state.Settlement{Outcome: res}
	if bind {
		if a.ticket != nil {
			settle.Bind = &state.Bind{Key: x.session.key, Upstream: name, Policy: x.session.policy}
		} else {
			o.Affinity.Bind(x.session.key, name, x.session.policy)
		}
	}
	defer func() {
		if a.ticket != nil {
			// Before the handler returns: a non-streaming answer waits in
			// the server's buffer until then, so the client has it only
			// once its session binding is in Redis for every instance.
			o.Shared.Settle(*a.ticket, settle)
		}
	}()
	if res.Class != outcome.Success {
		a.resv.Commit(0) // the request counted; its tokens did not
		return
	}
	if ttft := cmp.Or(res.TTFT, res.Headers); ttft > 0 {
		o.Metrics.TTFT(name, ttft)
	}
	in, out := res.InputTokens, res.OutputTokens
	a.resv.Commit(in + out)
	o.Metrics.Tokens(name, x.model, in, out)
	if cost := limits.Cost(in, out, a.up.cfg.Price); cost > 0 {
		o.Spend.Add(limits.ScopeUpstream, name, cost)
		o.Spend.Add(limits.ScopeKey, x.key.cfg.Name, cost)
		o.Metrics.Spend(name, x.key.cfg.Name, cost)
		settle.Spend, settle.SpendKey = cost, x.key.cfg.Name
	}
}
