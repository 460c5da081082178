package balancer

import (
	"fmt"
	"math"
	"testing"
)

// TestWeightedRandomLatencyTable reproduces seed 000's table through the
// Decision's recorded scores.
func TestWeightedRandomLatencyTable(t *testing.T) {
	tests := []struct {
		name          string
		weight        int
		latencyMs     float64
		slowStart     float64
		wantScore     float64
		wantSlowStart float64
		wantEffective float64
	}{
		{name: "A", weight: 10, latencyMs: 0, wantScore: 1.0, wantSlowStart: 1, wantEffective: 10},
		{name: "B", weight: 10, latencyMs: 100, wantScore: 0.8, wantSlowStart: 1, wantEffective: 8},
		{name: "C", weight: 10, latencyMs: 250, wantScore: 0.5, wantSlowStart: 1, wantEffective: 5},
		{name: "D", weight: 10, latencyMs: 800, wantScore: 0.5, wantSlowStart: 1, wantEffective: 5},
		{name: "E-slow-start", weight: 10, latencyMs: 100, slowStart: 0.1, wantScore: 0.8, wantSlowStart: 0.1, wantEffective: 0.8},
		{name: "F-zero-weight", weight: 0, latencyMs: 0, wantScore: 1, wantSlowStart: 1, wantEffective: 0},
		{name: "G-bad-slow-start", weight: 4, slowStart: 1.5, wantScore: 1, wantSlowStart: 1, wantEffective: 4},
	}
	cands := make([]Candidate, len(tests))
	for i, tt := range tests {
		cands[i] = Candidate{Name: tt.name, Weight: tt.weight, LatencyMs: tt.latencyMs, SlowStart: tt.slowStart, Active: true}
	}
	p := newTestBalancer(t, 1).Plan(Request{K: 1}, cands)
	total := 0.0
	for _, tt := range tests {
		total += tt.wantEffective
	}
	const eps = 0.0 // exact: the seed table is representable
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _, _ := record(p.Decision, tt.name)
			for _, c := range []struct {
				comp      string
				got, want float64
				tol       float64
			}{
				{"latency_score", r.Scores.LatencyScore, tt.wantScore, eps},
				{"slow_start", r.Scores.SlowStart, tt.wantSlowStart, eps},
				{"effective_weight", r.Scores.EffectiveWeight, tt.wantEffective, eps},
				{"pick_probability", r.Scores.PickProbability, tt.wantEffective / total, 1e-12}, // a quotient: allow rounding
			} {
				if math.Abs(c.got-c.want) > c.tol {
					t.Errorf("%s = %v, want %v", c.comp, c.got, c.want)
				}
			}
		})
	}
}

func TestLatencyScore(t *testing.T) {
	tests := []struct{ ms, want float64 }{
		{0, 1}, {-5, 1}, {math.NaN(), 1}, {50, 0.9}, {100, 0.8}, {249, 0.502}, {250, 0.5}, {800, 0.5}, {math.Inf(1), 0.5},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprint(tt.ms), func(t *testing.T) {
			if got := latencyScore(tt.ms); math.Abs(got-tt.want) > 1e-12 {
				t.Errorf("latencyScore(%v) = %v, want %v", tt.ms, got, tt.want)
			}
		})
	}
}

// share runs Plan n times with K = k and counts how often each name lands at
// each position.
func share(t *testing.T, seed uint64, cands []Candidate, k, n int) []map[string]int {
	t.Helper()
	b := newTestBalancer(t, seed)
	counts := make([]map[string]int, k)
	for i := range counts {
		counts[i] = map[string]int{}
	}
	for range n {
		p := b.Plan(Request{K: k}, cands)
		for i, name := range p.Order {
			counts[i][name]++
		}
	}
	return counts
}

// TestWeightedRandomDistribution checks the first pick's shares over seeded
// runs. Tolerance: ±1.5 percentage points over 20,000 picks, about 3σ for a
// 50% share (σ ≈ 0.35 points).
func TestWeightedRandomDistribution(t *testing.T) {
	const picks, tol = 20000, 1.5
	lat := func(name string, weight int, ms float64) Candidate {
		return Candidate{Name: name, Weight: weight, LatencyMs: ms, Active: true}
	}
	tests := []struct {
		name  string
		cands []Candidate
		want  map[string]float64 // percent
	}{
		{
			name:  "weights 3:2",
			cands: []Candidate{lat("A", 3, 0), lat("B", 2, 0)},
			want:  map[string]float64{"A": 60, "B": 40},
		},
		{
			name:  "latency 0/100/250/800 gives 10:8:5:5",
			cands: []Candidate{lat("A", 1, 0), lat("B", 1, 100), lat("C", 1, 250), lat("D", 1, 800)},
			want:  map[string]float64{"A": 100 * 10 / 28.0, "B": 100 * 8 / 28.0, "C": 100 * 5 / 28.0, "D": 100 * 5 / 28.0},
		},
		{
			name:  "all zero effective weight is uniform",
			cands: []Candidate{lat("A", 0, 0), lat("B", 0, 100), lat("C", 0, 0), lat("D", 0, 900)},
			want:  map[string]float64{"A": 25, "B": 25, "C": 25, "D": 25},
		},
		{
			name: "slow start scales the weight",
			cands: []Candidate{
				lat("A", 1, 0),
				{Name: "B", Weight: 1, SlowStart: 0.25, Active: true},
			},
			want: map[string]float64{"A": 80, "B": 20},
		},
		{
			name:  "zero weight never first while a positive one exists",
			cands: []Candidate{lat("A", 0, 0), lat("B", 1, 0), lat("C", 3, 0)},
			want:  map[string]float64{"A": 0, "B": 25, "C": 75},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			first := share(t, 42, tt.cands, 1, picks)[0]
			for name, want := range tt.want {
				got := 100 * float64(first[name]) / picks
				if math.Abs(got-want) > tol {
					t.Errorf("%s first %.2f%%, want %.2f%% ± %.1f", name, got, want, tol)
				}
			}
		})
	}
}

