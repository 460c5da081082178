package health

import (
	"fmt"
	"math"
	"strings"
	"sync"
	"testing"
	"time"

	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/outcome"
)

var t0 = time.Unix(1_000_000, 0)

// testCircuit is the default circuit (docs/config.md#circuit) with slow start
// off unless a test turns it on.
func testCircuit() config.Circuit {
	return config.Circuit{
		FailureThreshold: 5, Window: 30 * time.Second, OpenDuration: 60 * time.Second,
		ProbeInterval: 10 * time.Second, SuccessThreshold: 1,
	}
}

// record feeds o to b as the outcome of an attempt on name admitted in the
// breaker's current generation.
func record(b *Breakers, name string, o outcome.Outcome) { b.Record(name, b.Current(name), o) }

// harness drives one breaker "u" with a fake clock and records transitions.
type harness struct {
	t    *testing.T
	fc   *clock.Fake
	b    *Breakers
	mu   sync.Mutex
	seen []string // "from→to: reason"
}

func newHarness(t *testing.T, cfg config.Circuit, opts ...Option) *harness {
	h := &harness{t: t, fc: clock.NewFake(t0)}
	opts = append([]Option{WithOnTransition(func(name string, from, to State, reason string) {
		_ = h.b.View(name) // the hook may call back into Breakers
		h.mu.Lock()
		h.seen = append(h.seen, fmt.Sprintf("%s→%s: %s", from, to, reason))
		h.mu.Unlock()
	})}, opts...)
	h.b = NewBreakers(cfg, h.fc, opts...)
	return h
}

// elapsed is the fake time since t0.
func (h *harness) elapsed() time.Duration { return h.fc.Now().Sub(t0) }

// op is one step of a timeline.
type op struct {
	desc string
	run  func(h *harness) error
}

// at advances the fake clock to t0+d.
func at(d time.Duration) op {
	return op{"at " + d.String(), func(h *harness) error {
		if e := h.elapsed(); d < e {
			return fmt.Errorf("timeline goes back: at %s after %s", d, e)
		}
		h.fc.Advance(d - h.elapsed())
		return nil
	}}
}

func rec(o outcome.Class, detail string) op {
	return op{"record " + o.String(), func(h *harness) error { record(h.b, "u", outcome.Of(o, detail)); return nil }}
}

func recN(n int, o outcome.Class) op {
	return op{fmt.Sprintf("record %d × %s", n, o), func(h *harness) error {
		for range n {
			record(h.b, "u", outcome.Of(o, "x"))
		}
		return nil
	}}
}

func acquire(wantOK, wantProbe bool) op {
	return op{fmt.Sprintf("acquire → %v,%v", wantOK, wantProbe), func(h *harness) error {
		if p, ok := h.b.Acquire("u"); ok != wantOK || p.Probe != wantProbe {
			return fmt.Errorf("Acquire = %v,%v", ok, p.Probe)
		}
		return nil
	}}
}

// want checks View's State and Open, and Until as an offset from t0 (-1 =
// zero time).
func want(s State, open bool, until time.Duration) op {
	return op{fmt.Sprintf("want %s open=%v until=%s", s, open, until), func(h *harness) error {
		v := h.b.View("u")
		wantUntil := time.Time{}
		if until >= 0 {
			wantUntil = t0.Add(until)
		}
		if v.State != s || v.Open != open || !v.Until.Equal(wantUntil) {
			return fmt.Errorf("view = %s open=%v until=%v", v.State, v.Open, v.Until.Sub(t0))
		}
		return nil
	}}
}

// check asserts something else about the View.
func check(desc string, f func(v View) bool) op {
	return op{desc, func(h *harness) error {
		if v := h.b.View("u"); !f(v) {
			return fmt.Errorf("view %+v", v)
		}
		return nil
	}}
}

