package balancer

import (
	"math"
	"math/rand/v2"
	"slices"
	"time"
)

// Strategy orders the candidates of one priority tier.
//
// Plan calls Order for each tier in ascending priority until the plan holds K
// upstreams (a tier reached after that is filtered and recorded but not
// ordered), and once more for each tier that has waitable candidates, with
// t.Waitable true and k = len(t.Candidates). Order is never called with an
// empty tier or k < 1.
//
// Order is called with the owning Balancer's mutex held, so calls on one
// Balancer are serialised: a strategy may keep state between calls (counters,
// scratch buffers, the *rand.Rand it was built with) without locking of its
// own. A stateful strategy advances its state only when t.Primary is true.
// A Strategy value belongs to exactly one Balancer. Order must not block,
// sleep, do I/O, read the clock (t.Now is the planning time) or call back into
// the Balancer; it runs on every request's hot path, should be O(n log k) or
// O(n·k) and should not allocate.
//
// Order returns at most k distinct elements of t.Candidates, best first. It
// may permute t.Candidates in place and return a sub-slice of it. The
// Candidates are read-only and valid only during the call: do not retain the
// pointers. It records the score components it computed for t.Candidates[i]
// (as passed in, before any permutation) in t.Scores[i]. An element returned
// twice, or not from the tier, is ignored.
type Strategy interface {
	// Name returns the name the strategy is registered under.
	Name() string
	// Order returns at most k candidates of t, best first, and records
	// their score components in t.Scores.
	Order(t *Tier, k int) []*Candidate
}

// Tier is one priority tier's share of a Plan call, as handed to
// Strategy.Order. Plan reuses it between calls.
type Tier struct {
	// Candidates are the tier's candidates to order: its survivors, or its
	// waitable ones. Order may permute it.
	Candidates []*Candidate
	// Scores has one zeroed entry per Candidates element as passed in; Order
	// fills them and Plan copies them into the Decision.
	Scores []Scores
	// Priority is the tier's priority.
	Priority int
	// Stream is Request.Stream.
	Stream bool
	// Now is the planning time (Decision.At).
	Now time.Time
	// Primary is true when the tier's first pick becomes the plan's first
	// upstream, the one the request is actually sent to. It is false for
	// the retry tail that spills into later tiers, for waitable candidates
	// and for Request.DryRun; stateful strategies must not advance then.
	Primary bool
	// InputTokens and OutputTokens are the request's estimated prompt
	// tokens and expected output tokens (ExpectedOutputTokens), for
	// lowest-cost.
	InputTokens, OutputTokens float64
	// Waitable is true when the candidates are the tier's waitable ones
	// (every slot taken, queue enabled) rather than its survivors.
	Waitable bool
}

// rateLimitScorer is implemented by strategies that keep rate-limited
// candidates in the plan and score them to sort last in their tier (seed
// 001's −10000 fallback) instead of having Plan filter them out as
// FilterRateLimited. Plan checks for it once, in New.
type rateLimitScorer interface {
	Strategy
	scoresRateLimits()
}

// Names of the registered strategies, as used by the config's strategy field.
const (
	// StrategyWeightedRandom is the default (seed 000).
	StrategyWeightedRandom = "weighted-random"
	// StrategySmoothWRR is nginx's smooth weighted round robin (seed 002).
	StrategySmoothWRR = "smooth-wrr"
	// StrategyRoundRobin rotates over the tier's survivors.
	StrategyRoundRobin = "round-robin"
	// StrategyLeastConn picks the lowest in-flight per weight.
	StrategyLeastConn = "least-conn"
	// StrategyP2CEWMA is power of two choices on in-flight × latency EWMA.
	StrategyP2CEWMA = "p2c-ewma"
	// StrategyAdaptive sums seed 001's component scores.
	StrategyAdaptive = "adaptive"
	// StrategyFailover is a strict priority → weight → name order.
	StrategyFailover = "failover"
	// StrategyLowestCost orders by the request's estimated cost.
	StrategyLowestCost = "lowest-cost"
)

// strategyEnv is what a strategy constructor receives. Rand is owned by the
// Balancer and may only be used inside Order (under the Balancer's mutex).
type strategyEnv struct {
	rand *rand.Rand
}

// strategies maps each strategy name to its constructor. It is never written
// after package initialisation. A new strategy is one file plus one line here.
var strategies = map[string]func(env strategyEnv) Strategy{
	StrategyWeightedRandom: newWeightedRandom,
	StrategySmoothWRR:      newSmoothWRR,
	StrategyRoundRobin:     newRoundRobin,
	StrategyLeastConn:      newLeastConn,
	StrategyP2CEWMA:        newP2CEWMA,
	StrategyAdaptive:       newAdaptive,
	StrategyFailover:       newFailover,
	StrategyLowestCost:     newLowestCost,
}

// StrategyNames returns the names of all registered strategies, sorted.
func StrategyNames() []string {
	names := make([]string, 0, len(strategies))
	for name := range strategies {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// slowStartFactor maps Candidate.SlowStart to a factor in (0,1]: values
// outside (0,1], including the zero value and NaN, mean 1.
func slowStartFactor(f float64) float64 {
	if f > 0 && f <= 1 {
		return f
	}
	return 1
}

// positive returns x if it is a positive finite number, else 0: how the
// strategies read a live stat where 0 means no data.
func positive(x float64) float64 {
	if x > 0 && x <= math.MaxFloat64 {
		return x
	}
	return 0
}
