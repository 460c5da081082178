package health

import (
	"fmt"
	"sync"
	"time"

	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/outcome"
)

// State is a circuit breaker's state.
type State uint8

// Breaker states (seed 000's CLOSED / OPEN / HALF_OPEN).
const (
	// Closed lets every request through and counts failures in the window.
	Closed State = iota
	// Open rejects every request until its open period ends.
	Open
	// HalfOpen lets one probe request through per probe_interval; the probes'
	// outcomes decide whether it closes or opens again.
	HalfOpen
)

var stateNames = [...]string{"closed", "open", "half_open"}

// String returns "closed", "open" or "half_open", the names used by the
// admin API, logs and metrics.
func (s State) String() string {
	if int(s) < len(stateNames) {
		return stateNames[s]
	}
	return "unknown"
}

// MarshalText encodes s as its String, so JSON shows "half_open", not 2.
func (s State) MarshalText() ([]byte, error) { return []byte(s.String()), nil }

const (
	// maxOpenFactor caps the doubling open duration at 10 × open_duration.
	maxOpenFactor = 10
	// slowStartFloor is the effective-weight factor right after closing.
	slowStartFloor = 0.1
	// DefaultProbeLease is how long a claimed half-open probe slot stays
	// claimed when its outcome is never recorded (see WithProbeLease). It
	// matches the default whole-request timeout (defaults.timeout, 300 s).
	DefaultProbeLease = 5 * time.Minute
)

// Breakers holds one circuit breaker per upstream name. Safe for concurrent
// use; a nil entry (an upstream never seen failing, or forgotten) is closed.
//
// The state machine. CLOSED lets everything through and keeps the times of
// the last failure_threshold failures (outcome.ServerError outcomes); when
// failure_threshold of them fall within `window` (a sliding count, so
// successes in between do not reset it) the breaker trips to OPEN — seed 002's
// "30 秒内 5 次 5xx → 熔断 60 秒". An outcome.AuthError (401/403) trips it at once and
// its reason is kept ("auth error: status 401"). OPEN rejects every request
// for its open period: open_duration × 2^(trips-1), capped at 10 ×
// open_duration, where trips counts the trips since the breaker last stayed
// closed for a full window (so a flapping upstream waits 1×, 2×, 4×, 8×, 10×,
// 10×…; the count resets to 0 once the breaker has been closed for `window`).
// When the open period ends it becomes HALF_OPEN (seed 000's
// filterByCircuitBreaker table: OPEN passes once elapsed ≥ openDuration,
// HALF_OPEN once elapsed ≥ probeInterval): one caller at a time claims the
// probe slot with Acquire, at most once per probe_interval (counted from the
// previous probe, across re-opens, so a failing upstream receives at most
// one probe per probe_interval whatever open_duration is); the probe's
// outcome decides — success_threshold successes (consecutive: any failure
// re-opens) close it, an outcome.ServerError or outcome.AuthError re-opens it with the next,
// doubled open period, and an outcome.RateLimited, outcome.ClientError or outcome.Canceled outcome
// frees the slot without deciding (the next probe is still due one
// probe_interval after the previous one was claimed). After closing, the
// effective-weight factor View.SlowStart ramps linearly from 0.1 to 1 over
// slow_start, so a recovered upstream is not flooded at once.
// outcome.Success, outcome.ClientError, outcome.RateLimited and
// outcome.Canceled never count as failures.
//
// Generations (as sony/gobreaker keeps them). Every state change — a trip,
// the end of the open period, closing — starts a new generation. Acquire
// hands out a Permit naming the generation the attempt was admitted in, and
// Record counts its outcome only in that generation: an outcome that
// arrives after the state changed is ignored. So a long stream sent while
// CLOSED that ends in a 5xx after the breaker tripped, waited out its open
// period and went HALF_OPEN is neither taken for the probe's result nor
// re-trips the breaker (which would double its open period); only the
// probe's own outcome decides. Outcomes recorded while OPEN are therefore
// always ignored (nothing is admitted while OPEN). A caller that counts
// attempts another breaker admitted (state.driver: redis keeps its local
// breakers warm this way) takes a Permit with Current: it claims nothing,
// and in HALF_OPEN its outcome decides like the probe's.
//
// Transitions out of OPEN, the expiry of a probe lease and the reset of the
// trip count happen lazily, on the next View, Acquire, Record or States call
// that looks at the breaker; OnTransition (WithOnTransition) fires then.
//
// Locking: Breakers.mu guards the map only; each breaker has its own mutex
// guarding its fields, so upstreams never contend with each other. The map
// lock is always released before an entry's lock is taken, and the
// OnTransition hook runs with no lock held.
type Breakers struct {
	clock        clock.Clock
	cfg          config.Circuit
	onTransition func(name string, from, to State, reason string)
	probeLease   time.Duration

	mu   sync.RWMutex // guards byUp (the map, not the breakers in it)
	byUp map[string]*breaker
}

