package balancer

import (
	"strconv"
	"testing"
)

func TestDecisionRing(t *testing.T) {
	tests := []struct {
		name  string
		size  int
		adds  int
		limit int
		want  []string
	}{
		{"empty", 3, 0, 10, nil},
		{"partial, newest first", 3, 2, 0, []string{"1", "0"}},
		{"wrapped keeps the last size", 3, 5, 0, []string{"4", "3", "2"}},
		{"limit", 3, 5, 2, []string{"4", "3"}},
		{"exactly full", 3, 3, 0, []string{"2", "1", "0"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewDecisionRing(tc.size)
			for i := 0; i < tc.adds; i++ {
				r.Add(&Decision{RequestID: strconv.Itoa(i)})
			}
			got := r.Recent(tc.limit)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d decisions, want %d", len(got), len(tc.want))
			}
			for i, d := range got {
				if d.RequestID != tc.want[i] {
					t.Fatalf("position %d: %s, want %s", i, d.RequestID, tc.want[i])
				}
			}
		})
	}
	if n := len(NewDecisionRing(0).buf); n != 1000 {
		t.Fatalf("default size %d", n)
	}
}
