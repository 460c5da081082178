package balancer

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
)

// ewma returns an active candidate with a latency EWMA and in-flight count.
func ewma(name string, latencyMs float64, inflight int64) Candidate {
	return Candidate{Name: name, Weight: 1, LatencyEWMA: latencyMs, InFlight: inflight, Active: true}
}

// TestP2CEWMASlowUpstream simulates a closed loop over 10,000 picks: each
// pick adds a request to the chosen upstream, and every step each in-flight
// request completes with probability 1/10 on the fast upstreams and 1/50 on
// the slow one (5× the latency), so queues build up and the slow one does win
// some duels. It must get under 15% of the picks.
func TestP2CEWMASlowUpstream(t *testing.T) {
	const picks = 10000
	b := newStrategyBalancer(t, StrategyP2CEWMA, 31, nil)
	sim := rand.New(rand.NewPCG(5, 6))
	cands := []Candidate{ewma("fast1", 100, 0), ewma("slow", 500, 0), ewma("fast2", 100, 0)}
	done := []float64{0.1, 0.02, 0.1}
	counts := map[string]int{}
	for range picks {
		p := b.Plan(Request{K: 1}, cands)
		counts[p.Order[0]]++
		for i := range cands {
			if cands[i].Name == p.Order[0] {
				cands[i].InFlight++
			}
			for range cands[i].InFlight {
				if sim.Float64() < done[i] {
					cands[i].InFlight--
				}
			}
		}
	}
	if got := 100 * float64(counts["slow"]) / picks; got >= 15 {
		t.Errorf("slow upstream got %.2f%% of picks, want < 15%% (%v)", got, counts)
	}
	t.Logf("picks: %v", counts)
	if counts["fast1"] == 0 || counts["fast2"] == 0 || counts["slow"] == 0 {
		t.Errorf("an upstream was starved: %v", counts)
	}

	t.Run("idle pool: the slow one never wins a duel", func(t *testing.T) {
		b := newStrategyBalancer(t, StrategyP2CEWMA, 32, nil)
		cands := []Candidate{ewma("fast1", 100, 0), ewma("slow", 500, 0), ewma("fast2", 100, 0)}
		for _, pick := range firstPicks(t, b, cands, picks, 1) {
			if pick == "slow" {
				t.Fatalf("slow picked against an idle fast upstream")
			}
		}
	})
}

// TestP2CEWMASampling checks that the two choices are uniform distinct pairs:
// over 10,000 seeded plans of three equal-cost upstreams each is sampled in
// 2/3 of the plans and picked first in 1/3 (± 1.5 points, about 3σ).
func TestP2CEWMASampling(t *testing.T) {
	const picks, tol = 10000, 1.5
	b := newStrategyBalancer(t, StrategyP2CEWMA, 33, nil)
	cands := []Candidate{ewma("a", 100, 1), ewma("b", 100, 1), ewma("c", 100, 1)}
	first, sampled := map[string]int{}, map[string]int{}
	for range picks {
		p := b.Plan(Request{K: 1}, cands)
		first[p.Order[0]]++
		n := 0
		for _, r := range p.Decision.Candidates {
			if r.Scores.Sampled == 1 {
				sampled[r.Name]++
				n++
			}
		}
		if n != 2 {
			t.Fatalf("%d sampled, want 2", n)
		}
	}
	for _, c := range cands {
		if got := 100 * float64(first[c.Name]) / picks; math.Abs(got-100.0/3) > tol {
			t.Errorf("%s first %.2f%%, want 33.33%% ± %.1f", c.Name, got, tol)
		}
		if got := 100 * float64(sampled[c.Name]) / picks; math.Abs(got-200.0/3) > tol {
			t.Errorf("%s sampled %.2f%%, want 66.67%% ± %.1f", c.Name, got, tol)
		}
	}
}

func TestP2CEWMACost(t *testing.T) {
	tests := []struct {
		name     string
		cands    []Candidate
		wantLat  map[string]float64
		wantCost map[string]float64
	}{
		{
			name:     "cost is (inflight+1) × latency",
			cands:    []Candidate{ewma("a", 100, 0), ewma("b", 300, 2)},
			wantLat:  map[string]float64{"a": 100, "b": 300},
			wantCost: map[string]float64{"a": 100, "b": 900},
		},
		{
			name:     "no data counts as the mean of the others",
			cands:    []Candidate{ewma("a", 100, 0), ewma("b", 300, 0), ewma("new", 0, 1)},
			wantLat:  map[string]float64{"new": 200},
			wantCost: map[string]float64{"new": 400},
		},
		{
			name:     "no data anywhere counts as 1 ms",
			cands:    []Candidate{ewma("a", 0, 0), ewma("b", math.NaN(), 3)},
			wantLat:  map[string]float64{"a": 1, "b": 1},
			wantCost: map[string]float64{"a": 1, "b": 4},
		},
		{
			name: "slow start divides",
			cands: []Candidate{
				ewma("a", 100, 0),
				{Name: "s", LatencyEWMA: 100, InFlight: 1, SlowStart: 0.5, Active: true},
			},
			wantCost: map[string]float64{"s": 400},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := newStrategyBalancer(t, StrategyP2CEWMA, 1, nil).Plan(Request{K: 3}, tt.cands)
			for name, want := range tt.wantLat {
				if r, _, _ := record(p.Decision, name); r.Scores.LatencyEWMA != want {
					t.Errorf("%s latency_ewma = %v, want %v", name, r.Scores.LatencyEWMA, want)
				}
			}
			for name, want := range tt.wantCost {
				if r, _, _ := record(p.Decision, name); r.Scores.Cost != want {
					t.Errorf("%s cost = %v, want %v", name, r.Scores.Cost, want)
				}
			}
		})
	}

	t.Run("retry order ascending by cost after the duel", func(t *testing.T) {
		cands := []Candidate{ewma("d", 400, 0), ewma("a", 100, 0), ewma("c", 300, 0), ewma("b", 200, 0), ewma("e", 500, 0)}
		b := newStrategyBalancer(t, StrategyP2CEWMA, 2, nil)
		for range 200 {
			p := b.Plan(Request{K: 5}, cands)
			var sampledCosts []float64
			for _, r := range p.Decision.Candidates {
				if r.Scores.Sampled == 1 {
					sampledCosts = append(sampledCosts, r.Scores.Cost)
				}
			}
			first, _, _ := record(p.Decision, p.Order[0])
			if first.Scores.Sampled != 1 || first.Scores.Cost != slices.Min(sampledCosts) {
				t.Fatalf("first %s (%+v) is not the cheaper sampled one (%v)", first.Name, first.Scores, sampledCosts)
			}
			rest := slices.DeleteFunc([]string{"a", "b", "c", "d", "e"}, func(n string) bool { return n == p.Order[0] })
			if !slices.Equal(p.Order[1:], rest) {
				t.Fatalf("Order = %v, want %s then %v", p.Order, p.Order[0], rest)
			}
		}
	})

	t.Run("single candidate", func(t *testing.T) {
		p := newStrategyBalancer(t, StrategyP2CEWMA, 1, nil).Plan(Request{K: 2}, []Candidate{ewma("a", 50, 0)})
		if r, _, _ := record(p.Decision, "a"); !slices.Equal(p.Order, []string{"a"}) || r.Scores.Sampled != 1 {
			t.Errorf("Order = %v, scores %+v", p.Order, r.Scores)
		}
	})
}
