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

func TestDecisionRingByRequest(t *testing.T) {
	tests := []struct {
		name string
		size int
		ids  []string // added in order
		find string
		want []int // positions in ids, oldest first
	}{
		{"empty", 3, nil, "a", nil},
		{"absent", 3, []string{"a", "b"}, "c", nil},
		{"one", 3, []string{"a", "b"}, "b", []int{1}},
		{"several, oldest first", 4, []string{"a", "b", "a", "a"}, "a", []int{0, 2, 3}},
		{"wrapped: evicted ones are gone", 3, []string{"a", "b", "a", "c", "a"}, "a", []int{2, 4}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r := NewDecisionRing(tc.size)
			added := make([]*Decision, len(tc.ids))
			for i, id := range tc.ids {
				added[i] = &Decision{RequestID: id}
				r.Add(added[i])
			}
			got := r.ByRequest(tc.find)
			if len(got) != len(tc.want) {
				t.Fatalf("got %d decisions, want %d", len(got), len(tc.want))
			}
			for i, pos := range tc.want {
				if got[i] != added[pos] {
					t.Fatalf("position %d: not the decision added %dth", i, pos)
				}
			}
		})
	}
}
