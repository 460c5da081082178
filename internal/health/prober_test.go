package health

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/outcome"
)

// The Run loop is tested in synctest bubbles. Tests that need exact times
// use clock.Real inside the bubble, whose time is virtual and jumps to the
// next timer once every goroutine is blocked; tests that step time
// themselves use clock.Fake and synctest.Wait after each step.

func seeded() *rand.Rand { return rand.New(rand.NewPCG(7, 11)) }

func healthCfg(interval, timeout time.Duration) config.Health {
	return config.Health{Interval: interval, Probe: "models", Timeout: timeout}
}

// advance moves fc forward by total in steps, letting the bubble settle
// after each step.
func advance(fc *clock.Fake, total, step time.Duration) {
	for d := time.Duration(0); d < total; d += step {
		fc.Advance(step)
		synctest.Wait()
	}
}

// runProber starts p.Run in the bubble and returns a function that stops it
// and waits for it to return.
func runProber(t *testing.T, p *Prober) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() {
		defer close(done)
		p.Run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

func targetsOf(names ...string) func() []string { return func() []string { return names } }

func TestProberIntervalZeroDisables(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fc := clock.NewFake(t0)
		calls := 0
		p := NewProber(healthCfg(0, 5*time.Second), fc, seeded(), nil, func(context.Context, string) error {
			calls++
			return nil
		}, targetsOf("a"))
		done := make(chan struct{})
		go func() {
			p.Run(t.Context())
			close(done)
		}()
		synctest.Wait()
		select {
		case <-done:
		default:
			t.Fatal("Run with interval 0 did not return at once")
		}
		if calls != 0 || fc.Pending() != 0 {
			t.Fatalf("calls %d, pending timers %d", calls, fc.Pending())
		}
	})
}

func TestProberProbesEachTargetOncePerIntervalWithJitter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const interval, rounds = 10 * time.Second, 50
		type event struct {
			name string
			at   time.Time
		}
		events := make(chan event, 16)
		start := time.Now()
		p := NewProber(healthCfg(interval, time.Second), clock.Real{}, seeded(), nil, func(_ context.Context, name string) error {
			events <- event{name, time.Now()}
			return nil
		}, targetsOf("a", "b", "c"))
		stop := runProber(t, p)
		byName := map[string][]time.Time{}
		for n := 0; n < 3*rounds; n++ {
			ev := <-events
			byName[ev.name] = append(byName[ev.name], ev.at)
		}
		stop()
		for _, name := range []string{"a", "b", "c"} {
			times := byName[name]
			if len(times) < rounds-1 {
				t.Fatalf("%s probed %d times", name, len(times))
			}
			if !times[0].Equal(start) {
				t.Errorf("%s first probed %s after start, want at once", name, times[0].Sub(start))
			}
			var gaps []time.Duration
			for i := 1; i < len(times); i++ {
				gap := times[i].Sub(times[i-1])
				if gap < interval*9/10 || gap >= interval*11/10 {
					t.Errorf("%s probe %d came %s after the previous one, want within ±10%% of %s", name, i, gap, interval)
				}
				gaps = append(gaps, gap)
			}
			slices.Sort(gaps)
			// Jitter is applied: the gaps spread over most of [9s, 11s).
			if spread := gaps[len(gaps)-1] - gaps[0]; spread < interval/10 {
				t.Errorf("%s gaps spread over %s only: no jitter", name, spread)
			}
		}
	})
}

func TestProberNeverTwoProbesInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fc := clock.NewFake(t0)
		release := make(chan struct{})
		var mu sync.Mutex
		calls := map[string]int{}
		inFlight, maxInFlight := 0, 0
		p := NewProber(healthCfg(10*time.Second, 5*time.Second), fc, seeded(), nil, func(ctx context.Context, name string) error {
			mu.Lock()
			calls[name]++
			if name == "slow" {
				inFlight++
				maxInFlight = max(maxInFlight, inFlight)
			}
			mu.Unlock()
			if name != "slow" {
				return nil
			}
			<-release // ignores ctx: a badly behaved check that hangs past its timeout
			mu.Lock()
			inFlight--
			mu.Unlock()
			return nil
		}, targetsOf("slow", "fast"))
		stop := runProber(t, p)
		synctest.Wait()
		advance(fc, 60*time.Second, 500*time.Millisecond)
		mu.Lock()
		slow, fast := calls["slow"], calls["fast"]
		mu.Unlock()
		if slow != 1 || maxInFlight != 1 {
			t.Fatalf("hanging upstream: %d probes started, %d in flight at most; want 1 and 1", slow, maxInFlight)
		}
		if fast < 6 || fast > 7 { // at 0 s, then every 9–11 s over 60 s
			t.Fatalf("other upstream probed %d times in 60s, want 6–7", fast)
		}
		close(release)
		synctest.Wait()
		advance(fc, 12*time.Second, 500*time.Millisecond)
		mu.Lock()
		slow = calls["slow"]
		mu.Unlock()
		if slow != 2 || maxInFlight != 1 {
			t.Fatalf("after the hang: %d probes, %d in flight at most; want 2 and 1", slow, maxInFlight)
		}
		stop()
	})
}

