package balancer

import (
	"math/rand/v2"
	"slices"
	"time"
)

// Strategy orders the surviving candidates of one priority tier.
//
// Plan calls Order for each tier in ascending priority until the plan holds K
// upstreams (a tier reached after that is filtered and recorded but not
// ordered), and once more for each tier that has waitable candidates, with
// rec.Waitable() true and k = len(tier). Order is never called with an empty
// tier or k < 1.
//
// Order is called with the owning Balancer's mutex held, so calls on one
// Balancer are serialised: a strategy may keep state between calls (counters,
// scratch buffers, the *rand.Rand it was built with) without locking of its
// own. A Strategy value belongs to exactly one Balancer. Order must not block,
// sleep, do I/O or call back into the Balancer; it runs on every request's
// hot path and should be O(len(tier)·k) or better.
//
// Order returns at most k distinct elements of tier, best first. It may
// permute tier in place and return a sub-slice of it. The Candidates are
// read-only and valid only during the call: do not retain the pointers.
//
// rec.Candidates[i] describes tier[i] as passed in (before any permutation),
// with Name and Weight filled in. Order records the score components it
// computed for tier[i] in rec.Candidates[i].Scores (a fresh map per
// candidate: the Decision keeps it) and may set rec.Candidates[i].Reason; it
// must not touch the other fields. Plan copies these into the Decision and
// sets Rank itself. An element returned twice, or not from tier, is ignored.
type Strategy interface {
	// Name returns the name the strategy is registered under.
	Name() string
	// Order returns at most k candidates of tier, best first, and records
	// score components per candidate in rec.
	Order(tier []*Candidate, k int, rec *TierRecord) []*Candidate
}

// StrategyWeightedRandom is the name of the default strategy (seed 000).
const StrategyWeightedRandom = "weighted-random"

// strategyEnv is what a strategy constructor receives. Both are owned by the
// Balancer; Rand may only be used inside Order (under the Balancer's mutex).
type strategyEnv struct {
	rand *rand.Rand
	now  func() time.Time
}

// strategies maps each strategy name to its constructor. It is never written
// after package initialisation. A new strategy is one file plus one line here.
var strategies = map[string]func(env strategyEnv) Strategy{
	StrategyWeightedRandom: newWeightedRandom,
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
