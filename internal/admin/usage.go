package admin

import (
	"context"
	"fmt"
	"sort"
	"time"
)

// UsageQuery is GET /usage's query. Exactly one of Since and Ago is set.
type UsageQuery struct {
	// Since is the start of the period.
	Since time.Time
	// Ago is the period's length, ending now (the Service's clock).
	Ago time.Duration
	// By is "upstream", "key", "model" (the client's model, the route) or
	// "day" (the UTC day, YYYY-MM-DD).
	By string
}

// UsageRow is one line of GET /usage.
type UsageRow struct {
	// Name is the upstream's or key's name, the client's model, or the UTC
	// day (YYYY-MM-DD); "(none)" for requests that no upstream served (or
	// that no key made, e.g. with an invalid key, or that named no model).
	Name string `json:"name"`
	// Requests counts client requests.
	Requests int64 `json:"requests"`
	// InputTokens and OutputTokens add up what the upstreams reported;
	// InputTokens counts the prompt cache's tokens too.
	InputTokens  int64 `json:"input_tokens"`
	OutputTokens int64 `json:"output_tokens"`
	// CacheReadTokens and CacheWriteTokens are the parts of InputTokens
	// read from and written to the providers' prompt caches.
	CacheReadTokens  int64 `json:"cache_read_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens"`
	// USD adds up the request logs' cost_usd: each request priced when it
	// was served (docs/reference.md#request-cost), never re-priced.
	USD float64 `json:"usd"`
	// Unpriced counts requests served at no known price (cost 0, not free).
	Unpriced int64 `json:"unpriced"`
	// Errors counts requests that ended with an error class.
	Errors int64 `json:"errors"`
}

// noName is the row of requests without an upstream (or a key, a model).
const noName = "(none)"

// Usage adds up the request logs since q's start by upstream, key, model
// or UTC day, ordered by name. The store sums them per (upstream, key,
// model, day), costs included as each log recorded it. Logs reach the
// store asynchronously, so the last second or so of requests may be
// missing.
func (s *Service) Usage(ctx context.Context, q UsageQuery) ([]UsageRow, error) {
	since := q.Since
	if since.IsZero() {
		since = s.clock.Now().Add(-q.Ago)
	}
	totals, err := s.st.UsageTotals(ctx, since)
	if err != nil {
		return nil, fmt.Errorf("reading usage: %w", err)
	}
	rows := map[string]*UsageRow{}
	for _, t := range totals {
		var name string
		switch q.By {
		case "key":
			name = t.Key
		case "model":
			name = t.Model
		case "day":
			name = t.Day.UTC().Format(time.DateOnly)
		default:
			name = t.Upstream
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
		r.CacheReadTokens += t.CacheReadTokens
		r.CacheWriteTokens += t.CacheWriteTokens
		r.USD += t.CostUSD
		r.Unpriced += t.Unpriced
		r.Errors += t.Errors
	}
	out := make([]UsageRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, nil
}
