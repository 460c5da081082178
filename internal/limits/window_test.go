package limits

import (
	"math/rand/v2"
	"testing"
	"time"
)

var t0 = time.Date(2025, 3, 14, 12, 0, 10, 400_000_000, time.UTC) // 10.4 s into a minute

func TestWindowExactness(t *testing.T) {
	// An event at 10.4 s counts in the bucket [10 s, 11 s) and leaves the
	// 60-bucket window when the bucket [70 s, 71 s) starts.
	tests := []struct {
		name string
		at   time.Duration // after t0
		want int64
	}{
		{"at once", 0, 1},
		{"same bucket", 500 * time.Millisecond, 1},
		{"59 s later", 59 * time.Second, 1},
		{"last nanosecond of the window", 59*time.Second + 599_999_999, 1},
		{"first nanosecond after", 59*time.Second + 600_000_000, 0},
		{"long after", time.Hour, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			w := newWindow(60, time.Second)
			w.add(w.advance(t0), 1)
			w.advance(t0.Add(tc.at))
			if w.total != tc.want {
				t.Fatalf("total at t0+%v = %d, want %d", tc.at, w.total, tc.want)
			}
		})
	}
}

func TestWindowMatchesNaiveCount(t *testing.T) {
	// Seeded random events over 10 minutes: the running total always equals
	// a brute-force count of the events whose bucket is in the window.
	rng := rand.New(rand.NewPCG(1, 2))
	w := newWindow(60, time.Second)
	type event struct {
		epoch, v int64
	}
	var events []event
	now := t0
	for i := 0; i < 10000; i++ {
		now = now.Add(time.Duration(rng.IntN(200)) * time.Millisecond)
		e := w.advance(now)
		v := int64(rng.IntN(5))
		w.add(e, v)
		events = append(events, event{e, v})
		var want int64
		cur := now.Unix()
		kept := events[:0]
		for _, ev := range events {
			if ev.epoch > cur-60 { // time only moves forward: older events never count again
				want += ev.v
				kept = append(kept, ev)
			}
		}
		events = kept
		if w.total != want {
			t.Fatalf("step %d at %v: total %d, naive %d", i, now, w.total, want)
		}
	}
}

func TestWindowFreeAt(t *testing.T) {
	w := newWindow(60, time.Second)
	w.add(w.advance(t0), 2)                     // bucket 10 s
	w.add(w.advance(t0.Add(5*time.Second)), 3)  // bucket 15 s
	w.add(w.advance(t0.Add(20*time.Second)), 1) // bucket 30 s
	base := t0.Truncate(time.Minute)
	tests := []struct {
		need int64
		want time.Time
	}{
		{1, base.Add(70 * time.Second)},
		{2, base.Add(70 * time.Second)},
		{3, base.Add(75 * time.Second)},
		{5, base.Add(75 * time.Second)},
		{6, base.Add(90 * time.Second)},
		{7, time.Time{}},
	}
	for _, tc := range tests {
		if got := w.freeAt(tc.need); !got.Equal(tc.want) {
			t.Errorf("freeAt(%d) = %v, want %v", tc.need, got, tc.want)
		}
	}
}

func TestWindowClockStepsBack(t *testing.T) {
	w := newWindow(60, time.Second)
	w.add(w.advance(t0), 1)
	e := w.advance(t0.Add(-time.Hour))
	w.add(e, 1)
	if w.total != 2 {
		t.Fatalf("total %d after the clock stepped back, want 2 (counted in the newest bucket)", w.total)
	}
}

func TestWindowBefore1970(t *testing.T) {
	// Bucket numbers floor towards minus infinity: -0.5 s and -1.5 s are in
	// different buckets, -0.5 s and -0.1 s in the same one.
	w := newWindow(60, time.Second)
	epoch := time.Unix(0, 0)
	for _, at := range []time.Duration{-1500 * time.Millisecond, -500 * time.Millisecond, -100 * time.Millisecond} {
		w.add(w.advance(epoch.Add(at)), 1)
	}
	if got := w.freeAt(1); !got.Equal(epoch.Add(58 * time.Second)) {
		t.Fatalf("freeAt(1) = %v, want the -2 s bucket's successor + 60 s = 58 s", got)
	}
	if got := w.freeAt(3); !got.Equal(epoch.Add(59 * time.Second)) {
		t.Fatalf("freeAt(3) = %v, want 59 s", got)
	}
}
