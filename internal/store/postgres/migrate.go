package postgres

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"switchyard/internal/store/internal/migration"
)

// migrationFS holds the schema migrations, one file per version, named
// NNNN_description.sql. A migration, once released, is never edited: a
// schema change is a new file with the next number.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

// migrateLockClass is the first key of the advisory lock that serialises
// migrations ("SYMG"); the second is the hash of the schema's name, so that
// deployments in different schemas of one database do not wait on each other.
const migrateLockClass int32 = 0x53594D47

// unlockTimeout bounds releasing the advisory lock after the migrations.
const unlockTimeout = 5 * time.Second

// migrate applies, in order, every migration that schema_migrations does not
// record, in the first existing schema of the search_path, creating
// schema_migrations when missing. Each migration runs in its own transaction
// together with its schema_migrations row, so a failed one leaves no trace.
// Everything happens on one connection holding a session advisory lock for
// the schema: instances that start together take turns, and the later ones
// find every version recorded.
func migrate(ctx context.Context, pool *pgxpool.Pool, ms []migration.Migration) error {
	conn, err := pool.Acquire(ctx)
	if err != nil {
		return fmt.Errorf("migrating: acquiring a connection: %w", err)
	}
	var schema *string
	if err := conn.QueryRow(ctx, `SELECT current_schema()`).Scan(&schema); err != nil {
		conn.Release()
		return fmt.Errorf("migrating: reading the schema: %w", err)
	}
	if schema == nil {
		conn.Release()
		return errors.New("migrating: no schema of the search_path exists; create it first")
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1, hashtext($2))`, migrateLockClass, *schema); err != nil {
		conn.Release()
		return fmt.Errorf("migrating schema %q: taking the migration lock: %w", *schema, err)
	}
	defer func() {
		uctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), unlockTimeout)
		defer cancel()
		if _, uerr := conn.Exec(uctx, `SELECT pg_advisory_unlock($1, hashtext($2))`, migrateLockClass, *schema); uerr != nil {
			// Ending the session releases the lock; the pool drops the
			// closed connection on Release.
			_ = conn.Conn().Close(uctx)
		}
		conn.Release()
	}()

	const create = `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    integer     NOT NULL PRIMARY KEY,
		name       text        NOT NULL,
		applied_at timestamptz NOT NULL DEFAULT now()
	)`
	if _, err := conn.Exec(ctx, create); err != nil {
		return fmt.Errorf("migrating schema %q: creating schema_migrations: %w", *schema, err)
	}
	for _, m := range ms {
		if err := applyMigration(ctx, conn.Conn(), m); err != nil {
			return fmt.Errorf("migrating schema %q: applying migration %s: %w", *schema, m.Name, err)
		}
	}
	return nil
}

// applyMigration applies m in one transaction unless it is already recorded;
// the caller names m in the error.
func applyMigration(ctx context.Context, conn *pgx.Conn, m migration.Migration) error {
	return pgx.BeginFunc(ctx, conn, func(tx pgx.Tx) error {
		var applied bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM schema_migrations WHERE version = $1)`, m.Version).Scan(&applied); err != nil {
			return fmt.Errorf("checking version: %w", err)
		}
		if applied {
			return nil
		}
		if _, err := tx.Exec(ctx, m.SQL); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO schema_migrations (version, name) VALUES ($1, $2)`, m.Version, m.Name); err != nil {
			return fmt.Errorf("recording version: %w", err)
		}
		return nil
	})
}
