package balancer

import (
	"math"
	"slices"
	"testing"
)

// prefPool is three tiers' worth of candidates with prices, providers and
// live stats for the preference tests.
func prefPool() []Candidate {
	a := priced("a", 0, 1, 2.5, 10) // openai
	a.Provider, a.LatencyEWMA, a.TTFTEWMA, a.TPSEWMA = "openai", 900, 300, 40
	b := priced("b", 0, 1, 0.5, 2) // bedrock
	b.Provider, b.LatencyEWMA, b.TTFTEWMA, b.TPSEWMA = "bedrock", 400, 700, 90
	c := priced("c", 0, 1, 1, 4)                            // bedrock
	c.Provider, c.LatencyEWMA, c.TTFTEWMA = "bedrock", 0, 0 // no data
	d := up("d", 1, 1)                                      // unpriced, tier 1
	d.Provider, d.LatencyEWMA, d.TTFTEWMA, d.TPSEWMA = "anthropic", 100, 100, 60
	return []Candidate{a, b, c, d}
}

func inf() float64 { return math.Inf(1) }

// TestPreferences checks each preference's order and the reasons it records,
// on the failover strategy (a fixed order by weight then name) so that only
// the preference moves things.
func TestPreferences(t *testing.T) {
	tests := []struct {
		name     string
		prefs    Preferences
		stream   bool
		want     []string
		wait     []string
		strategy string
		dropped  map[string]string // name → ReasonText
	}{
		{
			name: "none",
			want: []string{"a", "b", "c", "d"}, strategy: StrategyFailover,
		},
		{
			name:    "ignore by upstream name",
			prefs:   Preferences{Ignore: []string{"a"}},
			want:    []string{"b", "c", "d"},
			dropped: map[string]string{"a": "preferences: ignored"},
		},
		{
			name:    "ignore by provider",
			prefs:   Preferences{Ignore: []string{"bedrock"}},
			want:    []string{"a", "d"},
			dropped: map[string]string{"b": "preferences: ignored", "c": "preferences: ignored"},
		},
		{
			name:    "only",
			prefs:   Preferences{Only: []string{"bedrock", "d"}},
			want:    []string{"b", "c", "d"},
			dropped: map[string]string{"a": "preferences: not in only"},
		},
		{
			name:    "ignore beats only",
			prefs:   Preferences{Only: []string{"bedrock"}, Ignore: []string{"c"}},
			want:    []string{"b"},
			dropped: map[string]string{"a": "preferences: not in only", "c": "preferences: ignored", "d": "preferences: not in only"},
		},
		{
			name:    "max_price on both, unpriced dropped",
			prefs:   Preferences{MaxPrice: true, MaxPrompt: 1, MaxCompletion: 4},
			want:    []string{"b", "c"},
			dropped: map[string]string{"a": "preferences: over max_price", "d": "preferences: over max_price"},
		},
		{
			name:    "max_price on completion only",
			prefs:   Preferences{MaxPrice: true, MaxPrompt: inf(), MaxCompletion: 3},
			want:    []string{"b"},
			dropped: map[string]string{"a": "preferences: over max_price", "c": "preferences: over max_price", "d": "preferences: over max_price"},
		},
		{
			name:  "order ahead of tiers",
			prefs: Preferences{Order: []string{"d", "c"}},
			want:  []string{"d", "c", "a", "b"},
		},
		{
			name:  "order by provider, then the rest",
			prefs: Preferences{Order: []string{"bedrock"}},
			want:  []string{"b", "c", "a", "d"},
		},
		{
			name:    "order naming a filtered upstream skips it",
			prefs:   Preferences{Order: []string{"a", "c"}, Ignore: []string{"a"}},
			want:    []string{"c", "b", "d"},
			dropped: map[string]string{"a": "preferences: ignored"},
		},
		{
			name:    "no fallbacks: only what order names",
			prefs:   Preferences{Order: []string{"c", "a"}, NoFallbacks: true},
			want:    []string{"c", "a"},
			dropped: map[string]string{"b": "preferences: not in order, allow_fallbacks false", "d": "preferences: not in order, allow_fallbacks false"},
		},
		{
			name:  "no fallbacks without order: the first candidate only",
			prefs: Preferences{NoFallbacks: true},
			want:  []string{"a"},
		},
		{
			name:  "sort price replaces the strategy",
			prefs: Preferences{Sort: SortPrice},
			// 1000 input, 256 output: b 0.5+0.512, c 1+1.024, a 2.5+2.56; d unpriced, tier 1
			want: []string{"b", "c", "a", "d"}, strategy: StrategyLowestCost,
		},
		{
			name:  "sort latency, non-streaming: latency EWMA, no data last",
			prefs: Preferences{Sort: SortLatency},
			want:  []string{"b", "a", "c", "d"}, strategy: "sort:latency",
		},
		{
			name:   "sort latency, streaming: TTFT EWMA",
			prefs:  Preferences{Sort: SortLatency},
			stream: true,
			want:   []string{"a", "b", "c", "d"}, strategy: "sort:latency",
		},
		{
			name:  "sort throughput: TPS descending, no data last",
			prefs: Preferences{Sort: SortThroughput},
			want:  []string{"b", "a", "c", "d"}, strategy: "sort:throughput",
		},
		{
			name:  "order then sort",
			prefs: Preferences{Order: []string{"a"}, Sort: SortPrice},
			want:  []string{"a", "b", "c", "d"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newStrategyBalancer(t, StrategyFailover, 1, nil)
			req := Request{K: 4, InputTokens: 1000, Stream: tt.stream}
			if !tt.prefs.equal(Preferences{}) {
				req.Prefs = &tt.prefs
			}
			p := b.Plan(req, prefPool())
			if !slices.Equal(p.Order, tt.want) {
				t.Errorf("Order = %v, want %v", p.Order, tt.want)
			}
			if tt.strategy != "" && p.Decision.Strategy != tt.strategy {
				t.Errorf("Decision.Strategy = %q, want %q", p.Decision.Strategy, tt.strategy)
			}
			for _, r := range p.Decision.Candidates {
				want, drop := tt.dropped[r.Name]
				if got := r.ReasonText(); got != want || drop != (r.Filter == FilterPreferences) {
					t.Errorf("%s: filter %q reason %q, want %q", r.Name, r.Filter, got, want)
				}
				if want := slices.Index(p.Order, r.Name) + 1; r.Rank != want {
					t.Errorf("%s: rank %d, want %d", r.Name, r.Rank, want)
				}
			}
		})
	}
}

