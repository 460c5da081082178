package balancer

import (
	"slices"
	"testing"
)

func TestAffinityPinning(t *testing.T) {
	crossTier := func(_ int64, bound, best int) bool { return best < bound }
	open := up("a", 0, 1)
	open.BreakerOpen, open.BreakerReason = true, "5 failures"
	tests := []struct {
		name       string
		cands      []Candidate
		req        Request
		wantFirst  string
		wantResult string
		wantReason string
		wantSecond string // the stand-in, second after an available home
	}{
		{"no session", []Candidate{up("a", 0, 1), up("b", 0, 1)}, Request{K: 2}, "", "", "", ""},
		{"miss", []Candidate{up("a", 0, 1), up("b", 0, 1)}, Request{K: 2, Session: "s"}, "", AffinityMiss, "", ""},
		{"hit goes first", []Candidate{up("a", 0, 100), up("b", 0, 1)}, Request{K: 2, Session: "s", Pinned: "b"}, "b", AffinityHit, "", ""},
		{"hit in a worse tier without migration", []Candidate{up("a", 0, 1), up("b", 1, 1)}, Request{K: 2, Session: "s", Pinned: "b"}, "b", AffinityHit, "", ""},
		{"breaker open falls through", []Candidate{open, up("b", 0, 1)}, Request{K: 2, Session: "s", Pinned: "a"}, "b", AffinityFallthrough, FilterBreakerOpen, ""},
		{"gone falls through", []Candidate{up("b", 0, 1)}, Request{K: 2, Session: "s", Pinned: "zz"}, "b", AffinityFallthrough, "not_a_candidate", ""},
		{"cross tier migrates", []Candidate{up("a", 0, 1), up("b", 1, 1)}, Request{K: 2, Session: "s", Pinned: "b", Migrate: crossTier}, "a", AffinityMigrated, "", ""},
		{"cross tier stays in the best tier", []Candidate{up("a", 0, 1), up("b", 0, 1000)}, Request{K: 2, Session: "s", Pinned: "a", Migrate: crossTier}, "a", AffinityHit, "", ""},
		{"home first, its stand-in second", []Candidate{up("a", 0, 1), up("b", 0, 1000), up("c", 0, 1)}, Request{K: 3, Session: "s", Pinned: "a", StandIn: "c"}, "a", AffinityHit, "", "c"},
		{"home unavailable: the stand-in first", []Candidate{open, up("b", 0, 1000), up("c", 0, 1)}, Request{K: 3, Session: "s", Pinned: "a", StandIn: "c"}, "c", AffinityStandIn, FilterBreakerOpen, ""},
		{"home gone: the stand-in first", []Candidate{up("b", 0, 1000), up("c", 0, 1)}, Request{K: 2, Session: "s", Pinned: "zz", StandIn: "c"}, "c", AffinityStandIn, "not_a_candidate", ""},
		{"both unavailable: fall through", []Candidate{open, up("b", 0, 1)}, Request{K: 2, Session: "s", Pinned: "a", StandIn: "zz"}, "b", AffinityFallthrough, FilterBreakerOpen, ""},
		{"K 1: the home only", []Candidate{up("a", 0, 1), up("c", 0, 1)}, Request{K: 1, Session: "s", Pinned: "a", StandIn: "c"}, "a", AffinityHit, "", ""},
	}
	for _, strategy := range StrategyNames() {
		for _, tc := range tests {
			t.Run(strategy+"/"+tc.name, func(t *testing.T) {
				for seed := range uint64(10) {
					b := newStrategyBalancer(t, strategy, seed, nil)
					p := b.Plan(tc.req, tc.cands)
					checkInvariants(t, tc.req, tc.cands, p)
					if tc.wantFirst != "" && p.Order[0] != tc.wantFirst {
						t.Fatalf("seed %d: order %v, want %s first", seed, p.Order, tc.wantFirst)
					}
					if tc.wantSecond != "" && (len(p.Order) < 2 || p.Order[1] != tc.wantSecond) {
						t.Fatalf("seed %d: order %v, want the stand-in %s second", seed, p.Order, tc.wantSecond)
					}
					a := p.Decision.Affinity
					if a.Result != tc.wantResult || a.Reason != tc.wantReason || a.Bound != tc.req.Pinned || a.StandIn != tc.req.StandIn {
						t.Fatalf("affinity %+v, want result %q reason %q", a, tc.wantResult, tc.wantReason)
					}
					if tc.wantResult == AffinityHit {
						r, _, _ := record(p.Decision, tc.wantFirst)
						if r.Rank != 1 || r.Filter != "" {
							t.Fatalf("pinned record %+v", r)
						}
						if slices.Index(p.Order[1:], tc.wantFirst) >= 0 {
							t.Fatalf("pinned upstream twice in %v", p.Order)
						}
					}
				}
			})
		}
	}
}

func TestAffinityKeepsPlanAllocations(t *testing.T) {
	b := newStrategyBalancer(t, StrategyWeightedRandom, 1, nil)
	cands := []Candidate{up("a", 0, 1), up("b", 0, 1), up("c", 1, 1)}
	req := Request{K: 3, Session: "s", Pinned: "b"}
	if n := testing.AllocsPerRun(100, func() { b.Plan(req, cands) }); n > 2 {
		t.Fatalf("Plan with a pinned session allocates %v times", n)
	}
}

func BenchmarkPlanPinned(b *testing.B) {
	bal := newStrategyBalancer(b, StrategyWeightedRandom, 1, nil)
	cands := benchPool(10)
	req := Request{K: 3, Session: "s", Pinned: cands[1].Name}
	b.ReportAllocs()
	for b.Loop() {
		bal.Plan(req, cands)
	}
}
