package sqlite

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// migrationFS holds the schema migrations, one file per version, named
// NNNN_description.sql. A migration, once released, is never edited: a
// schema change is a new file with the next number.
//
//go:embed migrations/*.sql
var migrationFS embed.FS

// migration is one numbered schema change.
type migration struct {
	version int
	name    string
	sql     string
}

// loadMigrations reads every *.sql file under dir of fsys, ordered by version.
// File names must start with a positive version number followed by '_';
// versions must be unique.
func loadMigrations(fsys fs.FS, dir string) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("reading migrations: %w", err)
	}
	var ms []migration
	seen := map[int]string{}
	for _, e := range entries {
		if e.IsDir() || path.Ext(e.Name()) != ".sql" {
			continue
		}
		prefix, _, ok := strings.Cut(e.Name(), "_")
		v, err := strconv.Atoi(prefix)
		if !ok || err != nil || v <= 0 {
			return nil, fmt.Errorf("reading migrations: %s: name must be NNNN_description.sql", e.Name())
		}
		if other, dup := seen[v]; dup {
			return nil, fmt.Errorf("reading migrations: %s and %s share version %d", other, e.Name(), v)
		}
		seen[v] = e.Name()
		b, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("reading migration %s: %w", e.Name(), err)
		}
		ms = append(ms, migration{version: v, name: e.Name(), sql: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].version < ms[j].version })
	return ms, nil
}

// migrate creates schema_migrations when missing and applies, in order, every
// migration whose version it does not record — each in its own transaction
// together with its schema_migrations row, so a failed migration leaves no
// trace and a reopen applies nothing twice. db must be the writer pool, whose
// transactions begin IMMEDIATE: two processes opening one file at once
// serialise on the write lock and the second sees the first's versions.
func migrate(ctx context.Context, db *sql.DB, ms []migration) error {
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
func applyMigration(ctx context.Context, db *sql.DB, m migration) (err error) {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("applying migration %s: beginning: %w", m.name, err)
	}
	defer func() {
		if err != nil {
			_ = tx.Rollback()
		}
	}()
	var one int
	err = tx.QueryRowContext(ctx, `SELECT 1 FROM schema_migrations WHERE version = ?`, m.version).Scan(&one)
	switch {
	case err == nil: // already applied
		if err = tx.Rollback(); err != nil {
			return fmt.Errorf("applying migration %s: ending transaction: %w", m.name, err)
		}
		return nil
	case !errors.Is(err, sql.ErrNoRows):
		return fmt.Errorf("applying migration %s: checking version: %w", m.name, err)
	}
	if _, err = tx.ExecContext(ctx, m.sql); err != nil {
		return fmt.Errorf("applying migration %s: %w", m.name, err)
	}
	if _, err = tx.ExecContext(ctx, `INSERT INTO schema_migrations (version, name) VALUES (?, ?)`, m.version, m.name); err != nil {
		return fmt.Errorf("applying migration %s: recording version: %w", m.name, err)
	}
	if err = tx.Commit(); err != nil {
		return fmt.Errorf("applying migration %s: committing: %w", m.name, err)
	}
	return nil
}