func wantTransitions(seen ...string) op {
	return op{"transitions", func(h *harness) error {
		h.mu.Lock()
		defer h.mu.Unlock()
		if strings.Join(h.seen, "\n") != strings.Join(seen, "\n") {
			return fmt.Errorf("transitions:\n%s\nwant:\n%s", strings.Join(h.seen, "\n"), strings.Join(seen, "\n"))
		}
		return nil
	}}
}

const never = -1

func TestBreakerTimeline(t *testing.T) {
	s := time.Second
	threeIn30 := testCircuit()
	threeIn30.FailureThreshold = 3
	two := testCircuit()
	two.SuccessThreshold = 2
	tests := []struct {
		name string
		cfg  config.Circuit
		ops  []op
	}{
		{"failures within the window open it", threeIn30, []op{
			rec(outcome.ServerError, "status 502"), want(Closed, false, never),
			at(10 * s), rec(outcome.ServerError, "status 502"),
			check("2 failures counted", func(v View) bool { return v.Failures == 2 }),
			at(29*s + 999*time.Millisecond), rec(outcome.ServerError, "status 502"),
			want(Open, true, 89*s+999*time.Millisecond),
			check("reason names the threshold and the last failure", func(v View) bool {
				return v.Reason == "3 failures within 30s, last: status 502" && v.Trips == 1
			}),
			wantTransitions("closed→open: 3 failures within 30s, last: status 502"),
		}},
		{"failures that slid out of the window do not count", threeIn30, []op{
			rec(outcome.ServerError, "a"), at(10 * s), rec(outcome.ServerError, "b"),
			at(30 * s), rec(outcome.ServerError, "c"), // the first one (at 0) is out: 30s is not within 30s
			want(Closed, false, never),
			check("2 failures within the window", func(v View) bool { return v.Failures == 2 }),
			at(39*s + 999*time.Millisecond), rec(outcome.ServerError, "d"), // 10s, 30s, 39.999s
			want(Open, true, 99*s+999*time.Millisecond),
		}},
		{"successes between failures do not reset the count", threeIn30, []op{
			rec(outcome.ServerError, "a"), rec(outcome.Success, ""), rec(outcome.ServerError, "b"), recN(10, outcome.Success),
			want(Closed, false, never), rec(outcome.ServerError, "c"), want(Open, true, 60*s),
		}},
		{"429, client errors and cancels never trip it", threeIn30, []op{
			recN(100, outcome.RateLimited), recN(100, outcome.ClientError), recN(100, outcome.Canceled), recN(100, outcome.Success),
			want(Closed, false, never), acquire(true, false),
			check("no failures", func(v View) bool { return v.Failures == 0 && v.Trips == 0 }),
		}},
		{"auth error opens at once with its reason", testCircuit(), []op{
			rec(outcome.AuthError, "status 401"), want(Open, true, 60*s),
			check("reason kept", func(v View) bool { return v.Reason == "auth error: status 401" }),
			acquire(false, false),
		}},
		{"open for open_duration, then one probe closes it", testCircuit(), []op{
			rec(outcome.AuthError, "status 403"),
			at(59*s + 999*time.Millisecond), want(Open, true, 60*s), acquire(false, false),
			at(60 * s), want(HalfOpen, false, never), // the probe is due
			acquire(true, true), want(HalfOpen, true, 70*s), acquire(false, false),
			check("probe in flight", func(v View) bool { return v.ProbeInFlight }),
			rec(outcome.Success, ""), want(Closed, false, never), acquire(true, false),
			wantTransitions("closed→open: auth error: status 403", "open→half_open: open period over", "half_open→closed: probes succeeded"),
		}},
		{"outcomes recorded while open are ignored", threeIn30, []op{
			recN(3, outcome.ServerError), at(30 * s), recN(5, outcome.Success), recN(5, outcome.ServerError), rec(outcome.AuthError, "late"),
			want(Open, true, 60*s),
			check("first reason kept", func(v View) bool { return strings.HasPrefix(v.Reason, "3 failures") && v.Trips == 1 }),
		}},
		{"success_threshold 2 needs two probe successes", two, []op{
			rec(outcome.AuthError, "status 401"), at(60 * s), acquire(true, true), rec(outcome.Success, ""),
			want(HalfOpen, true, 70*s), acquire(false, false),
			check("one success so far", func(v View) bool { return v.ProbeSuccesses == 1 && !v.ProbeInFlight }),
			at(70 * s), acquire(true, true), rec(outcome.Success, ""), want(Closed, false, never),
		}},
		{"success_threshold 2: a failure between the successes re-opens", two, []op{
			rec(outcome.AuthError, "status 401"), at(60 * s), acquire(true, true), rec(outcome.Success, ""),
			at(70 * s), acquire(true, true), rec(outcome.ServerError, "status 503"),
			want(Open, true, 190*s), // second trip: 2 × 60s
			check("reason and trips", func(v View) bool {
				return v.Reason == "half-open probe failed: status 503" && v.Trips == 2 && v.ProbeSuccesses == 0
			}),
		}},
		{"neutral outcomes free the probe slot without deciding", testCircuit(), []op{
			rec(outcome.AuthError, "status 401"),
			at(60 * s), acquire(true, true), rec(outcome.RateLimited, "429"),
			want(HalfOpen, true, 70*s), // free, but the next probe is due one interval after the last
			check("slot free", func(v View) bool { return !v.ProbeInFlight }),
			at(70 * s), acquire(true, true), rec(outcome.ClientError, "400"),
			at(80 * s), acquire(true, true), rec(outcome.Canceled, ""),
			at(90 * s), acquire(true, true), rec(outcome.Success, ""), want(Closed, false, never),
		}},
		{"a probe in flight blocks the next one until its outcome", testCircuit(), []op{
			rec(outcome.AuthError, "status 401"), at(60 * s), acquire(true, true),
			at(95 * s), acquire(false, false), want(HalfOpen, true, 105*s),
			rec(outcome.Success, ""), want(Closed, false, never),
		}},
		{"auth error in half-open re-opens with its reason", testCircuit(), []op{
			rec(outcome.ServerError, "x"), recN(4, outcome.ServerError), at(60 * s), acquire(true, true), rec(outcome.AuthError, "status 401"),
			want(Open, true, 180*s),
			check("auth reason", func(v View) bool { return v.Reason == "auth error: status 401" && v.Trips == 2 }),
		}},
		{"a half-open outcome counts without Acquire (callers that never claim)", testCircuit(), []op{
			rec(outcome.AuthError, "status 401"), at(60 * s), rec(outcome.Success, ""), want(Closed, false, never),
		}},
		{"trip count resets once closed for a full window", testCircuit(), []op{
			rec(outcome.AuthError, "a"), at(60 * s), rec(outcome.ServerError, "b"), // trip 2 → open until 180s
			at(180 * s), rec(outcome.Success, ""),
			check("closed, trips remembered", func(v View) bool { return v.State == Closed && v.Trips == 2 }),
			at(209 * s), rec(outcome.AuthError, "c"), want(Open, true, 209*s+240*time.Second), // trip 3: 4×
			at(449 * s), rec(outcome.Success, ""), // closed at 449s
			at(479 * s), // a full window later
			check("trips reset", func(v View) bool { return v.State == Closed && v.Trips == 0 }),
			rec(outcome.AuthError, "d"), want(Open, true, 539*s), // trip 1 again: 1×
		}},
		{"open_duration shorter than probe_interval: one probe per interval", func() config.Circuit {
			c := testCircuit()
			c.OpenDuration = s
			return c
		}(), []op{
			rec(outcome.AuthError, "status 401"), at(s), acquire(true, true), rec(outcome.ServerError, "status 500"),
			want(Open, true, 11*s), // open until 3 s (2 × 1 s), but the next probe is due at 11 s
			at(3 * s), want(HalfOpen, true, 11*s), acquire(false, false),
			at(11 * s), acquire(true, true), rec(outcome.ServerError, "status 500"), want(Open, true, 21*s),
		}},
		{"an unclaimed probe lease expires", testCircuit(), []op{
			rec(outcome.AuthError, "status 401"), at(60 * s), acquire(true, true),
			at(60*s + DefaultProbeLease - time.Millisecond), acquire(false, false),
			at(60*s + DefaultProbeLease), want(HalfOpen, false, never), acquire(true, true),
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, tc.cfg)
			for i, o := range tc.ops {
				if err := o.run(h); err != nil {
					t.Fatalf("step %d (%s) at %s: %v", i, o.desc, h.elapsed(), err)
				}
			}
		})
	}
}