func TestProberTimeoutCancelsAndRecordsAFailure(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fc := clock.NewFake(t0)
		b := NewBreakers(testCircuit(), fc)
		causes := make(chan error, 1)
		p := NewProber(healthCfg(30*time.Second, 2*time.Second), fc, seeded(), b, func(ctx context.Context, _ string) error {
			<-ctx.Done()
			causes <- context.Cause(ctx)
			return ctx.Err()
		}, targetsOf("a"))
		stop := runProber(t, p)
		defer stop()
		synctest.Wait()
		advance(fc, 1900*time.Millisecond, 100*time.Millisecond)
		select {
		case <-causes:
			t.Fatal("probe canceled before its timeout")
		default:
		}
		advance(fc, 100*time.Millisecond, 100*time.Millisecond)
		select {
		case cause := <-causes:
			if !errors.Is(cause, ErrProbeTimeout) {
				t.Fatalf("cause %v, want ErrProbeTimeout", cause)
			}
		default:
			t.Fatal("hanging probe not canceled at its timeout")
		}
		last := p.Last("a")
		if last.OK || last.Err != "timed out after 2s" || last.RTT != 2*time.Second || !last.At.Equal(t0) {
			t.Fatalf("last result %+v", last)
		}
		if v := b.View("a"); v.Failures != 1 || v.State != Closed {
			t.Fatalf("breaker %+v, want one failure counted", v)
		}
		if p.LatencyMs("a") != 0 {
			t.Fatalf("latency %v after a failed probe, want 0 (unknown)", p.LatencyMs("a"))
		}
	})
}

func TestProberRecordsRTT(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fc := clock.NewFake(t0)
		var mu sync.Mutex
		var fail error // what the check returns after taking 120 ms
		p := NewProber(healthCfg(30*time.Second, 5*time.Second), fc, seeded(), nil, func(context.Context, string) error {
			fc.Advance(120 * time.Millisecond) // the check takes 120 ms on the fake clock
			mu.Lock()
			defer mu.Unlock()
			return fail
		}, targetsOf("a"))
		if p.LatencyMs("a") != 0 || !p.Last("a").At.IsZero() {
			t.Fatal("latency known before any probe")
		}
		stop := runProber(t, p)
		defer stop()
		synctest.Wait()
		if got := p.LatencyMs("a"); got != 120 {
			t.Fatalf("LatencyMs = %v, want 120", got)
		}
		if last := p.Last("a"); !last.OK || last.RTT != 120*time.Millisecond || last.Err != "" || !last.At.Equal(t0) {
			t.Fatalf("last result %+v", last)
		}
		// A failed probe keeps the last measured latency.
		mu.Lock()
		fail = errors.New("connection refused")
		mu.Unlock()
		advance(fc, 33*time.Second, time.Second)
		if got, last := p.LatencyMs("a"), p.Last("a"); got != 120 || last.OK || last.Err != "connection refused" || last.At.Equal(t0) {
			t.Fatalf("after a failure: latency %v, last %+v", got, last)
		}
	})
}

func TestProberAndHalfOpenBreaker(t *testing.T) {
	refused := errors.New("connection refused")
	tests := []struct {
		name        string
		successes   int   // success_threshold
		err         error // what every check returns
		wantState   State
		wantProbes  int
		wantTrips   int
		wantReason  string
		wantHistory []string
	}{
		// Trips of a closed breaker resets a window after closing: not checked (-1).
		// Probes within 100 s: at 60 s, then 27–33 s later (closed or not).
		{"a probe success closes it", 1, nil, Closed, 2, -1, "auth error: status 401",
			[]string{"closed→open", "open→half_open", "half_open→closed"}},
		{"with success_threshold 2 it takes two probe successes", 2, nil, Closed, 2, -1, "auth error: status 401",
			[]string{"closed→open", "open→half_open", "half_open→closed"}},
		{"a failed probe re-opens it", 1, refused, Open, 1, 2, "half-open probe failed: probe: connection refused",
			[]string{"closed→open", "open→half_open", "half_open→open"}},
		{"a probe's auth error re-opens it with its reason", 1, &OutcomeError{outcome.AuthError, errors.New("status 403")}, Open, 1, 2,
			"auth error: probe: status 403", []string{"closed→open", "open→half_open", "half_open→open"}},
		{"a probe's 429 decides nothing", 1, &OutcomeError{outcome.RateLimited, errors.New("status 429")}, HalfOpen, 2, 1,
			"auth error: status 401", []string{"closed→open", "open→half_open"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fc := clock.NewFake(t0)
				cfg := testCircuit()
				cfg.SuccessThreshold = tc.successes
				var mu sync.Mutex
				var history []string
				b := NewBreakers(cfg, fc, WithOnTransition(func(_ string, from, to State, _ string) {
					mu.Lock()
					history = append(history, from.String()+"→"+to.String())
					mu.Unlock()
				}))
				record(b, "a", outcome.Of(outcome.AuthError, "status 401")) // open until 60 s
				var probes []time.Duration
				p := NewProber(healthCfg(30*time.Second, 5*time.Second), fc, seeded(), b, func(context.Context, string) error {
					probes = append(probes, fc.Now().Sub(t0))
					return tc.err
				}, targetsOf("a"))
				stop := runProber(t, p)
				synctest.Wait()
				// Skipped while open; probed when the breaker becomes half-open
				// (60 s), and, for a second probe, within the next interval.
				advance(fc, 100*time.Second, 500*time.Millisecond)
				stop()
				v := b.View("a")
				if v.State != tc.wantState || (tc.wantTrips >= 0 && v.Trips != tc.wantTrips) || v.Reason != tc.wantReason {
					t.Fatalf("breaker %s trips %d reason %q; want %s, %d, %q", v.State, v.Trips, v.Reason, tc.wantState, tc.wantTrips, tc.wantReason)
				}
				if len(probes) != tc.wantProbes || probes[0] != 60*time.Second {
					t.Fatalf("probes at %v; want %d, the first at 60s (when the open period ended)", probes, tc.wantProbes)
				}
				mu.Lock()
				defer mu.Unlock()
				if !slices.Equal(history, tc.wantHistory) {
					t.Fatalf("transitions %v, want %v", history, tc.wantHistory)
				}
			})
		})
	}
}

