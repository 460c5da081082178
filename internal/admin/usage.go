package admin

import (
	"context"
	"fmt"
	"sort"
	"time"

	"switchyard/internal/config"
	"switchyard/internal/pricing"
)

// UsageQuery is GET /usage's query. Exactly one of Since and Ago is set.
type UsageQuery struct {
	// Since is the start of the period.
	Since time.Time
	// Ago is the period's length, ending now (the Service's clock).
	Ago time.Duration
	// By is "upstream" or "key".
	By string
}

// UsageRow is one line of GET /usage.
type UsageRow struct {
	// Name is the upstream's or key's name; "(none)" for requests that no
	// upstream served (or that no key made, e.g. with an invalid key).
	Name string `json:"name"`
	// Requests counts client requests.
	Requests int64 `json:"requests"`
	// InputTokens and OutputTokens add up what the upstreams reported.
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	// USD is the cost at the upstreams' current prices.
	USD float64 `json:"usd"`
	// Errors counts requests that ended with an error class.
	Errors int64 `json:"errors"`
}

// noName is the row of requests without an upstream (or a key).
const noName = "(none)"

// Usage adds up the request logs since q's start by upstream or by key,
// ordered by name. The store sums them per (upstream, key); each sum is
// priced at its upstream's current price and the priced sums are added up
// per row. Cost is linear in the tokens, so this is what pricing every
// log and adding up would give, without reading the logs. Logs reach the
// store asynchronously, so the last second or so of requests may be
// missing.
func (s *Service) Usage(ctx context.Context, q UsageQuery) ([]UsageRow, error) {
	since := q.Since
	if since.IsZero() {
		since = s.clock.Now().Add(-q.Ago)
	}
	ups, err := s.st.ListUpstreams(ctx)
	if err != nil {
		return nil, fmt.Errorf("loading upstreams: %w", err)
	}
	prices := make(map[string]config.Price, len(ups))
	for _, u := range ups {
		prices[u.Name] = u.Price.Effective()
	}
	totals, err := s.st.UsageTotals(ctx, since)
	if err != nil {
		return nil, fmt.Errorf("reading usage: %w", err)
	}
	rows := map[string]*UsageRow{}
	for _, t := range totals {
		name := t.Upstream
		if q.By == "key" {
			name = t.Key
		}
		if name == "" {
			name = noName
		}
		r := rows[name]
		if r == nil {
			r = &UsageRow{Name: name}
			rows[name] = r
		}
		r.Requests += t.Requests
		r.InputTokens += t.InputTokens
		r.OutputTokens += t.OutputTokens
		r.USD += pricing.Cost(pricing.Usage{Input: t.InputTokens, Output: t.OutputTokens}, prices[t.Upstream])
		r.Errors += t.Errors
	}
	out := make([]UsageRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
