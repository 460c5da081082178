package admin

import (
	"sync"
	"testing"
	"time"
)

func TestTrafficWindow(t *testing.T) {
	t0 := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name   string
		events []struct {
			at time.Duration
			e  TrafficEvent
		}
		now  time.Duration
		want TrafficCounts
	}{
		{name: "empty", now: 0, want: TrafficCounts{}},
		{name: "counts each kind", now: 2 * time.Second, events: []struct {
			at time.Duration
			e  TrafficEvent
		}{{0, Attempt}, {0, Attempt}, {time.Second, Failure}, {2 * time.Second, RateLimited}, {2 * time.Second, Attempt}},
			want: TrafficCounts{Attempts: 3, Failures: 1, RateLimited: 1, Total: 3}},
		{name: "the window's oldest second still counts", now: 299 * time.Second, events: []struct {
			at time.Duration
			e  TrafficEvent
		}{{0, Attempt}, {299 * time.Second, Attempt}},
			want: TrafficCounts{Attempts: 2, Total: 2}},
		{name: "older seconds drop out, the total stays", now: 300 * time.Second, events: []struct {
			at time.Duration
			e  TrafficEvent
		}{{0, Attempt}, {0, Failure}, {10 * time.Second, Attempt}},
			want: TrafficCounts{Attempts: 1, Total: 2}},
		{name: "a reused slot forgets its old second", now: 301 * time.Second, events: []struct {
			at time.Duration
			e  TrafficEvent
		}{{time.Second, Attempt}, {time.Second, Attempt}, {301 * time.Second, Attempt}},
			want: TrafficCounts{Attempts: 1, Total: 3}},
		{name: "after a long idle period", now: time.Hour, events: []struct {
			at time.Duration
			e  TrafficEvent
		}{{0, Attempt}, {time.Minute, Attempt}},
			want: TrafficCounts{Total: 2}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := NewTraffic(5 * time.Minute)
			for _, ev := range c.events {
				tr.Add("a", ev.e, t0.Add(ev.at))
			}
			tr.Add("other", Attempt, t0.Add(c.now))
			if got := tr.Counts("a", t0.Add(c.now)); got != c.want {
				t.Fatalf("got %+v, want %+v", got, c.want)
			}
		})
	}
}

func TestTrafficForgetAndWindow(t *testing.T) {
	tr := NewTraffic(1500 * time.Millisecond)
	if tr.Window() != 2*time.Second {
		t.Fatalf("window %v, want it rounded up to 2s", tr.Window())
	}
	now := time.Unix(1000, 0)
	tr.Add("a", Attempt, now)
	tr.Forget("a")
	if got := tr.Counts("a", now); got != (TrafficCounts{}) {
		t.Fatalf("after Forget: %+v", got)
	}
	if NewTraffic(0).Window() != DefaultTrafficWindow {
		t.Fatal("a zero window is not the default")
	}
}

func TestTrafficConcurrent(t *testing.T) {
	tr := NewTraffic(time.Minute)
	now := time.Unix(5000, 0)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 1000 {
				tr.Add([]string{"a", "b"}[(g+i)%2], Attempt, now)
				_ = tr.Counts("a", now)
			}
		}()
	}
	wg.Wait()
	if a, b := tr.Counts("a", now), tr.Counts("b", now); a.Attempts+b.Attempts != 8000 || a.Total != a.Attempts {
		t.Fatalf("a %+v b %+v, want 8000 attempts in all", a, b)
	}
}

func BenchmarkTrafficAdd(b *testing.B) {
	tr := NewTraffic(DefaultTrafficWindow)
	now := time.Unix(5000, 0)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		tr.Add("upstream", Attempt, now.Add(time.Duration(i)*time.Millisecond))
	}
}
