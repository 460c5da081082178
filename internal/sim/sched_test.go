package sim

import (
	"context"
	"runtime"
	"slices"
	"testing"
	"time"

	"switchyard/internal/clock"
)

func TestSchedTimerOrder(t *testing.T) {
	tests := []struct {
		name string
		in   []time.Duration // index i fires i
		want []int
	}{
		{"by time", []time.Duration{3 * time.Second, time.Second, 2 * time.Second}, []int{1, 2, 0}},
		{"ties fire first-scheduled first", []time.Duration{time.Second, time.Second, 0, time.Second}, []int{2, 0, 1, 3}},
		{"negative fires now", []time.Duration{time.Second, -time.Second}, []int{1, 0}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := newSched(epoch)
			var got []int
			for i, d := range tc.in {
				s.AfterFunc(d, func() { got = append(got, i) })
			}
			s.run()
			if !slices.Equal(got, tc.want) {
				t.Fatalf("fired %v, want %v", got, tc.want)
			}
		})
	}
}

func TestSchedStopAndReset(t *testing.T) {
	s := newSched(epoch)
	var got []string
	a := s.AfterFunc(time.Second, func() { got = append(got, "a") })
	b := s.AfterFunc(2*time.Second, func() { got = append(got, "b@"+s.now.String()) })
	if !a.Stop() || a.Stop() {
		t.Fatal("Stop: want true then false")
	}
	b.Reset(5 * time.Second) // the 2 s entry is void
	s.run()
	if !slices.Equal(got, []string{"b@5s"}) {
		t.Fatalf("fired %v, want [b@5s]", got)
	}
}

// Tasks run one at a time, in the order they blocked, and each Wait ends
// for the reason that came first in virtual time.
func TestSchedTasks(t *testing.T) {
	s := newSched(epoch)
	var log []string
	note := func(what string) { log = append(log, s.now.String()+" "+what) }
	ready := make(chan struct{})
	ctx, cancel := context.WithCancel(context.Background())
	s.spawn(nil, func() {
		note("a waits for ready")
		r := s.Wait(context.Background(), ready, 10*time.Second)
		note("a " + waitName(r))
	})
	s.spawn(nil, func() {
		note("b sleeps 2s")
		_ = s.sleep(context.Background(), 2*time.Second)
		note("b closes ready")
		close(ready)
	})
	s.spawn(nil, func() {
		note("c waits for ctx")
		note("c " + waitName(s.Wait(ctx, nil, time.Minute)))
	})
	s.spawn(nil, func() {
		note("d waits 1s")
		note("d " + waitName(s.Wait(context.Background(), nil, time.Second)))
	})
	s.AfterFunc(3*time.Second, cancel)
	s.run()
	want := []string{
		"0s a waits for ready", "0s b sleeps 2s", "0s c waits for ctx", "0s d waits 1s",
		"1s d expired", "2s b closes ready", "2s a ready", "3s c done",
	}
	if !slices.Equal(log, want) {
		t.Fatalf("ran\n%q\nwant\n%q", log, want)
	}
}

func waitName(r clock.WaitResult) string {
	return [...]string{clock.Ready: "ready", clock.Expired: "expired", clock.Done: "done"}[r]
}

// Tasks run on pooled goroutines, all of which end with stop.
func TestSchedStopEndsWorkers(t *testing.T) {
	before := runtime.NumGoroutine()
	s := newSched(epoch)
	for i := range 50 {
		s.AfterFunc(time.Duration(i%5)*time.Second, func() {
			s.spawn(nil, func() { _ = s.sleep(context.Background(), time.Second) })
		})
	}
	s.run()
	if len(s.idle) == 0 || len(s.idle) > 50 {
		t.Fatalf("%d idle workers after 50 tasks", len(s.idle))
	}
	s.stop()
	deadline := time.Now().Add(5 * time.Second)
	for runtime.NumGoroutine() > before && time.Now().Before(deadline) {
		runtime.Gosched()
	}
	if n := runtime.NumGoroutine(); n > before {
		t.Fatalf("%d goroutines after stop, %d before", n, before)
	}
}

// A hedged request's race in miniature: a task spawns another (goTask),
// which blocks on the simulated upstream; the first cancels it and waits
// a bounded time for it to unwind (endRace's lossWait). The cancelled task
// resumes at the same virtual instant, so the wait ends ready, not
// expired, and no time passes.
func TestSchedCancelSpawnedTask(t *testing.T) {
	s := newSched(epoch)
	var log []string
	note := func(what string) { log = append(log, s.now.String()+" "+what) }
	s.spawn(nil, func() {
		ctx, cancel := context.WithCancel(context.Background())
		unwound := make(chan struct{})
		s.spawn(nil, func() {
			note("racer sends")
			err := s.sleep(ctx, 10*time.Second)
			note("racer unwinds: " + err.Error())
			close(unwound)
		})
		_ = s.sleep(context.Background(), time.Second)
		cancel()
		note("cancelled; waits up to 100ms")
		note("wait " + waitName(s.Wait(context.Background(), unwound, 100*time.Millisecond)))
	})
	s.run()
	want := []string{"0s racer sends", "1s cancelled; waits up to 100ms", "1s racer unwinds: context canceled", "1s wait ready"}
	if !slices.Equal(log, want) {
		t.Fatalf("ran\n%q\nwant\n%q", log, want)
	}
}
