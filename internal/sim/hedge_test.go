package sim

import (
	"slices"
	"testing"
	"time"

	"switchyard/internal/config"
)

// The arrivals of a scenario with sessions do not depend on how fast the
// answers come: hedging on or off, the same sessions start and the same
// first turns arrive (compare's premise). A session's later turns follow
// its answers and draw from its own stream.
func TestArrivalsIndependentOfAnswers(t *testing.T) {
	if raceEnabled {
		t.Skip("a whole scenario under -race is too slow; .ci/run runs it without -race")
	}
	cfg := loadConfig(t, "testdata/mixed.config.yaml")
	sc, err := LoadScenario("testdata/mixed.yaml", cfg)
	if err != nil {
		t.Fatal(err)
	}
	hedged := *cfg
	hedged.Defaults.Hedge = config.Hedge{Delay: "300ms", Max: 3, Budget: 1}
	hedged.Routes = slices.Clone(cfg.Routes)
	for i := range hedged.Routes {
		hedged.Routes[i].Hedge = hedged.Defaults.Hedge
	}
	// sessions runs cfg and returns the sessions started per phase and
	// the hedges made.
	sessions := func(cfg *config.Config) (n []int, hedges int64) {
		r, err := newRun(cfg, sc, 1)
		if err != nil {
			t.Fatal(err)
		}
		r.simulate()
		for _, g := range r.phases {
			n = append(n, g.sessions)
		}
		return n, r.rec.client.hedges
	}
	on, hedges := sessions(&hedged)
	off, _ := sessions(cfg)
	if hedges == 0 {
		t.Fatal("no request was hedged")
	}
	if !slices.Equal(on, off) || on[0] == 0 {
		t.Errorf("sessions started per phase: %v hedged, %v not, want the same (and some)", on, off)
	}
}

// A hedged request has attempts on two upstreams in flight at once; each
// is counted in the time bucket it was sent in.
func TestRequestSentPerUpstream(t *testing.T) {
	q := &request{start: time.Second}
	q.dispatched(0, 2*time.Second)
	q.dispatched(1, 3*time.Second) // a hedge
	q.dispatched(0, 4*time.Second) // a retry on the first
	tests := []struct {
		up   int
		want time.Duration
	}{{0, 4 * time.Second}, {1, 3 * time.Second}, {2, time.Second}}
	for _, tc := range tests {
		if got := q.sentTo(tc.up); got != tc.want {
			t.Errorf("sentTo(%d) = %v, want %v", tc.up, got, tc.want)
		}
	}
}
