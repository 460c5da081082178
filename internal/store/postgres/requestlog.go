package postgres

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"switchyard/internal/store"
)

// requestLogColumns are the columns InsertRequestLogs copies, in order.
var requestLogColumns = []string{
	"id", "time", "time_nsec", "key", "model", "upstream", "status", "attempts", "stream",
	"latency_ns", "ttft_ns", "input_tokens", "output_tokens", "error_class", "error", "translated", "tried", "trace_id",
	"cache_read_tokens", "cache_write_tokens", "cost_usd", "unpriced",
}

// InsertRequestLogs appends logs with one COPY, which stores every log or
// none; an empty batch is a no-op. Text PostgreSQL cannot hold (NUL bytes,
// invalid UTF-8) is stored with U+FFFD in its place rather than failing the
// batch.
func (s *Store) InsertRequestLogs(ctx context.Context, logs []store.RequestLog) error {
	if len(logs) == 0 {
		return nil
	}
	src := pgx.CopyFromSlice(len(logs), func(i int) ([]any, error) {
		l := &logs[i]
		at := l.Time.Truncate(time.Microsecond)
		return []any{
			text(l.ID), at, int16(l.Time.Sub(at)), text(l.Key), text(l.Model), text(l.Upstream),
			l.Status, l.Attempts, l.Stream, int64(l.Latency), int64(l.TTFT),
			l.InputTokens, l.OutputTokens, text(l.ErrorClass), text(l.Error), text(l.Translated), text(store.TriedJSON(l.Tried)), text(l.TraceID),
			l.CacheReadTokens, l.CacheWriteTokens, l.CostUSD, l.Unpriced,
		}, nil
	})
	if _, err := s.pool.CopyFrom(ctx, pgx.Identifier{"request_logs"}, requestLogColumns, src); err != nil {
		return fmt.Errorf("inserting %d request logs: %w", len(logs), err)
	}
	return nil
}

// selectLogsSQL selects every column of a request log, in the order logDest lists them.
const selectLogsSQL = `SELECT id, time, time_nsec, key, model, upstream, status, attempts,
	stream, latency_ns, ttft_ns, input_tokens, output_tokens, error_class, error, translated, tried, trace_id,
	cache_read_tokens, cache_write_tokens, cost_usd, unpriced
	FROM request_logs `

// logRow receives one row of selectLogsSQL.
type logRow struct {
	l             store.RequestLog
	nsec          int16
	latency, ttft int64
	tried         string
}

// dest returns the scan targets of selectLogsSQL's columns.
func (r *logRow) dest() []any {
	return []any{&r.l.ID, &r.l.Time, &r.nsec, &r.l.Key, &r.l.Model, &r.l.Upstream,
		&r.l.Status, &r.l.Attempts, &r.l.Stream, &r.latency, &r.ttft, &r.l.InputTokens, &r.l.OutputTokens,
		&r.l.ErrorClass, &r.l.Error, &r.l.Translated, &r.tried, &r.l.TraceID,
		&r.l.CacheReadTokens, &r.l.CacheWriteTokens, &r.l.CostUSD, &r.l.Unpriced}
}

// log returns the scanned log, its time to the nanosecond.
func (r *logRow) log() store.RequestLog {
	l := r.l
	l.Time = r.l.Time.Add(time.Duration(r.nsec)).UTC()
	l.Latency, l.TTFT, l.Tried = time.Duration(r.latency), time.Duration(r.ttft), store.ParseTried(r.tried)
	return l
}

// RecentRequestLogs returns at most limit logs, newest first (ties: last
// inserted first). A limit ≤ 0 returns none.
func (s *Store) RecentRequestLogs(ctx context.Context, limit int) ([]store.RequestLog, error) {
	out := []store.RequestLog{}
	if limit <= 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, selectLogsSQL+`ORDER BY time DESC, time_nsec DESC, seq DESC LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("listing request logs: %w", err)
	}
	var r logRow
	_, err = pgx.ForEachRow(rows, r.dest(), func() error {
		out = append(out, r.log())
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing request logs: %w", err)
	}
	return out, nil
}

// RequestLog returns the newest log whose ID is id (ties: last inserted),
// found through the request_logs_id index; ErrNotFound when none.
func (s *Store) RequestLog(ctx context.Context, id string) (store.RequestLog, error) {
	var r logRow
	err := s.pool.QueryRow(ctx, selectLogsSQL+`WHERE id = $1 ORDER BY time DESC, time_nsec DESC, seq DESC LIMIT 1`, text(id)).Scan(r.dest()...)
	if errors.Is(err, pgx.ErrNoRows) {
		return store.RequestLog{}, fmt.Errorf("request log %q: %w", id, store.ErrNotFound)
	}
	if err != nil {
		return store.RequestLog{}, fmt.Errorf("reading request log %q: %w", id, err)
	}
	return r.log(), nil
}

// text returns s as PostgreSQL text can hold it: invalid UTF-8 and NUL bytes
// become U+FFFD.
func text(s string) string {
	if utf8.ValidString(s) && !strings.Contains(s, "\x00") {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}