// breaker is the state of one upstream's circuit breaker.
type breaker struct {
	mu sync.Mutex // guards every field below

	state  State
	gen    uint64 // the generation: advanced by every state change
	reason string // why it last tripped
	trips  int    // trips since it last stayed closed for a full window

	// CLOSED: a ring of the last len(fails) failure times.
	fails []time.Time
	nfail int // valid entries in fails
	next  int // index the next failure is written to (the oldest when full)

	until time.Time // OPEN: end of the open period

	// HALF_OPEN: the probe slot.
	probeNext time.Time // when the next probe may be claimed
	probeHeld bool      // a probe has been claimed and its outcome is pending
	probeAt   time.Time // when the held probe was claimed (for the lease)
	successes int       // probe successes so far

	closedAt time.Time // when it last closed from HALF_OPEN; zero if never
}

// Option configures Breakers.
type Option func(*Breakers)

// WithOnTransition sets a hook called on every state change with the
// upstream, the old and new states and a reason (the trip reason for a
// transition to Open). It runs synchronously in the goroutine that observed
// the transition, with no lock held; it must be quick and may call back into
// Breakers. Transitions out of OPEN are observed lazily (see Breakers).
func WithOnTransition(f func(name string, from, to State, reason string)) Option {
	return func(b *Breakers) { b.onTransition = f }
}

// WithProbeLease sets how long a half-open probe slot claimed by Acquire
// stays claimed when no outcome is ever recorded for it (a caller bug or a
// crash); after that the slot is free again, without a decision. Default
// DefaultProbeLease; 0 or less means forever. Set it above the longest a
// request may take (defaults.timeout), or a second probe may overlap the first.
func WithProbeLease(d time.Duration) Option {
	return func(b *Breakers) { b.probeLease = d }
}

// NewBreakers returns breakers configured by cfg, timed by clk. A field of
// cfg that is zero or negative takes its config.Default value, except
// SlowStart, where 0 turns slow start off.
func NewBreakers(cfg config.Circuit, clk clock.Clock, opts ...Option) *Breakers {
	def := config.Default().Circuit
	if cfg.FailureThreshold < 1 {
		cfg.FailureThreshold = def.FailureThreshold
	}
	if cfg.Window <= 0 {
		cfg.Window = def.Window
	}
	if cfg.OpenDuration <= 0 {
		cfg.OpenDuration = def.OpenDuration
	}
	if cfg.ProbeInterval <= 0 {
		cfg.ProbeInterval = def.ProbeInterval
	}
	if cfg.SuccessThreshold < 1 {
		cfg.SuccessThreshold = def.SuccessThreshold
	}
	if cfg.SlowStart < 0 {
		cfg.SlowStart = 0
	}
	b := &Breakers{clock: clk, cfg: cfg, probeLease: DefaultProbeLease, byUp: map[string]*breaker{}}
	for _, o := range opts {
		o(b)
	}
	return b
}

// Permit is one attempt's standing with a breaker: the generation it was
// admitted in (see Breakers) and whether it holds the half-open probe slot.
// The zero Permit is of the first generation of a breaker that never
// changed state.
type Permit struct {
	gen uint64
	// Probe is true when the attempt holds the half-open probe slot.
	Probe bool
}

// Acquire claims the right to send one request to upstream name now; call it
// right before dispatch. It always succeeds while CLOSED and never while
// OPEN. While HALF_OPEN it claims the probe slot if a probe is due and no
// other is in flight, and reports p.Probe; of any number of concurrent
// callers exactly one gets it. A caller whose Acquire returned ok must
// Record the outcome with p (outcome.Canceled if it ends up not sending),
// which frees or decides the probe slot.
func (b *Breakers) Acquire(name string) (p Permit, ok bool) {
	br := b.lookup(name)
	if br == nil {
		return Permit{}, true
	}
	now := b.clock.Now()
	var tr transitions
	br.mu.Lock()
	b.advanceLocked(br, now, &tr)
	p.gen = br.gen
	switch br.state {
	case Closed:
		ok = true
	case HalfOpen:
		if !br.probeHeld && !now.Before(br.probeNext) {
			br.probeHeld, br.probeAt = true, now
			br.probeNext = now.Add(b.cfg.ProbeInterval)
			ok, p.Probe = true, true
		}
	}
	br.mu.Unlock()
	b.fire(name, &tr)
	return p, ok
}

