package sim

import (
	"bytes"
	"slices"
	"testing"
	"time"

	"switchyard/internal/config"
)

// slowStarts loads the slow-starts example, its traffic cut to d (0: as
// shipped), and returns a function that runs it with a seed.
func slowStarts(t *testing.T, d time.Duration) func(seed uint64) *Report {
	t.Helper()
	cfg := loadConfig(t, examples+"slow-starts.config.yaml")
	sc, err := LoadScenario(examples+"slow-starts.yaml", cfg)
	if err != nil {
		t.Fatal(err)
	}
	if d > 0 {
		sc.Duration, sc.Traffic[0].Duration = d, d
	}
	run := func(seed uint64) *Report {
		t.Helper()
		rp, err := Run(cfg, sc, seed)
		if err != nil {
			t.Fatal(err)
		}
		return rp
	}
	return run
}

// TestSlowStartsHedging holds the slow-starts example to issue 16's
// must-show: with one upstream starting 10% of its answers after 3 s,
// hedging cuts the TTFT p99 to at most a third of what it is without, for
// at most 12% more upstream attempts.
func TestSlowStartsHedging(t *testing.T) {
	if raceEnabled {
		t.Skip("a whole scenario under -race is too slow; .ci/run runs it without -race")
	}
	tests := []struct {
		name     string
		duration time.Duration // 0: as shipped
		seed     uint64
	}{
		{"as shipped", 0, 1},
		{"3 minutes, seed 2", 3 * time.Minute, 2},
		{"3 minutes, seed 3", 3 * time.Minute, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			run := slowStarts(t, tc.duration)
			s := run(tc.seed).Summary
			c := s.Comparison
			if c == nil || c.Of != CompareHedging {
				t.Fatalf("comparison %+v, want one of hedging", c)
			}
			with, without := c.With, c.Without
			if without.TTFTMs.P99 < 3000 {
				t.Fatalf("TTFT p99 without hedging %v ms: the slow starts should set it at 3 s", without.TTFTMs.P99)
			}
			if with.TTFTMs.P99 > without.TTFTMs.P99/3 {
				t.Errorf("TTFT p99 %v ms with hedging, %v ms without: want at most a third", with.TTFTMs.P99, without.TTFTMs.P99)
			}
			if c.ExtraAttempts > 0.12 || c.ExtraAttempts <= 0 {
				t.Errorf("%.1f%% extra attempts (%d with hedging, %d without), want 0–12%%", 100*c.ExtraAttempts, with.Attempts, without.Attempts)
			}
			if with.Requests != without.Requests || with.Succeeded != with.Requests || without.Succeeded != without.Requests {
				t.Errorf("with hedging %d of %d succeeded, without %d of %d: want the same traffic, all served",
					with.Succeeded, with.Requests, without.Succeeded, without.Requests)
			}
			// Nothing fails in this scenario: every attempt past a
			// request's first is a hedge, and none is a failover.
			o := s.Overall
			if o.Hedges != o.Attempts-o.Requests || o.Hedges != with.Hedges || o.Failovers != 0 || o.Rescued != 0 {
				t.Errorf("hedges %d, attempts %d for %d requests, failovers %d, rescued %d: want every extra attempt a hedge",
					o.Hedges, o.Attempts, o.Requests, o.Failovers, o.Rescued)
			}
		})
	}
}

// TestHedgingDeterminism runs hedged requests twice with one seed: the
// raced attempts run as tasks of the scheduler, and their order (who wins,
// when the loser is cancelled and settled) must not depend on the Go
// runtime's.
func TestHedgingDeterminism(t *testing.T) {
	d := 3 * time.Minute
	if raceEnabled { // the raced tasks' handoffs under the detector, briefly
		d = 30 * time.Second
	}
	run := slowStarts(t, d)
	a, b, c := files(t, run(1)), files(t, run(1)), files(t, run(2))
	for _, n := range []string{FileSummaryJSON, FileSummaryMD, FileShareSVG, FileLatencySVG} {
		if !bytes.Equal(a[n], b[n]) {
			t.Errorf("%s: two runs with seed 1 differ", n)
		}
		if bytes.Equal(a[n], c[n]) {
			t.Errorf("%s: seeds 1 and 2 give the same bytes", n)
		}
	}
	if !bytes.Contains(a[FileSummaryMD], []byte("## With and without hedging")) {
		t.Errorf("summary.md has no comparison:\n%s", a[FileSummaryMD])
	}
}

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
