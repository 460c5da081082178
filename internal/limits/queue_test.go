package limits

import (
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"testing/synctest"
	"time"

	"switchyard/internal/clock"
	"switchyard/internal/config"
)

var queueOn = config.Queue{Enabled: true, Timeout: 5 * time.Second, MaxLength: 100}

// acquireResult is what an Acquire run in a goroutine returned.
type acquireResult struct {
	release func()
	err     error
}

// goAcquire runs Acquire in a goroutine and delivers its result on the
// returned channel.
func goAcquire(ctx context.Context, s *Slots, name string, limit int, q config.Queue) <-chan acquireResult {
	ch := make(chan acquireResult, 1)
	go func() {
		r, err := s.Acquire(ctx, name, limit, q)
		ch <- acquireResult{r, err}
	}()
	return ch
}

func mustAcquire(t *testing.T, s *Slots, name string, limit int, q config.Queue) func() {
	t.Helper()
	r, err := s.Acquire(context.Background(), name, limit, q)
	if err != nil {
		t.Fatalf("Acquire(%q, %d): %v", name, limit, err)
	}
	return r
}

func TestAcquireImmediate(t *testing.T) {
	tests := []struct {
		name    string
		limit   int
		q       config.Queue
		held    int
		wantErr error
	}{
		{"free slot", 2, config.Queue{}, 1, nil},
		{"free slot, queue enabled", 2, queueOn, 1, nil},
		{"unlimited", 0, config.Queue{}, 50, nil},
		{"full, queue disabled", 2, config.Queue{}, 2, ErrConcurrencyFull},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSlotsWithClock(clock.NewFake(t0))
			for range tc.held {
				mustAcquire(t, s, "u", tc.limit, tc.q)
			}
			r, err := s.Acquire(context.Background(), "u", tc.limit, tc.q)
			if !errors.Is(err, tc.wantErr) || (err == nil) != (r != nil) {
				t.Fatalf("Acquire = %v, %v, want error %v", r != nil, err, tc.wantErr)
			}
			want := int64(tc.held)
			if err == nil {
				want++
			}
			if got := s.InFlight("u"); got != want {
				t.Fatalf("InFlight = %d, want %d", got, want)
			}
			if s.QueueDepth("u") != 0 {
				t.Fatalf("QueueDepth = %d, want 0", s.QueueDepth("u"))
			}
		})
	}
}

func TestAcquireFIFO(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewSlotsWithClock(clock.NewFake(t0))
		holder := mustAcquire(t, s, "u", 1, queueOn)
		const n = 10
		order := make(chan int, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				r, err := s.Acquire(t.Context(), "u", 1, queueOn)
				if err != nil {
					t.Errorf("waiter %d: %v", i, err)
					return
				}
				order <- i
				r()
			})
			synctest.Wait() // waiter i is queued before waiter i+1 starts
		}
		if d := s.QueueDepth("u"); d != n {
			t.Fatalf("QueueDepth = %d, want %d", d, n)
		}
		holder()
		wg.Wait()
		close(order)
		want := 0
		for got := range order {
			if got != want {
				t.Fatalf("waiter %d got the slot in turn %d", got, want)
			}
			want++
		}
		if want != n || s.InFlight("u") != 0 || s.QueueDepth("u") != 0 {
			t.Fatalf("served %d, in flight %d, queued %d; want %d, 0, 0", want, s.InFlight("u"), s.QueueDepth("u"), n)
		}
	})
}