// Current returns a Permit of upstream name's generation now without
// asking or claiming anything: for an attempt another breaker admitted,
// whose outcome this one should still hear (see Breakers).
func (b *Breakers) Current(name string) Permit {
	br := b.lookup(name)
	if br == nil {
		return Permit{}
	}
	var tr transitions
	br.mu.Lock()
	b.advanceLocked(br, b.clock.Now(), &tr)
	p := Permit{gen: br.gen}
	br.mu.Unlock()
	b.fire(name, &tr)
	return p
}

// Record feeds the outcome of one attempt on upstream name, admitted with
// p, into its breaker (see Breakers for what each outcome class does in
// each state); it is ignored when the breaker has changed state since p
// was issued. res.Detail describes the failure ("status 401", "connection
// refused") and goes into the reason.
func (b *Breakers) Record(name string, p Permit, res outcome.Outcome) {
	br := b.lookup(name)
	if br == nil {
		if o := res.Class; o != outcome.ServerError && o != outcome.AuthError {
			return // nothing to count, and nothing to free
		}
		br = b.create(name)
	}
	now := b.clock.Now()
	var tr transitions
	br.mu.Lock()
	b.advanceLocked(br, now, &tr)
	if p.gen == br.gen { // an outcome of an earlier generation counts nowhere
		b.recordLocked(br, now, res, &tr)
	}
	br.mu.Unlock()
	b.fire(name, &tr)
}

// recordLocked applies an outcome of br's current generation at now. br.mu
// must be held and advanceLocked applied.
func (b *Breakers) recordLocked(br *breaker, now time.Time, res outcome.Outcome, tr *transitions) {
	switch br.state {
	case Closed:
		switch res.Class {
		case outcome.AuthError:
			b.tripLocked(br, now, authReason(res.Detail), tr)
		case outcome.ServerError:
			if b.addFailureLocked(br, now) {
				b.tripLocked(br, now, b.failureReason(res.Detail), tr)
			}
		}
	case HalfOpen:
		switch res.Class {
		case outcome.Success:
			br.probeHeld = false
			br.successes++
			if br.successes >= b.cfg.SuccessThreshold {
				b.closeLocked(br, now, tr)
			}
		case outcome.AuthError:
			b.tripLocked(br, now, authReason(res.Detail), tr)
		case outcome.ServerError:
			b.tripLocked(br, now, probeReason(res.Detail), tr)
		case outcome.ClientError, outcome.RateLimited, outcome.Canceled:
			br.probeHeld = false
		}
	}
}

// Forget drops the breaker of an upstream that no longer exists; a later
// Record starts it afresh, closed.
func (b *Breakers) Forget(name string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.byUp, name)
}

// lookup returns the breaker of name, or nil.
func (b *Breakers) lookup(name string) *breaker {
	b.mu.RLock()
	br := b.byUp[name]
	b.mu.RUnlock()
	return br
}

// create returns the breaker of name, adding a closed one if there is none.
func (b *Breakers) create(name string) *breaker {
	b.mu.Lock()
	defer b.mu.Unlock()
	br := b.byUp[name]
	if br == nil {
		br = &breaker{fails: make([]time.Time, b.cfg.FailureThreshold)}
		b.byUp[name] = br
	}
	return br
}

// advanceLocked applies the transitions that time alone causes: OPEN →
// HALF_OPEN once the open period is over, the expiry of a probe lease, and
// the reset of the trip count after a full window closed. br.mu must be held.
func (b *Breakers) advanceLocked(br *breaker, now time.Time, tr *transitions) {
	switch br.state {
	case Open:
		if now.Before(br.until) {
			return
		}
		br.state = HalfOpen
		br.gen++
		// The first probe is due at once, unless the previous probe (before
		// a re-open) was claimed less than probe_interval ago: at most one
		// probe per probe_interval, even when open_duration is shorter.
		if br.probeNext.Before(br.until) {
			br.probeNext = br.until
		}
		br.probeHeld = false
		br.successes = 0
		tr.add(Open, HalfOpen, "open period over")
	case HalfOpen:
		if br.probeHeld && b.probeLease > 0 && now.Sub(br.probeAt) >= b.probeLease {
			br.probeHeld = false
		}
	case Closed:
		if br.trips > 0 && now.Sub(br.closedAt) >= b.cfg.Window {
			br.trips = 0
		}
	}
}

