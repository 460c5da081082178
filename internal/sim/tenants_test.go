package sim

import "testing"

// TestNoisyTeam runs examples/scenarios/noisy-team: with fair queueing a
// team flooding through four keys is served as one tenant, so the lone key
// and the other team's only busy key (which has its team's whole share)
// are served in full, waiting at most a few seconds; with FIFO across
// tenants they wait behind the flood.
func TestNoisyTeam(t *testing.T) {
	rp := simulate(t, examples+"noisy-team.config.yaml", examples+"noisy-team.yaml", 12)
	c := rp.Summary.Comparison
	byKey := func(ks []KeySummary) map[string]KeySummary {
		m := map[string]KeySummary{}
		for _, k := range ks {
			m[k.Key] = k
		}
		return m
	}
	fair, fifo := byKey(c.With.Keys), byKey(c.Without.Keys)
	for _, name := range []string{"solo", "ops-a", "research-a", "research-b", "research-c", "research-d"} {
		f, o := fair[name], fifo[name]
		t.Logf("%-10s fair: %5.1f%% of %d served, wait p50/p99 %.0f/%.0f ms; fifo: %5.1f%%, %.0f/%.0f ms", name,
			100*f.SuccessRate, f.Requests, f.QueueWaitMs.P50, f.QueueWaitMs.P99, 100*o.SuccessRate, o.QueueWaitMs.P50, o.QueueWaitMs.P99)
	}
	for _, name := range []string{"solo", "ops-a"} {
		if s := fair[name]; s.SuccessRate < 0.99 || s.QueueWaitMs.P99 > 5000 {
			t.Errorf("fair queueing: %s %+v, want ≥ 99%% served with p99 wait ≤ 5 s", name, s)
		}
		if s := fifo[name]; s.SuccessRate > 0.9 || s.QueueWaitMs.P99 < 10000 {
			t.Errorf("FIFO: %s %+v, want it to wait behind the flood (< 90%% served, p99 ≥ 10 s)", name, s)
		}
	}
}
