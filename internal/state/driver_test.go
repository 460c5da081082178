package state

import (
	"context"
	"errors"
	"testing"
	"time"

	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/health"
	"switchyard/internal/limits"
	"switchyard/internal/outcome"
)

// newTestDriver returns a RedisDriver over a test Redis (see newTestRedis)
// and a fresh Local.
func newTestDriver(tb testing.TB, clk *clock.Fake, opts ...testOpt) *RedisDriver {
	tb.Helper()
	r := newTestRedis(tb, testCircuit, clk, opts...)
	return NewRedisDriver(r, NewLocal(LocalOptions{Clock: clk, Breakers: health.NewBreakers(testCircuit, clk)}))
}

// A client key's rpm counts across instances: 2 requests on one, 2 on the
// other, rpm 3 → the fourth is refused, with the wait until the first
// leaves the window. (Each instance counted only its own before.)
func TestRedisKeyRPMShared(t *testing.T) {
	clk := clock.NewFake(t0)
	a := newTestDriver(t, clk)
	b := newTestDriver(t, clk, sharing(a.r))
	ctx := context.Background()
	for i, d := range []*RedisDriver{a, a, b} {
		if ok, _ := d.AllowKey(ctx, "team", 3); !ok {
			t.Fatalf("request %d refused under rpm 3", i+1)
		}
		clk.Advance(time.Second)
	}
	ok, wait := b.AllowKey(ctx, "team", 3)
	if ok {
		t.Fatal("fourth request across two instances allowed under rpm 3")
	}
	if want := 57 * time.Second; wait != want { // the first counts until t0+60s
		t.Fatalf("retry after %v, want %v", wait, want)
	}
	if ok, _ := a.AllowKey(ctx, "other", 3); !ok {
		t.Fatal("another key shares the window")
	}
	clk.Advance(57 * time.Second)
	if ok, _ := b.AllowKey(ctx, "team", 3); !ok {
		t.Fatal("refused once the first request left the window")
	}
}

// A team's rpm and a tpm count across instances too (AllowN): estimated
// tokens add up, and a request larger than the whole limit passes on an
// empty window only.
func TestRedisAllowNShared(t *testing.T) {
	clk := clock.NewFake(t0)
	a := newTestDriver(t, clk)
	b := newTestDriver(t, clk, sharing(a.r))
	ctx := context.Background()
	tpm := limits.CounterName("research", "", "tpm")
	steps := []struct {
		d      *RedisDriver
		n      int64
		wantOK bool
	}{
		{a, 600, true},
		{b, 300, true},
		{a, 200, false}, // 1,100 > 1,000
		{b, 100, true},  // 1,000 fits exactly
	}
	for i, s := range steps {
		if ok, _ := s.d.AllowN(ctx, tpm, 1000, s.n); ok != s.wantOK {
			t.Fatalf("step %d (%d tokens): allowed %v, want %v", i, s.n, ok, s.wantOK)
		}
	}
	big := limits.CounterName("", "svc", "tpm")
	if ok, _ := b.AllowN(ctx, big, 1000, 5000); !ok {
		t.Fatal("a request larger than the limit refused on an empty window")
	}
	if ok, wait := a.AllowN(ctx, big, 1000, 1); ok || wait <= 0 {
		t.Fatalf("after it, AllowN = %v, %v; want a refusal with a wait", ok, wait)
	}
}

// With Redis down the key's rpm falls back to this instance's window.
func TestRedisKeyRPMFallback(t *testing.T) {
	clk := clock.NewFake(t0)
	d := newTestDriver(t, clk, withURL("redis://127.0.0.1:1/0", 100*time.Millisecond))
	for range 2 {
		if ok, _ := d.AllowKey(context.Background(), "team", 2); !ok {
			t.Fatal("refused under rpm 2 with Redis down")
		}
	}
	if ok, _ := d.AllowKey(context.Background(), "team", 2); ok {
		t.Fatal("the local window did not apply with Redis down")
	}
}