func TestBreakerOpenDurationDoubles(t *testing.T) {
	cfg := testCircuit()
	h := newHarness(t, cfg)
	record(h.b, "u", outcome.Of(outcome.AuthError, "status 401"))
	// Each re-open waits 1×, 2×, 4×, 8×, then 10× (capped) the open duration.
	factors := []int{1, 2, 4, 8, 10, 10, 10}
	for i, f := range factors {
		v := h.b.View("u")
		if v.State != Open || v.Trips != i+1 {
			t.Fatalf("trip %d: view %+v", i+1, v)
		}
		if got, want := v.Until.Sub(h.fc.Now()), time.Duration(f)*cfg.OpenDuration; got != want {
			t.Fatalf("trip %d: open for %s, want %s (%d×)", i+1, got, want, f)
		}
		h.fc.Advance(v.Until.Sub(h.fc.Now()))
		p, ok := h.b.Acquire("u")
		if !ok || !p.Probe {
			t.Fatalf("trip %d: no probe when the open period ended", i+1)
		}
		h.b.Record("u", p, outcome.Of(outcome.ServerError, "status 500"))
	}
}

func TestBreakerSlowStart(t *testing.T) {
	tests := []struct {
		name      string
		slowStart time.Duration
		after     time.Duration
		want      float64
	}{
		{"at 0%", 40 * time.Second, 0, 0.1},
		{"at 25%", 40 * time.Second, 10 * time.Second, 0.325},
		{"at 50%", 40 * time.Second, 20 * time.Second, 0.55},
		{"at 75%", 40 * time.Second, 30 * time.Second, 0.775},
		{"at 100%", 40 * time.Second, 40 * time.Second, 1},
		{"long after", 40 * time.Second, time.Hour, 1},
		{"off", 0, 0, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testCircuit()
			cfg.SlowStart = tc.slowStart
			h := newHarness(t, cfg)
			if v := h.b.View("u"); v.SlowStart != 1 {
				t.Fatalf("never tripped: slow start %v, want 1", v.SlowStart)
			}
			record(h.b, "u", outcome.Of(outcome.AuthError, "status 401"))
			if v := h.b.View("u"); v.SlowStart != 1 {
				t.Fatalf("open: slow start %v, want 1", v.SlowStart)
			}
			h.fc.Advance(cfg.OpenDuration)
			h.b.Acquire("u")
			record(h.b, "u", outcome.Of(outcome.Success, "")) // closes now
			h.fc.Advance(tc.after)
			if v := h.b.View("u"); v.State != Closed || math.Abs(v.SlowStart-tc.want) > 1e-9 {
				t.Fatalf("%s after closing: state %s, slow start %v, want %v", tc.after, v.State, v.SlowStart, tc.want)
			}
		})
	}
}

