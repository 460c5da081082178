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
// commit (DESIGN.md §10): it is cancelled, not failed.
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

// racer is one attempt of a hedged request. It runs its start half on its
// own goroutine and hands itself to the race when that ends.
type racer struct {
	i       int // its place in the request log's list
	up      *upstream
	lease   state.Lease
	hedge   bool // started as a hedge alongside a slower attempt
	cancel  context.CancelCauseFunc
	st      *started        // set when it reached its first byte
	firstAt time.Time       // when st was
	o       outcome.Outcome // how its start half ended
}

// race is the attempts of one request that run at once. The request's
// goroutine launches them and takes each as it finishes; once the race is
// over (a winner committed, or the request ended), an attempt that
// finishes settles itself on its own goroutine, so that its slot,
// reservation and lease come back at once rather than after the winner's
// stream.
type race struct {
	mu       sync.Mutex    // guards finished, wake and over
	finished []*racer      // done, not yet taken
	wake     chan struct{} // closed when one finishes; nil when none waits
	over     bool

	all   []*racer // every racer launched (the request's goroutine only)
	taken int      // racers take has returned (the request's goroutine only)
}

// lossWait bounds how long the end of a race waits for the cancelled
// attempts to unwind, so that their slots and reservations are back
// before the winner's answer reaches the client; one that takes longer
// settles itself when it ends.
const lossWait = 100 * time.Millisecond

// post hands rc to the race; false means the race is over and rc must
// settle itself.
func (r *race) post(rc *racer) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.over {
		return false
	}
	r.finished = append(r.finished, rc)
	if r.wake != nil {
		close(r.wake)
		r.wake = nil
	}
	return true
}

// take returns a finished racer, waiting up to timeout (≤ 0: no limit) on
// clk; nil when the time is up or ctx ended first.
func (r *race) take(ctx context.Context, clk clock.Clock, timeout time.Duration) *racer {
	r.mu.Lock()
	if len(r.finished) == 0 {
		wake := make(chan struct{})
		r.wake = wake
		r.mu.Unlock()
		clock.Wait(ctx, clk, wake, timeout)
		r.mu.Lock()
		r.wake = nil
	}
	var rc *racer
	if len(r.finished) > 0 {
		rc, r.finished = r.finished[0], r.finished[1:]
		r.taken++
	}
	r.mu.Unlock()
	return rc
}

// end closes the race and returns the racers that finished but were not
// taken; every racer still running settles itself.
func (r *race) end() []*racer {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.over = true
	left := r.finished
	r.finished = nil
	return left
}

// race runs the plan with hedging (DESIGN.md §10): an attempt that has not
// reached its first byte within the route's hedge delay is raced by the
// plan's next candidate, up to hedge.max times, each hedge with its own
// admission and within hedge.budget. The first attempt to reach its first
// byte is committed; every other is cancelled at once and gives its slot,
// reservation and lease back. A failure before commit goes on as in
// runPlan: the next candidate is tried (a retry) once nothing is running.
func (x *exchange) race(ctx context.Context, c *cursor, plan *balancer.Plan, rt *route, model string, body []byte) bool {
	r := &race{}
	defer x.endRace(r, nil, rt.cfg.Model)
	hedges, hedging, running := 0, true, 0
	var latest *racer
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
		rc := r.take(wctx, x.s.opts.Clock, wait)
		if rc == nil {
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
		if rc.st != nil {
			x.raced = len(r.all)
			x.noteFirstByte(rc.i, rc.firstAt)
			x.endRace(r, rc, rt.cfg.Model)
			if rc.hedge {
				x.s.opts.Metrics.Hedge(rt.cfg.Model, metrics.HedgeWon)
			}
			return x.settle(rc.i, rc.up, rc.lease, x.commit(rc.st), true, plan)
		}
		if rc.hedge {
			x.s.opts.Metrics.Hedge(rt.cfg.Model, metrics.HedgeLost)
		}
		if x.settle(rc.i, rc.up, rc.lease, rc.o, false, plan) {
			return true
		}
	}
}

// launch starts the start half of an attempt on up on its own goroutine.
func (x *exchange) launch(ctx context.Context, r *race, up *upstream, lease state.Lease, rt *route, model string, body []byte, hedge bool) *racer {
	x.tally.attempts++
	i := x.noteTry(up, hedge)
	if x.tracing() {
		ctx = x.traceAttempt(ctx, i, up, model, hedge)
	}
	rctx, cancel := context.WithCancelCause(ctx)
	rc := &racer{i: i, up: up, lease: lease, hedge: hedge, cancel: cancel}
	r.all = append(r.all, rc)
	rs, clk := rt.cfg.RouteSettings, x.s.opts.Clock
	x.s.opts.Go(func() {
		rc.st, rc.o = x.start(rctx, up, rs, model, body)
		if rc.st != nil {
			rc.firstAt = clk.Now()
		}
		if !r.post(rc) {
			_ = x.lose(rc, rt.cfg.Model)
		}
	})
	return rc
}

// endRace ends r: every racer but winner is cancelled and, as each
// unwinds (for up to lossWait), settled here; any slower one settles
// itself when it ends.
func (x *exchange) endRace(r *race, winner *racer, route string) {
	if r.over {
		return
	}
	for _, rc := range r.all {
		if rc != winner {
			rc.cancel(errHedgeLost)
		}
	}
	clk := x.s.opts.Clock
	for until := clk.Now().Add(lossWait); r.taken < len(r.all); {
		left := until.Sub(clk.Now())
		if left <= 0 {
			break
		}
		rc := r.take(context.Background(), clk, left)
		if rc == nil {
			break
		}
		x.noteEnd(rc.i, x.lose(rc, route), false)
	}
	for _, rc := range r.end() {
		x.noteEnd(rc.i, x.lose(rc, route), false)
	}
	for _, rc := range r.all { // still unwinding: each settles itself
		if t := &x.log.Tried[rc.i]; rc != winner && t.Outcome == "" {
			x.noteEnd(rc.i, outcome.Of(outcome.Canceled, "hedge lost"), false)
		}
	}
}

// lose settles a racer of a race that is over, and returns the outcome it
// ended with: a started one is closed and ends cancelled with the tokens
// its first event reported; one that failed on its own keeps its outcome,
// so its breaker hears of it. It may run on the racer's own goroutine,
// so it touches nothing of x but what done reads.
func (x *exchange) lose(rc *racer, route string) outcome.Outcome {
	o := rc.o
	if rc.st != nil {
		in, out := rc.st.tokensSoFar(x.codec)
		rc.st.close()
		o = outcome.Outcome{Class: outcome.Canceled, Detail: "hedge lost", InputTokens: in, OutputTokens: out}
	}
	if rc.hedge {
		x.s.opts.Metrics.Hedge(route, metrics.HedgeLost)
	}
	o.Hedge = rc.hedge
	x.done(rc.up, rc.lease, o, bindNone)
	return o
}

// hedgeDelay is how long an attempt on up may go without its first byte
// before a hedge joins it; 0 for none (p95 with too few samples).
func (x *exchange) hedgeDelay(rt *route, up *upstream) time.Duration {
	if !rt.hedge.p95 {
		return rt.hedge.fixed
	}
	ms := x.s.opts.State.Upstream(up.cfg.Name, x.est).Stats.FirstByteP95
	return time.Duration(ms * float64(time.Millisecond))
}

// hedgeLost reports whether actx was ended because another attempt won.
func hedgeLost(actx context.Context) bool { return errors.Is(context.Cause(actx), errHedgeLost) }
