package proxy

import (
	"context"
	"errors"
	"sync"
	"time"

	"switchyard/internal/balancer"
	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/metrics"
	"switchyard/internal/outcome"
	"switchyard/internal/state"
)

// errHedgeLost ends an attempt another attempt of its request beat to
// commit (docs/routing.md#hedged-requests): it is cancelled, not failed.
var errHedgeLost = errors.New("hedge lost")

// hedgePolicy is a route's hedge settings, parsed once per catalog.
type hedgePolicy struct {
	fixed time.Duration // the delay; 0 with p95 or when off
	p95   bool          // the delay is the attempt's upstream's first-byte p95
	max   int           // hedges per request
}

func newHedgePolicy(h config.Hedge) hedgePolicy {
	fixed, p95 := h.Wait()
	return hedgePolicy{fixed: fixed, p95: p95, max: h.Max}
}

func (h hedgePolicy) on() bool { return h.fixed > 0 || h.p95 }

// race is the attempts of one request that run at once. The request's
// goroutine launches them and takes each as it finishes; once the race is
// over (a winner committed, or the request ended), an attempt that
// finishes settles itself on its own goroutine, so that its slot,
// reservation and lease come back at once rather than after the winner's
// stream.
type race struct {
	mu       sync.Mutex    // guards finished, wake and over
	finished []*attempt    // done, not yet taken
	wake     chan struct{} // closed when one finishes; nil when none waits
	over     bool

	all   []*attempt // every attempt launched (the request's goroutine only)
	taken int        // attempts take has returned (the request's goroutine only)
}

// lossWait bounds how long the end of a race waits for the cancelled
// attempts to unwind, so that their slots and reservations are back
// before the winner's answer reaches the client; one that takes longer
// settles itself when it ends.
const lossWait = 100 * time.Millisecond

// post hands a to the race; false means the race is over and a must
// end itself.
func (r *race) post(a *attempt) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.over {
		return false
	}
	r.finished = append(r.finished, a)
	if r.wake != nil {
		close(r.wake)
		r.wake = nil
	}
	return true
}

// take returns a finished attempt, waiting up to timeout (≤ 0: no limit)
// on clk; nil when the time is up or ctx ended first.
func (r *race) take(ctx context.Context, clk clock.Clock, timeout time.Duration) *attempt {
	r.mu.Lock()
	if len(r.finished) == 0 {
		wake := make(chan struct{})
		r.wake = wake
		r.mu.Unlock()
		clock.Wait(ctx, clk, wake, timeout)
		r.mu.Lock()
		r.wake = nil
	}
	var a *attempt
	if len(r.finished) > 0 {
		a, r.finished = r.finished[0], r.finished[1:]
		r.taken++
	}
	r.mu.Unlock()
	return a
}

// end closes the race and returns the attempts that finished but were not
// taken; every attempt still running ends itself.
func (r *race) end() []*attempt {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.over = true
	left := r.finished
	r.finished = nil
	return left
}

