package balancer

import "math/rand/v2"

// weightedRandom is the default strategy, reproducing seed 000
// (selectWeightedWithHealthScore; docs/reference.md#strategies). Each candidate
// gets a latency score from its last probe round trip, score = max(1 −
// min(latencyMs/500, 0.5), 0.1) with latencyMs = 0 (unknown) scoring 1, so
// latency at most halves a weight and never removes an upstream; its
// effective weight is weight × score × slowStart. A roulette wheel over the
// effective weights picks the first upstream; the retry order repeats the
// roulette without replacement over the rest, stopping after k picks (O(n·k),
// float64 sums). Candidates whose effective weight is 0 are picked only once
// no positive weight is left, and then uniformly at random, so an all-zero
// tier is a uniform shuffle.
type weightedRandom struct {
	rng *rand.Rand
	w   []float64 // scratch effective weights, guarded by the Balancer's mutex
}

var _ Strategy = (*weightedRandom)(nil)

func newWeightedRandom(env strategyEnv) Strategy {
	return &weightedRandom{rng: env.rand}
}

// Name returns "weighted-random".
func (*weightedRandom) Name() string { return StrategyWeightedRandom }

// Order draws up to k candidates by roulette on effective weight, without
// replacement. It records latency_score, slow_start, effective_weight and
// pick_probability (the chance of being the tier's first pick).
func (s *weightedRandom) Order(t *Tier, k int) []*Candidate {
	tier := t.Candidates
	n := len(tier)
	k = min(k, n)
	if k <= 0 {
		return tier[:0]
	}
	s.w = resize(s.w, n)
	w := s.w
	total := 0.0
	for i, c := range tier {
		w[i] = EffectiveWeight(c)
		total += w[i]
	}
	for i, c := range tier {
		p := 1 / float64(n)
		if total > 0 {
			p = w[i] / total
		}
		t.Scores[i] = Scores{
			LatencyScore:    latencyScore(c.LatencyMs),
			SlowStart:       slowStartFactor(c.SlowStart),
			EffectiveWeight: w[i],
			PickProbability: p,
			set:             hasLatencyScore | hasSlowStart | hasEffectiveWeight | hasPickProbability,
		}
	}
	for pos := range k {
		pick := s.spin(w, pos)
		tier[pos], tier[pick] = tier[pick], tier[pos]
		w[pos], w[pick] = w[pick], w[pos]
	}
	return tier[:k]
}

// spin returns the index in w[from:] (as an index into w) chosen by one
// roulette spin over the positive weights there, or a uniformly random one if
// none is positive.
func (s *weightedRandom) spin(w []float64, from int) int {
	total := 0.0
	for _, x := range w[from:] {
		if x > 0 {
			total += x
		}
	}
	if !(total > 0) {
		return from + s.rng.IntN(len(w)-from)
	}
	r := s.rng.Float64() * total
	acc, pick := 0.0, from
	for i := from; i < len(w); i++ {
		if !(w[i] > 0) {
			continue
		}
		// Summed in the same order as total, so acc reaches total exactly;
		// if rounding made r == total, the last positive weight wins.
		acc += w[i]
		pick = i
		if r < acc {
			break
		}
	}
	return pick
}

// EffectiveWeight returns c's weighted-random effective weight, weight ×
// latency score × slow-start factor (seed 000), as shown by the admin API's
// state view. A weight below 0 counts as 0.
func EffectiveWeight(c *Candidate) float64 {
	return float64(max(c.Weight, 0)) * latencyScore(c.LatencyMs) * slowStartFactor(c.SlowStart)
}

// latencyScore is seed 000's latency score: 1 minus a penalty of
// latencyMs/500 capped at 0.5, floored at 0.1; 0 (unknown) scores 1.
func latencyScore(latencyMs float64) float64 {
	score := 1.0
	if latencyMs > 0 {
		score -= min(latencyMs/500, 0.5)
	}
	return max(score, 0.1)
}
