package proxy

import (
	"strconv"

	"switchyard/internal/codec"
	"switchyard/internal/outcome"
	"switchyard/internal/pricing"
	"switchyard/internal/store"
)

// withUsage returns o with the usage u: its input (the prompt cache's
// included), output and cache tokens (docs/protocols.md#usage-and-cache-tokens).
func withUsage(o outcome.Outcome, u codec.Usage) outcome.Outcome {
	o.InputTokens, o.OutputTokens = u.Input, u.Output
	o.CacheReadTokens, o.CacheWriteTokens = u.CacheRead, u.CacheWrite
	return o
}

// cost returns the USD cost of o's usage at the price of the model tried
// (the request's, or the fallback model that served it) on the attempt's
// upstream (docs/reference.md#request-cost), and whether
// the model has a price there; an unpriced request costs 0. Spend, the
// cost metric, the request log and X-Switchyard-Cost all take it from
// here.
func (a *attempt) cost(o *outcome.Outcome) (usd float64, priced bool) {
	price, src := a.up.prices.Lookup(a.model)
	if !src.Priced() {
		return 0, false
	}
	u := pricing.Usage{Input: o.InputTokens, Output: o.OutputTokens, CacheRead: o.CacheReadTokens, CacheWrite: o.CacheWriteTokens}
	return pricing.Cost(u, price), true
}

// noteCost records the committed attempt's cache tokens and cost in the
// request log, and returns the cost.
func (a *attempt) noteCost(log *store.RequestLog, o *outcome.Outcome) (usd float64, priced bool) {
	usd, priced = a.cost(o)
	log.CacheReadTokens, log.CacheWriteTokens = o.CacheReadTokens, o.CacheWriteTokens
	log.CostUSD, log.Unpriced = usd, !priced
	return usd, priced
}

// formatCost is the X-Switchyard-Cost value: USD in the shortest decimal
// that reads back as the same float64 (no exponent), as the request log's
// cost_usd holds it.
func formatCost(usd float64) string { return strconv.FormatFloat(usd, 'f', -1, 64) }
