package balancer

import (
	"math"
	"slices"
	"testing"
)

// priced returns an active candidate with the given prices (USD per Mtok).
func priced(name string, prio, weight int, in, out float64) Candidate {
	c := up(name, prio, weight)
	c.Priced, c.InputPerMTok, c.OutputPerMTok = true, in, out
	return c
}

// TestLowestCostOrder checks exact orders: ascending estimate inside a tier,
// tiers first, unpriced after every priced candidate of its tier.
func TestLowestCostOrder(t *testing.T) {
	tests := []struct {
		name  string
		req   Request
		cands []Candidate
		want  []string
	}{
		{
			name: "ascending estimate",
			req:  Request{K: 3, InputTokens: 1000, MaxTokens: 100},
			// estimates: A 1000×3+100×15 = 4500, B 1000×0.15+100×0.6 = 210, C 1000×2.5+100×10 = 3500 (µUSD)
			cands: []Candidate{priced("A", 0, 1, 3, 15), priced("B", 0, 1, 0.15, 0.6), priced("C", 0, 1, 2.5, 10)},
			want:  []string{"B", "C", "A"},
		},
		{
			name: "output dominates with a large max_tokens",
			req:  Request{K: 2, InputTokens: 1000, MaxTokens: 100000},
			// A: 1000×1 + 100000×2 = 201000; B: 1000×0.5 + 100000×4 = 400500
			cands: []Candidate{priced("B", 0, 1, 0.5, 4), priced("A", 0, 1, 1, 2)},
			want:  []string{"A", "B"},
		},
		{
			name:  "unpriced after every priced one, however cheap they look",
			req:   Request{K: 3, InputTokens: 10},
			cands: []Candidate{up("U", 0, 100), priced("P", 0, 1, 30, 60), priced("Q", 0, 1, 10, 20)},
			want:  []string{"Q", "P", "U"},
		},
		{
			name:  "free is priced, and cheapest",
			req:   Request{K: 2, InputTokens: 10},
			cands: []Candidate{priced("P", 0, 1, 1, 1), priced("F", 0, 1, 0, 0)},
			want:  []string{"F", "P"},
		},
		{
			name:  "tiers before cost",
			req:   Request{K: 3, InputTokens: 1000},
			cands: []Candidate{priced("cheap-tier1", 1, 1, 0.1, 0.1), priced("dear-tier0", 0, 1, 10, 30), up("unpriced-tier0", 0, 1)},
			want:  []string{"dear-tier0", "unpriced-tier0", "cheap-tier1"},
		},
		{
			name:  "k cuts the order",
			req:   Request{K: 1, InputTokens: 1000},
			cands: []Candidate{priced("A", 0, 1, 3, 3), priced("B", 0, 1, 1, 1)},
			want:  []string{"B"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newStrategyBalancer(t, StrategyLowestCost, 1, nil)
			for range 20 { // no tie: the order never varies
				p := b.Plan(tt.req, tt.cands)
				if !slices.Equal(p.Order, tt.want) {
					t.Fatalf("Order = %v, want %v", p.Order, tt.want)
				}
			}
		})
	}
}

// TestLowestCostScores checks the recorded estimate in USD and the unpriced
// mark.
func TestLowestCostScores(t *testing.T) {
	b := newStrategyBalancer(t, StrategyLowestCost, 1, nil)
	cands := []Candidate{priced("A", 0, 2, 2.5, 10), up("U", 0, 1)}
	p := b.Plan(Request{K: 2, InputTokens: 2000, MaxTokens: 500}, cands)
	a, _, _ := record(p.Decision, "A")
	if want := (2000*2.5 + 500*10) / 1e6; math.Abs(a.Scores.EstimatedCostUSD-want) > 1e-15 || a.Scores.Unpriced != 0 {
		t.Errorf("A scores = %+v, want estimated_cost_usd %v", a.Scores, want)
	}
	if a.Scores.EffectiveWeight != 2 {
		t.Errorf("A effective weight = %v, want 2", a.Scores.EffectiveWeight)
	}
	u, _, _ := record(p.Decision, "U")
	if u.Scores.Unpriced != 1 || u.Scores.EstimatedCostUSD != 0 {
		t.Errorf("U scores = %+v, want unpriced 1", u.Scores)
	}
	raw, _ := u.Scores.MarshalJSON()
	if want := `{"effective_weight":1,"unpriced":1}`; string(raw) != want {
		t.Errorf("U scores JSON = %s, want %s", raw, want)
	}
}

