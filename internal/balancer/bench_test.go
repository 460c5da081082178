package balancer

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// benchPool returns n candidates spread over 3 tiers (interleaved, as an
// unsorted upstream list would be), with varied weights and latencies and a
// few filtered ones.
func benchPool(n int) []Candidate {
	cands := make([]Candidate, n)
	for i := range cands {
		cands[i] = Candidate{
			Name:      fmt.Sprintf("upstream-%04d", i),
			Priority:  i % 3,
			Weight:    1 + i%100,
			Active:    true,
			LatencyMs: float64(i % 700),
			InFlight:  int64(i % 5),
		}
		switch i % 17 {
		case 5:
			cands[i].BreakerOpen, cands[i].BreakerReason = true, "5 consecutive failures"
		case 11:
			cands[i].MaxConcurrency, cands[i].QueueEnabled = 2, true
		}
	}
	return cands
}

func BenchmarkPlan(b *testing.B) {
	for _, n := range []int{10, 100, 1000} {
		b.Run(fmt.Sprintf("candidates=%d", n), func(b *testing.B) {
			bal, err := New(Options{Rand: rand.New(rand.NewPCG(1, 2)), Now: time.Now})
			if err != nil {
				b.Fatal(err)
			}
			cands := benchPool(n)
			req := Request{RequestID: "r", Model: "gpt-4o", Key: "k", K: 3, Exclude: []string{"upstream-0000"}}
			b.ReportAllocs()
			for b.Loop() {
				p := bal.Plan(req, cands)
				if len(p.Order) != 3 {
					b.Fatalf("Order = %v", p.Order)
				}
			}
		})
	}
}