func TestReleaseHandsSlotToHeadWaiter(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewSlotsWithClock(clock.NewFake(t0))
		holder := mustAcquire(t, s, "u", 1, queueOn)
		res := goAcquire(t.Context(), s, "u", 1, queueOn)
		synctest.Wait()
		holder()
		holder() // a second release is harmless: it must not free the waiter's slot
		// The slot went straight to the waiter: nobody can barge in, with
		// either entry point, even before the waiter has run.
		if _, ok := s.TryAcquire("u", 1); ok {
			t.Fatal("TryAcquire took the slot handed to the waiter")
		}
		if _, err := s.Acquire(context.Background(), "u", 1, config.Queue{}); !errors.Is(err, ErrConcurrencyFull) {
			t.Fatalf("Acquire without queue = %v, want ErrConcurrencyFull", err)
		}
		r := <-res
		if r.err != nil {
			t.Fatalf("waiter: %v", r.err)
		}
		if s.InFlight("u") != 1 {
			t.Fatalf("InFlight = %d, want 1", s.InFlight("u"))
		}
		r.release()
		if s.InFlight("u") != 0 {
			t.Fatalf("InFlight = %d after the waiter released, want 0", s.InFlight("u"))
		}
	})
}

func TestTryAcquireDoesNotOvertakeQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewSlotsWithClock(clock.NewFake(t0))
		h1 := mustAcquire(t, s, "u", 2, queueOn)
		h2 := mustAcquire(t, s, "u", 2, queueOn)
		res := goAcquire(t.Context(), s, "u", 2, queueOn)
		synctest.Wait()
		// A caller with a higher limit would fit by count, but one is queued.
		if _, ok := s.TryAcquire("u", 3); ok {
			t.Fatal("TryAcquire overtook a queued request")
		}
		h1()
		r := <-res
		if r.err != nil {
			t.Fatalf("queued waiter: %v", r.err)
		}
		if _, ok := s.TryAcquire("u", 3); !ok {
			t.Fatal("TryAcquire refused with nobody queued and room under its limit")
		}
		r.release()
		h2()
	})
}

func TestAcquireQueueFull(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewSlotsWithClock(clock.NewFake(t0))
		q := config.Queue{Enabled: true, Timeout: time.Minute, MaxLength: 2}
		holder := mustAcquire(t, s, "u", 1, q)
		ctx, cancel := context.WithCancel(t.Context())
		w1 := goAcquire(ctx, s, "u", 1, q)
		w2 := goAcquire(ctx, s, "u", 1, q)
		synctest.Wait()
		if _, err := s.Acquire(ctx, "u", 1, q); !errors.Is(err, ErrQueueFull) {
			t.Fatalf("third waiter: %v, want ErrQueueFull at once", err)
		}
		if s.QueueDepth("u") != 2 {
			t.Fatalf("QueueDepth = %d, want 2", s.QueueDepth("u"))
		}
		cancel()
		for _, w := range []<-chan acquireResult{w1, w2} {
			if r := <-w; !errors.Is(r.err, context.Canceled) {
				t.Fatalf("cancelled waiter: %v", r.err)
			}
		}
		holder()
	})
}

func TestAcquireTimeout(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fc := clock.NewFake(t0)
		s := NewSlotsWithClock(fc)
		holder := mustAcquire(t, s, "u", 1, queueOn)
		res := goAcquire(t.Context(), s, "u", 1, queueOn)
		synctest.Wait()
		fc.Advance(queueOn.Timeout - time.Nanosecond)
		synctest.Wait()
		select {
		case r := <-res:
			t.Fatalf("returned before the timeout: %v", r.err)
		default:
		}
		fc.Advance(time.Nanosecond)
		r := <-res
		if !errors.Is(r.err, ErrQueueTimeout) || r.release != nil {
			t.Fatalf("Acquire = %v, want ErrQueueTimeout", r.err)
		}
		if s.QueueDepth("u") != 0 || s.InFlight("u") != 1 {
			t.Fatalf("queued %d, in flight %d; want 0, 1", s.QueueDepth("u"), s.InFlight("u"))
		}
		holder()
		if s.InFlight("u") != 0 {
			t.Fatalf("InFlight = %d after release, want 0 (slot leaked to the timed-out waiter)", s.InFlight("u"))
		}
	})
}

