package sqlite

import (
	"context"
	"fmt"
	"time"

	"switchyard/internal/store"
)

// UsageTotals adds up the request logs since since per (upstream, key,
// model, UTC day) with one GROUP BY over the range of request_logs_time
// that the period covers.
func (s *Store) UsageTotals(ctx context.Context, since time.Time) ([]store.UsageTotal, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT upstream, key, model, time / 86400000000000 AS day, COUNT(*),
		SUM(CASE WHEN error_class <> '' THEN 1 ELSE 0 END),
		SUM(input_tokens), SUM(output_tokens), SUM(cache_read_tokens), SUM(cache_write_tokens),
		TOTAL(cost_usd), SUM(unpriced)
		FROM request_logs WHERE time >= ?
		GROUP BY upstream, key, model, day ORDER BY upstream, key, model, day`, sinceNano(since))
	if err != nil {
		return nil, fmt.Errorf("adding up usage: %w", err)
	}
	defer rows.Close()
	out := []store.UsageTotal{}
	for rows.Next() {
		var (
			u   store.UsageTotal
			day int64
		)
		if err := rows.Scan(&u.Upstream, &u.Key, &u.Model, &day, &u.Requests, &u.Errors, &u.InputTokens, &u.OutputTokens,
			&u.CacheReadTokens, &u.CacheWriteTokens, &u.CostUSD, &u.Unpriced); err != nil {
			return nil, fmt.Errorf("adding up usage: %w", err)
		}
		u.Day = store.DayOf(day)
		out = append(out, u)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("adding up usage: %w", err)
	}
	return out, nil
}

// sinceNano is since as the time column's Unix nanoseconds. A time before
// what Unix nanoseconds can hold (1678), the zero time included, maps to
// the smallest value, which every stored time passes but NULL, the zero
// Time's encoding.
func sinceNano(since time.Time) int64 {
	if since.Before(time.Unix(0, minInt64)) {
		return minInt64
	}
	return since.UnixNano()
}

const minInt64 = -1 << 63