func TestBreakerOneProbePerIntervalUnderConcurrency(t *testing.T) {
	const callers = 10
	cfg := testCircuit()
	h := newHarness(t, cfg)
	record(h.b, "u", outcome.Of(outcome.AuthError, "status 401"))
	h.fc.Advance(cfg.OpenDuration)
	burst := func() (oks, probes int) {
		var wg sync.WaitGroup
		var mu sync.Mutex
		start := make(chan struct{})
		for range callers {
			wg.Add(1)
			go func() {
				defer wg.Done()
				<-start
				p, ok := h.b.Acquire("u")
				probe := p.Probe
				mu.Lock()
				defer mu.Unlock()
				if ok {
					oks++
				}
				if probe {
					probes++
				}
			}()
		}
		close(start)
		wg.Wait()
		return oks, probes
	}
	for i := range 20 {
		if oks, probes := burst(); oks != 1 || probes != 1 {
			t.Fatalf("interval %d: %d of %d concurrent Acquire calls succeeded (%d probes), want exactly 1", i, oks, callers, probes)
		}
		record(h.b, "u", outcome.Of(outcome.RateLimited, "429")) // frees the slot without deciding
		if oks, _ := burst(); oks != 0 {
			t.Fatalf("interval %d: %d more probes before probe_interval passed", i, oks)
		}
		h.fc.Advance(cfg.ProbeInterval / 2)
		if oks, _ := burst(); oks != 0 {
			t.Fatalf("interval %d: %d more probes at half the probe_interval", i, oks)
		}
		h.fc.Advance(cfg.ProbeInterval / 2)
	}
	if v := h.b.View("u"); v.State != HalfOpen {
		t.Fatalf("state %s, want half_open (neutral outcomes decide nothing)", v.State)
	}
}

