package postgres

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"

	"switchyard/internal/store"
	"switchyard/internal/store/internal/codec"
)

// AddSpend adds every delta to its spend row in one transaction, creating
// rows as needed; an empty batch is a no-op. The upserts run in key order,
// so that concurrent batches lock rows in the same order and never deadlock;
// they are sent in one round trip. Period starts are kept to the microsecond.
func (s *Store) AddSpend(ctx context.Context, deltas []store.SpendDelta) error {
	if len(deltas) == 0 {
		return nil
	}
	if err := codec.CheckSpend(deltas); err != nil {
		return err
	}
	sorted := slices.Clone(deltas)
	slices.SortStableFunc(sorted, func(a, b store.SpendDelta) int {
		return cmp.Or(strings.Compare(a.Scope, b.Scope), strings.Compare(a.Name, b.Name), a.PeriodStart.Compare(b.PeriodStart))
	})
	const q = `INSERT INTO spend (scope, name, period_start, usd) VALUES ($1, $2, $3, $4)
		ON CONFLICT (scope, name, period_start) DO UPDATE SET
			usd = spend.usd + excluded.usd,
			updated_at = clock_timestamp()`
	var b pgx.Batch
	for _, d := range sorted {
		b.Queue(q, d.Scope, d.Name, d.PeriodStart, d.USD)
	}
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		return tx.SendBatch(ctx, &b).Close()
	})
	if err != nil {
		return fmt.Errorf("adding spend: %w", err)
	}
	return nil
}

// LoadSpend returns the spend rows whose period starts at or after since,
// ordered by scope, name and period start.
func (s *Store) LoadSpend(ctx context.Context, since time.Time) ([]store.SpendTotal, error) {
	// Stored starts are whole microseconds: round since up to one, so that
	// no earlier start matches.
	from := since.Truncate(time.Microsecond)
	if from.Before(since) {
		from = from.Add(time.Microsecond)
	}
	rows, err := s.pool.Query(ctx, `SELECT scope, name, period_start, usd FROM spend
		WHERE period_start >= $1 ORDER BY scope, name, period_start`, from)
	if err != nil {
		return nil, fmt.Errorf("loading spend: %w", err)
	}
	out := []store.SpendTotal{}
	var t store.SpendTotal
	_, err = pgx.ForEachRow(rows, []any{&t.Scope, &t.Name, &t.PeriodStart, &t.USD}, func() error {
		r := t
		r.PeriodStart = r.PeriodStart.UTC()
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("loading spend: %w", err)
	}
	return out, nil
}
