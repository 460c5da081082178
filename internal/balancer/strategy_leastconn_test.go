package balancer

import (
	"math"
	"slices"
	"testing"
)

// loaded returns an active candidate with a weight and in-flight count.
func loaded(name string, weight int, inflight int64) Candidate {
	return Candidate{Name: name, Weight: weight, InFlight: inflight, Active: true}
}

func TestLeastConnOrder(t *testing.T) {
	tests := []struct {
		name  string
		cands []Candidate
		want  []string // exact order, K = len
	}{
		{
			name:  "in-flight 4/1/0, weights 1/1/1: the idle one wins",
			cands: []Candidate{loaded("a", 1, 4), loaded("b", 1, 1), loaded("c", 1, 0)},
			want:  []string{"c", "b", "a"},
		},
		{
			name:  "weights 4/1, in-flight 3/1: 0.75 beats 1",
			cands: []Candidate{loaded("a", 4, 3), loaded("b", 1, 1)},
			want:  []string{"a", "b"},
		},
		{
			name: "slow start inflates the load",
			cands: []Candidate{
				{Name: "a", Weight: 1, InFlight: 1, SlowStart: 0.25, Active: true}, // 4
				loaded("b", 1, 3), // 3
			},
			want: []string{"b", "a"},
		},
		{
			name:  "zero weight after every positive one",
			cands: []Candidate{loaded("z", 0, 0), loaded("a", 1, 9), loaded("n", -3, 0)},
			want:  []string{"a"}, // then z and n in random order
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for seed := range uint64(30) {
				p := newStrategyBalancer(t, StrategyLeastConn, seed, nil).Plan(Request{K: len(tt.cands)}, tt.cands)
				if !slices.Equal(p.Order[:len(tt.want)], tt.want) {
					t.Fatalf("seed %d: Order = %v, want prefix %v", seed, p.Order, tt.want)
				}
			}
		})
	}

	t.Run("scores", func(t *testing.T) {
		cands := []Candidate{
			loaded("a", 4, 3), loaded("idle", 2, 0), loaded("z", 0, 5),
			{Name: "s", Weight: 10, InFlight: 1, SlowStart: 0.5, Active: true},
		}
		p := newStrategyBalancer(t, StrategyLeastConn, 1, nil).Plan(Request{K: 4}, cands)
		for _, tt := range []struct {
			name                string
			slowStart, eff, ipw float64
			hasIPW              bool
		}{
			{"a", 1, 4, 0.75, true}, {"idle", 1, 2, 0, true}, {"z", 1, 0, 0, false}, {"s", 0.5, 5, 0.2, true},
		} {
			r, _, _ := record(p.Decision, tt.name)
			s := r.Scores
			if s.SlowStart != tt.slowStart || s.EffectiveWeight != tt.eff || s.InFlightPerWeight != tt.ipw || (s.set&hasInFlightPerWeight != 0) != tt.hasIPW {
				t.Errorf("%s: scores %+v, want slow_start %v effective_weight %v inflight_per_weight %v (recorded %v)", tt.name, s, tt.slowStart, tt.eff, tt.ipw, tt.hasIPW)
			}
		}
		if want := []string{"idle", "s", "a", "z"}; !slices.Equal(p.Order, want) {
			t.Errorf("Order = %v, want %v", p.Order, want)
		}
	})
}

// TestLeastConnTies checks that equally loaded upstreams share the first pick
// evenly: 10,000 seeded picks over three ties, ±1.5 points (about 3σ of a
// 33% share). The zero-weight pair is also shuffled evenly behind.
func TestLeastConnTies(t *testing.T) {
	const picks, tol = 10000, 1.5
	b := newStrategyBalancer(t, StrategyLeastConn, 21, nil)
	cands := []Candidate{loaded("a", 2, 2), loaded("b", 1, 1), loaded("c", 3, 3), loaded("z1", 0, 0), loaded("z2", 0, 0)}
	first, fourth := map[string]int{}, map[string]int{}
	for range picks {
		p := b.Plan(Request{K: 5}, cands)
		first[p.Order[0]]++
		fourth[p.Order[3]]++
	}
	for _, n := range []string{"a", "b", "c"} {
		if got := 100 * float64(first[n]) / picks; math.Abs(got-100.0/3) > tol {
			t.Errorf("%s first %.2f%%, want 33.33%% ± %.1f", n, got, tol)
		}
	}
	for _, n := range []string{"z1", "z2"} {
		if got := 100 * float64(fourth[n]) / picks; math.Abs(got-50) > tol {
			t.Errorf("%s fourth %.2f%%, want 50%% ± %.1f", n, got, tol)
		}
	}
}
