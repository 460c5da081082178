package balancer

import (
	"cmp"
	"slices"
)

// DefaultExpectedOutput is the expected output in tokens of a request with
// no max_tokens on a route with no output history yet.
const DefaultExpectedOutput = 256

// costTieRatio is how close two estimates must be to count as a tie: within
// 1% of the cheaper.
const costTieRatio = 1.01

// ExpectedOutputTokens is the output lowest-cost expects from req: its
// max_tokens when given, else the route's moving average of output tokens,
// else DefaultExpectedOutput.
func ExpectedOutputTokens(req *Request) float64 {
	switch {
	case req.MaxTokens > 0:
		return float64(req.MaxTokens)
	case positive(req.OutputEWMA) > 0:
		return req.OutputEWMA
	}
	return DefaultExpectedOutput
}

// EstimatedCost is the USD cost of inputTokens prompt and outputTokens output
// tokens at c's prices; ok is false when c is unpriced.
func EstimatedCost(c *Candidate, inputTokens, outputTokens float64) (usd float64, ok bool) {
	if !c.Priced {
		return 0, false
	}
	return (inputTokens*c.InputPerMTok + outputTokens*c.OutputPerMTok) / 1e6, true
}

// lowestCost orders a tier by the request's estimated cost, cheapest first
// (docs/routing.md#lowest-cost): estimated input tokens × input price +
// expected output tokens × output price. Estimates within 1% of the cheapest
// of their run are a tie, and a tie is ordered by weighted-random's roulette
// on effective weight; unpriced candidates come after every priced one, as
// one tie. It records estimated_cost_usd, or unpriced = 1, and the effective
// weight.
type lowestCost struct {
	wr   weightedRandom // the roulette for ties; shares the Balancer's Rand
	cost []float64      // scratch, per candidate as passed in
	run  []float64      // scratch, the estimates in sorted order
	idx  []int          // scratch permutation, cheapest first
	out  []*Candidate   // scratch reordered tier
}

var _ Strategy = (*lowestCost)(nil)

func newLowestCost(env strategyEnv) Strategy {
	return &lowestCost{wr: weightedRandom{rng: env.rand}}
}

// Name returns "lowest-cost".
func (*lowestCost) Name() string { return StrategyLowestCost }

// Order sorts the tier by estimate (unpriced last), then draws each tie's
// members by roulette until k are placed.
func (s *lowestCost) Order(t *Tier, k int) []*Candidate {
	tier := t.Candidates
	n := len(tier)
	k = min(k, n)
	if k <= 0 {
		return tier[:0]
	}
	s.cost = resize(s.cost, n)
	s.idx = resize(s.idx, n)
	for i, c := range tier {
		s.idx[i] = i
		usd, ok := EstimatedCost(c, t.InputTokens, t.OutputTokens)
		sc := Scores{EffectiveWeight: EffectiveWeight(c), set: hasEffectiveWeight}
		if ok {
			s.cost[i] = usd
			sc.EstimatedCostUSD, sc.set = usd, sc.set|hasEstimatedCostUSD
		} else {
			s.cost[i] = -1 // sorted last by byCost
			sc.Unpriced, sc.set = 1, sc.set|hasUnpriced
		}
		t.Scores[i] = sc
	}
	slices.SortFunc(s.idx, s.byCost)
	// tier now holds the candidates cheapest first, run their estimates
	// and w their effective weights; each tie is then drawn by roulette.
	s.out = permute(tier, s.idx, s.out)
	s.wr.w = resize(s.wr.w, n)
	s.run = resize(s.run, n)
	w := s.wr.w
	for pos, i := range s.idx {
		w[pos], s.run[pos] = t.Scores[i].EffectiveWeight, s.cost[i]
	}
	for lo := 0; lo < k; {
		hi := lo + 1
		for hi < n && tied(s.run[lo], s.run[hi]) {
			hi++
		}
		for pos := lo; pos < min(hi, k); pos++ {
			pick := lo + s.wr.spin(w[lo:hi], pos-lo)
			tier[pos], tier[pick] = tier[pick], tier[pos]
			w[pos], w[pick] = w[pick], w[pos]
		}
		lo = hi
	}
	return tier[:k]
}

// byCost orders candidate indices by estimate ascending, unpriced (−1)
// last, ties by index.
func (s *lowestCost) byCost(a, b int) int {
	ca, cb := s.cost[a], s.cost[b]
	if (ca < 0) != (cb < 0) {
		if ca < 0 {
			return 1
		}
		return -1
	}
	if c := cmp.Compare(ca, cb); c != 0 {
		return c
	}
	return cmp.Compare(a, b)
}

// tied reports whether b, the next estimate in ascending order, is within
// 1% of a, the cheapest of its run; unpriced candidates are all tied.
func tied(a, b float64) bool {
	if a < 0 || b < 0 {
		return a < 0 && b < 0
	}
	return b <= a*costTieRatio
}