// An active probe closes the shared half-open breaker, so every instance
// sees the upstream back (the prober recorded only locally before).
func TestRedisProbeClosesSharedBreaker(t *testing.T) {
	clk := clock.NewFake(t0)
	a := newTestDriver(t, clk)
	b := newTestDriver(t, clk, sharing(a.r))
	ctx := context.Background()
	l, err := a.Admit(ctx, Admission{Upstream: "u"})
	if err != nil {
		t.Fatal(err)
	}
	l.Done(outcome.Outcome{Class: outcome.AuthError, Detail: "status 401"}, Ending{})
	if v := syncView(t, b.r, "u"); v.Breaker != "open" {
		t.Fatalf("shared breaker %q after an auth error, want open", v.Breaker)
	}
	gate := b.ProbeGate()
	if p, ok := gate.AcquireProbe(ctx, "u"); ok || !p.Until.Equal(t0.Add(testCircuit.OpenDuration)) {
		t.Fatalf("probe while open: ok %v until %v, want refused until %v", ok, p.Until, t0.Add(testCircuit.OpenDuration))
	}
	clk.Advance(testCircuit.OpenDuration)
	p, ok := gate.AcquireProbe(ctx, "u")
	if !ok || !p.Slot {
		t.Fatalf("probe after the open period: ok %v slot %v, want the shared probe slot", ok, p.Slot)
	}
	if _, err := a.Admit(ctx, Admission{Upstream: "u"}); !errors.Is(err, ErrBreakerOpen) {
		t.Fatalf("Admit on the other instance while the probe is out = %v, want ErrBreakerOpen", err)
	}
	p.Done(ctx, outcome.Outcome{Class: outcome.Success})
	if v := syncView(t, a.r, "u"); v.Breaker != "closed" {
		t.Fatalf("shared breaker %q after a successful probe, want closed", v.Breaker)
	}
	if st := a.Upstream("u", 0); st.Breaker.Open || st.Breaker.State != health.Closed {
		t.Fatalf("merged view on the other instance = %+v, want closed", st.Breaker)
	}
	// The probe fed no statistics.
	if n := syncView(t, a.r, "u").Stats.WindowRequests; n != 1 {
		t.Fatalf("WindowRequests = %d, want 1 (the admitted request, not the probe)", n)
	}
}

// A caller whose context ends while queued is told so by both drivers,
// never that the queue timed out.
func TestDriverQueuedCallerLeaves(t *testing.T) {
	q := config.Queue{Enabled: true, MaxLength: 5, Timeout: time.Minute}
	adm := Admission{Upstream: "u", MaxConcurrency: 1, Queue: q, Wait: true}
	drivers := map[string]func(t *testing.T, clk *clock.Fake) Driver{
		"local": func(_ *testing.T, clk *clock.Fake) Driver { return NewLocal(LocalOptions{Clock: clk}) },
		"redis": func(t *testing.T, clk *clock.Fake) Driver { return newTestDriver(t, clk) },
	}
	for name, mk := range drivers {
		t.Run(name, func(t *testing.T) {
			clk := clock.NewFake(t0)
			d := mk(t, clk)
			held, err := d.Admit(context.Background(), adm)
			if err != nil {
				t.Fatal(err)
			}
			defer held.Done(outcome.Outcome{Class: outcome.Success}, Ending{})
			ctx, cancel := context.WithCancel(context.Background())
			base := clk.Pending()
			errc := make(chan error, 1)
			go func() {
				l, err := d.Admit(ctx, adm)
				if l != nil {
					l.Done(outcome.Outcome{Class: outcome.Canceled}, Ending{})
				}
				errc <- err
			}()
			// Queued once its wait is timed (the queue timeout, or the first poll).
			waitFor(t, "the request to wait in the queue", func() bool { return clk.Pending() > base })
			cancel()
			err = <-errc
			if !errors.Is(err, context.Canceled) || errors.Is(err, limits.ErrQueueTimeout) {
				t.Fatalf("Admit after the caller left = %v, want context.Canceled and not a queue timeout", err)
			}
		})
	}
}

