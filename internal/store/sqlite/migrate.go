package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"

	"switchyard/internal/store/internal/migration"
)

// migrationFS holds the schema migrations, one file per version, named
// NNNN_description.sql. A migration, once released, is never edited: a
// schema change is a new file with the next number.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

// migrate creates schema_migrations when missing and applies, in order, every
// migration whose version it does not record — each in its own transaction
// together with its schema_migrations row, so a failed migration leaves no
// trace and a reopen applies nothing twice. db must be the writer pool, whose
// transactions begin IMMEDIATE: two processes opening one file at once
// serialise on the write lock and the second sees the first's versions.
func migrate(ctx context.Context, db *sql.DB, ms []migration.Migration) error {
	const create = `CREATE TABLE IF NOT EXISTS schema_migrations (
		version    INTEGER NOT NULL PRIMARY KEY,
		name       TEXT    NOT NULL,
		applied_at TEXT    NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%fZ', 'now'))
	)`
	if _, err := db.ExecContext(ctx, create); err != nil {
		return fmt.Errorf("creating schema_migrations: %w", err)
	}
	for _, m := range ms {
		if err := applyMigration(ctx, db, m); err != nil {
			return err
		}
	}
	return nil
}

// applyMigration applies m in one transaction unless it is already recorded.
func applyMigration(ctx context.Context, db *sql.DB, m migration.Migration) (err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("applying migration %s: beginning: %w", m.Name, err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	var one int
	err = tx.QueryRowContext(ctx, `SELECT 1 FROM schema_migrations WHERE version = ?`, m.Version).Scan(&one)
	switch {
	case err == nil: // already applied
		if err = tx.Rollback(); err != nil {
			return fmt.Errorf("applying migration %s: ending transaction: %w", m.Name, err)
		}
		return nil
	case !errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("applying migration %s: checking version: %w", m.Name, err)
	}
	if _, err = tx.ExecContext(ctx, m.SQL); err != nil {
		return fmt.Errorf("applying migration %s: %w", m.Name, err)
	}
	if _, err = tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name) VALUES (?, ?)`, m.Version, m.Name); err != nil {
		return fmt.Errorf("applying migration %s: recording version: %w", m.Name, err)
	}
	if err = tx.Commit(); err != nil {
		return fmt.Errorf("applying migration %s: committing: %w", m.Name, err)
	}
	return nil
}
