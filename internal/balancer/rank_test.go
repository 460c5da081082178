package balancer

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSelectTop compares the partial selection with a full sort for random
// keys with many ties, every k.
func TestSelectTop(t *testing.T) {
	gen := rand.New(rand.NewPCG(10, 11))
	for iter := range 300 {
		n := gen.IntN(40)
		cands := make([]Candidate, n)
		items := make([]rankItem, n)
		for i := range items {
			cands[i].Name = fmt.Sprint(gen.IntN(5))
			items[i] = rankItem{key: float64(gen.IntN(6)), tie: uint64(gen.IntN(3)), c: &cands[i]}
		}
		want := slices.Clone(items)
		slices.SortFunc(want, func(a, b rankItem) int {
			switch {
			case a.before(&b):
				return -1
			case b.before(&a):
				return 1
			}
			return 0
		})
		for k := range n + 2 {
			got := slices.Clone(items)
			selectTop(got, k)
			for i := range min(k, n) {
				if got[i].key != want[i].key || got[i].tie != want[i].tie || got[i].c.Name != want[i].c.Name {
					t.Fatalf("iter %d k %d: position %d = %+v, want %+v", iter, k, i, got[i], want[i])
				}
			}
			if !sameItems(got, items) {
				t.Fatalf("iter %d k %d: selectTop lost or duplicated items", iter, k)
			}
		}
	}
}

func sameItems(a, b []rankItem) bool {
	count := map[*Candidate]int{}
	for _, it := range a {
		count[it.c]++
	}
	for _, it := range b {
		count[it.c]--
	}
	for _, n := range count {
		if n != 0 {
			return false
		}
	}
	return len(a) == len(b)
}
