package state

import (
	"context"
	"testing"
	"time"

	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/health"
	"switchyard/internal/outcome"
)

// The one specification of the circuit breaker (health.Breakers' doc
// comment), run against both implementations: the Go breaker on a fake
// clock and the Lua one (admit.lua / settle.lua) in a real Redis.

// breakerUnderTest is one implementation, seen through the calls a request
// makes: acquire before sending, record after. An admitted attempt is held
// under a label until its outcome is recorded.
type breakerUnderTest interface {
	// acquire asks for an attempt now and, when admitted, holds it under as.
	acquire(t *testing.T, as string) (ok, probe bool)
	// record ends the oldest attempt held under of with o; with none held,
	// an attempt admitted just now (which must be admitted).
	record(t *testing.T, of string, o outcome.Outcome)
	view(t *testing.T) specView
}

// specView is what both implementations report alike.
type specView struct {
	state  string
	open   bool
	reason string    // compared while not closed
	until  time.Time // compared while open
}

// holds are the attempts admitted and not yet ended, by label, oldest first.
type holds[T any] map[string][]T

// take removes and returns the oldest attempt held under label.
func (h holds[T]) take(label string) (T, bool) {
	var zero T
	q := h[label]
	if len(q) == 0 {
		return zero, false
	}
	h[label] = q[1:]
	return q[0], true
}

// goBreaker is health.Breakers.
type goBreaker struct {
	b    *health.Breakers
	held holds[health.Permit]
}

func (g *goBreaker) acquire(_ *testing.T, as string) (bool, bool) {
	p, ok := g.b.Acquire("u")
	if ok {
		g.held[as] = append(g.held[as], p)
	}
	return ok, p.Probe
}

func (g *goBreaker) record(t *testing.T, of string, o outcome.Outcome) {
	p, ok := g.held.take(of)
	if !ok {
		if p, ok = g.b.Acquire("u"); !ok {
			t.Fatalf("no attempt held under %q, and none admitted now", of)
		}
	}
	g.b.Record("u", p, o)
}

func (g *goBreaker) view(*testing.T) specView {
	v := g.b.View("u")
	return specView{state: v.State.String(), open: v.Open, reason: v.Reason, until: v.Until}
}

// luaBreaker is the shared breaker: Admit and Settle of a Redis.
type luaBreaker struct {
	r    *Redis
	clk  *clock.Fake
	held holds[Ticket]
}

func (l *luaBreaker) acquire(t *testing.T, as string) (bool, bool) {
	tk, d := l.r.Admit(context.Background(), Admission{Upstream: "u"})
	if d != nil {
		return false, false
	}
	if !tk.Shared {
		t.Fatal("Admit was not decided by Redis")
	}
	l.held[as] = append(l.held[as], tk)
	return true, tk.Probe
}

func (l *luaBreaker) record(t *testing.T, of string, o outcome.Outcome) {
	tk, ok := l.held.take(of)
	if !ok {
		if ok, _ = l.acquire(t, of); !ok {
			t.Fatalf("no attempt held under %q, and none admitted now", of)
		}
		tk, _ = l.held.take(of)
	}
	l.r.Settle(tk, Settlement{Outcome: o})
}

func (l *luaBreaker) view(t *testing.T) specView {
	v := syncView(t, l.r, "u")
	sv := specView{state: v.Breaker, open: !v.Admits(l.clk.Now()), reason: v.BreakerReason}
	if sv.open {
		sv.until = v.BreakerUntil
	}
	return sv
}

// specStep advances the clock to at (from t0), then acquires or records,
// then checks the view.
type specStep struct {
	at      time.Duration
	acquire bool
	as      string // the label the acquired attempt is held under
	wantOK  bool   // of acquire
	probe   bool   // of acquire
	record  *outcome.Outcome
	of      string // the label of the attempt whose outcome is recorded
	state   string
	open    bool
	reason  string
	until   time.Duration // from t0, checked while open
}

func rec(c outcome.Class, detail string) *outcome.Outcome { o := outcome.Of(c, detail); return &o }

var (
	srvErr = rec(outcome.ServerError, "status 502")
	authEr = rec(outcome.AuthError, "status 401")
	okay   = rec(outcome.Success, "")
)

const (
	tripped    = "3 failures within 30s, last: status 502"
	authReason = "auth error: status 401"
	probeFail  = "half-open probe failed: status 502"
)

// The label of a request sent before the breaker changed state (a long
// stream), whose outcome arrives late.
const early = "early"

