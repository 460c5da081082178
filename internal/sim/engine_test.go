package sim

import (
	"testing"
	"time"
)

func TestEngineOrder(t *testing.T) {
	type sched struct {
		after time.Duration
		ref   int
	}
	tests := []struct {
		name string
		in   []sched
		want []int // refs in firing order
	}{
		{"by time", []sched{{3 * time.Second, 3}, {time.Second, 1}, {2 * time.Second, 2}}, []int{1, 2, 3}},
		{"ties fire first-scheduled first", []sched{{time.Second, 1}, {time.Second, 2}, {0, 0}, {time.Second, 3}}, []int{0, 1, 2, 3}},
		{"negative fires now", []sched{{time.Second, 1}, {-time.Second, 0}}, []int{0, 1}},
		{"many", []sched{{5, 5}, {4, 4}, {9, 9}, {1, 1}, {7, 7}, {2, 2}, {8, 8}, {3, 3}, {6, 6}, {0, 0}}, []int{0, 1, 2, 3, 4, 5, 6, 7, 8, 9}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := newEngine(epoch)
			for _, s := range tc.in {
				e.schedule(s.after, event{ref: s.ref})
			}
			var got []int
			e.run(func(ev event) { got = append(got, ev.ref) })
			if len(got) != len(tc.want) {
				t.Fatalf("fired %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("fired %v, want %v", got, tc.want)
				}
			}
		})
	}
}

func TestEngineAdvancesClockAndSchedulesFromHandlers(t *testing.T) {
	e := newEngine(epoch)
	e.schedule(2*time.Second, event{ref: 0})
	var at []time.Duration
	var clock []time.Time
	e.run(func(ev event) {
		at = append(at, e.now)
		clock = append(clock, e.clk.Now())
		if ev.ref < 3 { // each event schedules the next, 1 s later
			e.schedule(time.Second, event{ref: ev.ref + 1})
		}
	})
	want := []time.Duration{2 * time.Second, 3 * time.Second, 4 * time.Second, 5 * time.Second}
	if len(at) != len(want) {
		t.Fatalf("fired at %v, want %v", at, want)
	}
	for i := range want {
		if at[i] != want[i] || !clock[i].Equal(epoch.Add(want[i])) {
			t.Errorf("event %d: now %v clock %v, want %v and %v", i, at[i], clock[i], want[i], epoch.Add(want[i]))
		}
	}
	if e.fired != 4 {
		t.Errorf("fired = %d, want 4", e.fired)
	}
}
