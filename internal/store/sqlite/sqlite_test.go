package sqlite

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sync"
	"testing"
	"time"

	"switchyard/internal/config"
	"switchyard/internal/store"
	"switchyard/internal/store/internal/migration"
	"switchyard/internal/store/storetest"
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
	wantNames := []string{"0001_init.sql", "0002_spend.sql", "0003_config_version.sql", "0004_lean_request_logs.sql", "0005_translated.sql", "0006_tried.sql", "0007_trace_id.sql", "0008_cost.sql"}
	if len(first) != len(wantNames) {
		t.Fatalf("schema_migrations after Open = %+v, want %v", first, wantNames)
	}
	for i, m := range first {
		if m.Version != i+1 || m.Name != wantNames[i] || m.AppliedAt == "" {
			t.Fatalf("schema_migrations[%d] after Open = %+v, want version %d (%s) with a time", i, m, i+1, wantNames[i])
		}
	}
	for _, table := range []string{"upstreams", "keys", "routes", "request_logs", "spend", "config_version"} {
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
	m1 := migration.Migration{Version: 1, Name: "0001_a.sql", SQL: `CREATE TABLE a (x INTEGER);`}
	m2 := migration.Migration{Version: 2, Name: "0002_b.sql", SQL: `CREATE TABLE b (x INTEGER); INSERT INTO b VALUES (1);`}
	bad := migration.Migration{Version: 2, Name: "0002_bad.sql", SQL: `CREATE TABLE b (x INTEGER); INSERT INTO nowhere VALUES (1);`}
	tests := []struct {
		name        string
		runs        [][]migration.Migration // migrations given to each successive open
		wantErr     []bool                  // per run
		wantVersion []int                   // recorded after the last run
		wantTables  map[string]bool
	}{
		{
			name:        "upgrade applies only the new version",
			runs:        [][]migration.Migration{{m1}, {m1, m2}, {m1, m2}},
			wantErr:     []bool{false, false, false},
			wantVersion: []int{1, 2},
			wantTables:  map[string]bool{"a": true, "b": true},
		},
		{
			name:        "failed migration rolls back entirely",
			runs:        [][]migration.Migration{{m1, bad}},
			wantErr:     []bool{true},
			wantVersion: []int{1},
			wantTables:  map[string]bool{"a": true, "b": false},
		},
		{
			name:        "fixed migration applies after a failure",
			runs:        [][]migration.Migration{{m1, bad}, {m1, m2}},
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

func TestEmbeddedMigrationsLoad(t *testing.T) {
	ms, err := migration.Load(migrationFS, "migrations")
	if err != nil || len(ms) == 0 {
		t.Errorf("embedded migrations = %d, %v", len(ms), err)
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

// TestConformance runs the backend-neutral suite on a file and in memory.
func TestConformance(t *testing.T) {
	t.Run("file", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store {
			s, _ := openTest(t)
			return s
		})
	})
	t.Run("memory", func(t *testing.T) {
		storetest.Run(t, func(t *testing.T) store.Store {
			s, err := Open(context.Background(), ":memory:")
			if err != nil {
				t.Fatalf("Open(:memory:): %v", err)
			}
			t.Cleanup(func() { _ = s.Close() })
			return s
		})
	})
}

// openPair opens two Stores on one new file, as two processes would.
func openPair(t *testing.T) (a, b *Store) {
	t.Helper()
	a, path := openTest(t)
	b, err := Open(context.Background(), path)
	if err != nil {
		t.Fatalf("Open(%q) a second time: %v", path, err)
	}
	t.Cleanup(func() { _ = b.Close() })
	return a, b
}

// TestShared runs the two-instance suite on two Stores on one file, polling
// every 50ms to keep the suite quick; TestWatchDefaultInterval covers the
// default period.
func TestShared(t *testing.T) {
	storetest.RunShared(t, func(t *testing.T) (store.Store, store.Store) {
		a, b := openPair(t)
		a.pollEvery, b.pollEvery = 50*time.Millisecond, 50*time.Millisecond
		return a, b
	})
}

// TestWatchDefaultInterval checks that, with the default polling period, a
// change made through another Store on the same file is reported within
// storetest.WatchDeadline.
func TestWatchDefaultInterval(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	a, b := openPair(t)
	calls := make(chan struct{}, 10)
	done := make(chan error, 1)
	go func() { done <- a.Watch(ctx, func() { calls <- struct{}{} }) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Watch = %v, want nil", err)
		}
	}()
	select {
	case <-calls:
	case <-time.After(storetest.WatchDeadline):
		t.Fatalf("no first call of onChange within %v", storetest.WatchDeadline)
	}
	if err := b.UpsertUpstream(ctx, storetest.Upstream("u")); err != nil {
		t.Fatal(err)
	}
	select {
	case <-calls:
	case <-time.After(storetest.WatchDeadline):
		t.Fatalf("no call of onChange within %v of the other store's upsert", storetest.WatchDeadline)
	}
}

// TestConfigVersionCountsConfigChangesOnly checks the counter Watch polls:
// it moves with every config write, and not with request logs or spend.
func TestConfigVersionCountsConfigChangesOnly(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	storetest.CheckConfigVersion(t, func() (int64, error) { return s.configVersion(ctx) }, []storetest.VersionStep{
		{Name: "upsert upstream", Change: func() error { return s.UpsertUpstream(ctx, storetest.Upstream("u")) }, Moves: true},
		{Name: "update upstream", Change: func() error { return s.UpsertUpstream(ctx, storetest.Upstream("u")) }, Moves: true},
		{Name: "upsert key", Change: func() error { return s.UpsertKey(ctx, storetest.Key("k")) }, Moves: true},
		{Name: "upsert route", Change: func() error { return s.UpsertRoute(ctx, storetest.Route("m")) }, Moves: true},
		{Name: "delete route", Change: func() error { return s.DeleteRoute(ctx, "m") }, Moves: true},
		{Name: "delete key", Change: func() error { return s.DeleteKey(ctx, "k") }, Moves: true},
		{Name: "delete upstream", Change: func() error { return s.DeleteUpstream(ctx, "u") }, Moves: true},
		{Name: "delete absent", Change: func() error { _ = s.DeleteUpstream(ctx, "u"); return nil }, Moves: false},
		{Name: "request logs", Change: func() error { return s.InsertRequestLogs(ctx, []store.RequestLog{storetest.Log(1)}) }, Moves: false},
		{Name: "spend", Change: func() error {
			return s.AddSpend(ctx, []store.SpendDelta{{Scope: "key", Name: "k", PeriodStart: storetest.Day(3, 1), USD: 1}})
		}, Moves: false},
	})
}

func TestRoundTripAfterReopen(t *testing.T) {
	ctx := context.Background()
	s, path := openTest(t)
	u, k, r := storetest.Upstream("azure-east"), storetest.Key("team-a"), storetest.Route("gpt-4o")
	if err := s.UpsertUpstream(ctx, u); err != nil {
		t.Fatalf("UpsertUpstream: %v", err)
	}
	if err := s.UpsertKey(ctx, k); err != nil {
		t.Fatalf("UpsertKey: %v", err)
	}
	if err := s.UpsertRoute(ctx, r); err != nil {
		t.Fatalf("UpsertRoute: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	storetest.CheckConfig(t, s2, u, k, r)
}

// TestPlaintextKeyNeverOnDisk offers the store every wrong form of a client
// key, then checks that no byte of the database files, before or after a
// checkpoint, holds the secret.
func TestPlaintextKeyNeverOnDisk(t *testing.T) {
	s, path := openTest(t)
	hash := storetest.TryPlaintextKeys(t, s)
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
		if !bytes.Contains(b, []byte(hash)) {
			t.Errorf("%s: hash not found in the database files; the scan is not looking at the data", when)
		}
		if bytes.Contains(b, []byte(storetest.PlaintextSecret)) {
			t.Errorf("%s: the database files contain the plaintext client key", when)
		}
	}
}

func TestUpstreamAPIKeyNotInSpec(t *testing.T) {
	s, _ := openTest(t)
	storetest.CheckAPIKeyColumn(t, s, func(ctx context.Context) (spec, apiKey string, err error) {
		err = s.r.QueryRowContext(ctx, `SELECT spec, api_key FROM upstreams WHERE name = 'a'`).Scan(&spec, &apiKey)
		return spec, apiKey, err
	})
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

func TestInsertRequestLogsIsOneTransaction(t *testing.T) {
	s, _ := openTest(t)
	if _, err := s.w.Exec(`CREATE TRIGGER fail BEFORE INSERT ON request_logs
		WHEN NEW.id = '` + storetest.FailingID + `' BEGIN SELECT RAISE(ABORT, 'boom'); END`); err != nil {
		t.Fatal(err)
	}
	// Afterwards the writer connection must be usable again.
	storetest.CheckRequestLogsAtomic(t, s)
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
				logs[i] = storetest.Log(i)
			}
			// Times go up from batch to batch, as a gateway's do.
			at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
			b.ReportAllocs()
			for b.Loop() {
				for i := range logs {
					at = at.Add(time.Millisecond)
					logs[i].Time = at
				}
				if err := s.InsertRequestLogs(context.Background(), logs); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(b.N*batch)/b.Elapsed().Seconds(), "logs/s")
		})
	}
}
