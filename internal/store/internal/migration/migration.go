// Package migration reads the numbered schema migrations the store backends
// embed. Each backend applies them its own way, but all share the rules:
// one file per version, named NNNN_description.sql, applied in version
// order, each exactly once, and never edited once released (a schema change
// is a new file with the next number).
package migration

import (
	"fmt"
	"io/fs"
	"path"
	"sort"
	"strconv"
	"strings"
)

// Migration is one numbered schema change.
type Migration struct {
	// Version is the number the file name starts with, ≥ 1.
	Version int
	// Name is the file name, recorded with the version when applied.
	Name string
	// SQL is the file's content, one or more statements.
	SQL string
}

// Load reads every *.sql file under dir of fsys, ordered by version. File
// names must start with a positive version number followed by '_'; versions
// must be unique. Other files are ignored.
func Load(fsys fs.FS, dir string) ([]Migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("reading migrations: %w", err)
	}
	var ms []Migration
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
		ms = append(ms, Migration{Version: v, Name: e.Name(), SQL: string(b)})
	}
	sort.Slice(ms, func(i, j int) bool { return ms[i].Version < ms[j].Version })
	return ms, nil
}