func breakerSpec() []struct {
	name    string
	circuit func(*config.Circuit)
	steps   []specStep
} {
	open := func(at, until time.Duration, reason string, r *outcome.Outcome) specStep {
		return specStep{at: at, record: r, state: "open", open: true, reason: reason, until: until}
	}
	closed := func(at time.Duration, r *outcome.Outcome) specStep {
		return specStep{at: at, record: r, state: "closed"}
	}
	probe := func(at time.Duration) specStep {
		return specStep{at: at, acquire: true, wantOK: true, probe: true, state: "half_open", open: true}
	}
	refused := func(at time.Duration, state string) specStep {
		return specStep{at: at, acquire: true, state: state, open: true}
	}
	// sent holds a request admitted at `at` while closed under early.
	sent := func(at time.Duration) specStep {
		return specStep{at: at, acquire: true, as: early, wantOK: true, state: "closed"}
	}
	// late records the outcome r of the oldest early request at `at`, and
	// checks the view (until only while open).
	late := func(at time.Duration, r *outcome.Outcome, state string, open bool, reason string, until time.Duration) specStep {
		return specStep{at: at, record: r, of: early, state: state, open: open, reason: reason, until: until}
	}
	s := time.Second
	return []struct {
		name    string
		circuit func(*config.Circuit)
		steps   []specStep
	}{
		{"failure_threshold within the window trips", nil, []specStep{
			closed(0, srvErr), closed(s, srvErr), open(2*s, 12*s, tripped, srvErr),
		}},
		{"failures that left the window do not count", nil, []specStep{
			closed(0, srvErr), closed(s, srvErr), closed(30*s, srvErr), open(30*s+s/2, 40*s+s/2, tripped, srvErr),
		}},
		{"an auth error trips at once", nil, []specStep{open(0, 10*s, authReason, authEr)}},
		{"neutral outcomes and successes do not reset the count", nil, []specStep{
			closed(0, srvErr), closed(s, rec(outcome.RateLimited, "429")), closed(s, rec(outcome.ClientError, "400")),
			closed(s, rec(outcome.Canceled, "")), closed(s, okay), closed(s, srvErr), open(2*s, 12*s, tripped, srvErr),
		}},
		{"outcomes while open are ignored", nil, []specStep{
			sent(0), sent(0), sent(0), open(0, 10*s, authReason, authEr),
			late(5*s, okay, "open", true, authReason, 10*s), late(6*s, srvErr, "open", true, authReason, 10*s),
			late(7*s, authEr, "open", true, authReason, 10*s),
		}},
		{"one half-open probe at a time; its success closes", nil, []specStep{
			open(0, 10*s, authReason, authEr), probe(10 * s), refused(10*s, "half_open"),
			closed(11*s, okay), {at: 11 * s, acquire: true, wantOK: true, state: "closed"},
		}},
		{"a failed probe re-opens for double, up to 10×", nil, []specStep{
			open(0, 10*s, authReason, authEr),
			probe(10 * s), open(10*s, 30*s, probeFail, srvErr),
			probe(30 * s), open(30*s, 70*s, probeFail, srvErr),
			probe(70 * s), open(70*s, 150*s, probeFail, srvErr),
			probe(150 * s), open(150*s, 250*s, probeFail, srvErr),
			probe(250 * s), open(250*s, 350*s, authReason, authEr),
		}},
		{"the trip count survives until the breaker stays closed a window", nil, []specStep{
			open(0, 10*s, authReason, authEr), probe(10 * s), closed(10*s, okay),
			open(15*s, 35*s, authReason, authEr),
			probe(35 * s), open(35*s, 75*s, probeFail, srvErr),
			probe(75 * s), open(75*s, 155*s, probeFail, srvErr),
		}},
		{"the trip count restarts after a full closed window", nil, []specStep{
			open(0, 10*s, authReason, authEr), probe(10 * s), closed(10*s, okay),
			open(40*s, 50*s, authReason, authEr),
		}},
		{"success_threshold probes, one per probe_interval", func(c *config.Circuit) { c.SuccessThreshold = 2 }, []specStep{
			open(0, 10*s, authReason, authEr), probe(10 * s),
			{at: 10 * s, record: okay, state: "half_open", open: true}, refused(14*s, "half_open"),
			probe(15 * s), closed(15*s, okay),
		}},
		{"a neutral outcome frees the probe slot without deciding", nil, []specStep{
			open(0, 10*s, authReason, authEr), probe(10 * s),
			{at: 10 * s, record: rec(outcome.RateLimited, "429"), state: "half_open", open: true},
			refused(14*s, "half_open"), probe(15 * s), closed(15*s, okay),
		}},
		{"a probe never settled frees its slot after the lease", nil, []specStep{
			open(0, 10*s, authReason, authEr), probe(10 * s), refused(12*s, "half_open"),
			probe(15 * s), closed(15*s, okay),
		}},
		{"open shorter than probe_interval: the next probe waits for it", func(c *config.Circuit) { c.OpenDuration = 2 * s }, []specStep{
			open(0, 2*s, authReason, authEr), probe(2 * s),
			open(2*s, 7*s, probeFail, srvErr), // open until 6 s, next probe at 7 s
			refused(6*s, "half_open"), probe(7 * s), closed(7*s, okay),
		}},
		// Generations: an outcome counts only in the generation (the run
		// between two state changes) its request was admitted in.
		{"a late failure in half-open is not the probe's and does not re-trip", nil, []specStep{
			sent(0), open(s, 11*s, authReason, authEr), probe(11 * s),
			late(12*s, srvErr, "half_open", true, "", 0), // the probe is still out
			open(13*s, 33*s, probeFail, srvErr),          // the probe's own failure: trip 2, 2 × 10 s
		}},
		{"a late auth error in half-open does not re-trip", nil, []specStep{
			sent(0), open(s, 11*s, authReason, authEr), probe(11 * s),
			late(12*s, authEr, "half_open", true, "", 0), closed(13*s, okay),
		}},
		{"a late success in half-open does not close it or take the probe's place", nil, []specStep{
			sent(0), open(s, 11*s, authReason, authEr),
			late(11*s, okay, "half_open", false, "", 0), // still half-open, the probe due
			probe(11 * s), open(12*s, 32*s, probeFail, srvErr),
		}},
		{"late failures do not count in the closed run after recovery", nil, []specStep{
			sent(0), sent(0), open(s, 11*s, authReason, authEr), probe(11 * s), closed(11*s, okay),
			late(12*s, srvErr, "closed", false, "", 0), late(12*s, srvErr, "closed", false, "", 0),
			closed(13*s, srvErr), closed(13*s, srvErr), open(14*s, 34*s, tripped, srvErr), // trip 2: closed < window
		}},
		{"a late outcome from before the open period ends is ignored when it ends half-open", nil, []specStep{
			sent(0), open(s, 11*s, authReason, authEr),
			late(20*s, srvErr, "half_open", false, "", 0), probe(20 * s), closed(20*s, okay),
		}},
	}
}