// equal compares two Preferences (they hold slices, so == does not).
func (p Preferences) equal(q Preferences) bool {
	return slices.Equal(p.Order, q.Order) && slices.Equal(p.Only, q.Only) && slices.Equal(p.Ignore, q.Ignore) &&
		p.NoFallbacks == q.NoFallbacks && p.Sort == q.Sort && p.MaxPrice == q.MaxPrice
}

// TestPreferencesWaitable checks that allow_fallbacks false without order
// leaves one candidate in all, waitable or not.
func TestPreferencesWaitable(t *testing.T) {
	full := func(name string, prio int) Candidate {
		c := up(name, prio, 1)
		c.MaxConcurrency, c.InFlight, c.QueueEnabled = 1, 1, true
		return c
	}
	b := newStrategyBalancer(t, StrategyFailover, 1, nil)
	prefs := &Preferences{NoFallbacks: true}
	p := b.Plan(Request{K: 3, Prefs: prefs}, []Candidate{full("a", 0), full("b", 0), full("c", 1)})
	if len(p.Order) != 0 || !slices.Equal(p.Waitable, []string{"a"}) {
		t.Errorf("Order %v Waitable %v, want [] [a]", p.Order, p.Waitable)
	}
	p = b.Plan(Request{K: 3, Prefs: prefs}, []Candidate{full("a", 0), up("b", 1, 1)})
	if !slices.Equal(p.Order, []string{"b"}) || len(p.Waitable) != 0 {
		t.Errorf("Order %v Waitable %v, want [b] []", p.Order, p.Waitable)
	}
	p = b.Plan(Request{K: 3}, []Candidate{full("a", 0), full("b", 0)})
	if len(p.Waitable) != 2 {
		t.Errorf("without preferences Waitable %v, want both", p.Waitable)
	}
}

// TestPreferencesSortKeepsRateLimitFilter: a sort replaces adaptive, which
// keeps rate-limited candidates itself, so Plan filters them again.
func TestPreferencesSortKeepsRateLimitFilter(t *testing.T) {
	b := newStrategyBalancer(t, StrategyAdaptive, 1, nil)
	limited := priced("limited", 0, 1, 0.1, 0.1)
	limited.RateLimited, limited.RateLimitReason = true, "cooling down"
	cands := []Candidate{limited, priced("ok", 0, 1, 5, 5)}
	p := b.Plan(Request{K: 2, Prefs: &Preferences{Sort: SortPrice}}, cands)
	if !slices.Equal(p.Order, []string{"ok"}) {
		t.Errorf("Order = %v, want [ok]", p.Order)
	}
	if p = b.Plan(Request{K: 2}, cands); len(p.Order) != 2 || p.Decision.Strategy != StrategyAdaptive {
		t.Errorf("without sort: Order %v strategy %s, want both and adaptive", p.Order, p.Decision.Strategy)
	}
}

// TestPreferencesAllocs: preferences keep Plan within its two allocations.
func TestPreferencesAllocs(t *testing.T) {
	prefs := &Preferences{Order: []string{"upstream-0003"}, Ignore: []string{"upstream-0001"}, Sort: SortPrice,
		MaxPrice: true, MaxPrompt: 10, MaxCompletion: inf()}
	for _, sort := range append([]string{""}, SortNames...) {
		t.Run(sort, func(t *testing.T) {
			b := newStrategyBalancer(t, StrategyWeightedRandom, 1, nil)
			cands := benchPool(10)
			for i := range cands {
				cands[i].Priced, cands[i].InputPerMTok, cands[i].OutputPerMTok = i%4 > 0, float64(i), float64(2*i)
			}
			p := *prefs
			p.Sort = sort
			req := Request{K: 3, Prefs: &p, InputTokens: 500}
			b.Plan(req, cands)
			if got := testing.AllocsPerRun(200, func() { b.Plan(req, cands) }); got > 2 {
				t.Errorf("Plan allocates %v times per call, want ≤ 2", got)
			}
		})
	}
}
