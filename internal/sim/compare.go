package sim

import (
	"bytes"
	"fmt"
	"slices"

	"switchyard/internal/balancer"
	"switchyard/internal/config"
)

// Scenario.Compare's values: each runs the scenario a second time with
// one feature off.
const (
	// CompareHedging turns hedging off in the defaults and every route.
	CompareHedging = "hedging"
	// ComparePrefixAffinity turns prefix-cache affinity off.
	ComparePrefixAffinity = "prefix-affinity"
	// CompareLowestCost replaces the lowest-cost strategy with weighted
	// random in the defaults and every route.
	CompareLowestCost = "lowest-cost"
)

// comparisons are the second runs of Scenario.Compare: what each turns
// off, and what it needs of the config to mean anything (the problem,
// "" when the config qualifies).
var comparisons = map[string]struct {
	without func(*config.Config) *config.Config
	needs   func(*config.Config) string
}{
	CompareHedging: {withoutHedging, func(cfg *config.Config) string {
		if hedgingOn(cfg) {
			return ""
		}
		return "the config hedges no route: set defaults.hedge or a route's hedge.delay"
	}},
	ComparePrefixAffinity: {withoutPrefixAffinity, func(cfg *config.Config) string {
		if cfg.Affinity.Enabled && cfg.Affinity.Prefix.Enabled {
			return ""
		}
		return "the config has prefix affinity off: set affinity.enabled and affinity.prefix.enabled"
	}},
	CompareLowestCost: {withoutLowestCost, func(cfg *config.Config) string {
		if slices.Contains(strategies(cfg), balancer.StrategyLowestCost) {
			return ""
		}
		return "no route of the config uses the lowest-cost strategy"
	}},
}

// compareNames lists the values of Scenario.Compare, sorted.
func compareNames() []string { return sortedNames(comparisons) }

// withoutPrefixAffinity returns a copy of cfg with prefix-cache affinity
// off.
func withoutPrefixAffinity(cfg *config.Config) *config.Config {
	off := *cfg
	off.Affinity.Prefix.Enabled = false
	return &off
}

// withoutLowestCost returns a copy of cfg where the defaults and every
// route that use lowest-cost use weighted-random instead.
func withoutLowestCost(cfg *config.Config) *config.Config {
	off := *cfg
	if off.Defaults.Strategy == balancer.StrategyLowestCost {
		off.Defaults.Strategy = config.StrategyWeightedRandom
	}
	off.Routes = slices.Clone(cfg.Routes)
	for i := range off.Routes {
		if off.Routes[i].Strategy == balancer.StrategyLowestCost {
			off.Routes[i].Strategy = config.StrategyWeightedRandom
		}
	}
	return &off
}

// strategies lists the strategies cfg's defaults and routes use.
func strategies(cfg *config.Config) []string {
	s := []string{cfg.Defaults.Strategy}
	for _, r := range cfg.Routes {
		s = append(s, r.Strategy)
	}
	return s
}

// Comparison sets the run against the same scenario and seed run again
// with one feature turned off (Scenario.Compare).
type Comparison struct {
	// Of names what the second run turned off: "hedging",
	// "prefix-affinity" or "lowest-cost".
	Of      string `json:"of"`
	With    Side   `json:"with"`
	Without Side   `json:"without"`
	// ExtraAttempts is how many more upstream attempts With made than
	// Without, as a share of Without's.
	ExtraAttempts float64 `json:"extra_attempts"`
}

// Side is one run of a comparison, as its clients and bill saw it.
type Side struct {
	Requests  int64 `json:"requests"`
	Succeeded int64 `json:"succeeded"`
	Attempts  int64 `json:"attempts"`
	// Hedges counts the attempts raced alongside a slow one.
	Hedges    int64       `json:"hedges"`
	LatencyMs Percentiles `json:"latency_ms"`
	TTFTMs    Percentiles `json:"ttft_ms"`
	CostUSD   float64     `json:"cost_usd"`
	// CostPer1000 is CostUSD per 1,000 requests; CacheHitRate the share of
	// shared prompts read from the prompt cache (scenarios with shared
	// prompts).
	CostPer1000  float64  `json:"cost_per_1000_requests_usd"`
	CacheHitRate *float64 `json:"cache_hit_rate,omitempty"`
}

