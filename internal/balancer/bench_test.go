package balancer

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"
)

// benchPool returns n candidates spread over 3 tiers (interleaved, as an
// unsorted upstream list would be), with varied weights and every live stat
// filled in, and a few filtered, rate-limited and waitable ones.
func benchPool(n int) []Candidate {
	cands := make([]Candidate, n)
	now := time.Now()
	for i := range cands {
		cands[i] = Candidate{
			Name:           fmt.Sprintf("upstream-%04d", i),
			Priority:       i % 3,
			Weight:         1 + i%100,
			Active:         true,
			LatencyMs:      float64(i % 700),
			LatencyEWMA:    float64(200 + i%900),
			TTFTEWMA:       float64(300 + i%1200),
			TPSEWMA:        float64(20 + i%80),
			WindowRequests: int64(i % 50),
			InFlight:       int64(i % 5),
			RPMUsed:        int64(i % 40),
			RPMLimit:       60,
			TPMUsed:        int64(100 * (i % 70)),
			TPMLimit:       10000,
		}
		switch i % 17 {
		case 5:
			cands[i].BreakerOpen, cands[i].BreakerReason = true, "5 consecutive failures"
		case 7:
			cands[i].ConsecutiveFailures, cands[i].LastFailure = 2, now.Add(-time.Minute)
		case 11:
			cands[i].MaxConcurrency, cands[i].QueueEnabled, cands[i].QueueMax = 2, true, 4
		case 13:
			cands[i].RateLimited, cands[i].RateLimitReason = true, "cooling down after 429"
		case 15:
			cands[i].SlowStart = 0.3
		}
	}
	return cands
}

// BenchmarkPlan measures one Plan call, K = 3, for every strategy across pool
// sizes: BenchmarkPlan/<strategy>/<candidates>.
func BenchmarkPlan(b *testing.B) {
	for _, strategy := range StrategyNames() {
		b.Run(strategy, func(b *testing.B) {
			for _, n := range []int{10, 100, 1000} {
				b.Run(fmt.Sprint(n), func(b *testing.B) {
					bal, err := New(Options{Strategy: strategy, Rand: rand.New(rand.NewPCG(1, 2)), Now: time.Now})
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
		})
	}
}

// BenchmarkPlanPreferences measures Plan with request preferences (order,
// ignore, max_price, and each sort) over 100 candidates, K = 3.
func BenchmarkPlanPreferences(b *testing.B) {
	for _, sort := range append([]string{"none"}, SortNames...) {
		b.Run(sort, func(b *testing.B) {
			bal, err := New(Options{Rand: rand.New(rand.NewPCG(1, 2)), Now: time.Now})
			if err != nil {
				b.Fatal(err)
			}
			cands := benchPool(100)
			for i := range cands {
				cands[i].Priced, cands[i].InputPerMTok, cands[i].OutputPerMTok = i%4 > 0, float64(i%10), float64(i%7)
			}
			prefs := &Preferences{Order: []string{"upstream-0003"}, Ignore: []string{"upstream-0001"}, MaxPrice: true, MaxPrompt: 8, MaxCompletion: 6}
			if sort != "none" {
				prefs.Sort = sort
			}
			req := Request{RequestID: "r", Model: "gpt-4o", Key: "k", K: 3, InputTokens: 800, Prefs: prefs}
			b.ReportAllocs()
			for b.Loop() {
				if p := bal.Plan(req, cands); len(p.Order) != 3 {
					b.Fatalf("Order = %v", p.Order)
				}
			}
		})
	}
}
