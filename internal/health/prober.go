package health

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"time"

	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/outcome"
)

// Errors of the prober.
var (
	// ErrProbeTimeout is the cause (context.Cause) of a probe's context
	// when the probe outlived health.timeout.
	ErrProbeTimeout = errors.New("probe timed out")
)

// CheckFunc probes one upstream once: the proxy supplies it, sending GET
// {base_url}/models (health.probe: models) or a max_tokens=1 chat (chat)
// with the upstream's auth. It returns nil when the upstream is healthy. It
// must return soon after ctx is done; ctx is canceled (with cause
// ErrProbeTimeout) once health.timeout has passed on the prober's clock.
// It carries no deadline, as the clock may be fake. An error counts as a
// outcome.ServerError unless it wraps an *OutcomeError that says otherwise (an
// outcome.AuthError for a 401/403, an outcome.RateLimited for a 429).
type CheckFunc func(ctx context.Context, upstream string) error

// OutcomeError classifies a CheckFunc's error. Without one a failed check
// counts as an outcome.ServerError.
type OutcomeError struct {
	// Outcome is the class of the failure, e.g. outcome.AuthError for a 401.
	Outcome outcome.Class
	// Err describes it, e.g. "status 401"; it becomes the breaker's detail.
	Err error
}

// Error returns the text of Err.
func (e *OutcomeError) Error() string {
	if e.Err == nil {
		return e.Outcome.String()
	}
	return e.Err.Error()
}

// Unwrap returns Err.
func (e *OutcomeError) Unwrap() error { return e.Err }

// ProbeResult is the result of one active probe.
type ProbeResult struct {
	// At is when the probe started; zero means never probed.
	At time.Time `json:"at"`
	// RTT is how long the check took, failed or not.
	RTT time.Duration `json:"rtt"`
	// Err describes the failure; empty when OK.
	Err string `json:"error,omitempty"`
	// OK is true when the check returned nil within the timeout.
	OK bool `json:"ok"`
}

// Prober actively probes every upstream
// (docs/reference.md#circuit-breaker-and-probes, seed 000 "延时数据从哪来", seed 002
// "主动探活"): each probe's round-trip time is the latency that the weighted-random
// strategy scores with (LatencyMs), and its outcome feeds the upstream's
// circuit breaker.
//
// Run probes each upstream returned by targets every health.interval, with a
// ±10% jitter drawn from the seeded rng so that probes of many upstreams do
// not stay in lockstep; a new upstream is probed at once. One upstream never
// has more than one probe in flight: a probe still running when the next is
// due makes that round skip it. Each probe is bounded by health.timeout on
// the injected clock (clock.AfterFunc cancels its context).
//
// Breaker interaction: before probing, the prober asks its Gate
// (AcquireProbe: Breakers.Acquire, or the shared breaker of a state
// driver) like any request. An upstream whose breaker is OPEN, or HALF_OPEN with its probe
// slot taken or not yet due, is skipped and tried again when the breaker next
// lets a request through (View.Until) if that comes before the next interval.
// A HALF_OPEN breaker's probe slot is claimed by the active probe, so a cheap
// GET /models rather than a client's request tests a recovering upstream. The
// outcome is then recorded like a request's: a success is an outcome.Success (while
// HALF_OPEN it counts toward success_threshold, so with the default of 1 it
// closes the breaker), a failed or timed-out probe is an outcome.ServerError (while
// CLOSED it counts in the failure window; while HALF_OPEN it re-opens the
// breaker), an *OutcomeError is its Outcome, and a probe cut short by Run's
// context ending is outcome.Canceled (it decides nothing).
//
// Upstreams that disappear from targets are forgotten (their latency and
// last result); their breakers are not the prober's to forget.
type Prober struct {
	cfg      config.Health
	timeout  time.Duration
	clk      clock.Clock
	rng      *rand.Rand // used by the Run goroutine only
	breakers Gate
	check    CheckFunc
	targets  func() []string
	running  atomic.Bool

	mu   sync.RWMutex // guards byUp and the fields of every probeTarget in it
	byUp map[string]*probeTarget

	// onChange, when set, hears of an upstream whose probes start failing
	// (its first failure after a success, or its first probe failing) and
	// of one whose probes succeed again.
	onChange func(name string, healthy bool, detail string)
}

// ProberOption configures a Prober.
type ProberOption func(*Prober)

// WithHealthChange sets a hook called, outside the prober's lock, when an
// upstream's probes start failing and when they succeed again.
func WithHealthChange(f func(name string, healthy bool, detail string)) ProberOption {
	return func(p *Prober) { p.onChange = f }
}

// probeTarget is the prober's state for one upstream.
type probeTarget struct {
	next      time.Time // when the next probe is due
	inFlight  bool
	last      ProbeResult
	latencyMs float64 // RTT of the last successful probe; 0 = unknown
}