// withoutHedging returns a copy of cfg with hedging off in the defaults
// and every route; everything else is shared with cfg.
func withoutHedging(cfg *config.Config) *config.Config {
	off := *cfg
	off.Defaults.Hedge.Delay = "0s"
	off.Routes = slices.Clone(cfg.Routes)
	for i := range off.Routes {
		off.Routes[i].Hedge.Delay = "0s"
	}
	return &off
}

// hedgingOn reports whether cfg hedges any route: the defaults (models
// without a route) or a route's own.
func hedgingOn(cfg *config.Config) bool {
	return cfg.Defaults.Hedge.On() || slices.ContainsFunc(cfg.Routes, func(r config.Route) bool { return r.Hedge.On() })
}

// side sums up rp for a comparison.
func (rp *Report) side() Side {
	o := &rp.Summary.Overall
	var hits *float64
	if c := o.PromptCache; c != nil {
		hits = &c.HitRate
	}
	return Side{
		CacheHitRate: hits,
		Requests:     o.Requests, Succeeded: o.Succeeded, Attempts: o.Attempts, Hedges: o.Hedges,
		LatencyMs: o.LatencyMs, TTFTMs: o.TTFTMs, CostUSD: o.CostUSD, CostPer1000: o.CostPer1000,
	}
}

// compare sets rp (the run as configured) against without, the same
// scenario and seed run with of turned off.
func (rp *Report) compare(of string, without *Report) {
	c := &Comparison{Of: of, With: rp.side(), Without: without.side()}
	c.ExtraAttempts = round(change(float64(c.With.Attempts), float64(c.Without.Attempts)), 4)
	rp.Summary.Comparison = c
}

// change is a's relative difference from b; 0 when b is.
func change(a, b float64) float64 {
	if b == 0 {
		return 0
	}
	return a/b - 1
}

// comparisonMarkdown renders summary.md's comparison section; nothing
// without one.
func (rp *Report) comparisonMarkdown(b *bytes.Buffer) {
	c := rp.Summary.Comparison
	if c == nil {
		return
	}
	w, wo := &c.With, &c.Without
	fmt.Fprintf(b, "## With and without %s\n\n", c.Of)
	off := c.Of + " off in every route"
	if c.Of == CompareLowestCost {
		off = "weighted-random instead of lowest-cost"
	}
	fmt.Fprintf(b, "The same traffic and seed, run again with %s (`compare: %s`).\n\n", off, c.Of)
	fmt.Fprintf(b, "| metric | with %s | without | change |\n| --- | ---: | ---: | ---: |\n", c.Of)
	ms := func(name string, with, without float64) {
		fmt.Fprintf(b, "| %s | %s | %s | %s |\n", name, msText(with), msText(without), signedPct(change(with, without)))
	}
	ms("TTFT p50 (streams)", w.TTFTMs.P50, wo.TTFTMs.P50)
	ms("TTFT p99 (streams)", w.TTFTMs.P99, wo.TTFTMs.P99)
	ms("latency p50", w.LatencyMs.P50, wo.LatencyMs.P50)
	ms("latency p99", w.LatencyMs.P99, wo.LatencyMs.P99)
	fmt.Fprintf(b, "| upstream attempts | %d | %d | %s |\n", w.Attempts, wo.Attempts, signedPct(c.ExtraAttempts))
	if w.Hedges > 0 || wo.Hedges > 0 {
		fmt.Fprintf(b, "| hedges | %d (%s of requests) | %d | |\n", w.Hedges, pct(ratio(w.Hedges, w.Requests)), wo.Hedges)
	}
	fmt.Fprintf(b, "| succeeded | %d of %d | %d of %d | |\n", w.Succeeded, w.Requests, wo.Succeeded, wo.Requests)
	if w.CacheHitRate != nil && wo.CacheHitRate != nil {
		fmt.Fprintf(b, "| prompt-cache hit rate | %s | %s | |\n", pct(*w.CacheHitRate), pct(*wo.CacheHitRate))
	}
	fmt.Fprintf(b, "| cost per 1,000 requests | $%.4f | $%.4f | %s |\n", w.CostPer1000, wo.CostPer1000, signedPct(change(w.CostPer1000, wo.CostPer1000)))
	fmt.Fprintf(b, "| cost | $%.2f | $%.2f | %s |\n\n", w.CostUSD, wo.CostUSD, signedPct(change(w.CostUSD, wo.CostUSD)))
}

func signedPct(f float64) string { return fmt.Sprintf("%+.1f%%", 100*f) }