func TestAcquireGrantStopsTimer(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fc := clock.NewFake(t0)
		s := NewSlotsWithClock(fc)
		holder := mustAcquire(t, s, "u", 1, queueOn)
		res := goAcquire(t.Context(), s, "u", 1, queueOn)
		synctest.Wait()
		if fc.Pending() != 1 {
			t.Fatalf("fake clock has %d timers pending, want the queue timeout", fc.Pending())
		}
		holder()
		r := <-res
		if r.err != nil {
			t.Fatal(r.err)
		}
		if fc.Pending() != 0 {
			t.Fatalf("%d timers pending after the grant, want 0", fc.Pending())
		}
		r.release()
	})
}

func TestAcquireCallerCancelLeavesQueue(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewSlotsWithClock(clock.NewFake(t0))
		holder := mustAcquire(t, s, "u", 1, queueOn)
		ctx, cancel := context.WithCancel(t.Context())
		gone := goAcquire(ctx, s, "u", 1, queueOn)
		synctest.Wait()
		next := goAcquire(t.Context(), s, "u", 1, queueOn)
		synctest.Wait()
		if s.QueueDepth("u") != 2 {
			t.Fatalf("QueueDepth = %d, want 2", s.QueueDepth("u"))
		}
		cancel()
		if r := <-gone; !errors.Is(r.err, context.Canceled) || r.release != nil {
			t.Fatalf("cancelled waiter: %v, want context.Canceled", r.err)
		}
		if s.QueueDepth("u") != 1 {
			t.Fatalf("QueueDepth = %d after cancel, want 1", s.QueueDepth("u"))
		}
		holder() // goes to the waiter still there, not the one that left
		r := <-next
		if r.err != nil {
			t.Fatalf("remaining waiter: %v", r.err)
		}
		r.release()
		if s.InFlight("u") != 0 || s.QueueDepth("u") != 0 {
			t.Fatalf("in flight %d, queued %d; want 0, 0", s.InFlight("u"), s.QueueDepth("u"))
		}
	})
}

func TestAcquireAlreadyCancelled(t *testing.T) {
	s := NewSlotsWithClock(clock.NewFake(t0))
	holder := mustAcquire(t, s, "u", 1, queueOn)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Acquire(ctx, "u", 1, queueOn); !errors.Is(err, context.Canceled) {
		t.Fatalf("Acquire = %v, want context.Canceled", err)
	}
	if s.QueueDepth("u") != 0 {
		t.Fatalf("QueueDepth = %d, want 0", s.QueueDepth("u"))
	}
	holder()
}

func TestReleaseFunctionIsIdempotentAcrossReuse(t *testing.T) {
	// Release tokens are recycled: a stale release function must never
	// release a slot taken later with the same token.
	s := NewSlotsWithClock(clock.NewFake(t0))
	var stale []func()
	for range 100 {
		r := mustAcquire(t, s, "u", 0, config.Queue{})
		r()
		stale = append(stale, r)
	}
	held := mustAcquire(t, s, "u", 0, config.Queue{})
	for _, r := range stale {
		r()
	}
	if s.InFlight("u") != 1 {
		t.Fatalf("InFlight = %d, want 1: a stale release freed a live slot", s.InFlight("u"))
	}
	held()
	if s.InFlight("u") != 0 {
		t.Fatalf("InFlight = %d, want 0", s.InFlight("u"))
	}
}