// TestBreakerShieldsAFailingUpstream sends 1,000 requests, 100 ms apart, to
// an upstream that fails every one, the way the proxy does: View, Acquire,
// then Record.
func TestBreakerShieldsAFailingUpstream(t *testing.T) {
	tests := []struct {
		name string
		open time.Duration
		want int // failure_threshold + the probes
	}{
		// Trip at 0.4s; probe at 60.4s fails → open 120s, past the end (99.9s).
		{"open_duration 60s", 60 * time.Second, 5 + 1},
		// Probes at 10.4s, 30.4s (after 20s), 70.4s (after 40s); then 80s.
		{"open_duration 10s", 10 * time.Second, 5 + 3},
		// Open periods of 1, 2, 4, 8, 10 s are shorter than probe_interval:
		// probes at 1.4 s, then every 10 s: 11.4, 21.4, …, 91.4 s.
		{"open_duration 1s", time.Second, 5 + 10},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testCircuit()
			cfg.OpenDuration = tc.open
			h := newHarness(t, cfg)
			sent := 0
			for i := range 1000 {
				v := h.b.View("u")
				p, ok := h.b.Acquire("u")
				if ok == v.Open {
					t.Fatalf("request %d: View.Open = %v but Acquire ok = %v", i, v.Open, ok)
				}
				if ok {
					sent++
					h.b.Record("u", p, outcome.Of(outcome.ServerError, "status 500"))
				}
				h.fc.Advance(100 * time.Millisecond)
			}
			if sent != tc.want {
				t.Fatalf("upstream received %d requests, want %d", sent, tc.want)
			}
			bound := cfg.FailureThreshold + int(100*time.Second/cfg.ProbeInterval) // + one probe per probe_interval
			if sent > bound {
				t.Fatalf("upstream received %d requests, more than the bound %d", sent, bound)
			}
		})
	}
}

func TestBreakersUnknownForgetAndStates(t *testing.T) {
	h := newHarness(t, testCircuit())
	if v := h.b.View("nobody"); v.State != Closed || v.Open || v.SlowStart != 1 {
		t.Fatalf("unknown upstream: %+v", v)
	}
	if p, ok := h.b.Acquire("nobody"); !ok || p.Probe {
		t.Fatalf("unknown upstream: Acquire = %v,%v", ok, p.Probe)
	}
	record(h.b, "nobody", outcome.Of(outcome.Success, ""))
	if len(h.b.States()) != 0 {
		t.Fatal("a success created a breaker entry")
	}
	record(h.b, "a", outcome.Of(outcome.AuthError, "status 401"))
	record(h.b, "b", outcome.Of(outcome.ServerError, "status 500"))
	states := h.b.States()
	if len(states) != 2 || states["a"].State != Open || states["b"].State != Closed || states["b"].Failures != 1 {
		t.Fatalf("states %+v", states)
	}
	h.b.Forget("a")
	if v := h.b.View("a"); v.Open || v.Trips != 0 || v.Reason != "" {
		t.Fatalf("forgotten upstream: %+v", v)
	}
	if _, ok := h.b.States()["a"]; ok {
		t.Fatal("forgotten upstream still in States")
	}
}

