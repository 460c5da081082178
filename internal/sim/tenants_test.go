package sim

import "testing"

// TestNoisyTeam runs examples/scenarios/noisy-team: with fair queueing a
// team flooding through four keys is served as one tenant, so the lone key
// and the other team's only busy key (which has its team's whole share)
// are served in full, and the team's four keys share what the team gets
// evenly, none starved; with FIFO across tenants the light keys wait
// behind the flood.
func TestNoisyTeam(t *testing.T) {
	rp := simulate(t, examples+"noisy-team.config.yaml", examples+"noisy-team.yaml", 12)
	c := rp.Summary.Comparison
	fair, fifo := byKey(c.With.Keys), byKey(c.Without.Keys)
	for _, name := range []string{"solo", "ops-a", "research-a", "research-b", "research-c", "research-d"} {
		f, o := fair[name], fifo[name]
		t.Logf("%-10s fair: %5.1f%% of %d served, wait p50/p99 %.0f/%.0f ms; fifo: %5.1f%%, %.0f/%.0f ms", name,
			100*f.SuccessRate, f.Requests, f.QueueWaitMs.P50, f.QueueWaitMs.P99, 100*o.SuccessRate, o.QueueWaitMs.P50, o.QueueWaitMs.P99)
	}
	for _, name := range []string{"solo", "ops-a"} {
		if s := fair[name]; s.SuccessRate < 0.99 || s.QueueWaitMs.P50 > 2000 || s.QueueWaitMs.P99 > 10000 {
			t.Errorf("fair queueing: %s %+v, want ≥ 99%% served, p50 wait ≤ 2 s, p99 ≤ 10 s", name, s)
		}
		if s := fifo[name]; s.SuccessRate > 0.9 || s.QueueWaitMs.P99 < 10000 {
			t.Errorf("FIFO: %s %+v, want it to wait behind the flood (< 90%% served, p99 ≥ 10 s)", name, s)
		}
	}
	lo, hi := 1.0, 0.0
	for _, name := range []string{"research-a", "research-b", "research-c", "research-d"} {
		lo, hi = min(lo, fair[name].SuccessRate), max(hi, fair[name].SuccessRate)
	}
	if hi-lo > 0.03 || lo < 0.1 {
		t.Errorf("fair queueing: the team's keys were served %.1f%% to %.1f%%, want within 3 points, none starved", 100*lo, 100*hi)
	}
}
