package balancer

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// randomPool returns up to 11 candidates with every field drawn from gen:
// several tiers, every filter, every live stat present or absent.
func randomPool(gen *rand.Rand, now time.Time) ([]Candidate, []string) {
	n := gen.IntN(12)
	cands := make([]Candidate, n)
	var exclude []string
	pick := func(p float64, v int64) int64 {
		if gen.Float64() < p {
			return v
		}
		return 0
	}
	for i := range cands {
		c := Candidate{
			Name:                fmt.Sprintf("u%d", i),
			Priority:            gen.IntN(3) * 10,
			Weight:              gen.IntN(6) - 1,
			Active:              gen.IntN(10) > 0,
			LatencyMs:           float64(gen.IntN(1000)),
			LatencyEWMA:         float64(pick(0.7, int64(gen.IntN(4000)))),
			TTFTEWMA:            float64(pick(0.7, int64(gen.IntN(4000)))),
			TPSEWMA:             float64(pick(0.7, int64(gen.IntN(120)))),
			WindowRequests:      pick(0.8, int64(gen.IntN(200))),
			ConsecutiveFailures: int(pick(0.3, int64(gen.IntN(8)))),
			RPMLimit:            pick(0.4, 60),
			TPMLimit:            pick(0.4, 10000),
			InFlight:            int64(gen.IntN(4)),
			MaxConcurrency:      gen.IntN(4),
			QueueEnabled:        gen.IntN(2) == 0,
			QueueMax:            gen.IntN(3),
			BreakerOpen:         gen.IntN(8) == 0,
			SpendExceeded:       gen.IntN(15) == 0,
			RateLimited:         gen.IntN(8) == 0,
			SlowStart:           []float64{0, 1, gen.Float64(), 0.25, 1.5}[gen.IntN(5)],
		}
		if gen.IntN(4) > 0 {
			c.Priced = true
			c.InputPerMTok, c.OutputPerMTok = []float64{0, 0.15, 2.5, 2.51, 3}[gen.IntN(5)], []float64{0, 0.6, 10, 10.05}[gen.IntN(4)]
		}
		c.RPMUsed, c.TPMUsed = int64(gen.IntN(70)), int64(gen.IntN(12000))
		c.QueueDepth = gen.IntN(c.QueueMax + 1)
		if c.ConsecutiveFailures > 0 || gen.IntN(5) == 0 {
			c.LastFailure = now.Add(-time.Duration(gen.IntN(600)) * time.Second)
		}
		if gen.IntN(8) == 0 {
			exclude = append(exclude, c.Name)
		}
		cands[i] = c
	}
	return cands, exclude
}

// orderCheck asserts a strategy's ordering rule on consecutive records a, b
// of one tier's run in Order (pos is a's position within the run).
type orderCheck func(pos int, a, b CandidateRecord) error

// orderChecks holds each strategy's ordering rule, in terms of the scores it
// records.
var orderChecks = map[string]orderCheck{
	StrategyWeightedRandom: func(_ int, a, b CandidateRecord) error {
		if a.Scores.EffectiveWeight == 0 && b.Scores.EffectiveWeight > 0 {
			return fmt.Errorf("zero effective weight before a positive one")
		}
		return nil
	},
	StrategySmoothWRR:  currentWeightDesc,
	StrategyRoundRobin: currentWeightDesc,
	StrategyLeastConn: func(_ int, a, b CandidateRecord) error {
		ka, kb := leastConnKey(a), leastConnKey(b)
		if ka > kb {
			return fmt.Errorf("inflight_per_weight %v before %v", ka, kb)
		}
		return nil
	},
	StrategyP2CEWMA: func(pos int, a, b CandidateRecord) error {
		if pos > 0 && a.Scores.Cost > b.Scores.Cost {
			return fmt.Errorf("cost %v before %v after the pick", a.Scores.Cost, b.Scores.Cost)
		}
		return nil
	},
	StrategyAdaptive: func(_ int, a, b CandidateRecord) error {
		if a.Scores.Total < b.Scores.Total {
			return fmt.Errorf("total %v before %v", a.Scores.Total, b.Scores.Total)
		}
		return nil
	},
	StrategyLowestCost: func(_ int, a, b CandidateRecord) error {
		switch {
		case a.Scores.Unpriced == 1 && b.Scores.Unpriced != 1:
			return fmt.Errorf("unpriced %s before priced %s", a.Name, b.Name)
		case a.Scores.Unpriced != 1 && b.Scores.Unpriced != 1 && a.Scores.EstimatedCostUSD > b.Scores.EstimatedCostUSD*costTieRatio:
			return fmt.Errorf("estimate %v before %v", a.Scores.EstimatedCostUSD, b.Scores.EstimatedCostUSD)
		}
		return nil
	},
	StrategyFailover: func(_ int, a, b CandidateRecord) error {
		wa, wb := a.Scores.EffectiveWeight, b.Scores.EffectiveWeight
		if wa < wb || wa == wb && a.Name > b.Name {
			return fmt.Errorf("weight %v %s before %v %s", wa, a.Name, wb, b.Name)
		}
		return nil
	},
}