func TestBreakerConfigDefaults(t *testing.T) {
	// A zero config takes the defaults: 5 failures within 30s, open 60s.
	fc := clock.NewFake(t0)
	b := NewBreakers(config.Circuit{}, fc)
	for range 4 {
		record(b, "u", outcome.Of(outcome.ServerError, "x"))
	}
	if b.View("u").Open {
		t.Fatal("opened before 5 failures")
	}
	record(b, "u", outcome.Of(outcome.ServerError, "x"))
	if v := b.View("u"); !v.Open || !v.Until.Equal(t0.Add(60*time.Second)) {
		t.Fatalf("view %+v", v)
	}
}

func TestStateString(t *testing.T) {
	for s, want := range map[State]string{Closed: "closed", Open: "open", HalfOpen: "half_open", State(9): "unknown"} {
		if got := s.String(); got != want {
			t.Errorf("State(%d).String() = %q, want %q", s, got, want)
		}
		if b, _ := s.MarshalText(); string(b) != want {
			t.Errorf("State(%d).MarshalText() = %q", s, b)
		}
	}
}

// BenchmarkBreakerViewAcquireRecord measures the per-attempt hot path of the
// proxy: View while planning, Acquire before dispatch, Record after.
func BenchmarkBreakerViewAcquireRecord(b *testing.B) {
	for _, n := range []int{1, 10, 100, 1000} {
		b.Run(fmt.Sprintf("upstreams=%d", n), func(b *testing.B) {
			br := NewBreakers(testCircuit(), clock.Real{})
			names := make([]string, n)
			for i := range names {
				names[i] = fmt.Sprintf("up-%d", i)
				record(br, names[i], outcome.Of(outcome.ServerError, "warm")) // create the entry
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; b.Loop(); i++ {
				name := names[i%n]
				_ = br.View(name)
				if p, ok := br.Acquire(name); ok {
					br.Record(name, p, outcome.Of(outcome.Success, ""))
				}
			}
		})
	}
	b.Run("parallel", func(b *testing.B) {
		br := NewBreakers(testCircuit(), clock.Real{})
		names := make([]string, 64)
		for i := range names {
			names[i] = fmt.Sprintf("up-%d", i)
			record(br, names[i], outcome.Of(outcome.ServerError, "warm"))
		}
		b.ReportAllocs()
		b.RunParallel(func(pb *testing.PB) {
			i := 0
			for pb.Next() {
				name := names[i%len(names)]
				i++
				_ = br.View(name)
				if p, ok := br.Acquire(name); ok {
					br.Record(name, p, outcome.Of(outcome.Success, ""))
				}
			}
		})
	})
}

func TestBreakerProbeLeaseOption(t *testing.T) {
	tests := []struct {
		name     string
		lease    time.Duration
		after    time.Duration
		wantFree bool
	}{
		{"custom lease expires", 30 * time.Second, 30 * time.Second, true},
		{"custom lease still held", 30 * time.Second, 29 * time.Second, false},
		{"no lease: held forever", 0, 24 * time.Hour, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, testCircuit(), WithProbeLease(tc.lease))
			record(h.b, "u", outcome.Of(outcome.AuthError, "status 401"))
			h.fc.Advance(time.Minute)
			if p, ok := h.b.Acquire("u"); !ok || !p.Probe {
				t.Fatal("no probe when the open period ended")
			}
			h.fc.Advance(tc.after)
			if _, ok := h.b.Acquire("u"); ok != tc.wantFree {
				t.Fatalf("Acquire %s after an unrecorded probe = %v, want %v", tc.after, ok, tc.wantFree)
			}
		})
	}
}