func TestAcquireStress(t *testing.T) {
	// Many goroutines acquire, hold and release under a limit, some giving
	// up midway; the limit is never exceeded and nothing leaks.
	s := NewSlots()
	const limit, workers, rounds = 3, 32, 200
	q := config.Queue{Enabled: true, MaxLength: 16}
	var inUse, maxSeen, served atomic.Int64
	var wg sync.WaitGroup
	for g := range workers {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 7))
			for range rounds {
				ctx, cancel := context.WithCancel(context.Background())
				if rng.IntN(4) == 0 {
					cancel() // some callers are already gone, some go mid-wait
				} else if rng.IntN(4) == 0 {
					go cancel()
				}
				release, err := s.Acquire(ctx, "u", limit, q)
				cancel()
				if err != nil {
					if !errors.Is(err, context.Canceled) && !errors.Is(err, ErrQueueFull) {
						t.Errorf("Acquire: %v", err)
					}
					continue
				}
				n := inUse.Add(1)
				for m := maxSeen.Load(); n > m && !maxSeen.CompareAndSwap(m, n); m = maxSeen.Load() {
				}
				served.Add(1)
				inUse.Add(-1)
				release()
				release()
			}
		})
	}
	wg.Wait()
	if maxSeen.Load() > limit || s.InFlight("u") != 0 || s.QueueDepth("u") != 0 || served.Load() == 0 {
		t.Fatalf("max in use %d (limit %d), left in flight %d, queued %d, served %d",
			maxSeen.Load(), limit, s.InFlight("u"), s.QueueDepth("u"), served.Load())
	}
}

func TestLoweredLimitHoldsWaitersUntilBelowIt(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := NewSlotsWithClock(clock.NewFake(t0))
		var held []func()
		for range 3 {
			held = append(held, mustAcquire(t, s, "u", 3, queueOn))
		}
		res := goAcquire(t.Context(), s, "u", 1, queueOn) // max_concurrency lowered to 1
		synctest.Wait()
		held[0]() // 2 in flight: still too many for a limit of 1
		held[1]() // 1 in flight
		synctest.Wait()
		select {
		case r := <-res:
			t.Fatalf("granted with %d in flight under a limit of 1: %v", s.InFlight("u"), r.err)
		default:
		}
		if s.InFlight("u") != 1 || s.QueueDepth("u") != 1 {
			t.Fatalf("in flight %d, queued %d; want 1, 1", s.InFlight("u"), s.QueueDepth("u"))
		}
		held[2]() // handed over
		r := <-res
		if r.err != nil || s.InFlight("u") != 1 {
			t.Fatalf("waiter: %v, in flight %d; want granted, 1", r.err, s.InFlight("u"))
		}
		r.release()
	})
}

func TestGrantRacingCancelOrTimeoutNeverLeaks(t *testing.T) {
	// The wait ends (cancel or timeout) and, before the waiter has left the
	// queue, the holder releases and hands it the slot. The waiter then
	// passes the slot on (cancel) or keeps it (timeout); either way nothing
	// leaks. The interleaving is up to the scheduler, so each case runs many
	// times; every outcome must keep the invariants.
	for _, how := range []string{"cancel", "timeout"} {
		t.Run(how, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fc := clock.NewFake(t0)
				s := NewSlotsWithClock(fc)
				for range 64 {
					holder := mustAcquire(t, s, "u", 1, queueOn)
					ctx, cancel := context.WithCancel(t.Context())
					res := goAcquire(ctx, s, "u", 1, queueOn)
					synctest.Wait()
					if how == "cancel" {
						cancel()
					} else {
						fc.Advance(queueOn.Timeout)
					}
					holder()
					r := <-res
					switch {
					case r.err == nil && how == "cancel":
						t.Fatal("a cancelled waiter got a slot")
					case r.err == nil:
						r.release()
					case how == "cancel" && !errors.Is(r.err, context.Canceled),
						how == "timeout" && !errors.Is(r.err, ErrQueueTimeout):
						t.Fatalf("%s: unexpected error %v", how, r.err)
					}
					cancel()
					synctest.Wait()
					if s.InFlight("u") != 0 || s.QueueDepth("u") != 0 {
						t.Fatalf("in flight %d, queued %d after the race; want 0, 0", s.InFlight("u"), s.QueueDepth("u"))
					}
				}
			})
		})
	}
}
