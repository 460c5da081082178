package postgres

import (
	"context"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"

	"switchyard/internal/store"
)

// UsageTotals adds up the request logs since since per (upstream, key,
// model, UTC day) with one GROUP BY over the range of request_logs_time
// that the period covers. time holds microseconds and time_nsec the rest, so the bound is compared
// on both; the zero time stands for the first nanosecond after it, which
// leaves out the logs stored with the zero Time.
func (s *Store) UsageTotals(ctx context.Context, since time.Time) ([]store.UsageTotal, error) {
	if since.IsZero() {
		since = since.Add(time.Nanosecond)
	}
	at := since.Truncate(time.Microsecond)
	rows, err := s.pool.Query(ctx, `SELECT upstream, key, model, floor(extract(epoch FROM time) / 86400)::bigint AS day, count(*),
		count(*) FILTER (WHERE error_class <> ''),
		coalesce(sum(input_tokens), 0)::bigint, coalesce(sum(output_tokens), 0)::bigint,
		coalesce(sum(cache_read_tokens), 0)::bigint, coalesce(sum(cache_write_tokens), 0)::bigint,
		coalesce(sum(cost_usd), 0)::double precision, count(*) FILTER (WHERE unpriced)
		FROM request_logs WHERE time >= $1 AND (time > $1 OR time_nsec >= $2)
		GROUP BY upstream, key, model, day ORDER BY upstream, key, model, day`, at, int16(since.Sub(at)))
	if err != nil {
		return nil, fmt.Errorf("adding up usage: %w", err)
	}
	out := []store.UsageTotal{}
	var (
		u   store.UsageTotal
		day int64
	)
	_, err = pgx.ForEachRow(rows, []any{&u.Upstream, &u.Key, &u.Model, &day, &u.Requests, &u.Errors, &u.InputTokens, &u.OutputTokens,
		&u.CacheReadTokens, &u.CacheWriteTokens, &u.CostUSD, &u.Unpriced}, func() error {
		u.Day = store.DayOf(day)
		out = append(out, u)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("adding up usage: %w", err)
	}
	return out, nil
}
