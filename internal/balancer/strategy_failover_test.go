package balancer

import (
	"slices"
	"testing"
)

// TestFailoverOrder: priority, then weight descending, then name — the same
// plan every time.
func TestFailoverOrder(t *testing.T) {
	slow := up("primary-b", 0, 100)
	slow.SlowStart = 0.1
	tests := []struct {
		name  string
		cands []Candidate
		k     int
		want  []string
	}{
		{
			name:  "priority, weight, name",
			cands: []Candidate{up("z", 1, 100), up("b", 0, 5), up("a", 0, 5), up("c", 0, 50), up("y", 1, 1)},
			k:     5,
			want:  []string{"c", "a", "b", "z", "y"},
		},
		{
			name:  "K cuts the chain",
			cands: []Candidate{up("z", 1, 100), up("b", 0, 5), up("a", 0, 5), up("c", 0, 50)},
			k:     2,
			want:  []string{"c", "a"},
		},
		{
			name:  "zero and negative weights last",
			cands: []Candidate{up("n", 0, -1), up("z", 0, 0), up("a", 0, 1)},
			k:     3,
			want:  []string{"a", "n", "z"},
		},
		{
			name:  "slow start demotes a recovering primary",
			cands: []Candidate{slow, up("primary-a", 0, 100), up("backup", 0, 50)},
			k:     3,
			want:  []string{"primary-a", "backup", "primary-b"},
		},
		{
			name: "an unavailable primary is skipped",
			cands: []Candidate{
				func() Candidate { c := up("primary", 0, 100); c.BreakerOpen = true; return c }(),
				up("backup", 0, 10), up("dr", 1, 100),
			},
			k:    3,
			want: []string{"backup", "dr"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newStrategyBalancer(t, StrategyFailover, 1, nil)
			for range 20 {
				p := b.Plan(Request{K: tt.k}, tt.cands)
				if !slices.Equal(p.Order, tt.want) {
					t.Fatalf("Order = %v, want %v", p.Order, tt.want)
				}
			}
		})
	}
}
