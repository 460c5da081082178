package proxy

import (
	"context"
	"errors"
	"time"

	"switchyard/internal/limits"
	"switchyard/internal/state"
)

// skip says why an upstream was not attempted.
type skip struct {
	reason string
	full   bool          // every slot was taken (without queueing): it may be queued for later
	wait   time.Duration // until the refusal ends, when the driver knows (a cooldown, an open breaker)
	// queueErr is the queue's own refusal (full, timed out) when the
	// client is still there: the error to answer if nothing is attempted.
	queueErr error
	// shed: a batch request was not queued (limits.ErrShed).
	shed bool
}

// admit asks the state driver for one attempt on up — the breaker's
// permission, an RPM/TPM reservation, a concurrency slot (waiting in the
// queue for a waitable upstream) and, with shared state, the lease — and
// returns the lease the attempt ends with, or says why it was refused.
func (q *request) admit(ctx context.Context, up *upstream, waitable bool) (state.Lease, skip) {
	var start time.Time
	if waitable {
		start = q.s.opts.Clock.Now()
		defer q.s.opts.Waiting.Add(up.cfg.Name, q.key.tenant)()
	}
	lease, err := q.s.opts.State.Admit(ctx, state.Admission{
		Upstream: up.cfg.Name, Tokens: q.est, RPM: up.cfg.RateLimit.RPM, TPM: up.cfg.RateLimit.TPM,
		MaxConcurrency: up.cfg.MaxConcurrency, Queue: up.cfg.Queue, Wait: waitable, Tenant: q.key.tenant,
	})
	if err != nil {
		return nil, q.denied(err, waitable)
	}
	if waitable {
		q.s.opts.Metrics.Tenants().QueueWait(q.key.tenant.Class.String(), q.s.opts.Clock.Now().Sub(start).Seconds())
	}
	return lease, skip{}
}

// denied says why the driver refused an attempt.
func (q *request) denied(err error, waitable bool) skip {
	var sk skip
	var d *state.Denial
	if errors.As(err, &d) {
		sk.wait = d.Wait
	}
	switch {
	case errors.Is(err, state.ErrBreakerOpen):
		sk.reason = "breaker open"
	case errors.Is(err, state.ErrCoolingDown):
		sk.reason = "rate limited (cooling down)"
	case errors.Is(err, state.ErrRateLimited):
		sk.reason = "rate limit reached"
	case errors.Is(err, limits.ErrShed):
		sk.reason, sk.shed = "shed: batch", true
		q.s.opts.Metrics.Tenants().Shed(q.key.tenant.Class.String())
	case errors.Is(err, limits.ErrQueueFull), errors.Is(err, limits.ErrQueueTimeout):
		if q.r.Context().Err() == nil {
			sk.queueErr = err
		}
		sk.reason = "concurrency full (" + err.Error() + ")"
	default: // every slot taken, or the caller left while queued
		sk.reason, sk.full = "concurrency full ("+err.Error()+")", !waitable
	}
	return sk
}