// currentWeightDesc: after the real pick, the retry order is by current
// weight, highest first.
func currentWeightDesc(pos int, a, b CandidateRecord) error {
	if pos > 0 && a.Scores.CurrentWeight < b.Scores.CurrentWeight {
		return fmt.Errorf("current weight %v before %v after the pick", a.Scores.CurrentWeight, b.Scores.CurrentWeight)
	}
	return nil
}

func leastConnKey(r CandidateRecord) float64 {
	if r.Scores.EffectiveWeight > 0 {
		return r.Scores.InFlightPerWeight
	}
	return math.Inf(1)
}

// TestStrategyContract runs every registered strategy through one harness
// over random pools: Plan's invariants, the filters (only adaptive lets a
// rate-limited candidate through, and only after the tier's others), the
// strategy's own ordering rule, p2c's two samples, and adaptive's total
// being the sum of its components.
func TestStrategyContract(t *testing.T) {
	for _, name := range StrategyNames() {
		t.Run(name, func(t *testing.T) {
			check := orderChecks[name]
			if check == nil {
				t.Fatalf("no ordering rule for strategy %q", name)
			}
			b := newStrategyBalancer(t, name, 7, stepClock(time.Second))
			gen := rand.New(rand.NewPCG(1, 1))
			for iter := range 3000 {
				cands, exclude := randomPool(gen, testEpoch)
				req := Request{K: gen.IntN(5), Exclude: exclude, Stream: gen.IntN(2) == 0, DryRun: gen.IntN(10) == 0,
					InputTokens: int64(gen.IntN(5000)), MaxTokens: int64(gen.IntN(3) * 500)}
				p := b.Plan(req, cands)
				checkInvariants(t, req, cands, p)
				byName := map[string]*Candidate{}
				for i := range cands {
					byName[cands[i].Name] = &cands[i]
				}
				for _, n := range p.Order {
					c := byName[n]
					if !c.Active || c.BreakerOpen || c.SpendExceeded || slices.Contains(exclude, n) {
						t.Errorf("iter %d: %s in Order despite a filter", iter, n)
					}
					if c.RateLimited && name != StrategyAdaptive {
						t.Errorf("iter %d: rate-limited %s in Order", iter, n)
					}
				}
				// The strategy's rule along each tier's run of Order.
				for i := 0; i+1 < len(p.Order); i++ {
					a, _, _ := record(p.Decision, p.Order[i])
					bb, _, _ := record(p.Decision, p.Order[i+1])
					if a.Priority != bb.Priority {
						continue
					}
					pos := i
					for pos > 0 {
						prev, _, _ := record(p.Decision, p.Order[pos-1])
						if prev.Priority != a.Priority {
							break
						}
						pos--
					}
					if err := check(i-pos, a, bb); err != nil {
						t.Errorf("iter %d: Order %v at %d: %v", iter, p.Order, i, err)
					}
				}
				for _, tr := range p.Decision.Tiers() {
					sampled, ordered := 0, 0
					for _, r := range tr.Candidates {
						if r.Filter == "" && !r.Scores.IsZero() {
							ordered++
							if r.Scores.Sampled == 1 {
								sampled++
							}
						}
						if name == StrategyAdaptive && !r.Scores.IsZero() {
							s := r.Scores
							if sum := s.ErrorAware + s.WRR + s.LatencyAware + s.RateLimitAware; math.Abs(sum-s.Total) > 1e-9 {
								t.Errorf("iter %d: %s total %v ≠ sum %v", iter, r.Name, s.Total, sum)
							}
							if r.Fallback && s.RateLimitAware != rateLimitExhausted {
								t.Errorf("iter %d: fallback %s scored %v", iter, r.Name, s.RateLimitAware)
							}
						}
					}
					if name == StrategyP2CEWMA && ordered > 0 && sampled != min(ordered, 2) {
						t.Errorf("iter %d: tier %d: %d sampled of %d", iter, tr.Priority, sampled, ordered)
					}
				}
				if t.Failed() {
					t.Fatalf("iter %d: cands %+v req %+v plan %+v", iter, cands, req, p)
				}
			}
		})
	}
}

