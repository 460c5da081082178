package balancer

// failover is a strict, deterministic order (seed 002's priority mode;
// docs/reference.md#strategies): priority first (Plan's tiers), then effective
// weight (weight × slow-start factor, below 0 counting as 0) descending, then
// name ascending. The first upstream takes all the traffic while it is
// available and the rest are its retry chain in order; a recovering upstream
// rejoins its place only as its slow-start factor ramps back up, so one that
// just left an open breaker does not take all the traffic at once. The order is
// the top k (selectTop), not a full sort.
type failover struct {
	r ranker // guarded by the Balancer's mutex
}

var _ Strategy = (*failover)(nil)

func newFailover(strategyEnv) Strategy { return &failover{} }

// Name returns "failover".
func (*failover) Name() string { return StrategyFailover }

// Order returns the k heaviest candidates, ties by name. It records
// slow_start and effective_weight.
func (s *failover) Order(t *Tier, k int) []*Candidate {
	items := s.r.reset(len(t.Candidates))
	for i, c := range t.Candidates {
		f := slowStartFactor(c.SlowStart)
		w := float64(max(c.Weight, 0)) * f
		t.Scores[i] = Scores{SlowStart: f, EffectiveWeight: w, set: hasSlowStart | hasEffectiveWeight}
		items[i] = rankItem{key: -w, c: c}
	}
	selectTop(items, k)
	return s.r.take(t.Candidates, k)
}
