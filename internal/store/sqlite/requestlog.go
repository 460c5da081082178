package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"time"

	"switchyard/internal/store"
)

// InsertRequestLogs appends logs in one transaction; an empty batch is a no-op.
func (s *Store) InsertRequestLogs(ctx context.Context, logs []store.RequestLog) (err error) {
	if len(logs) == 0 {
		return nil
	}
	tx, err := s.w.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("inserting request logs: %w", err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	// Full chunks of logChunk rows go through one prepared multi-row INSERT;
	// the rest row by row.
	var chunk, one *sql.Stmt
	args := make([]any, 0, logChunk*logColumns)
	for len(logs) > 0 {
		n := logChunk
		if len(logs) < logChunk {
			n = 1
		}
		stmt := &chunk
		if n == 1 {
			stmt = &one
		}
		if *stmt == nil {
			if *stmt, err = tx.PrepareContext(ctx, insertLogsSQL(n)); err != nil {
				return fmt.Errorf("inserting request logs: %w", err)
			}
			defer (*stmt).Close()
		}
		args = args[:0]
		for i := range logs[:n] {
			l := &logs[i]
			args = append(args, l.ID, unixNano(l.Time), l.Key, l.Model, l.Upstream,
				l.Status, l.Attempts, l.Stream, int64(l.Latency), int64(l.TTFT),
				l.InputTokens, l.OutputTokens, l.ErrorClass, l.Error, l.Translated, store.TriedJSON(l.Tried), l.TraceID,
				l.CacheReadTokens, l.CacheWriteTokens, l.CostUSD, l.Unpriced)
		}
		if _, err = (*stmt).ExecContext(ctx, args...); err != nil {
			return fmt.Errorf("inserting request logs: %w", err)
		}
		logs = logs[n:]
	}
	if err = tx.Commit(); err != nil {
		return fmt.Errorf("inserting request logs: committing: %w", err)
	}
	return nil
}

const (
	// logChunk is the rows one multi-row INSERT carries: 21 × 32 = 672
	// parameters, well under SQLite's limit of 32,766.
	logChunk = 32
	// logColumns is the number of columns an INSERT sets.
	logColumns = 21
)

// insertLogsSQL returns the INSERT of n request logs.
func insertLogsSQL(n int) string {
	row := "(?" + strings.Repeat(", ?", logColumns-1) + ")"
	return "INSERT INTO request_logs (id, time, key, model, upstream, status, attempts, stream, " +
		"latency_ns, ttft_ns, input_tokens, output_tokens, error_class, error, translated, tried, trace_id, " +
		"cache_read_tokens, cache_write_tokens, cost_usd, unpriced) VALUES " +
		row + strings.Repeat(", "+row, n-1)
}

// selectLogsSQL selects every column of a request log, in the order scanLog reads them.
const selectLogsSQL = `SELECT id, time, key, model, upstream, status, attempts,
	stream, latency_ns, ttft_ns, input_tokens, output_tokens, error_class, error, translated, tried, trace_id,
	cache_read_tokens, cache_write_tokens, cost_usd, unpriced
	FROM request_logs `

// RecentRequestLogs returns at most limit logs, newest first (ties: last
// inserted first). A limit ≤ 0 returns none.
func (s *Store) RecentRequestLogs(ctx context.Context, limit int) ([]store.RequestLog, error) {
	out := []store.RequestLog{}
	if limit <= 0 {
		return out, nil
	}
	rows, err := s.r.QueryContext(ctx, selectLogsSQL+`ORDER BY time DESC, seq DESC LIMIT ?`, limit)
	if err != nil {
		return nil, fmt.Errorf("listing request logs: %w", err)
	}
	defer rows.Close()
	for rows.Next() {
		l, err := scanLog(rows)
		if err != nil {
			return nil, fmt.Errorf("listing request logs: %w", err)
		}
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("listing request logs: %w", err)
	}
	return out, nil
}

// RequestLog returns the newest log whose ID is id (ties: last inserted);
// ErrNotFound when none. SQLite keeps no index on id (0004 dropped it: its
// B-tree insert tripled the cost of writing a log, 12.5 → 37 µs per log in
// batches of 100), so this scans the table: an operator's lookup pays for
// it, not every request.
func (s *Store) RequestLog(ctx context.Context, id string) (store.RequestLog, error) {
	row := s.r.QueryRowContext(ctx, selectLogsSQL+`WHERE id = ? ORDER BY time DESC, seq DESC LIMIT 1`, id)
	l, err := scanLog(row)
	if errors.Is(err, sql.ErrNoRows) {
		return store.RequestLog{}, fmt.Errorf("request log %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.RequestLog{}, fmt.Errorf("reading request log %q: %w", id, err)
	}
	return l, nil
}

// scanLog reads one row of selectLogsSQL.
func scanLog(row interface{ Scan(dest ...any) error }) (store.RequestLog, error) {
	var (
		l             store.RequestLog
		at            sql.NullInt64
		latency, ttft int64
		tried         string
	)
	if err := row.Scan(&l.ID, &at, &l.Key, &l.Model, &l.Upstream, &l.Status, &l.Attempts,
		&l.Stream, &latency, &ttft, &l.InputTokens, &l.OutputTokens, &l.ErrorClass, &l.Error, &l.Translated, &tried, &l.TraceID,
		&l.CacheReadTokens, &l.CacheWriteTokens, &l.CostUSD, &l.Unpriced); err != nil {
		return store.RequestLog{}, err
	}
	if at.Valid {
		l.Time = time.Unix(0, at.Int64).UTC()
	}
	l.Latency, l.TTFT, l.Tried = time.Duration(latency), time.Duration(ttft), store.ParseTried(tried)
	return l, nil
}

// unixNano encodes t for the time column: Unix nanoseconds, NULL for the zero
// time (which Unix nanoseconds cannot represent).
func unixNano(t time.Time) sql.NullInt64 {
	if t.IsZero() {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: t.UnixNano(), Valid: true}
}
