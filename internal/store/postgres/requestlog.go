package postgres

import (
	"context"
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
	"latency_ns", "ttft_ns", "input_tokens", "output_tokens", "error_class", "error", "translated", "tried",
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
			l.InputTokens, l.OutputTokens, text(l.ErrorClass), text(l.Error), text(l.Translated), text(store.TriedJSON(l.Tried)),
		}, nil
	})
	if _, err := s.pool.CopyFrom(ctx, pgx.Identifier{"request_logs"}, requestLogColumns, src); err != nil {
		return fmt.Errorf("inserting %d request logs: %w", len(logs), err)
	}
	return nil
}

// RecentRequestLogs returns at most limit logs, newest first (ties: last
// inserted first). A limit ≤ 0 returns none.
func (s *Store) RecentRequestLogs(ctx context.Context, limit int) ([]store.RequestLog, error) {
	out := []store.RequestLog{}
	if limit <= 0 {
		return out, nil
	}
	rows, err := s.pool.Query(ctx, `SELECT id, time, time_nsec, key, model, upstream, status, attempts,
		stream, latency_ns, ttft_ns, input_tokens, output_tokens, error_class, error, translated, tried
		FROM request_logs ORDER BY time DESC, time_nsec DESC, seq DESC LIMIT $1`, limit)
	if err != nil {
		return nil, fmt.Errorf("listing request logs: %w", err)
	}
	var (
		l             store.RequestLog
		nsec          int16
		latency, ttft int64
		tried         string
	)
	_, err = pgx.ForEachRow(rows, []any{&l.ID, &l.Time, &nsec, &l.Key, &l.Model, &l.Upstream,
		&l.Status, &l.Attempts, &l.Stream, &latency, &ttft, &l.InputTokens, &l.OutputTokens,
		&l.ErrorClass, &l.Error, &l.Translated, &tried}, func() error {
		r := l
		r.Time = l.Time.Add(time.Duration(nsec)).UTC()
		r.Latency, r.TTFT, r.Tried = time.Duration(latency), time.Duration(ttft), store.ParseTried(tried)
		out = append(out, r)
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("listing request logs: %w", err)
	}
	return out, nil
}

// text returns s as PostgreSQL text can hold it: invalid UTF-8 and NUL bytes
// become U+FFFD.
func text(s string) string {
	if utf8.ValidString(s) && !strings.Contains(s, "\x00") {
		return s
	}
	return strings.ReplaceAll(strings.ToValidUTF8(s, "\uFFFD"), "\x00", "\uFFFD")
}