// Every reason a refusal is named by maps to the error the Driver
// documents; canceled (a caller that left while queued) is
// context.Canceled, not a rate limit.
func TestDenialReasons(t *testing.T) {
	tests := []struct {
		reason string
		want   error
	}{
		{"breaker", ErrBreakerOpen},
		{"cooldown", ErrCoolingDown},
		{"rpm", ErrRateLimited},
		{"tpm", ErrRateLimited},
		{"rate", ErrRateLimited},
		{"full", limits.ErrConcurrencyFull},
		{"queue_full", limits.ErrQueueFull},
		{"queue_timeout", limits.ErrQueueTimeout},
		{"canceled", context.Canceled},
	}
	for _, tc := range tests {
		t.Run(tc.reason, func(t *testing.T) {
			d := denial(tc.reason, time.Second)
			if !errors.Is(d, tc.want) || d.Reason != tc.reason || d.Wait != time.Second {
				t.Fatalf("denial(%q) = %+v (%v), want %v", tc.reason, *d, d.Err, tc.want)
			}
			if tc.want != ErrRateLimited && errors.Is(d, ErrRateLimited) {
				t.Fatalf("denial(%q) is also a rate limit", tc.reason)
			}
		})
	}
}

// A window another instance filled limits the upstream here until it
// frees: the shared view says when (the oldest request, or the oldest second
// of tokens, leaving the window), so that a 503 can say when to retry.
func TestRedisDriverSharedWindowUntil(t *testing.T) {
	tests := []struct {
		name       string
		adm        Admission
		n          int // admissions on the other instance
		wantReason string
	}{
		{name: "rpm", adm: Admission{Upstream: "u", RPM: 2}, n: 2, wantReason: "rpm 2/2 (shared)"},
		{name: "tpm", adm: Admission{Upstream: "u", TPM: 100, Tokens: 50}, n: 2, wantReason: "tpm 100/100 (shared)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(t0.Add(400 * time.Millisecond))
			a := newTestDriver(t, clk)
			b := newTestDriver(t, clk, sharing(a.r))
			a.local.Configure("u", tc.adm.RPM, tc.adm.TPM)
			b.local.Configure("u", tc.adm.RPM, tc.adm.TPM)
			for i := range tc.n {
				l, err := a.Admit(context.Background(), tc.adm)
				if err != nil {
					t.Fatalf("admission %d: %v", i, err)
				}
				l.Done(outcome.Outcome{Class: outcome.Success, InputTokens: tc.adm.Tokens}, Ending{})
			}
			clk.Advance(20 * time.Second)
			b.r.SetWatch(Watch{Upstreams: []string{"u"}})
			b.r.Sync(nil)
			lv := b.Upstream("u", tc.adm.Tokens).Limits
			// rpm: the oldest request (t0+0.4s) leaves at t0+60.4s; tpm: its
			// second (t0) leaves at t0+60s.
			want := t0.Add(60400 * time.Millisecond)
			if tc.name == "tpm" {
				want = t0.Add(60 * time.Second)
			}
			if !lv.Exhausted || lv.Reason != tc.wantReason || !lv.Until.Equal(want) {
				t.Errorf("limits %+v; want exhausted, %q, until %v", lv, tc.wantReason, want)
			}
		})
	}
}

// Local's refusal for a full window says when it frees, as the limiter
// does (limits.Limiter.Reserve), so that the 503 can say when to retry.
func TestLocalRateDenialWait(t *testing.T) {
	clk := clock.NewFake(t0.Add(400 * time.Millisecond))
	d := NewLocal(LocalOptions{Clock: clk, Breakers: health.NewBreakers(testCircuit, clk)})
	d.Configure("u", 2, 0)
	adm := Admission{Upstream: "u", RPM: 2}
	for i := range 2 {
		l, err := d.Admit(context.Background(), adm)
		if err != nil {
			t.Fatalf("admission %d: %v", i, err)
		}
		l.Done(outcome.Outcome{Class: outcome.Success}, Ending{})
	}
	clk.Advance(20 * time.Second)
	_, err := d.Admit(context.Background(), adm)
	var den *Denial
	if !errors.As(err, &den) || !errors.Is(err, ErrRateLimited) || den.Wait != 39600*time.Millisecond {
		t.Fatalf("third admission: %v (%+v); want rate limited with a 39.6s wait (t0+0.4s counts in the second that leaves at t0+60s)", err, den)
	}
}
