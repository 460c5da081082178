package balancer

import (
	"math"
	"math/rand/v2"
)

// leastConn orders a tier by in-flight requests per unit of effective weight,
// lowest first (weighted least connections: seed 002's "加权最少连接"; HAProxy's
// leastconn, grpc-go's balancer/leastrequest). The key is inflight / (weight ×
// slow-start factor), so a weight-4 upstream with 3 requests in flight (0.75)
// beats a weight-1 one with 1 (1.0), and a recovering upstream looks
// proportionally busier. Ties are broken at random with the Balancer's Rand, so
// equally loaded upstreams share the traffic evenly instead of the first one
// taking it all. A weight of 0 or less makes the key +∞: such upstreams come
// after every positive one, in random order. The order is the top k by key
// (selectTop), not a full sort.
type leastConn struct {
	rng *rand.Rand
	r   ranker // guarded by the Balancer's mutex
}

var _ Strategy = (*leastConn)(nil)

func newLeastConn(env strategyEnv) Strategy { return &leastConn{rng: env.rand} }

// Name returns "least-conn".
func (*leastConn) Name() string { return StrategyLeastConn }

// Order returns the k candidates with the fewest in-flight requests per
// effective weight. It records slow_start, effective_weight and (for a
// positive weight) inflight_per_weight.
func (s *leastConn) Order(t *Tier, k int) []*Candidate {
	items := s.r.reset(len(t.Candidates))
	for i, c := range t.Candidates {
		f := slowStartFactor(c.SlowStart)
		w := float64(max(c.Weight, 0)) * f
		sc := Scores{SlowStart: f, EffectiveWeight: w, set: hasSlowStart | hasEffectiveWeight}
		key := math.Inf(1)
		if w > 0 {
			key = float64(max(c.InFlight, 0)) / w
			sc.InFlightPerWeight, sc.set = key, sc.set|hasInFlightPerWeight
		}
		t.Scores[i] = sc
		items[i] = rankItem{key: key, tie: s.rng.Uint64(), c: c}
	}
	selectTop(items, k)
	return s.r.take(t.Candidates, k)
}
