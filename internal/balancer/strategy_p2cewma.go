package balancer

import "math/rand/v2"

// p2cEWMA is the power of two random choices over a latency-weighted load
// (Mitzenmacher, "The Power of Two Choices in Randomized Load Balancing",
// 2001; Finagle's and Linkerd's p2c + peak EWMA; traefik's p2c). The cost of
// an upstream is (inflight + 1) × latencyEWMA / slow-start factor: its
// expected wait if it got one more request, inflated while it ramps up. Two
// distinct candidates are drawn uniformly at random with the Balancer's Rand
// and the cheaper one is picked (the first drawn on a tie); sampling two
// instead of scanning for the global minimum keeps every upstream a share of
// traffic and avoids the herd that follows a stale snapshot. An upstream
// without latency data costs as if its latency were the mean of those with
// data (1 ms if none has any), so a new upstream is neither starved nor
// flooded. The retry order after the pick is the rest of the tier by cost,
// lowest first, ties at random (selectTop). Weights are not used.
type p2cEWMA struct {
	rng  *rand.Rand
	r    ranker    // guarded by the Balancer's mutex
	cost []float64 // scratch
}

var _ Strategy = (*p2cEWMA)(nil)

func newP2CEWMA(env strategyEnv) Strategy { return &p2cEWMA{rng: env.rand} }

// Name returns "p2c-ewma".
func (*p2cEWMA) Name() string { return StrategyP2CEWMA }

// Order picks the cheaper of two random candidates, then the rest by cost.
// It records latency_ewma (the latency used), slow_start, cost and sampled
// (1 for the two random choices).
func (s *p2cEWMA) Order(t *Tier, k int) []*Candidate {
	tier := t.Candidates
	n := len(tier)
	sum, withData := 0.0, 0
	for _, c := range tier {
		if l := positive(c.LatencyEWMA); l > 0 {
			sum += l
			withData++
		}
	}
	mean := 1.0
	if withData > 0 {
		mean = sum / float64(withData)
	}
	items := s.r.reset(n)
	for i, c := range tier {
		l := positive(c.LatencyEWMA)
		if l == 0 {
			l = mean
		}
		f := slowStartFactor(c.SlowStart)
		cost := float64(max(c.InFlight, 0)+1) * l / f
		t.Scores[i] = Scores{LatencyEWMA: l, SlowStart: f, Cost: cost, set: hasLatencyEWMA | hasSlowStart | hasCost | hasSampled}
		items[i] = rankItem{key: cost, tie: s.rng.Uint64(), c: c}
	}
	if n == 1 {
		t.Scores[0].Sampled = 1
		return s.r.take(tier, k)
	}
	a := s.rng.IntN(n)
	b := s.rng.IntN(n - 1)
	if b >= a {
		b++
	}
	t.Scores[a].Sampled, t.Scores[b].Sampled = 1, 1
	pick := a
	if items[b].key < items[a].key {
		pick = b
	}
	items[0], items[pick] = items[pick], items[0]
	selectTop(items[1:], k-1)
	return s.r.take(tier, k)
}