// NewProber returns a prober configured by cfg and timed by clk. rng draws
// the jitter (nil means a fixed seed); breakers (may be nil: *Breakers or a
// state driver's ProbeGate) receive the outcomes; check performs one probe; targets lists the upstreams to probe
// and is called once per round from the Run goroutine. A non-positive
// cfg.Timeout means the smaller of 5 s and the interval.
func NewProber(cfg config.Health, clk clock.Clock, rng *rand.Rand, breakers Gate, check CheckFunc, targets func() []string, opts ...ProberOption) *Prober {
	if rng == nil {
		rng = rand.New(rand.NewPCG(1, 2))
	}
	timeout := cfg.Timeout
	if timeout <= 0 {
		timeout = min(5*time.Second, cfg.Interval)
	}
	p := &Prober{
		cfg: cfg, timeout: timeout, clk: clk, rng: rng, breakers: breakers,
		check: check, targets: targets, byUp: map[string]*probeTarget{},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

// Run probes until ctx is done, then waits for the probes in flight (whose
// contexts it cancels) and returns. With health.interval 0 it returns at
// once. Run must not be called again while it is running.
func (p *Prober) Run(ctx context.Context) {
	if p.cfg.Interval <= 0 {
		return
	}
	if !p.running.CompareAndSwap(false, true) {
		panic("health: Prober.Run called while already running")
	}
	defer p.running.Store(false)
	var wg sync.WaitGroup
	defer wg.Wait()
	for {
		now := p.clk.Now()
		next := p.round(ctx, &wg, now)
		select {
		case <-ctx.Done():
			return
		case <-p.clk.After(next.Sub(now)):
		}
	}
}

// LatencyMs returns the round-trip time of upstream name's last successful
// probe in milliseconds; 0 means unknown (never probed successfully). It is
// seed 000's latencyMs for the weighted-random score.
func (p *Prober) LatencyMs(name string) float64 {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if t := p.byUp[name]; t != nil {
		return t.latencyMs
	}
	return 0
}

// Last returns the result of upstream name's last completed probe; its At is
// zero if it was never probed.
func (p *Prober) Last(name string) ProbeResult {
	p.mu.RLock()
	defer p.mu.RUnlock()
	if t := p.byUp[name]; t != nil {
		return t.last
	}
	return ProbeResult{}
}

// round starts the probes that are due at now, forgets the upstreams that
// left targets, and returns when the next probe is due.
func (p *Prober) round(ctx context.Context, wg *sync.WaitGroup, now time.Time) time.Time {
	names := p.targets()
	seen := make(map[string]struct{}, len(names))
	type dueProbe struct {
		name string
		t    *probeTarget
	}
	var due []dueProbe
	next := now.Add(p.cfg.Interval)
	p.mu.Lock()
	for _, name := range names {
		if _, dup := seen[name]; dup {
			continue
		}
		seen[name] = struct{}{}
		t := p.byUp[name]
		if t == nil {
			t = &probeTarget{next: now}
			p.byUp[name] = t
		}
		if !now.Before(t.next) {
			t.next = now.Add(p.jitter())
			if !t.inFlight {
				t.inFlight = true
				due = append(due, dueProbe{name, t})
			}
		}
		if t.next.Before(next) {
			next = t.next
		}
	}
	for name := range p.byUp {
		if _, ok := seen[name]; !ok {
			delete(p.byUp, name)
		}
	}
	p.mu.Unlock()

	for _, d := range due {
		var claim Probe
		if p.breakers != nil {
			c, ok := p.breakers.AcquireProbe(ctx, d.name)
			if !ok {
				p.mu.Lock()
				d.t.inFlight = false
				if until := c.Until; until.After(now) && until.Before(d.t.next) {
					d.t.next = until
				}
				if d.t.next.Before(next) {
					next = d.t.next
				}
				p.mu.Unlock()
				continue
			}
			claim = c
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			p.probe(ctx, d.name, d.t, claim)
		}()
	}
	return next
}

// jitter returns the interval scaled by a factor in [0.9, 1.1).
func (p *Prober) jitter() time.Duration {
	return time.Duration(float64(p.cfg.Interval) * (0.9 + 0.2*p.rng.Float64()))
}

// probe runs one check of upstream name and records its result with claim,
// the breaker's permission (zero without breakers).
func (p *Prober) probe(ctx context.Context, name string, t *probeTarget, claim Probe) {
	start := p.clk.Now()
	pctx, cancel := context.WithCancelCause(ctx)
	timer := p.clk.AfterFunc(p.timeout, func() { cancel(ErrProbeTimeout) })
	err := p.check(pctx, name)
	timer.Stop()
	rtt := p.clk.Now().Sub(start)
	timedOut := errors.Is(context.Cause(pctx), ErrProbeTimeout)
	cancel(nil)

	var o outcome.Class
	var errText string
	var oe *OutcomeError
	switch {
	case timedOut:
		o, errText = outcome.ServerError, "timed out after "+p.timeout.String()
	case err == nil:
		o = outcome.Success
	case ctx.Err() != nil:
		o, errText = outcome.Canceled, "prober stopped"
	case errors.As(err, &oe):
		o, errText = oe.Outcome, err.Error()
	default:
		o, errText = outcome.ServerError, err.Error()
	}
	detail := ""
	if errText != "" {
		detail = "probe: " + errText // the breaker's detail
	}

	p.mu.Lock()
	t.inFlight = false
	current := p.byUp[name] == t
	changed := false
	if current && o != outcome.Canceled {
		ok := o == outcome.Success
		changed = t.last.At.IsZero() && !ok || !t.last.At.IsZero() && t.last.OK != ok
		t.last = ProbeResult{At: start, RTT: rtt, Err: errText, OK: ok}
		if o == outcome.Success {
			// At least 1 µs, so that a probe measured as instant on a
			// coarse or fake clock is not mistaken for "unknown".
			t.latencyMs = max(float64(rtt)/float64(time.Millisecond), 0.001)
		}
	}
	p.mu.Unlock()
	if changed && p.onChange != nil {
		p.onChange(name, o == outcome.Success, errText)
	}

	switch {
	case claim.Done == nil:
	case current:
		claim.Done(context.WithoutCancel(ctx), outcome.Of(o, detail))
	default:
		claim.Done(context.WithoutCancel(ctx), outcome.Of(outcome.Canceled, detail)) // gone: only free the slot
	}
}
