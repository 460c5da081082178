package balancer

// smoothWRR is nginx's smooth weighted round robin (seed 002; nginx
// ngx_http_upstream_get_peer; docs/reference.md#strategies). Every upstream
// carries a current weight, kept in the strategy by name. For each real pick
// every candidate of the tier adds its effective weight (weight × slow-start
// factor) to its current weight, the one with the highest current weight wins
// (the first in input order on a tie) and the winner's current weight drops by
// the tier's total effective weight. Over every run of total-weight picks each
// upstream is picked exactly in proportion to its weight, interleaved rather
// than in runs: 3:2 gives A B A B A, 5:1:1 gives a a b a c a a. The retry order
// after the real pick lists the other candidates by their updated current
// weight, highest first, without advancing the state further; calls that are
// not the real pick (Tier.Primary false) only peek at what the next pick
// would add. A weight of 0 or less adds nothing, so such an upstream is
// picked only through leftover credit; if the whole tier weighs 0 it rotates
// as if every weight were 1. The same machinery with every weight 1 is
// round-robin (strategy_roundrobin.go).
type smoothWRR struct {
	name string
	unit bool // round-robin: every weight counts as 1 (slow start still applies)

	// All fields below are guarded by the Balancer's mutex.
	peers map[string]*wrrPeer // current weight per upstream name
	calls uint64              // Order calls so far, the clock for pruning
	ptrs  []*wrrPeer          // scratch: peer of each tier position
	eff   []float64           // scratch: effective weight of each tier position
	r     ranker
}

// wrrPeer is the state smooth WRR keeps per upstream.
type wrrPeer struct {
	current float64 // nginx's current_weight
	seen    uint64  // smoothWRR.calls when last in a tier
}

// wrrPruneEvery is how many Order calls pass between sweeps of the peers
// map; an upstream absent from every tier for that long (removed from the
// config, or filtered out for a long time) forgets its current weight and
// restarts from 0, as nginx does when its peer list changes.
const wrrPruneEvery = 1 << 12

var _ Strategy = (*smoothWRR)(nil)

func newSmoothWRR(strategyEnv) Strategy {
	return &smoothWRR{name: StrategySmoothWRR, peers: map[string]*wrrPeer{}}
}

// Name returns "smooth-wrr" (or "round-robin").
func (s *smoothWRR) Name() string { return s.name }

// Order makes one smooth WRR pick (if t.Primary) and orders the rest by
// current weight. It records slow_start, effective_weight and current_weight
// (after this call).
func (s *smoothWRR) Order(t *Tier, k int) []*Candidate {
	tier := t.Candidates
	n := len(tier)
	s.calls++
	if s.calls%wrrPruneEvery == 0 {
		s.prune()
	}
	s.ptrs, s.eff = resize(s.ptrs, n), resize(s.eff, n)
	total := 0.0
	for i, c := range tier {
		p := s.peers[c.Name]
		if p == nil {
			p = &wrrPeer{}
			s.peers[c.Name] = p
		}
		p.seen = s.calls
		s.ptrs[i] = p
		s.eff[i] = s.effective(c, false)
		total += s.eff[i]
	}
	if !(total > 0) {
		total = 0
		for i, c := range tier {
			s.eff[i] = s.effective(c, true)
			total += s.eff[i]
		}
	}

	items := s.r.reset(n)
	pick := 0
	for i, c := range tier {
		cur := s.ptrs[i].current + s.eff[i]
		items[i] = rankItem{key: -cur, tie: uint64(i), c: c}
		if cur > -items[pick].key {
			pick = i
		}
	}
	if t.Primary {
		items[pick].key += total
		for i, p := range s.ptrs {
			p.current = -items[i].key
		}
	}
	for i, c := range tier {
		t.Scores[i] = Scores{
			SlowStart:       slowStartFactor(c.SlowStart),
			EffectiveWeight: s.eff[i],
			CurrentWeight:   -items[i].key,
			set:             hasSlowStart | hasEffectiveWeight | hasCurrentWeight,
		}
	}
	clear(s.ptrs)
	if t.Primary {
		// The real pick goes first whatever its updated current weight.
		items[0], items[pick] = items[pick], items[0]
		selectTop(items[1:], k-1)
	} else {
		selectTop(items, k)
	}
	return s.r.take(tier, k)
}

// effective returns c's effective weight: weight (or 1 if unit) × slow-start
// factor, a weight below 0 counting as 0.
func (s *smoothWRR) effective(c *Candidate, unit bool) float64 {
	w := 1.0
	if !unit && !s.unit {
		w = float64(max(c.Weight, 0))
	}
	return w * slowStartFactor(c.SlowStart)
}

// prune forgets upstreams not seen for wrrPruneEvery calls.
func (s *smoothWRR) prune() {
	for name, p := range s.peers {
		if s.calls-p.seen >= wrrPruneEvery {
			delete(s.peers, name)
		}
	}
}