// TestExpectedOutputTokens checks max_tokens, then the route's EWMA, then 256.
func TestExpectedOutputTokens(t *testing.T) {
	tests := []struct {
		name string
		req  Request
		want float64
	}{
		{"max_tokens wins", Request{MaxTokens: 900, OutputEWMA: 120}, 900},
		{"EWMA without max_tokens", Request{OutputEWMA: 120.5}, 120.5},
		{"default without either", Request{}, DefaultExpectedOutput},
		{"negative max_tokens ignored", Request{MaxTokens: -4, OutputEWMA: 50}, 50},
		{"NaN EWMA ignored", Request{OutputEWMA: math.NaN()}, DefaultExpectedOutput},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ExpectedOutputTokens(&tt.req); got != tt.want {
				t.Errorf("ExpectedOutputTokens = %v, want %v", got, tt.want)
			}
		})
	}
	// The rule reaches the order: with no input, A (output 1) is cheaper than
	// B (output 2) whatever the expected output, but the estimate scales
	// with it.
	b := newStrategyBalancer(t, StrategyLowestCost, 1, nil)
	for _, tt := range tests[:3] {
		req := tt.req
		req.K = 1
		p := b.Plan(req, []Candidate{priced("A", 0, 1, 0, 1)})
		a, _, _ := record(p.Decision, "A")
		if want := tt.want / 1e6; math.Abs(a.Scores.EstimatedCostUSD-want) > 1e-18 {
			t.Errorf("%s: estimate %v, want %v", tt.name, a.Scores.EstimatedCostUSD, want)
		}
	}
}

// TestLowestCostTies checks that estimates within 1% of each other are
// ordered by weighted random on effective weight, over 20,000 seeded picks
// with a tolerance of ±1.5 percentage points (about 3σ at 50%), and that an
// estimate just over 1% dearer is never first.
func TestLowestCostTies(t *testing.T) {
	const picks, tol = 20000, 1.5
	tests := []struct {
		name  string
		cands []Candidate
		want  map[string]float64 // percent of first picks
	}{
		{
			name: "within 1%, weights 3:1",
			// estimates per 1000 input tokens: A 2.5, B 2.52 (0.8% dearer)
			cands: []Candidate{priced("A", 0, 3, 2.5, 0), priced("B", 0, 1, 2.52, 0)},
			want:  map[string]float64{"A": 75, "B": 25},
		},
		{
			name:  "equal estimates, weights 1:1:2",
			cands: []Candidate{priced("A", 0, 1, 1, 0), priced("B", 0, 1, 1, 0), priced("C", 0, 2, 1, 0)},
			want:  map[string]float64{"A": 25, "B": 25, "C": 50},
		},
		{
			name: "just over 1% is not a tie",
			// B 1.011% dearer than A: A always first, whatever the weights.
			cands: []Candidate{priced("A", 0, 1, 1, 0), priced("B", 0, 100, 1.0102, 0)},
			want:  map[string]float64{"A": 100, "B": 0},
		},
		{
			name: "a run is anchored at its cheapest",
			// B within 1% of A, C within 1% of B but not of A: C never first.
			cands: []Candidate{priced("A", 0, 1, 1, 0), priced("B", 0, 1, 1.008, 0), priced("C", 0, 50, 1.016, 0)},
			want:  map[string]float64{"A": 50, "B": 50, "C": 0},
		},
		{
			name:  "unpriced ties among themselves by weight",
			cands: []Candidate{up("U", 0, 1), up("V", 0, 4)},
			want:  map[string]float64{"U": 20, "V": 80},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newStrategyBalancer(t, StrategyLowestCost, 7, nil)
			first := map[string]int{}
			for range picks {
				p := b.Plan(Request{K: len(tt.cands), InputTokens: 1000, MaxTokens: 1}, tt.cands)
				if len(p.Order) != len(tt.cands) {
					t.Fatalf("Order = %v", p.Order)
				}
				first[p.Order[0]]++
			}
			for name, want := range tt.want {
				got := 100 * float64(first[name]) / picks
				if math.Abs(got-want) > tol {
					t.Errorf("%s first in %.2f%% of plans, want %.0f%% ± %.1f", name, got, want, tol)
				}
			}
		})
	}
}
