package state

import (
	"math"
	"switchyard/internal/outcome"
	"sync"
	"testing"
	"time"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func TestSlidingWindow(t *testing.T) {
	tests := []struct {
		name  string
		sends []time.Duration // offsets from t0
		at    time.Duration
		want  int64
	}{
		{"counts within the window", []time.Duration{0, time.Second, 30 * time.Second}, 40 * time.Second, 3},
		{"drops what is older than the window", []time.Duration{0, time.Second, 30 * time.Second}, 61 * time.Second, 1},
		{"empty after a quiet window", []time.Duration{0, 10 * time.Second}, 3 * time.Minute, 0},
		{"a bucket is reused after wrapping", []time.Duration{0, 60 * time.Second, 60 * time.Second}, 60 * time.Second, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := NewMemory(time.Minute)
			for _, off := range tc.sends {
				m.Dispatched("u", t0.Add(off))
			}
			if got := m.Snapshot("u", t0.Add(tc.at)).WindowRequests; got != tc.want {
				t.Fatalf("window requests = %d, want %d", got, tc.want)
			}
		})
	}
}

func TestEWMAAndStreak(t *testing.T) {
	m := NewMemory(0)
	m.Observe("u", outcome.Outcome{Latency: 100 * time.Millisecond}, t0)
	m.Observe("u", outcome.Outcome{Latency: 200 * time.Millisecond}, t0)
	m.Observe("u", outcome.Outcome{TTFT: 300 * time.Millisecond, TPS: 50}, t0)
	s := m.Snapshot("u", t0)
	if want := 0.3*200 + 0.7*100; math.Abs(s.LatencyEWMA-want) > 1e-9 {
		t.Fatalf("latency EWMA %v, want %v", s.LatencyEWMA, want)
	}
	if s.TTFTEWMA != 300 || s.TPSEWMA != 50 {
		t.Fatalf("ttft %v tps %v", s.TTFTEWMA, s.TPSEWMA)
	}
	steps := []struct {
		r    outcome.Outcome
		want int
	}{
		{outcome.Outcome{Class: outcome.ServerError}, 1}, {outcome.Outcome{Class: outcome.ServerError}, 2}, {outcome.Outcome{Class: outcome.RateLimited}, 2}, {outcome.Outcome{Class: outcome.ServerError}, 3}, {outcome.Outcome{}, 0},
	}
	for i, st := range steps {
		at := t0.Add(time.Duration(i) * time.Second)
		m.Observe("v", st.r, at)
		s := m.Snapshot("v", at)
		if s.ConsecutiveFailures != st.want {
			t.Fatalf("step %d: streak %d, want %d", i, s.ConsecutiveFailures, st.want)
		}
	}
	if got := m.Snapshot("v", t0).LastFailure; !got.Equal(t0.Add(3 * time.Second)) {
		t.Fatalf("last failure %v", got)
	}
	m.Forget("v")
	if m.Snapshot("v", t0) != (Snapshot{}) {
		t.Fatal("forgotten upstream still has stats")
	}
}

func TestConcurrentUse(t *testing.T) {
	m := NewMemory(0)
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 1000; i++ {
				m.Dispatched("u", t0)
				m.Observe("u", outcome.Outcome{Latency: time.Millisecond}, t0)
				_ = m.Snapshot("u", t0)
			}
		}()
	}
	wg.Wait()
	if got := m.Snapshot("u", t0).WindowRequests; got != 8000 {
		t.Fatalf("window requests %d, want 8000", got)
	}
}

func BenchmarkDispatchedObserveSnapshot(b *testing.B) {
	m := NewMemory(0)
	b.ReportAllocs()
	for i := 0; i < b.N; i++ {
		m.Dispatched("u", t0)
		m.Observe("u", outcome.Outcome{Latency: time.Millisecond}, t0)
		_ = m.Snapshot("u", t0)
	}
}
