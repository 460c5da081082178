package main

import "testing"

func TestMemoryGovernor(t *testing.T) {
	const mib = 1 << 20
	g := &memoryGovernor{configured: 40 * mib, current: 40 * mib}
	const (
		spiral = 0.4  // the collector's share of the CPU in a spiral
		ease   = 0.05 // and at full JSON load
	)
	type step struct {
		used    int64
		gc      float64 // the collector's share of the CPU since the last check
		limit   int64
		changed bool
	}
	// times repeats a step n times.
	times := func(n int, s step) []step {
		out := make([]step, n)
		for i := range out {
			out[i] = s
		}
		return out
	}
	var steps []step
	for _, part := range [][]step{
		{{20 * mib, ease, 40 * mib, false}},
		{{37 * mib, spiral, 40 * mib, false}}, // above 90% in a spiral: one
		{{38 * mib, spiral, 40 * mib, false}}, // two
		{{30 * mib, spiral, 40 * mib, false}}, // the run is broken
		{{37 * mib, spiral, 40 * mib, false}},
		{{38 * mib, spiral, 40 * mib, false}},
		{{38 * mib, ease, 40 * mib, false}},              // above 90%, the collector at ease: the run is broken
		times(10, step{39 * mib, ease, 40 * mib, false}), // and it never raises
		{{37 * mib, spiral, 40 * mib, false}},
		{{38 * mib, spiral, 40 * mib, false}},
		{{39 * mib, spiral, 78 * mib, true}}, // three in a row: twice what is in use
		{{70 * mib, spiral, 78 * mib, false}},
		{{71 * mib, spiral, 78 * mib, false}},
		{{72 * mib, spiral, 78 * mib, false}},
		{{25 * mib, ease, 78 * mib, false}},             // not under a quarter of the raised limit
		times(7, step{19 * mib, ease, 78 * mib, false}), // under a quarter: seven checks
		{{40 * mib, ease, 78 * mib, false}},             // the run is broken (between two waves)
		times(7, step{19 * mib, ease, 78 * mib, false}),
		{{19 * mib, ease, 40 * mib, true}}, // eight in a row: twice the use, but never under memory_limit_mb
		{{10 * mib, ease, 40 * mib, false}},
		{{39 * mib, spiral, 40 * mib, false}},
		{{39 * mib, spiral, 40 * mib, false}},
		{{200 * mib, spiral, 400 * mib, true}},
		times(7, step{90 * mib, ease, 400 * mib, false}),
		{{90 * mib, ease, 180 * mib, true}}, // under a quarter of 400: twice the use
		{{90 * mib, ease, 180 * mib, false}},
	} {
		steps = append(steps, part...)
	}
	for i, s := range steps {
		limit, changed := g.step(s.used, s.gc)
		if limit != s.limit || changed != s.changed {
			t.Fatalf("step %d (used %d MiB, gc %.2f): limit %d MiB changed %v, want %d MiB %v", i, s.used/mib, s.gc, limit/mib, changed, s.limit/mib, s.changed)
		}
	}
}