// addFailureLocked records a failure at now in br's ring and reports whether
// failure_threshold failures now fall within the window. br.mu must be held.
func (b *Breakers) addFailureLocked(br *breaker, now time.Time) bool {
	br.fails[br.next] = now
	br.next = (br.next + 1) % len(br.fails)
	if br.nfail < len(br.fails) {
		br.nfail++
	}
	// When the ring is full, next indexes the oldest of the last
	// failure_threshold failures.
	return br.nfail == len(br.fails) && now.Sub(br.fails[br.next]) < b.cfg.Window
}

// failuresLocked counts br's failures within the window ending at now. br.mu
// must be held.
func (b *Breakers) failuresLocked(br *breaker, now time.Time) int {
	n := 0
	for i := 0; i < br.nfail; i++ {
		if now.Sub(br.fails[i]) < b.cfg.Window {
			n++
		}
	}
	return n
}

// tripLocked opens br at now for the open period of its next trip. br.mu must
// be held.
func (b *Breakers) tripLocked(br *breaker, now time.Time, reason string, tr *transitions) {
	from := br.state
	br.trips++
	br.state = Open
	br.gen++
	br.until = now.Add(b.openDuration(br.trips))
	br.reason = reason
	br.nfail, br.next = 0, 0
	br.probeHeld, br.successes = false, 0
	tr.add(from, Open, reason)
}

// closeLocked closes br at now, starting its slow start. br.mu must be held.
func (b *Breakers) closeLocked(br *breaker, now time.Time, tr *transitions) {
	br.state = Closed
	br.gen++
	br.closedAt = now
	br.nfail, br.next = 0, 0
	br.probeHeld, br.successes = false, 0
	tr.add(HalfOpen, Closed, "probes succeeded")
}

// openDuration returns the open period of trip n ≥ 1: open_duration ×
// 2^(n-1), capped at maxOpenFactor × open_duration.
func (b *Breakers) openDuration(n int) time.Duration {
	d, limit := b.cfg.OpenDuration, maxOpenFactor*b.cfg.OpenDuration
	for i := 1; i < n && d < limit; i++ {
		d *= 2
	}
	return min(d, limit)
}

func (b *Breakers) failureReason(detail string) string { return failureReason(b.cfg, detail) }

func failureReason(c config.Circuit, detail string) string {
	if detail == "" {
		return fmt.Sprintf("%d failures within %s", c.FailureThreshold, c.Window)
	}
	return fmt.Sprintf("%d failures within %s, last: %s", c.FailureThreshold, c.Window, detail)
}

// TripReason returns the reason a breaker configured by c records when an
// outcome of class o with detail trips it: an auth error in any state, a
// server error while closed (the last of failure_threshold), or, with
// halfOpen, a server error as the failed probe. A shared breaker (the Lua
// scripts of internal/state) takes its reasons from here, so that both
// implementations word them alike.
func TripReason(c config.Circuit, o outcome.Class, detail string, halfOpen bool) string {
	switch {
	case o == outcome.AuthError:
		return authReason(detail)
	case halfOpen:
		return probeReason(detail)
	}
	return failureReason(c, detail)
}

func authReason(detail string) string { return "auth error: " + detail }

func probeReason(detail string) string { return "half-open probe failed: " + detail }

// fire calls the OnTransition hook for each transition in tr; no lock may be
// held.
func (b *Breakers) fire(name string, tr *transitions) {
	if b.onTransition == nil {
		return
	}
	for _, t := range tr.ev[:tr.n] {
		b.onTransition(name, t.from, t.to, t.reason)
	}
}

// transitions collects the state changes of one call, to be reported once
// the breaker's lock is released. One call makes at most two (OPEN →
// HALF_OPEN by time, then HALF_OPEN → CLOSED or OPEN by the outcome).
type transitions struct {
	n  int
	ev [2]transition
}

type transition struct {
	from, to State
	reason   string
}

func (t *transitions) add(from, to State, reason string) {
	if t.n < len(t.ev) {
		t.ev[t.n] = transition{from, to, reason}
		t.n++
	}
}
