package balancer

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// firstPicks runs Plan n times with K = k and returns the first pick of
// each plan.
func firstPicks(t *testing.T, b *Balancer, cands []Candidate, n, k int) []string {
	t.Helper()
	picks := make([]string, 0, n)
	for range n {
		p := b.Plan(Request{K: k}, cands)
		if len(p.Order) == 0 {
			t.Fatalf("empty plan for %+v", cands)
		}
		picks = append(picks, p.Order[0])
	}
	return picks
}

// weighted returns active candidates named by names with the given weights.
func weighted(names string, weights ...int) []Candidate {
	cands := make([]Candidate, len(weights))
	for i, w := range weights {
		cands[i] = Candidate{Name: string(names[i]), Weight: w, Active: true}
	}
	return cands
}

// TestSmoothWRRSequence pins nginx's exact pick sequences, whatever the
// retry length asked for.
func TestSmoothWRRSequence(t *testing.T) {
	slow := weighted("AB", 3, 2)
	slow[1].SlowStart = 0.5
	tests := []struct {
		name  string
		cands []Candidate
		cycle string // one full cycle of first picks
	}{
		{name: "3:2", cands: weighted("AB", 3, 2), cycle: "ABABA"},
		{name: "5:1:1", cands: weighted("abc", 5, 1, 1), cycle: "aabacaa"},
		{name: "1:1:1 rotates", cands: weighted("abc", 1, 1, 1), cycle: "abc"},
		{name: "2:1 ties go to the first", cands: weighted("ab", 2, 1), cycle: "aba"},
		{name: "slow start 3:2×0.5 = 3:1", cands: slow, cycle: "AABA"},
		{name: "all zero weights rotate", cands: weighted("abc", 0, 0, 0), cycle: "abc"},
		{name: "zero weight never picked", cands: weighted("ab", 0, 2), cycle: "b"},
	}
	for _, tt := range tests {
		for _, k := range []int{1, 3} {
			t.Run(fmt.Sprintf("%s/K=%d", tt.name, k), func(t *testing.T) {
				b := newStrategyBalancer(t, StrategySmoothWRR, 1, nil)
				const cycles = 4
				got := strings.Join(firstPicks(t, b, tt.cands, cycles*len(tt.cycle), k), "")
				if want := strings.Repeat(tt.cycle, cycles); got != want {
					t.Errorf("picks = %s, want %s", got, want)
				}
			})
		}
	}
}

// TestSmoothWRRProportionalCycles checks, for random weight sets, that after
// every full cycle (sum of weights picks) the counts equal the weights times
// the number of cycles exactly.
func TestSmoothWRRProportionalCycles(t *testing.T) {
	gen := rand.New(rand.NewPCG(3, 4))
	for iter := range 50 {
		n := 2 + gen.IntN(5)
		weights := make([]int, n)
		total := 0
		for i := range weights {
			weights[i] = 1 + gen.IntN(10)
			total += weights[i]
		}
		t.Run(fmt.Sprint(weights), func(t *testing.T) {
			b := newStrategyBalancer(t, StrategySmoothWRR, uint64(iter), nil)
			cands := weighted("abcdefg", weights...)
			counts := map[string]int{}
			for cycle := 1; cycle <= 5; cycle++ {
				for _, pick := range firstPicks(t, b, cands, total, 2) {
					counts[pick]++
				}
				for i, c := range cands {
					if counts[c.Name] != cycle*weights[i] {
						t.Fatalf("after %d cycles %s has %d picks, want %d (%v)", cycle, c.Name, counts[c.Name], cycle*weights[i], counts)
					}
				}
			}
		})
	}
}

// TestSmoothWRRRetryOrder checks the retry order after the real pick: the
// others by updated current weight, highest first, as recorded.
func TestSmoothWRRRetryOrder(t *testing.T) {
	b := newStrategyBalancer(t, StrategySmoothWRR, 1, nil)
	cands := weighted("ABC", 5, 1, 1)
	// Worked by hand from nginx's rule, total 7.
	want := []struct {
		order   string
		current [3]float64 // after the pick
	}{
		{"ABC", [3]float64{-2, 1, 1}},  // (5,1,1): A; B and C tie, B first
		{"ABC", [3]float64{-4, 2, 2}},  // (3,2,2): A
		{"BCA", [3]float64{1, -4, 3}},  // (1,3,3): B first on the tie
		{"ACB", [3]float64{-1, -3, 4}}, // (6,-3,4): A
		{"CAB", [3]float64{4, -2, -2}}, // (4,-2,5): C
	}
	for i, w := range want {
		p := b.Plan(Request{K: 3}, cands)
		if got := strings.Join(p.Order, ""); got != w.order {
			t.Errorf("plan %d: Order = %s, want %s", i, got, w.order)
		}
		for j, c := range cands {
			r, _, _ := record(p.Decision, c.Name)
			if r.Scores.CurrentWeight != w.current[j] || r.Scores.EffectiveWeight != float64(c.Weight) || r.Scores.SlowStart != 1 {
				t.Errorf("plan %d: %s scores %+v, want current %v", i, c.Name, r.Scores, w.current[j])
			}
		}
	}
}

// TestSmoothWRROnlyRealPicksAdvance checks that a tier ordered only for the
// retry tail, waitable ordering and DryRun plans leave the state alone.
func TestSmoothWRROnlyRealPicksAdvance(t *testing.T) {
	for _, strategy := range []string{StrategySmoothWRR, StrategyRoundRobin} {
		t.Run(strategy, func(t *testing.T) {
			b := newStrategyBalancer(t, strategy, 1, nil)
			cands := []Candidate{up("a1", 0, 1), up("b1", 1, 3), up("b2", 1, 2)}
			for range 10 {
				p := b.Plan(Request{K: 3}, cands)
				if !slices.Equal(p.Order, []string{"a1", "b1", "b2"}) {
					t.Fatalf("Order = %v, want [a1 b1 b2] (tier 1 only peeked)", p.Order)
				}
				b.Plan(Request{K: 3, DryRun: true}, cands[1:])
			}
			cands[0].BreakerOpen = true // tier 1 now takes the real picks
			want := "b1 b2 b1 b2 b1"    // 3:2 from zero, or a plain rotation
			if got := strings.Join(firstPicks(t, b, cands, 5, 1), " "); got != want {
				t.Errorf("picks = %s, want %s (from a fresh state)", got, want)
			}
		})
	}
}

// TestSmoothWRRPrune checks that an upstream absent for wrrPruneEvery calls
// is forgotten.
func TestSmoothWRRPrune(t *testing.T) {
	b := newStrategyBalancer(t, StrategySmoothWRR, 1, nil)
	s := b.strategy.(*smoothWRR)
	b.Plan(Request{}, weighted("xy", 1, 1))
	if len(s.peers) != 2 {
		t.Fatalf("peers = %v", s.peers)
	}
	for range wrrPruneEvery - 1 {
		b.Plan(Request{}, weighted("y", 1))
	}
	if _, ok := s.peers["x"]; !ok {
		t.Fatalf("x forgotten too early")
	}
	for range wrrPruneEvery {
		b.Plan(Request{}, weighted("y", 1))
	}
	if _, ok := s.peers["x"]; ok || len(s.peers) != 1 {
		t.Errorf("peers = %v, want only y", s.peers)
	}
}
