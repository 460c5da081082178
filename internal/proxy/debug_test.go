package proxy

import (
	"encoding/json"
	"strconv"
	"strings"
	"testing"

	"switchyard/internal/balancer"
	"switchyard/internal/store"
)

// TestDecisionHeaderBounded: a decision over many candidates stays within
// 8 KB by counting the candidates neither ranked nor tried, keeping the
// ranked and tried ones; a small one lists every candidate.
func TestDecisionHeaderBounded(t *testing.T) {
	for _, n := range []int{3, 40, 400} {
		t.Run(strconv.Itoa(n), func(t *testing.T) {
			d := &balancer.Decision{Model: "m", Strategy: "failover", Rule: "routes[m].rules[0]", Order: []string{"up-1", "up-2"}}
			for i := range n {
				r := balancer.CandidateRecord{Name: "up-" + strconv.Itoa(i) + "-" + strings.Repeat("x", 40), Priority: i % 3,
					Filter: balancer.FilterBreakerOpen, Detail: "5 consecutive failures within 30s"}
				if i == 1 || i == 2 {
					r.Name, r.Filter, r.Detail, r.Rank = "up-"+strconv.Itoa(i), "", "", i
				}
				d.Candidates = append(d.Candidates, r)
			}
			x := &exchange{request: request{id: "req_1"}}
			x.log.ID = "req_1"
			x.tally.plans = []*balancer.Decision{d}
			x.log.Tried = []store.Attempt{{Upstream: "up-1", Outcome: "server_error", Status: 500}, {Upstream: "up-2"}}
			b := x.debugView().json("up-2")
			if len(b) > maxDecisionHeader {
				t.Fatalf("%d bytes, want ≤ %d", len(b), maxDecisionHeader)
			}
			var got debugDecision
			if err := json.Unmarshal(b, &got); err != nil {
				t.Fatal(err)
			}
			if got.Rule != "routes[m].rules[0]" || len(got.Attempts) != 2 || got.Attempts[1].Outcome != "committed" || got.Attempts[0].Status != 500 {
				t.Errorf("decision %s", b)
			}
			if len(got.Candidates)+got.Omitted != n {
				t.Errorf("%d candidates + %d omitted, want %d", len(got.Candidates), got.Omitted, n)
			}
			names := map[string]bool{}
			for _, c := range got.Candidates {
				names[c.Name] = true
			}
			if !names["up-1"] || !names["up-2"] {
				t.Errorf("the ranked and tried candidates are missing: %s", b)
			}
			if wantOmitted := n > 100; (got.Omitted > 0) != wantOmitted {
				t.Errorf("omitted %d for %d candidates", got.Omitted, n)
			}
		})
	}
}