// race runs the plan with hedging (docs/routing.md#hedged-requests): an
// attempt that has not reached its first byte within the route's hedge
// delay is raced by the plan's next candidate, up to hedge.max times, each
// hedge with its own admission and within hedge.budget. The first attempt
// to reach its first byte is committed; every other is cancelled at once
// and gives its slot, reservation and lease back. A failure before commit
// goes on as in runPlan: the next candidate is tried (a retry) once
// nothing is running.
func (x *exchange) race(ctx context.Context, c *cursor, plan *balancer.Plan, rt *route, model string, body []byte) bool {
	r := &race{}
	defer x.endRace(r, nil, rt.cfg.Model)
	hedges, hedging, running := 0, true, 0
	var latest *attempt
	var latestAt time.Time
	for {
		if running == 0 {
			if ctx.Err() != nil {
				return false
			}
			up, lease := x.claim(ctx, c, rt, false)
			if up == nil {
				return false
			}
			latest, latestAt = x.launch(ctx, r, up, lease, rt, model, body, false), x.s.opts.Clock.Now()
			running++
		}
		var wait time.Duration // until the next hedge is due; 0: none is
		if hedging && hedges < rt.hedge.max && ctx.Err() == nil {
			if d := x.hedgeDelay(rt, latest.up); d > 0 {
				wait = max(d-x.s.opts.Clock.Now().Sub(latestAt), time.Nanosecond)
			}
		}
		wctx := ctx
		if ctx.Err() != nil { // the request is over: collect what is running
			wctx = context.Background()
		}
		a := r.take(wctx, x.s.opts.Clock, wait)
		if a == nil {
			if ctx.Err() != nil || wait == 0 {
				continue
			}
			hedges++
			if !rt.hedges.TryRetry() {
				x.s.opts.Metrics.Hedge(rt.cfg.Model, metrics.HedgeSkippedBudget)
				hedging = false
				continue
			}
			up, lease := x.claim(ctx, c, rt, true)
			if up == nil {
				x.s.opts.Metrics.Hedge(rt.cfg.Model, metrics.HedgeSkippedLimits)
				hedging = false
				continue
			}
			latest, latestAt = x.launch(ctx, r, up, lease, rt, model, body, true), x.s.opts.Clock.Now()
			running++
			continue
		}
		running--
		if a.started {
			x.raced = len(r.all)
			x.noteFirstByte(a)
			x.endRace(r, a, rt.cfg.Model)
			if a.hedge {
				x.s.opts.Metrics.Hedge(rt.cfg.Model, metrics.HedgeWon)
			}
			return x.settle(a, x.commit(a), true, plan)
		}
		if a.hedge {
			x.s.opts.Metrics.Hedge(rt.cfg.Model, metrics.HedgeLost)
		}
		if x.settle(a, a.o, false, plan) {
			return true
		}
	}
}

// launch starts an attempt on up whose start runs on its own goroutine
// and hands it to the race when it ends; once the race is over, the
// attempt ends itself there. The server counts it until then
// (Server.Drain).
func (x *exchange) launch(ctx context.Context, r *race, up *upstream, lease state.Lease, rt *route, model string, body []byte, hedge bool) *attempt {
	a, actx := x.newAttempt(ctx, up, lease, rt, model, body, hedge)
	r.all = append(r.all, a)
	s, route := x.s, rt.cfg.Model
	s.attempts.Add(1)
	s.opts.Go(func() {
		defer s.attempts.Done()
		a.start(actx)
		if !r.post(a) {
			_ = a.lose(route)
		}
	})
	return a
}

// endRace ends r: every attempt but winner is cancelled and, as each
// unwinds (for up to lossWait), ended here; any slower one ends itself
// when it unwinds.
func (x *exchange) endRace(r *race, winner *attempt, route string) {
	if r.over {
		return
	}
	for _, a := range r.all {
		if a != winner {
			a.cancel(errHedgeLost)
		}
	}
	clk := x.s.opts.Clock
	for until := clk.Now().Add(lossWait); r.taken < len(r.all); {
		left := until.Sub(clk.Now())
		if left <= 0 {
			break
		}
		a := r.take(context.Background(), clk, left)
		if a == nil {
			break
		}
		x.noteEnd(a.i, a.lose(route), false)
	}
	for _, a := range r.end() {
		x.noteEnd(a.i, a.lose(route), false)
	}
	for _, a := range r.all { // still unwinding: each ends itself
		if t := &x.log.Tried[a.i]; a != winner && t.Outcome == "" {
			x.noteEnd(a.i, outcome.Of(outcome.Canceled, "hedge lost"), false)
		}
	}
}

// hedgeDelay is how long an attempt on up may go without its first byte
// before a hedge joins it; 0 for none (p95 with too few samples).
func (q *request) hedgeDelay(rt *route, up *upstream) time.Duration {
	if !rt.hedge.p95 {
		return rt.hedge.fixed
	}
	ms := q.s.opts.State.Upstream(up.cfg.Name, q.est).Stats.FirstByteP95
	return time.Duration(ms * float64(time.Millisecond))
}

// hedgeLost reports whether actx was ended because another attempt won.
func hedgeLost(actx context.Context) bool { return errors.Is(context.Cause(actx), errHedgeLost) }
