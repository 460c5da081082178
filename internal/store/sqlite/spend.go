package sqlite

import (
	"context"
	"fmt"
	"time"

	"switchyard/internal/store"
	"switchyard/internal/store/internal/codec"
)

// AddSpend adds every delta to its spend row in one transaction, creating
// rows as needed; an empty batch is a no-op.
func (s *Store) AddSpend(ctx context.Context, deltas []store.SpendDelta) (err error) {
	if len(deltas) == 0 {
		return nil
	}
	if err := codec.CheckSpend(deltas); err != nil {
		return err
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("adding spend: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	stmt, err := tx.PrepareContext(ctx, `INSERT INTO spend (scope, name, period_start, usd)
		VALUES (?, ?, ?, ?)
		ON CONFLICT (scope, name, period_start) DO UPDATE SET
			usd = usd + excluded.usd,
			updated_at = strftime('%Y-%m-%dT%H:%M:%fZ', 'now')`)
	if err != nil {
		return fmt.Errorf("adding spend: %w", err)
	}
	defer stmt.Close()
	for _, d := range deltas {
		if _, err = stmt.ExecContext(ctx, d.Scope, d.Name, d.PeriodStart.Unix(), d.USD); err != nil {
			return fmt.Errorf("adding spend for %s %q: %w", d.Scope, d.Name, err)
		}
	}
	if err = tx.Commit(); err != nil {
		return fmt.Errorf("adding spend: committing: %w", err)
	}
	return nil
}

// LoadSpend returns the spend rows whose period starts at or after since,
// ordered by scope, name and period start.
func (s *Store) LoadSpend(ctx context.Context, since time.Time) ([]store.SpendTotal, error) {
	from := since.Unix() // whole seconds, rounded up so that no earlier start matches
	if since.Nanosecond() > 0 {
		from++
	}
	rows, err := s.r.QueryContext(ctx, `SELECT scope, name, period_start, usd FROM spend
		WHERE period_start >= ? ORDER BY scope, name, period_start`, from)
	if err != nil {
		return nil, fmt.Errorf("loading spend: %w", err)
	}
	defer rows.Close()
	out := []store.SpendTotal{}
	for rows.Next() {
		var (
			t     store.SpendTotal
			start int64
		)
		if err := rows.Scan(&t.Scope, &t.Name, &start, &t.USD); err != nil {
			return nil, fmt.Errorf("loading spend: %w", err)
		}
		t.PeriodStart = time.Unix(start, 0).UTC()
		out = append(out, t)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("loading spend: %w", err)
	}
	return out, nil
}
