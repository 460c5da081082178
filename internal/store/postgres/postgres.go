// Package postgres implements store.Store and store.Watcher on PostgreSQL
// with pgx (pgxpool), the backend for several gateway instances sharing
// configuration, request logs and spend.
//
// Every table lives in the first existing schema of the DSN's search_path
// (postgres://host/db?search_path=switchyard), so that one database can hold
// several independent deployments; Open does not create the schema. Open
// applies the embedded migrations under a per-schema advisory lock, so that
// instances starting together migrate once. Request logs are written with
// COPY; spend is added with upserts that add, in one transaction per batch.
// Configuration changes, whoever makes them, are announced by a trigger
// with NOTIFY, which Watch listens for. LISTEN needs a session of its own:
// behind a transaction-pooling proxy (PgBouncer in transaction mode) only
// Watch's fallback poll reports changes, within DefaultPollInterval.
package postgres

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"switchyard/internal/clock"
	"switchyard/internal/store"
	"switchyard/internal/store/internal/migration"
	"switchyard/internal/store/internal/watch"
)

// Store is a store.Store and a store.Watcher on a PostgreSQL schema. It is
// safe for concurrent use.
type Store struct {
	pool *pgxpool.Pool
	// listenConfig connects Watch's dedicated LISTEN connection; a copy of
	// the pool's connection config.
	listenConfig *pgx.ConnConfig
	// schema is the schema that holds the tables, which the notification
	// trigger sends as payload.
	schema string

	watchers   watch.Group   // running Watch calls, stopped by Close
	clock      clock.Clock   // drives Watch's polling and reconnect backoff
	pollEvery  time.Duration // Watch's fallback polling period
	backoffMin time.Duration // first wait before reconnecting the listener
	backoffMax time.Duration // longest wait before reconnecting the listener
	// onListen, when set (by tests), is told the backend pid of every
	// listener connection once it listens.
	onListen func(pid uint32)
}

var (
	_ store.Store   = (*Store)(nil)
	_ store.Watcher = (*Store)(nil)
)

// Open connects to the PostgreSQL database at dsn, a postgres:// URL or a
// key=value DSN as pgx parses it (pool_max_conns and the other pgxpool
// parameters included), and applies every pending migration. The tables
// live in the first existing schema of the search_path, which the DSN may
// set (search_path=NAME); Open fails when there is none.
func Open(ctx context.Context, dsn string) (*Store, error) {
	ms, err := migration.Load(migrationFS, "migrations")
	if err != nil {
		return nil, fmt.Errorf("opening postgres store: %w", err)
	}
	return open(ctx, dsn, ms)
}

// open is Open with the migrations given, for tests.
func open(ctx context.Context, dsn string, ms []migration.Migration) (*Store, error) {
	if dsn == "" {
		return nil, errors.New("opening postgres store: empty dsn")
	}
	cfg, err := pgxpool.ParseConfig(dsn) // its errors redact the password
	if err != nil {
		return nil, fmt.Errorf("opening postgres store: %w", err)
	}
	where := fmt.Sprintf("%s:%d/%s", cfg.ConnConfig.Host, cfg.ConnConfig.Port, cfg.ConnConfig.Database)
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("opening postgres store %s: %w", where, err)
	}
	if err := pool.Ping(ctx); err != nil {
		pool.Close()
		return nil, fmt.Errorf("opening postgres store %s: %w", where, err)
	}
	if err := migrate(ctx, pool, ms); err != nil {
		pool.Close()
		return nil, fmt.Errorf("opening postgres store %s: %w", where, err)
	}
	var schema string
	if err := pool.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		pool.Close()
		return nil, fmt.Errorf("opening postgres store %s: reading the schema: %w", where, err)
	}
	return &Store{
		pool:         pool,
		listenConfig: pool.Config().ConnConfig,
		schema:       schema,
		clock:        clock.Real{},
		pollEvery:    DefaultPollInterval,
		backoffMin:   250 * time.Millisecond,
		backoffMax:   5 * time.Second,
	}, nil
}

// Ping reports whether the database answers.
func (s *Store) Ping(ctx context.Context) error {
	if err := s.pool.Ping(ctx); err != nil {
		return fmt.Errorf("pinging postgres store: %w", err)
	}
	return nil
}

// Close stops every Watch (they return store.ErrClosed) and closes the pool,
// waiting for in-flight calls to release their connections. Close after
// Close returns nil.
func (s *Store) Close() error {
	s.watchers.Close()
	s.pool.Close()
	return nil
}