func TestProberForgetsRemovedTargets(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fc := clock.NewFake(t0)
		var mu sync.Mutex
		names := []string{"a", "gone"}
		p := NewProber(healthCfg(10*time.Second, time.Second), fc, seeded(), nil, func(context.Context, string) error {
			fc.Advance(time.Millisecond)
			return nil
		}, func() []string {
			mu.Lock()
			defer mu.Unlock()
			return names
		})
		stop := runProber(t, p)
		defer stop()
		synctest.Wait()
		if p.LatencyMs("gone") == 0 {
			t.Fatal("gone was not probed")
		}
		mu.Lock()
		names = []string{"a"}
		mu.Unlock()
		advance(fc, 12*time.Second, 500*time.Millisecond)
		if p.LatencyMs("gone") != 0 || !p.Last("gone").At.IsZero() {
			t.Fatalf("removed upstream still known: %v %+v", p.LatencyMs("gone"), p.Last("gone"))
		}
		if p.LatencyMs("a") == 0 {
			t.Fatal("remaining upstream forgotten")
		}
	})
}

func TestProberStopCancelsProbesWithoutBlame(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fc := clock.NewFake(t0)
		b := NewBreakers(testCircuit(), fc)
		started := make(chan struct{}, 1)
		p := NewProber(healthCfg(30*time.Second, 5*time.Second), fc, seeded(), b, func(ctx context.Context, _ string) error {
			started <- struct{}{}
			<-ctx.Done()
			return ctx.Err()
		}, targetsOf("a"))
		stop := runProber(t, p)
		<-started
		stop() // returns only once the probe has returned
		if v := b.View("a"); v.Failures != 0 {
			t.Fatalf("shutting down counted as a failure: %+v", v)
		}
		if !p.Last("a").At.IsZero() {
			t.Fatalf("a canceled probe was recorded: %+v", p.Last("a"))
		}
	})
}

// TestProberHealthChange: the hook hears of an upstream whose probes
// start failing (its first probe failing too) and of one that succeeds
// again, once per change, never of a result like the last.
func TestProberHealthChange(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fc := clock.NewFake(t0)
		var mu sync.Mutex
		results := map[string][]error{ // each probe round's result per upstream
			"steady":  {nil, nil, nil, nil},
			"flaps":   {nil, errors.New("status 503"), errors.New("status 503"), nil},
			"dead-on": {errors.New("connection refused"), errors.New("connection refused"), nil, nil},
		}
		round := map[string]int{}
		var changes []string
		p := NewProber(healthCfg(10*time.Second, time.Second), fc, seeded(), nil, func(_ context.Context, name string) error {
			mu.Lock()
			defer mu.Unlock()
			r := results[name][min(round[name], 3)]
			round[name]++
			return r
		}, targetsOf("steady", "flaps", "dead-on"), WithHealthChange(func(name string, healthy bool, detail string) {
			mu.Lock()
			defer mu.Unlock()
			changes = append(changes, fmt.Sprintf("%s:%v:%s", name, healthy, detail))
		}))
		stop := runProber(t, p)
		advance(fc, 45*time.Second, time.Second)
		stop()
		mu.Lock()
		defer mu.Unlock()
		slices.Sort(changes)
		want := []string{"dead-on:false:connection refused", "dead-on:true:", "flaps:false:status 503", "flaps:true:"}
		if !slices.Equal(changes, want) {
			t.Errorf("changes %q, want %q", changes, want)
		}
	})
}