// TestStrategySlowStart checks every strategy honours SlowStart: of two
// otherwise equal upstreams, the one ramping up at 0.25 gets a quarter of the
// other's traffic (20% of the picks), except under failover, where it simply
// ranks second. Each pick adds to the chosen upstream's in-flight and window
// counts, as the proxy would. 4,000 picks; tolerance ±1 point for the
// deterministic strategies, ±2.5 (about 4σ) for weighted-random.
func TestStrategySlowStart(t *testing.T) {
	tests := []struct {
		strategy string
		wantB    float64 // percent
		tol      float64
	}{
		{StrategyWeightedRandom, 20, 2.5},
		{StrategySmoothWRR, 20, 0.1},
		{StrategyRoundRobin, 20, 0.1},
		{StrategyLeastConn, 20, 1},
		{StrategyP2CEWMA, 20, 1},
		{StrategyAdaptive, 20, 1},
		{StrategyFailover, 0, 0},
	}
	const picks = 4000
	for _, tt := range tests {
		t.Run(tt.strategy, func(t *testing.T) {
			b := newStrategyBalancer(t, tt.strategy, 5, nil)
			cands := []Candidate{
				{Name: "A", Weight: 10, Active: true, LatencyEWMA: 100},
				{Name: "B", Weight: 10, Active: true, LatencyEWMA: 100, SlowStart: 0.25},
			}
			countB := 0
			for range picks {
				p := b.Plan(Request{K: 2}, cands)
				if len(p.Order) != 2 {
					t.Fatalf("Order = %v", p.Order)
				}
				i := 0
				if p.Order[0] == "B" {
					i = 1
					countB++
				}
				cands[i].InFlight++
				cands[i].WindowRequests++
			}
			if got := 100 * float64(countB) / picks; math.Abs(got-tt.wantB) > tt.tol {
				t.Errorf("B got %.2f%% of first picks, want %.2f%% ± %.1f", got, tt.wantB, tt.tol)
			}
			r, _, _ := record(b.Plan(Request{K: 2}, cands).Decision, "B")
			if r.Scores.SlowStart != 0.25 {
				t.Errorf("B's recorded slow_start = %v, want 0.25", r.Scores.SlowStart)
			}
		})
	}
}

// TestStrategyWeightScale checks that only the ratio of the weights matters:
// for every strategy, two otherwise equal upstreams weighted 2:1, 20:10 and
// 100:50, with and without 8 concurrency slots on the heavier one, get the
// same share of first picks: each case within 3 points of the first (2:1
// without slots), and that one within 3 points of the strategy's want
// (p2c-ewma and round-robin ignore weights, failover takes the heavier;
// least-conn has none: it evens out in-flight per weight, not picks). Each
// pick holds its upstream for 1–6 further picks (seeded), so about 3.5
// requests are in flight and the slots are never all taken; the window
// counts the last 600 picks. 12,000 picks per case; ±3 points is about 5σ of
// weighted-random's and p2c-ewma's randomness.
func TestStrategyWeightScale(t *testing.T) {
	want := map[string]float64{ // the heavier upstream's share, percent
		StrategyWeightedRandom: 200.0 / 3,
		StrategySmoothWRR:      200.0 / 3,
		StrategyRoundRobin:     50,
		StrategyP2CEWMA:        50,
		StrategyAdaptive:       200.0 / 3,
		StrategyFailover:       100,
	}
	const tol = 3.0
	for _, name := range StrategyNames() {
		t.Run(name, func(t *testing.T) {
			ref := math.NaN()
			for _, scale := range []int{1, 10, 50} {
				for _, slots := range []int{0, 8} {
					got := heavyShare(t, name, 2*scale, scale, slots)
					switch w, ok := want[name]; {
					case math.IsNaN(ref) && ok && math.Abs(got-w) > tol:
						t.Errorf("2:1: heavy got %.2f%% of first picks, want %.2f%% ± %.0f", got, w, tol)
					case math.IsNaN(ref):
						ref = got
					case math.Abs(got-ref) > tol:
						t.Errorf("%d:%d, %d slots: heavy got %.2f%% of first picks, %.2f%% at 2:1 without slots", 2*scale, scale, slots, got, ref)
					}
				}
			}
		})
	}
}

// heavyShare runs TestStrategyWeightScale's case and returns the heavier
// upstream's share of first picks, in percent.
func heavyShare(t *testing.T, strategy string, wHeavy, wLight, slots int) float64 {
	t.Helper()
	const picks, window = 12000, 600
	b := newStrategyBalancer(t, strategy, 11, stepClock(time.Millisecond))
	gen := rand.New(rand.NewPCG(5, 5))
	cands := []Candidate{
		{Name: "heavy", Weight: wHeavy, Active: true, LatencyEWMA: 500, MaxConcurrency: slots},
		{Name: "light", Weight: wLight, Active: true, LatencyEWMA: 500},
	}
	var ends [2][]int // per upstream, the pick at which each in-flight request ends
	picked := make([]int, 0, picks)
	heavy := 0
	for i := range picks {
		for u := range cands {
			ends[u] = slices.DeleteFunc(ends[u], func(e int) bool { return e <= i })
			cands[u].InFlight = int64(len(ends[u]))
		}
		if i >= window {
			cands[picked[i-window]].WindowRequests--
		}
		p := b.Plan(Request{K: 2}, cands)
		u := slices.IndexFunc(cands, func(c Candidate) bool { return c.Name == p.Order[0] })
		if slots > 0 && cands[0].InFlight >= int64(slots) {
			t.Fatalf("pick %d: %d of %d slots taken, the case wants them never all taken", i, cands[0].InFlight, slots)
		}
		ends[u] = append(ends[u], i+1+gen.IntN(6))
		cands[u].WindowRequests++
		picked = append(picked, u)
		if u == 0 {
			heavy++
		}
	}
	return 100 * float64(heavy) / picks
}