// TestWeightedRandomWithoutReplacement checks the later plan positions
// against the conditional distribution of drawing without replacement.
func TestWeightedRandomWithoutReplacement(t *testing.T) {
	t.Run("3:2 second is always the other", func(t *testing.T) {
		cands := []Candidate{{Name: "A", Weight: 3, Active: true}, {Name: "B", Weight: 2, Active: true}}
		b := newTestBalancer(t, 5)
		for range 10000 {
			p := b.Plan(Request{K: 3}, cands)
			if len(p.Order) != 2 || p.Order[0] == p.Order[1] {
				t.Fatalf("Order = %v", p.Order)
			}
		}
	})

	t.Run("3:2:1 conditional second pick", func(t *testing.T) {
		// P(second = B | first = A) = 2/3, P(second = A | first = B) = 3/4,
		// P(second = A | first = C) = 3/5; marginal P(second = B) = 0.4.
		cands := []Candidate{{Name: "A", Weight: 3, Active: true}, {Name: "B", Weight: 2, Active: true}, {Name: "C", Weight: 1, Active: true}}
		b := newTestBalancer(t, 9)
		const picks, tol = 60000, 1.5
		pairs := map[[2]string]int{}
		firsts := map[string]int{}
		seconds := map[string]int{}
		for range picks {
			p := b.Plan(Request{K: 2}, cands)
			pairs[[2]string{p.Order[0], p.Order[1]}]++
			firsts[p.Order[0]]++
			seconds[p.Order[1]]++
		}
		for _, tt := range []struct {
			first, second string
			want          float64
		}{
			{"A", "B", 100 * 2.0 / 3}, {"A", "C", 100 * 1.0 / 3},
			{"B", "A", 75}, {"B", "C", 25},
			{"C", "A", 60}, {"C", "B", 40},
		} {
			got := 100 * float64(pairs[[2]string{tt.first, tt.second}]) / float64(firsts[tt.first])
			if math.Abs(got-tt.want) > tol {
				t.Errorf("P(second=%s | first=%s) = %.2f%%, want %.2f%% ± %.1f", tt.second, tt.first, got, tt.want, tol)
			}
		}
		if got := 100 * float64(seconds["B"]) / picks; math.Abs(got-40) > tol {
			t.Errorf("P(second=B) = %.2f%%, want 40%% ± %.1f", got, tol)
		}
	})

	t.Run("zero weights come last, shuffled uniformly", func(t *testing.T) {
		cands := []Candidate{
			{Name: "Z1", Weight: 0, Active: true}, {Name: "P", Weight: 5, Active: true}, {Name: "Z2", Weight: 0, Active: true},
		}
		const picks, tol = 20000, 1.5
		pos := share(t, 13, cands, 3, picks)
		if pos[0]["P"] != picks {
			t.Errorf("P first %d of %d times", pos[0]["P"], picks)
		}
		for _, z := range []string{"Z1", "Z2"} {
			if got := 100 * float64(pos[1][z]) / picks; math.Abs(got-50) > tol {
				t.Errorf("%s second %.2f%%, want 50%% ± %.1f", z, got, tol)
			}
		}
	})
}

// TestWeightedRandomSeeded pins that equal seeds give equal plans.
func TestWeightedRandomSeeded(t *testing.T) {
	cands := []Candidate{
		{Name: "A", Weight: 3, Active: true}, {Name: "B", Weight: 2, Active: true},
		{Name: "C", Weight: 1, LatencyMs: 300, Active: true},
	}
	b1, b2, b3 := newTestBalancer(t, 77), newTestBalancer(t, 77), newTestBalancer(t, 78)
	differ := false
	for range 200 {
		p1, p2, p3 := b1.Plan(Request{K: 3}, cands), b2.Plan(Request{K: 3}, cands), b3.Plan(Request{K: 3}, cands)
		if fmt.Sprint(p1.Order) != fmt.Sprint(p2.Order) {
			t.Fatalf("same seed, different plans: %v vs %v", p1.Order, p2.Order)
		}
		differ = differ || fmt.Sprint(p1.Order) != fmt.Sprint(p3.Order)
	}
	if !differ {
		t.Errorf("different seeds gave 200 identical plans")
	}
}