func TestBreakerSpec(t *testing.T) {
	impls := []struct {
		name string
		make func(t *testing.T, c config.Circuit, clk *clock.Fake) breakerUnderTest
	}{
		{"go", func(_ *testing.T, c config.Circuit, clk *clock.Fake) breakerUnderTest {
			return &goBreaker{b: health.NewBreakers(c, clk, health.WithProbeLease(testLeaseTTL)), held: holds[health.Permit]{}}
		}},
		{"lua", func(t *testing.T, c config.Circuit, clk *clock.Fake) breakerUnderTest {
			return &luaBreaker{r: newTestRedis(t, c, clk), clk: clk, held: holds[Ticket]{}}
		}},
	}
	for _, tc := range breakerSpec() {
		for _, impl := range impls {
			t.Run(impl.name+"/"+tc.name, func(t *testing.T) {
				c := testCircuit
				if tc.circuit != nil {
					tc.circuit(&c)
				}
				clk := clock.NewFake(t0)
				b := impl.make(t, c, clk)
				for i, s := range tc.steps {
					if at := t0.Add(s.at); at.After(clk.Now()) {
						clk.Advance(at.Sub(clk.Now()))
					}
					if s.acquire {
						if ok, probe := b.acquire(t, s.as); ok != s.wantOK || probe != s.probe {
							t.Fatalf("step %d at %v: acquire = %v, probe %v; want %v, %v", i, s.at, ok, probe, s.wantOK, s.probe)
						}
					}
					if s.record != nil {
						b.record(t, s.of, *s.record)
					}
					got := b.view(t)
					want := specView{state: s.state, open: s.open, reason: s.reason}
					if s.state == "open" {
						want.until = t0.Add(s.until)
					} else {
						got.until = time.Time{}
					}
					if s.state == "closed" {
						got.reason = ""
					}
					if s.state == "half_open" && s.reason == "" {
						got.reason = ""
					}
					got.until, want.until = got.until.UTC(), want.until.UTC()
					if got != want {
						t.Fatalf("step %d at %v: view = %+v, want %+v", i, s.at, got, want)
					}
				}
			})
		}
	}
}
