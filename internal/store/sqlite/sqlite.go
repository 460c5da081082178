// Package sqlite implements store.Store on an SQLite database file, the
// default single-instance backend, with the pure-Go modernc.org/sqlite driver.
//
// Connection discipline: every write goes through one writer connection
// (a pool capped at one connection whose transactions begin IMMEDIATE), so
// writers queue in Go instead of racing for SQLite's write lock and failing
// with SQLITE_BUSY. Reads use a separate pool of read-only connections, which
// WAL mode lets run alongside the writer. An in-memory database (":memory:")
// exists per connection, so it gets the writer connection only, for reads too.
// busy_timeout covers the remaining contention: other processes on the same
// file and WAL checkpoints.
//
// Store also implements store.Watcher by polling a configuration change
// counter that triggers maintain, so that a change made by another process
// on the same file (or an operator's sqlite3 shell) is seen within
// DefaultPollInterval.
package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"runtime"
	"strings"
	"time"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"switchyard/internal/clock"
	"switchyard/internal/store"
	"switchyard/internal/store/internal/migration"
	"switchyard/internal/store/internal/watch"
)

// busyTimeoutMS is how long a connection waits for a lock held by another
// connection (another process, or a checkpoint) before failing with SQLITE_BUSY.
const busyTimeoutMS = 10000

// maxReaders caps the read pool.
const maxReaders = 4

// Store is a store.Store and a store.Watcher on an SQLite database. It is
// safe for concurrent use.
type Store struct {
	w *sql.DB // the single writer connection; all writes and migrations
	r *sql.DB // read-only pool; == w for an in-memory database

	watchers  watch.Group   // running Watch calls, stopped by Close
	clock     clock.Clock   // drives Watch's polling
	pollEvery time.Duration // Watch's polling period
}

var (
	_ store.Store   = (*Store)(nil)
	_ store.Watcher = (*Store)(nil)
)

// Open opens (creating when missing) the SQLite database at dsn, a file path
// or ":memory:", and applies every pending migration. A dsn may carry the
// driver's own query parameters (path?_pragma=…); Open adds WAL mode,
// busy_timeout, foreign keys, synchronous=NORMAL and IMMEDIATE transactions.
func Open(ctx context.Context, dsn string) (*Store, error) {
	if dsn == "" {
		return nil, errors.New("opening sqlite store: empty dsn")
	}
	ms, err := migration.Load(migrationFS, "migrations")
	if err != nil {
		return nil, fmt.Errorf("opening sqlite store: %w", err)
	}
	return open(ctx, dsn, ms)
}

// open is Open with the migrations given, for tests.
func open(ctx context.Context, dsn string, ms []migration.Migration) (*Store, error) {
	memory := isMemory(dsn)
	w, err := sql.Open("sqlite", withParams(dsn, url.Values{
		"_busy_timeout": {fmt.Sprint(busyTimeoutMS)},
		"_journal_mode": {"WAL"},
		"_foreign_keys": {"1"},
		"_synchronous":  {"NORMAL"},
		"_txlock":       {"immediate"},
	}))
	if err != nil {
		return nil, fmt.Errorf("opening sqlite store: %w", err)
	}
	// One connection, kept for the life of the Store: writes serialise here,
	// and an in-memory database lives exactly as long as its connection.
	w.SetMaxOpenConns(1)
	w.SetMaxIdleConns(1)
	w.SetConnMaxLifetime(0)
	w.SetConnMaxIdleTime(0)
	s := &Store{w: w, r: w, clock: clock.Real{}, pollEvery: DefaultPollInterval}
	if err := w.PingContext(ctx); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("opening sqlite store %s: %w", dsn, err)
	}
	if err := migrate(ctx, w, ms); err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("opening sqlite store %s: %w", dsn, err)
	}
	if memory {
		return s, nil
	}
	r, err := sql.Open("sqlite", withParams(dsn, url.Values{
		"_busy_timeout": {fmt.Sprint(busyTimeoutMS)},
		"_foreign_keys": {"1"},
		"_query_only":   {"1"},
	}))
	if err != nil {
		_ = w.Close()
		return nil, fmt.Errorf("opening sqlite store: %w", err)
	}
	n := min(runtime.GOMAXPROCS(0), maxReaders)
	r.SetMaxOpenConns(n)
	r.SetMaxIdleConns(n)
	if err := r.PingContext(ctx); err != nil {
		_ = r.Close()
		_ = w.Close()
		return nil, fmt.Errorf("opening sqlite store %s: %w", dsn, err)
	}
	s.r = r
	return s, nil
}

// isMemory reports whether dsn names an in-memory database, which every
// connection would see as a different, empty database.
func isMemory(dsn string) bool {
	name, query, _ := strings.Cut(dsn, "?")
	return name == ":memory:" || name == "file::memory:" || strings.Contains(query, "mode=memory")
}

// withParams appends the driver parameters p to dsn, keeping parameters the
// dsn already has (they win over ours).
func withParams(dsn string, p url.Values) string {
	name, query, _ := strings.Cut(dsn, "?")
	if query != "" {
		if given, err := url.ParseQuery(query); err == nil {
			for k := range given {
				delete(p, k)
			}
		}
		return name + "?" + query + "&" + p.Encode()
	}
	return name + "?" + p.Encode()
}

// Ping reports whether the database answers, on both pools.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.w.PingContext(ctx); err != nil {
		return fmt.Errorf("pinging sqlite store: %w", err)
	}
	if s.r != s.w {
		if err := s.r.PingContext(ctx); err != nil {
			return fmt.Errorf("pinging sqlite store: %w", err)
		}
	}
	return nil
}

// Close stops every Watch (they return store.ErrClosed) and closes both
// pools. In-flight calls finish first. Close after Close returns nil.
func (s *Store) Close() error {
	s.watchers.Close()
	var errs []error
	if s.r != s.w {
		errs = append(errs, s.r.Close())
	}
	errs = append(errs, s.w.Close())
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("closing sqlite store: %w", err)
	}
	return nil
}
