package admin

import (
	"fmt"
	"reflect"
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

func TestTrafficModels(t *testing.T) {
	// A 10 s window in 2 s steps: at 1010.5 the ring holds the seconds
	// 1001–1010, and the steps cover (1001, 1003], … (1007, 1009]: second
	// 1010 is not over.
	now := time.Unix(1010, 5e8)
	cases := []struct {
		name        string
		at          []int64 // the seconds of attempts for model m, in order
		other       []int64 // attempts for model n
		step        time.Duration
		want        []ModelTraffic
		wantHistory [][]int64 // per model of want, with step
	}{
		{name: "never tried", want: []ModelTraffic{}},
		{name: "counts per model over the window, totals since first counted",
			at: []int64{995, 1000, 1001, 1004, 1004, 1009, 1010}, other: []int64{1010},
			want: []ModelTraffic{{Model: "m", Requests5m: 5, RequestsTotal: 7}, {Model: "n", Requests5m: 1, RequestsTotal: 1}}},
		{name: "history in steps, oldest first, the current second left out",
			at: []int64{995, 1000, 1001, 1004, 1004, 1009, 1010, 1010}, step: 2 * time.Second,
			want: []ModelTraffic{{Model: "m", Requests5m: 6, RequestsTotal: 8}}, wantHistory: [][]int64{{0, 2, 0, 1}}},
		{name: "one-second steps", at: []int64{1000, 1001, 1009}, step: time.Second,
			want: []ModelTraffic{{Model: "m", Requests5m: 2, RequestsTotal: 3}}, wantHistory: [][]int64{{1, 0, 0, 0, 0, 0, 0, 0, 1}}},
		{name: "a young series has a shorter history", at: []int64{1004, 1007, 1007}, other: []int64{1010}, step: 2 * time.Second,
			want:        []ModelTraffic{{Model: "m", Requests5m: 3, RequestsTotal: 3}, {Model: "n", Requests5m: 1, RequestsTotal: 1}},
			wantHistory: [][]int64{{1, 2, 0}, {}}},
		{name: "a reader whose clock is behind the writer's", at: []int64{1011}, step: 2 * time.Second,
			want: []ModelTraffic{{Model: "m", RequestsTotal: 1}}, wantHistory: [][]int64{{}}},
		{name: "a model idle for the window still has its total", at: []int64{900, 901}, step: 2 * time.Second,
			want: []ModelTraffic{{Model: "m", RequestsTotal: 2}}, wantHistory: [][]int64{{0, 0, 0, 0}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tr := NewTraffic(10 * time.Second)
			for _, sec := range c.at {
				tr.AddModel("a", "m", time.Unix(sec, 0))
			}
			for _, sec := range c.other {
				tr.AddModel("a", "n", time.Unix(sec, 0))
			}
			tr.Add("a", Attempt, now) // the upstream's own counts are apart
			got := tr.Models("a", now, c.step)
			var history [][]int64
			for i := range got {
				if c.step > 0 {
					history = append(history, got[i].History)
				}
				got[i].History = nil
			}
			if !reflect.DeepEqual(got, c.want) || !reflect.DeepEqual(history, c.wantHistory) {
				t.Fatalf("got %+v history %v, want %+v history %v", got, history, c.want, c.wantHistory)
			}
			if c := tr.Counts("a", now); c.Attempts != 1 || c.Total != 1 {
				t.Fatalf("the upstream's counts %+v, want its one Add", c)
			}
		})
	}
	if HistoryEnd(now) != time.Unix(1010, 0) {
		t.Fatalf("HistoryEnd %v", HistoryEnd(now))
	}
}

func TestTrafficModelsBounded(t *testing.T) {
	tr := NewTraffic(10 * time.Second)
	t0 := time.Unix(2000, 0)
	for i := range MaxTrafficModels {
		tr.AddModel("a", fmt.Sprintf("m%02d", i), t0)
	}
	tr.AddModel("a", "extra", t0)
	has := func(model string) bool {
		for _, m := range tr.Models("a", t0.Add(20*time.Second), 0) {
			if m.Model == model {
				return true
			}
		}
		return false
	}
	if n := len(tr.Models("a", t0, 0)); n != MaxTrafficModels || has("extra") {
		t.Fatalf("%d models (extra among them: %v), want %d without the one past the bound", n, has("extra"), MaxTrafficModels)
	}
	// Once the others are idle for the window, a new model takes a place.
	tr.AddModel("a", "m05", t0.Add(15*time.Second))
	tr.AddModel("a", "extra", t0.Add(20*time.Second))
	if n := len(tr.Models("a", t0, 0)); n != MaxTrafficModels || !has("extra") || !has("m05") {
		t.Fatalf("%d models, extra %v, m05 (busy) %v: want extra in an idle model's place", n, has("extra"), has("m05"))
	}
	tr.Forget("a")
	if got := tr.Models("a", t0, 0); got != nil {
		t.Fatalf("after Forget: %v", got)
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
				tr.AddModel("a", []string{"m", "n"}[i%2], now)
				_ = tr.Counts("a", now)
				_ = tr.Models("a", now, time.Second)
			}
		}()
	}
	wg.Wait()
	if a, b := tr.Counts("a", now), tr.Counts("b", now); a.Attempts+b.Attempts != 8000 || a.Total != a.Attempts {
		t.Fatalf("a %+v b %+v, want 8000 attempts in all", a, b)
	}
	if m := tr.Models("a", now, 0); len(m) != 2 || m[0].Requests5m != 4000 || m[1].Requests5m != 4000 {
		t.Fatalf("a's models %+v, want 4000 attempts each", m)
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
