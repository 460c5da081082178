package balancer

import (
	"strings"
	"testing"
)

// TestRoundRobin checks exactly equal counts over 3,000 sequential picks of 3
// upstreams (weights are ignored), the strict rotation and its retry order.
func TestRoundRobin(t *testing.T) {
	b := newStrategyBalancer(t, StrategyRoundRobin, 1, nil)
	cands := weighted("abc", 5, 1, 0)
	counts := map[string]int{}
	for i := range 3000 {
		p := b.Plan(Request{K: 3}, cands)
		rot := "abcabc"[i%3 : i%3+3]
		if got := strings.Join(p.Order, ""); got != rot {
			t.Fatalf("pick %d: Order = %s, want %s", i, got, rot)
		}
		counts[p.Order[0]]++
	}
	for _, c := range cands {
		if counts[c.Name] != 1000 {
			t.Errorf("%s picked %d times, want exactly 1000 (%v)", c.Name, counts[c.Name], counts)
		}
	}
}

// TestRoundRobinMembership checks that while an upstream is out of the tier
// the others rotate among themselves, and that it rejoins the rotation
// neither owed nor owing turns.
func TestRoundRobinMembership(t *testing.T) {
	b := newStrategyBalancer(t, StrategyRoundRobin, 1, nil)
	cands := weighted("abc", 1, 1, 1)
	got := strings.Join(firstPicks(t, b, cands, 3, 1), "")
	cands[2].BreakerOpen = true
	got += strings.Join(firstPicks(t, b, cands, 4, 1), "")
	cands[2].BreakerOpen = false
	got += strings.Join(firstPicks(t, b, cands, 6, 1), "")
	if want := "abc" + "abab" + "abcabc"; got != want {
		t.Errorf("picks = %s, want %s", got, want)
	}
}
