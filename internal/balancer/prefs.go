package balancer

import (
	"cmp"
	"slices"
)

// Preferences are one request's routing preferences
// (docs/routing.md#per-request-preferences). They only narrow and reorder
// the candidates the caller passes to Plan: Only and Ignore filter, MaxPrice
// filters by price, Sort replaces the strategy, Order puts upstreams first,
// and NoFallbacks limits the plan to what Order names. A name in Order, Only
// or Ignore matches a candidate's Name or its Provider.
type Preferences struct {
	// Order lists upstreams to try first, in this order, ahead of the tiers.
	Order []string
	// Only, when non-empty, drops every candidate it does not name
	// (FilterPreferences, "not in only").
	Only []string
	// Ignore drops the candidates it names (FilterPreferences, "ignored").
	Ignore []string
	// NoFallbacks (allow_fallbacks: false) limits the plan to the upstreams
	// Order names, or, with no Order, to the first candidate.
	NoFallbacks bool
	// Sort is "" (the route's strategy), SortPrice, SortLatency or
	// SortThroughput.
	Sort string
	// MaxPrice, when set, drops every unpriced candidate and every one whose
	// InputPerMTok exceeds MaxPrompt or OutputPerMTok exceeds MaxCompletion
	// (USD per million tokens; +Inf for a bound not given).
	MaxPrice                 bool
	MaxPrompt, MaxCompletion float64
}

// Values of Preferences.Sort.
const (
	// SortPrice orders each tier as lowest-cost does.
	SortPrice = "price"
	// SortLatency orders each tier by observed time to first token
	// (streaming) or end-to-end latency, fastest first, no data last.
	SortLatency = "latency"
	// SortThroughput orders each tier by observed output tokens per
	// second, fastest first, no data last.
	SortThroughput = "throughput"
)

// SortNames lists the values Preferences.Sort accepts besides "".
var SortNames = []string{SortPrice, SortLatency, SortThroughput}

// Details of FilterPreferences, shown as "preferences: <detail>".
const (
	prefIgnored     = "ignored"
	prefNotInOnly   = "not in only"
	prefOverPrice   = "over max_price"
	prefNotInOrder  = "not in order, allow_fallbacks false"
	prefNotFirst    = "not the first candidate, allow_fallbacks false"
	filterPrefOrder = "preferred" // marks Order's records while the tiers are ordered
)

// drop returns why p drops c ("" when it keeps it).
func (p *Preferences) drop(c *Candidate) string {
	switch {
	case p.names(p.Ignore, c):
		return prefIgnored
	case len(p.Only) > 0 && !p.names(p.Only, c):
		return prefNotInOnly
	case p.MaxPrice && (!c.Priced || c.InputPerMTok > p.MaxPrompt || c.OutputPerMTok > p.MaxCompletion):
		return prefOverPrice
	case p.NoFallbacks && len(p.Order) > 0 && !p.names(p.Order, c):
		return prefNotInOrder
	}
	return ""
}

// names reports whether list names c.
func (*Preferences) names(list []string, c *Candidate) bool {
	for _, n := range list {
		if named(n, c) {
			return true
		}
	}
	return false
}

// named reports whether name is c's upstream or provider name.
func named(name string, c *Candidate) bool {
	return name == c.Name || name != "" && name == c.Provider
}

// sortStrategies are the strategies Preferences.Sort selects, built once per
// Balancer (each keeps its own scratch).
type sortStrategies struct {
	price, latency, throughput Strategy
}

func newSortStrategies(env strategyEnv) sortStrategies {
	return sortStrategies{price: newLowestCost(env), latency: &byLatency{}, throughput: &byThroughput{}}
}

// get returns the strategy for sort, nil for "" or an unknown value.
func (s *sortStrategies) get(sort string) Strategy {
	switch sort {
	case SortPrice:
		return s.price
	case SortLatency:
		return s.latency
	case SortThroughput:
		return s.throughput
	}
	return nil
}

// byLatency is the latency sort of Preferences: ascending by TTFT EWMA for a
// streaming request, latency EWMA otherwise; no data (0) last; ties in input
// order. It records latency_ewma.
type byLatency struct{ keyed }

// Name returns "sort:latency".
func (*byLatency) Name() string { return "sort:" + SortLatency }

// Order sorts the tier by observed latency.
func (s *byLatency) Order(t *Tier, k int) []*Candidate {
	return s.order(t, k, func(c *Candidate, sc *Scores) float64 {
		v := positive(c.LatencyEWMA)
		if t.Stream {
			v = positive(c.TTFTEWMA)
		}
		sc.LatencyEWMA, sc.set = v, hasLatencyEWMA
		return v
	})
}

// byThroughput is the throughput sort of Preferences: descending by output
// tokens/s (TPS EWMA); no data (0) last; ties in input order. It records
// tps_ewma.
type byThroughput struct{ keyed }

// Name returns "sort:throughput".
func (*byThroughput) Name() string { return "sort:" + SortThroughput }

// Order sorts the tier by observed throughput.
func (s *byThroughput) Order(t *Tier, k int) []*Candidate {
	return s.order(t, k, func(c *Candidate, sc *Scores) float64 {
		v := positive(c.TPSEWMA)
		sc.TPSEWMA, sc.set = v, hasTPSEWMA
		if v == 0 {
			return 0
		}
		return 1 / v // fastest first
	})
}

// keyed is a stable ascending sort by a key where 0 means no data and sorts
// last.
type keyed struct {
	key []float64
	idx []int
	out []*Candidate
}

func (s *keyed) order(t *Tier, k int, key func(*Candidate, *Scores) float64) []*Candidate {
	tier := t.Candidates
	n := len(tier)
	k = min(k, n)
	if k <= 0 {
		return tier[:0]
	}
	s.key, s.idx = resize(s.key, n), resize(s.idx, n)
	for i, c := range tier {
		s.idx[i], s.key[i] = i, key(c, &t.Scores[i])
	}
	slices.SortFunc(s.idx, s.cmp)
	s.out = permute(tier, s.idx, s.out)
	return tier[:k]
}

// permute puts tier in the order of idx (a permutation of its indices),
// through out, the caller's scratch slice, which it returns emptied for
// reuse.
func permute(tier []*Candidate, idx []int, out []*Candidate) []*Candidate {
	out = out[:0]
	for _, i := range idx {
		out = append(out, tier[i])
	}
	copy(tier, out)
	clear(out)
	return out[:0]
}

// cmp orders indices by key ascending, 0 (no data) last, ties by index.
func (s *keyed) cmp(a, b int) int {
	ka, kb := s.key[a], s.key[b]
	if (ka == 0) != (kb == 0) {
		if ka == 0 {
			return 1
		}
		return -1
	}
	if c := cmp.Compare(ka, kb); c != 0 {
		return c
	}
	return cmp.Compare(a, b)
}

var (
	_ Strategy = (*byLatency)(nil)
	_ Strategy = (*byThroughput)(nil)
)
