package sqlite

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/fstest"
	"time"

	"switchyard/internal/config"
	"switchyard/internal/store"
)

// openTest opens a store on a fresh file under t.TempDir and closes it at the
// end of the test.
func openTest(t *testing.T) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "switchyard.db")
	s, err := Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open(%q): %v", path, err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s, path
}

type appliedMigration struct {
	Version   int
	Name      string
	AppliedAt string
}

func appliedMigrations(t *testing.T, s *Store) []appliedMigration {
	t.Helper()
	rows, err := s.r.Query(`SELECT version, name, applied_at FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatalf("reading schema_migrations: %v", err)
	}
	defer rows.Close()
	var out []appliedMigration
	for rows.Next() {
		var m appliedMigration
		if err := rows.Scan(&m.Version, &m.Name, &m.AppliedAt); err != nil {
			t.Fatalf("reading schema_migrations: %v", err)
		}
		out = append(out, m)
	}
	if err := rows.Err(); err != nil {
		t.Fatalf("reading schema_migrations: %v", err)
	}
	return out
}

func tableExists(t *testing.T, s *Store, name string) bool {
	t.Helper()
	var n int
	if err := s.r.QueryRow(`SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?`, name).Scan(&n); err != nil {
		t.Fatalf("looking up table %s: %v", name, err)
	}
	return n == 1
}

func TestMigrationsApplyOnceAndReopenIsNoop(t *testing.T) {
	ctx := context.Background()
	s, path := openTest(t)
	first := appliedMigrations(t, s)
	wantNames := []string{"0001_init.sql", "0002_spend.sql"}
	if len(first) != len(wantNames) {
		t.Fatalf("schema_migrations after Open = %+v, want %v", first, wantNames)
	}
	for i, m := range first {
		if m.Version != i+1 || m.Name != wantNames[i] || m.AppliedAt == "" {
			t.Fatalf("schema_migrations[%d] after Open = %+v, want version %d (%s) with a time", i, m, i+1, wantNames[i])
		}
	}
	for _, table := range []string{"upstreams", "keys", "routes", "request_logs", "spend"} {
		if !tableExists(t, s, table) {
			t.Errorf("table %s missing after migration", table)
		}
	}
	if err := s.UpsertRoute(ctx, config.Route{Model: "gpt-4o"}); err != nil {
		t.Fatalf("UpsertRoute: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}

	for i := range 2 {
		s2, err := Open(ctx, path)
		if err != nil {
			t.Fatalf("reopen %d: %v", i, err)
		}
		if got := appliedMigrations(t, s2); !reflect.DeepEqual(got, first) {
			t.Errorf("reopen %d: schema_migrations = %+v, want unchanged %+v", i, got, first)
		}
		routes, err := s2.ListRoutes(ctx)
		if err != nil || len(routes) != 1 || routes[0].Model != "gpt-4o" {
			t.Errorf("reopen %d: ListRoutes = %+v, %v, want the route kept", i, routes, err)
		}
		if err := s2.Close(); err != nil {
			t.Fatalf("Close: %v", err)
		}
	}
}

func TestMigrate(t *testing.T) {
	m1 := migration{1, "0001_a.sql", `CREATE TABLE a (x INTEGER);`}
	m2 := migration{2, "0002_b.sql", `CREATE TABLE b (x INTEGER); INSERT INTO b VALUES (1);`}
	bad := migration{2, "0002_bad.sql", `CREATE TABLE b (x INTEGER); INSERT INTO nowhere VALUES (1);`}
	tests := []struct {
		name        string
		runs        [][]migration // migrations given to each successive open
		wantErr     []bool        // per run
		wantVersion []int         // recorded after the last run
		wantTables  map[string]bool
	}{
		{
			name:        "upgrade applies only the new version",
			runs:        [][]migration{{m1}, {m1, m2}, {m1, m2}},
			wantErr:     []bool{false, false, false},
			wantVersion: []int{1, 2},
			wantTables:  map[string]bool{"a": true, "b": true},
		},
		{
			name:        "failed migration rolls back entirely",
			runs:        [][]migration{{m1, bad}},
			wantErr:     []bool{true},
			wantVersion: []int{1},
			wantTables:  map[string]bool{"a": true, "b": false},
		},
		{
			name:        "fixed migration applies after a failure",
			runs:        [][]migration{{m1, bad}, {m1, m2}},
			wantErr:     []bool{true, false},
			wantVersion: []int{1, 2},
			wantTables:  map[string]bool{"a": true, "b": true},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			path := filepath.Join(t.TempDir(), "m.db")
			for i, ms := range tt.runs {
				s, err := open(ctx, path, ms)
				if (err != nil) != tt.wantErr[i] {
					t.Fatalf("run %d: open error = %v, want error %v", i, err, tt.wantErr[i])
				}
				if err == nil {
					_ = s.Close()
				}
			}
			s, err := open(ctx, path, nil)
			if err != nil {
				t.Fatalf("final open: %v", err)
			}
			defer s.Close()
			var versions []int
			for _, m := range appliedMigrations(t, s) {
				versions = append(versions, m.Version)
			}
			if !slices.Equal(versions, tt.wantVersion) {
				t.Errorf("versions = %v, want %v", versions, tt.wantVersion)
			}
			for table, want := range tt.wantTables {
				if got := tableExists(t, s, table); got != want {
					t.Errorf("table %s exists = %v, want %v", table, got, want)
				}
			}
			var rows int
			if tt.wantTables["b"] {
				if err := s.r.QueryRow(`SELECT count(*) FROM b`).Scan(&rows); err != nil || rows != 1 {
					t.Errorf("rows in b = %d, %v, want 1 (migration applied exactly once)", rows, err)
				}
			}
		})
	}
}

func TestLoadMigrations(t *testing.T) {
	file := func(s string) *fstest.MapFile { return &fstest.MapFile{Data: []byte(s)} }
	tests := []struct {
		name    string
		fs      fstest.MapFS
		want    []int
		wantErr bool
	}{
		{"sorted by number", fstest.MapFS{"m/0010_c.sql": file("c"), "m/0002_b.sql": file("b"), "m/0001_a.sql": file("a"), "m/README": file("x")}, []int{1, 2, 10}, false},
		{"duplicate version", fstest.MapFS{"m/0001_a.sql": file("a"), "m/1_b.sql": file("b")}, nil, true},
		{"no number", fstest.MapFS{"m/init.sql": file("a")}, nil, true},
		{"zero version", fstest.MapFS{"m/0000_a.sql": file("a")}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ms, err := loadMigrations(tt.fs, "m")
			if (err != nil) != tt.wantErr {
				t.Fatalf("loadMigrations error = %v, want error %v", err, tt.wantErr)
			}
			var got []int
			for _, m := range ms {
				got = append(got, m.version)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("versions = %v, want %v", got, tt.want)
			}
		})
	}
	if _, err := loadMigrations(migrationFS, "migrations"); err != nil {
		t.Errorf("embedded migrations: %v", err)
	}
}

func TestOpenPragmas(t *testing.T) {
	s, _ := openTest(t)
	tests := []struct {
		db     string
		pragma string
		want   string
	}{
		{"writer", "journal_mode", "wal"},
		{"writer", "foreign_keys", "1"},
		{"writer", "busy_timeout", fmt.Sprint(busyTimeoutMS)},
		{"reader", "journal_mode", "wal"},
		{"reader", "busy_timeout", fmt.Sprint(busyTimeoutMS)},
		{"reader", "query_only", "1"},
	}
	for _, tt := range tests {
		t.Run(tt.db+"/"+tt.pragma, func(t *testing.T) {
			db := s.w
			if tt.db == "reader" {
				db = s.r
			}
			var got string
			if err := db.QueryRow("PRAGMA " + tt.pragma).Scan(&got); err != nil {
				t.Fatalf("PRAGMA %s: %v", tt.pragma, err)
			}
			if got != tt.want {
				t.Errorf("PRAGMA %s = %q, want %q", tt.pragma, got, tt.want)
			}
		})
	}
}

func TestOpenMemory(t *testing.T) {
	ctx := context.Background()
	s, err := Open(ctx, ":memory:")
	if err != nil {
		t.Fatalf("Open(:memory:): %v", err)
	}
	defer s.Close()
	if err := s.Ping(ctx); err != nil {
		t.Fatalf("Ping: %v", err)
	}
	// Many goroutines must all see one database, not one per connection.
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			if err := s.UpsertUpstream(ctx, config.Upstream{Name: fmt.Sprintf("u%d", i)}); err != nil {
				t.Errorf("UpsertUpstream: %v", err)
			}
		})
	}
	wg.Wait()
	us, err := s.ListUpstreams(ctx)
	if err != nil || len(us) != 8 {
		t.Errorf("ListUpstreams = %d upstreams, %v, want 8", len(us), err)
	}
}

func TestOpenErrors(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	tests := []struct {
		name string
		dsn  string
	}{
		{"empty dsn", ""},
		{"missing directory", filepath.Join(dir, "no", "such", "dir", "x.db")},
		{"not a database", writeFile(t, filepath.Join(dir, "junk.db"), bytes.Repeat([]byte("not sqlite "), 1000))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, err := Open(ctx, tt.dsn)
			if err == nil {
				s.Close()
				t.Fatalf("Open(%q) succeeded, want an error", tt.dsn)
			}
		})
	}
}

func writeFile(t *testing.T, path string, b []byte) string {
	t.Helper()
	if err := os.WriteFile(path, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestWithParams(t *testing.T) {
	tests := []struct {
		dsn, want string
	}{
		{"a.db", "a.db?_busy_timeout=1&_txlock=immediate"},
		{"a.db?_busy_timeout=9", "a.db?_busy_timeout=9&_txlock=immediate"},
		{":memory:", ":memory:?_busy_timeout=1&_txlock=immediate"},
	}
	for _, tt := range tests {
		t.Run(tt.dsn, func(t *testing.T) {
			got := withParams(tt.dsn, map[string][]string{"_busy_timeout": {"1"}, "_txlock": {"immediate"}})
			if got != tt.want {
				t.Errorf("withParams(%q) = %q, want %q", tt.dsn, got, tt.want)
			}
		})
	}
}

// hashOf returns the hex SHA-256 of secret, as config stores it.
func hashOf(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// fullUpstream sets every field of config.Upstream to a non-zero value.
func fullUpstream(name string) config.Upstream {
	return config.Upstream{
		Name:              name,
		Provider:          "azure-openai",
		BaseURL:           "https://example.openai.azure.com",
		APIKey:            "sk-upstream-secret-" + name,
		APIVersion:        "2024-10-21",
		Models:            []string{"gpt-4o", "gpt-4o-*"},
		ModelMap:          map[string]string{"gpt-4o": "deploy-4o", "gpt-4o-mini": "deploy-mini"},
		Weight:            7,
		Priority:          3,
		MaxConcurrency:    12,
		Queue:             config.Queue{Enabled: true, Timeout: 1500 * time.Millisecond, MaxLength: 42},
		RateLimit:         config.RateLimit{RPM: 600, TPM: 90000},
		SpendLimit:        config.SpendLimit{USD: 12.34, Period: "day"},
		Price:             config.Price{InputPerMTok: 2.5, OutputPerMTok: 10.125},
		AffinityMigration: config.AffinityMigration{Mode: "cross_tier", MaxContentLength: 65536},
		Headers:           map[string]string{"X-Org": "acme", "X-Team": "infra"},
		Active:            true,
	}
}

func fullKey(name string) config.Key {
	return config.Key{
		Name:             name,
		KeySHA256:        hashOf("sk-client-" + name),
		AllowedModels:    []string{"gpt-4o*", "claude-*"},
		AllowedUpstreams: []string{"openai-main", "azure-east"},
		RPM:              120,
		SpendLimit:       config.SpendLimit{USD: 99.5, Period: "month"},
	}
}

func fullRoute(model string) config.Route {
	enabled := false
	return config.Route{
		Model: model,
		RouteSettings: config.RouteSettings{
			Strategy:          config.StrategyWeightedRandom,
			Retries:           4,
			Timeout:           90 * time.Second,
			FirstByteTimeout:  15*time.Second + 250*time.Millisecond,
			MaxBodyBytes:      1 << 22,
			StreamIdleTimeout: 45 * time.Second,
			RetryBudget:       0.35,
			MaxWait:           750 * time.Millisecond,
		},
		FallbackModels: []string{"gpt-4o-mini", "claude-3-5-haiku"},
		Affinity:       config.RouteAffinity{Enabled: &enabled, SlidingTTL: 2 * time.Minute, AbsoluteTTL: time.Hour},
	}
}

// assertAllFieldsSet fails when v (a struct) has a zero-valued field, so that
// a field added to config later is caught by the round-trip test.
func assertAllFieldsSet(t *testing.T, v any) {
	t.Helper()
	rv := reflect.ValueOf(v)
	for i := range rv.NumField() {
		f := rv.Type().Field(i)
		if f.Name == "Key" && rv.Type() == reflect.TypeFor[config.Key]() {
			continue // the plaintext secret is never stored
		}
		if rv.Field(i).IsZero() {
			t.Errorf("%s.%s is zero in the round-trip fixture; set it so it is tested", rv.Type().Name(), f.Name)
		}
		if rv.Field(i).Kind() == reflect.Struct && f.Type != reflect.TypeFor[time.Time]() {
			assertAllFieldsSet(t, rv.Field(i).Interface())
		}
	}
}

func TestRoundTripEveryField(t *testing.T) {
	ctx := context.Background()
	s, path := openTest(t)
	u, k, r := fullUpstream("azure-east"), fullKey("team-a"), fullRoute("gpt-4o")
	assertAllFieldsSet(t, u)
	assertAllFieldsSet(t, k)
	assertAllFieldsSet(t, r)
	if err := s.UpsertUpstream(ctx, u); err != nil {
		t.Fatalf("UpsertUpstream: %v", err)
	}
	if err := s.UpsertKey(ctx, k); err != nil {
		t.Fatalf("UpsertKey: %v", err)
	}
	if err := s.UpsertRoute(ctx, r); err != nil {
		t.Fatalf("UpsertRoute: %v", err)
	}

	check := func(t *testing.T, s *Store) {
		us, err := s.ListUpstreams(ctx)
		if err != nil || len(us) != 1 || !reflect.DeepEqual(us[0], u) {
			t.Errorf("ListUpstreams = %+v, %v\nwant [%+v]", us, err, u)
		}
		ks, err := s.ListKeys(ctx)
		if err != nil || len(ks) != 1 || !reflect.DeepEqual(ks[0], k) {
			t.Errorf("ListKeys = %+v, %v\nwant [%+v]", ks, err, k)
		}
		rs, err := s.ListRoutes(ctx)
		if err != nil || len(rs) != 1 || !reflect.DeepEqual(rs[0], r) {
			t.Errorf("ListRoutes = %+v, %v\nwant [%+v]", rs, err, r)
		}
	}
	t.Run("same store", func(t *testing.T) { check(t, s) })
	t.Run("after reopen", func(t *testing.T) {
		if err := s.Close(); err != nil {
			t.Fatal(err)
		}
		s2, err := Open(ctx, path)
		if err != nil {
			t.Fatal(err)
		}
		defer s2.Close()
		check(t, s2)
	})
}

func TestUpstreamAPIKeyNotInSpec(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	u := fullUpstream("a")
	if err := s.UpsertUpstream(ctx, u); err != nil {
		t.Fatal(err)
	}
	var spec, apiKey string
	if err := s.r.QueryRow(`SELECT spec, api_key FROM upstreams WHERE name = 'a'`).Scan(&spec, &apiKey); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(spec, u.APIKey) {
		t.Errorf("spec %s holds the upstream API key; it belongs in the api_key column only", spec)
	}
	if apiKey != u.APIKey {
		t.Errorf("api_key column = %q, want %q", apiKey, u.APIKey)
	}
}

// crud adapts one config kind (upstream, key, route) to a common harness.
type crud struct {
	kind   string
	upsert func(s *Store, id string, version int) error // version lands in a queryable field
	list   func(s *Store) (ids []string, versions []int, err error)
	delete func(s *Store, id string) error
}

func crudKinds() []crud {
	ctx := context.Background()
	return []crud{
		{
			kind: "upstream",
			upsert: func(s *Store, id string, v int) error {
				u := fullUpstream(id)
				u.Weight = v
				return s.UpsertUpstream(ctx, u)
			},
			list: func(s *Store) ([]string, []int, error) {
				us, err := s.ListUpstreams(ctx)
				var ids []string
				var vs []int
				for _, u := range us {
					ids, vs = append(ids, u.Name), append(vs, u.Weight)
				}
				return ids, vs, err
			},
			delete: func(s *Store, id string) error { return s.DeleteUpstream(ctx, id) },
		},
		{
			kind: "key",
			upsert: func(s *Store, id string, v int) error {
				k := fullKey(id)
				k.RPM = v
				return s.UpsertKey(ctx, k)
			},
			list: func(s *Store) ([]string, []int, error) {
				ks, err := s.ListKeys(ctx)
				var ids []string
				var vs []int
				for _, k := range ks {
					ids, vs = append(ids, k.Name), append(vs, k.RPM)
				}
				return ids, vs, err
			},
			delete: func(s *Store, id string) error { return s.DeleteKey(ctx, id) },
		},
		{
			kind: "route",
			upsert: func(s *Store, id string, v int) error {
				r := fullRoute(id)
				r.Retries = v
				return s.UpsertRoute(ctx, r)
			},
			list: func(s *Store) ([]string, []int, error) {
				rs, err := s.ListRoutes(ctx)
				var ids []string
				var vs []int
				for _, r := range rs {
					ids, vs = append(ids, r.Model), append(vs, r.Retries)
				}
				return ids, vs, err
			},
			delete: func(s *Store, id string) error { return s.DeleteRoute(ctx, id) },
		},
	}
}

func TestUpsertListDelete(t *testing.T) {
	for _, c := range crudKinds() {
		t.Run(c.kind, func(t *testing.T) {
			s, _ := openTest(t)
			expect := func(step string, wantIDs []string, wantVersions []int) {
				t.Helper()
				ids, vs, err := c.list(s)
				if err != nil {
					t.Fatalf("%s: list: %v", step, err)
				}
				if !slices.Equal(ids, wantIDs) || !slices.Equal(vs, wantVersions) {
					t.Errorf("%s: list = %v %v, want %v %v", step, ids, vs, wantIDs, wantVersions)
				}
			}
			expect("empty", nil, nil)
			for i, id := range []string{"charlie", "alpha", "bravo"} {
				if err := c.upsert(s, id, i+1); err != nil {
					t.Fatalf("insert %s: %v", id, err)
				}
			}
			expect("after inserts (ordered by id)", []string{"alpha", "bravo", "charlie"}, []int{2, 3, 1})
			if err := c.upsert(s, "alpha", 9); err != nil {
				t.Fatalf("update alpha: %v", err)
			}
			expect("after update", []string{"alpha", "bravo", "charlie"}, []int{9, 3, 1})
			if err := c.delete(s, "bravo"); err != nil {
				t.Fatalf("delete bravo: %v", err)
			}
			expect("after delete", []string{"alpha", "charlie"}, []int{9, 1})
			for _, id := range []string{"bravo", "nope"} {
				if err := c.delete(s, id); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("delete absent %s = %v, want ErrNotFound", id, err)
				}
			}
			if err := c.upsert(s, "", 1); err == nil {
				t.Errorf("upsert with an empty id succeeded, want an error")
			}
		})
	}
}

func TestUpdateKeepsCreatedAt(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	if err := s.UpsertRoute(ctx, config.Route{Model: "m"}); err != nil {
		t.Fatal(err)
	}
	// Backdate the row, then update it: created_at must stay, updated_at move.
	if _, err := s.w.Exec(`UPDATE routes SET created_at = '2000-01-01T00:00:00.000Z', updated_at = '2000-01-01T00:00:00.000Z'`); err != nil {
		t.Fatal(err)
	}
	if err := s.UpsertRoute(ctx, config.Route{Model: "m", RouteSettings: config.RouteSettings{Retries: 3}}); err != nil {
		t.Fatal(err)
	}
	var created, updated string
	if err := s.r.QueryRow(`SELECT created_at, updated_at FROM routes WHERE model = 'm'`).Scan(&created, &updated); err != nil {
		t.Fatal(err)
	}
	if created != "2000-01-01T00:00:00.000Z" || updated <= created {
		t.Errorf("created_at, updated_at = %s, %s; want created kept and updated later", created, updated)
	}
}

func TestUpsertKeyRejectsPlaintext(t *testing.T) {
	const secret = "sk-switchyard-known-plaintext-7f3a9c"
	tests := []struct {
		name string
		key  config.Key
	}{
		{"plaintext with hash", config.Key{Name: "a", Key: secret, KeySHA256: hashOf(secret)}},
		{"plaintext only", config.Key{Name: "a", Key: secret}},
		{"no hash", config.Key{Name: "a"}},
		{"plaintext in the hash field", config.Key{Name: "a", KeySHA256: secret}},
		{"short hash", config.Key{Name: "a", KeySHA256: hashOf(secret)[:32]}},
		{"non-hex hash", config.Key{Name: "a", KeySHA256: strings.Repeat("z", 64)}},
	}
	ctx := context.Background()
	s, path := openTest(t)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.UpsertKey(ctx, tt.key)
			if !errors.Is(err, store.ErrPlaintextKey) {
				t.Fatalf("UpsertKey = %v, want ErrPlaintextKey", err)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error %q repeats the secret", err)
			}
		})
	}
	ks, err := s.ListKeys(ctx)
	if err != nil || len(ks) != 0 {
		t.Fatalf("ListKeys after rejections = %v, %v, want none", ks, err)
	}

	// The accepted form: only the hash is stored, and the secret appears in
	// no byte of the database files, before or after a checkpoint.
	if err := s.UpsertKey(ctx, config.Key{Name: "a", KeySHA256: hashOf(secret)}); err != nil {
		t.Fatalf("UpsertKey(hash only): %v", err)
	}
	dbBytes := func() []byte {
		t.Helper()
		matches, err := filepath.Glob(path + "*") // the file, -wal and -shm
		if err != nil || len(matches) == 0 {
			t.Fatalf("globbing database files: %v %v", matches, err)
		}
		var all []byte
		for _, m := range matches {
			b, err := os.ReadFile(m)
			if err != nil {
				t.Fatal(err)
			}
			all = append(all, b...)
		}
		return all
	}
	for _, when := range []string{"open", "closed"} {
		if when == "closed" {
			if err := s.Close(); err != nil {
				t.Fatal(err)
			}
		}
		b := dbBytes()
		if !bytes.Contains(b, []byte(hashOf(secret))) {
			t.Errorf("%s: hash not found in the database files; the scan is not looking at the data", when)
		}
		if bytes.Contains(b, []byte(secret)) {
			t.Errorf("%s: the database files contain the plaintext client key", when)
		}
	}
}

func fullLog(i int) store.RequestLog {
	return store.RequestLog{
		ID:           fmt.Sprintf("req-%04d", i),
		Time:         time.Date(2025, 3, 4, 5, 6, 7, 123456789, time.UTC).Add(time.Duration(i) * time.Second),
		Key:          "team-a",
		Model:        "gpt-4o",
		Upstream:     "openai-main",
		Status:       502,
		Attempts:     3,
		Stream:       true,
		Latency:      1234567891 * time.Nanosecond,
		TTFT:         345678912 * time.Nanosecond,
		InputTokens:  1 << 40,
		OutputTokens: 4321,
		ErrorClass:   "server_error",
		Error:        "upstream reset the connection",
	}
}

func TestRequestLogs(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	assertAllFieldsSet(t, fullLog(0))

	// Two batches, out of time order; recent is by Time, newest first.
	if err := s.InsertRequestLogs(ctx, []store.RequestLog{fullLog(2), fullLog(0), fullLog(4)}); err != nil {
		t.Fatalf("InsertRequestLogs: %v", err)
	}
	zero := store.RequestLog{ID: "zero-time"}
	if err := s.InsertRequestLogs(ctx, []store.RequestLog{fullLog(3), fullLog(1), zero}); err != nil {
		t.Fatalf("InsertRequestLogs: %v", err)
	}
	if err := s.InsertRequestLogs(ctx, nil); err != nil {
		t.Fatalf("InsertRequestLogs(nil): %v", err)
	}

	tests := []struct {
		limit int
		want  []store.RequestLog
	}{
		{10, []store.RequestLog{fullLog(4), fullLog(3), fullLog(2), fullLog(1), fullLog(0), zero}},
		{2, []store.RequestLog{fullLog(4), fullLog(3)}},
		{0, []store.RequestLog{}},
		{-1, []store.RequestLog{}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("limit=%d", tt.limit), func(t *testing.T) {
			got, err := s.RecentRequestLogs(ctx, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tt.want) {
				t.Fatalf("got %d logs, want %d", len(got), len(tt.want))
			}
			for i := range got {
				if !got[i].Time.Equal(tt.want[i].Time) {
					t.Errorf("[%d].Time = %v, want %v", i, got[i].Time, tt.want[i].Time)
				}
				g, w := got[i], tt.want[i]
				g.Time, w.Time = time.Time{}, time.Time{}
				if !reflect.DeepEqual(g, w) {
					t.Errorf("[%d] = %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

func TestInsertRequestLogsIsOneTransaction(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	if _, err := s.w.Exec(`CREATE TRIGGER fail BEFORE INSERT ON request_logs
		WHEN NEW.id = 'boom' BEGIN SELECT RAISE(ABORT, 'boom'); END`); err != nil {
		t.Fatal(err)
	}
	batch := []store.RequestLog{fullLog(1), fullLog(2), {ID: "boom"}, fullLog(3)}
	if err := s.InsertRequestLogs(ctx, batch); err == nil {
		t.Fatal("InsertRequestLogs with a failing row succeeded, want an error")
	}
	got, err := s.RecentRequestLogs(ctx, 10)
	if err != nil || len(got) != 0 {
		t.Errorf("after a failed batch: %d logs, %v; want none (whole batch rolled back)", len(got), err)
	}
	// The writer connection is usable again.
	if err := s.InsertRequestLogs(ctx, batch[:2]); err != nil {
		t.Fatalf("InsertRequestLogs after a failed batch: %v", err)
	}
}

func TestConcurrentUse(t *testing.T) {
	tests := []struct {
		name string
		dsn  func(t *testing.T) string
	}{
		{"file", func(t *testing.T) string { return filepath.Join(t.TempDir(), "c.db") }},
		{"memory", func(*testing.T) string { return ":memory:" }},
	}
	const (
		workers = 12
		rounds  = 8
		perLog  = 10
	)
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			s, err := Open(ctx, tt.dsn(t))
			if err != nil {
				t.Fatal(err)
			}
			defer s.Close()
			var wg sync.WaitGroup
			errs := make(chan error, workers*rounds*6)
			for w := range workers {
				wg.Go(func() {
					for r := range rounds {
						name := fmt.Sprintf("w%02d-%02d", w, r%4)
						logs := make([]store.RequestLog, perLog)
						for i := range logs {
							logs[i] = fullLog(w*10000 + r*100 + i)
						}
						errs <- s.UpsertUpstream(ctx, fullUpstream(name))
						errs <- s.UpsertKey(ctx, fullKey(name))
						errs <- s.InsertRequestLogs(ctx, logs)
						_, err := s.ListUpstreams(ctx)
						errs <- err
						_, err = s.RecentRequestLogs(ctx, 50)
						errs <- err
						errs <- s.Ping(ctx)
					}
				})
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				if err != nil {
					t.Errorf("concurrent call: %v", err)
				}
			}
			us, err := s.ListUpstreams(ctx)
			if err != nil || len(us) != workers*4 {
				t.Errorf("ListUpstreams = %d, %v, want %d", len(us), err, workers*4)
			}
			logs, err := s.RecentRequestLogs(ctx, workers*rounds*perLog+1)
			if err != nil || len(logs) != workers*rounds*perLog {
				t.Errorf("RecentRequestLogs = %d, %v, want %d", len(logs), err, workers*rounds*perLog)
			}
		})
	}
}

func TestLogWriterIntoSQLite(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	var (
		mu   sync.Mutex // guards errs
		errs []error
	)
	w := store.NewLogWriter(s, store.LogWriterOptions{BatchSize: 64, OnError: func(err error) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, err)
	}})
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(runCtx)
	}()
	const n = 1000
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range n / 4 {
				if !w.Enqueue(fullLog(g*n + i)) {
					t.Errorf("Enqueue refused with a 10000 buffer")
					return
				}
			}
		})
	}
	wg.Wait()
	if err := w.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if len(errs) != 0 || w.Written() != n || w.Dropped() != 0 {
		t.Errorf("Written, Dropped, errors = %d, %d, %v; want %d, 0, none", w.Written(), w.Dropped(), errs, n)
	}
	logs, err := s.RecentRequestLogs(ctx, 2*n)
	if err != nil || len(logs) != n {
		t.Errorf("stored %d logs, %v; want %d", len(logs), err, n)
	}
}

func BenchmarkInsertRequestLogs(b *testing.B) {
	for _, batch := range []int{1, 100, 500} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			s, err := Open(context.Background(), filepath.Join(b.TempDir(), "b.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer s.Close()
			logs := make([]store.RequestLog, batch)
			for i := range logs {
				logs[i] = fullLog(i)
			}
			b.ReportAllocs()
			for b.Loop() {
				if err := s.InsertRequestLogs(context.Background(), logs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "logs/s")
		})
	}
}
