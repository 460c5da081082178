package sqlite

import (
	"context"
	"fmt"
	"time"

	"switchyard/internal/store"
)

// UsageTotals adds up the request logs since since per (upstream, key) with
// one GROUP BY over the range of request_logs_time that the period covers.
func (s *Store) UsageTotals(ctx context.Context, since time.Time) ([]store.UsageTotal, error) {
	rows, err := s.r.QueryContext(ctx, `SELECT upstream, key, COUNT(*),
		SUM(CASE WHEN error_class <> '' THEN 1 ELSE 0 END),
		SUM(input_tokens), SUM(output_tokens)
		FROM request_logs WHERE time >= ?
		GROUP BY upstream, key ORDER BY upstream, key`, sinceNano(since))
	if err != nil {
		return nil, fmt.Errorf("adding up usage: %w", err)
	}
	defer rows.Close()
	out := []store.UsageTotal{}
	for rows.Next() {
		var u store.UsageTotal
		if err := rows.Scan(&u.Upstream, &u.Key, &u.Requests, &u.Errors, &u.InputTokens, &u.OutputTokens); err != nil {
			return nil, fmt.Errorf("adding up usage: %w", err)
		}
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
