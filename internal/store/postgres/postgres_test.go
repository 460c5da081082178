package postgres

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"switchyard/internal/config"
	"switchyard/internal/store"
	"switchyard/internal/store/internal/migration"
	"switchyard/internal/store/storetest"
)

// dsnEnv names the environment variable holding the DSN of a PostgreSQL
// database the tests may create schemas in.
const dsnEnv = "SWITCHYARD_TEST_POSTGRES_DSN"

// baseDSN returns the test database's DSN, skipping t when none is set.
func baseDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv(dsnEnv)
	if dsn == "" {
		t.Skip(dsnEnv + " not set")
	}
	return dsn
}

// newSchema creates a schema of t's own, dropped at the end of t (after the
// stores opened later are closed), and returns its name and a DSN whose
// search_path is that schema.
func newSchema(t testing.TB) (schema, dsn string) {
	t.Helper()
	base := baseDSN(t)
	ctx := context.Background()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema = "sy_test_" + hex.EncodeToString(b)
	admin, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connecting to %s: %v", dsnEnv, err)
	}
	defer admin.Close(ctx)
	if _, err := admin.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("creating schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		admin, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("connecting to drop schema %s: %v", schema, err)
			return
		}
		defer admin.Close(ctx)
		if _, err := admin.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	return schema, withSearchPath(t, base, schema)
}

// withSearchPath returns dsn (a URL or a key=value DSN) with its search_path
// set to schema.
func withSearchPath(t testing.TB, dsn, schema string) string {
	t.Helper()
	if !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://") {
		return dsn + " search_path=" + schema
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatalf("parsing %s: %v", dsnEnv, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// openDSN opens a store on dsn and closes it at the end of t.
func openDSN(t testing.TB, dsn string) *Store {
	t.Helper()
	s, err := Open(context.Background(), dsn)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { _ = s.Close() })
	return s
}

// openTest opens a store on a fresh schema of t's own.
func openTest(t testing.TB) (*Store, string) {
	t.Helper()
	schema, dsn := newSchema(t)
	return openDSN(t, dsn), schema
}

func TestConformance(t *testing.T) {
	baseDSN(t)
	storetest.Run(t, func(t *testing.T) store.Store {
		s, _ := openTest(t)
		return s
	})
}

// TestShared runs the two-instance suite on two Stores on one schema, as two
// gateway instances sharing the database would have.
func TestShared(t *testing.T) {
	baseDSN(t)
	storetest.RunShared(t, func(t *testing.T) (store.Store, store.Store) {
		_, dsn := newSchema(t)
		return openDSN(t, dsn), openDSN(t, dsn)
	})
}

type appliedMigration struct {
	Version   int
	Name      string
	AppliedAt time.Time
}

func appliedMigrations(t *testing.T, s *Store) []appliedMigration {
	t.Helper()
	rows, err := s.pool.Query(context.Background(), `SELECT version, name, applied_at FROM schema_migrations ORDER BY version`)
	if err != nil {
		t.Fatalf("reading schema_migrations: %v", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowToStructByPos[appliedMigration])
	if err != nil {
		t.Fatalf("reading schema_migrations: %v", err)
	}
	return out
}

// tables returns the tables of schema, sorted.
func tables(t *testing.T, s *Store, schema string) []string {
	t.Helper()
	rows, err := s.pool.Query(context.Background(),
		`SELECT table_name::text FROM information_schema.tables WHERE table_schema = $1 ORDER BY 1`, schema)
	if err != nil {
		t.Fatalf("listing tables: %v", err)
	}
	out, err := pgx.CollectRows(rows, pgx.RowTo[string])
	if err != nil {
		t.Fatalf("listing tables: %v", err)
	}
	return out
}

// TestMigrationsConcurrentOpenAndReopen opens three stores at once on a fresh
// schema: each migration must be applied exactly once, every Open succeed,
// and a later Open apply nothing.
func TestMigrationsConcurrentOpenAndReopen(t *testing.T) {
	ctx := context.Background()
	schema, dsn := newSchema(t)
	const n = 3
	stores := make([]*Store, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() { stores[i], errs[i] = Open(ctx, dsn) })
	}
	wg.Wait()
	for i := range n {
		if errs[i] != nil {
			t.Fatalf("concurrent Open %d: %v", i, errs[i])
		}
		t.Cleanup(func() { _ = stores[i].Close() })
	}
	first := appliedMigrations(t, stores[0])
	wantNames := []string{"0001_init.sql", "0002_spend.sql", "0003_config_notify.sql", "0004_translated.sql", "0005_tried.sql", "0006_trace_id.sql", "0007_cost.sql"}
	if len(first) != len(wantNames) {
		t.Fatalf("schema_migrations = %+v, want %v", first, wantNames)
	}
	for i, m := range first {
		if m.Version != i+1 || m.Name != wantNames[i] || m.AppliedAt.IsZero() {
			t.Errorf("schema_migrations[%d] = %+v, want version %d (%s) with a time", i, m, i+1, wantNames[i])
		}
	}
	wantTables := []string{"config_version", "keys", "request_logs", "routes", "schema_migrations", "spend", "upstreams"}
	if got := tables(t, stores[0], schema); !slices.Equal(got, wantTables) {
		t.Errorf("tables = %v, want %v", got, wantTables)
	}
	// Every instance works on the one schema.
	for i, s := range stores {
		if err := s.UpsertRoute(ctx, config.Route{Model: fmt.Sprintf("m%d", i)}); err != nil {
			t.Fatalf("UpsertRoute through store %d: %v", i, err)
		}
	}
	for i := range 2 {
		s := openDSN(t, dsn)
		if got := appliedMigrations(t, s); !reflect.DeepEqual(got, first) {
			t.Errorf("reopen %d: schema_migrations = %+v, want unchanged %+v", i, got, first)
		}
		routes, err := s.ListRoutes(ctx)
		if err != nil || len(routes) != n {
			t.Errorf("reopen %d: ListRoutes = %+v, %v, want the %d routes kept", i, routes, err, n)
		}
	}
}

func TestMigrate(t *testing.T) {
	m1 := migration.Migration{Version: 1, Name: "0001_a.sql", SQL: `CREATE TABLE a (x integer);`}
	m2 := migration.Migration{Version: 2, Name: "0002_b.sql", SQL: `CREATE TABLE b (x integer); INSERT INTO b VALUES (1);`}
	bad := migration.Migration{Version: 2, Name: "0002_bad.sql", SQL: `CREATE TABLE b (x integer); INSERT INTO nowhere VALUES (1);`}
	tests := []struct {
		name        string
		runs        [][]migration.Migration // migrations given to each successive open
		wantErr     []bool                  // per run
		wantVersion []int                   // recorded after the last run
		wantTables  []string
	}{
		{
			name:        "upgrade applies only the new version",
			runs:        [][]migration.Migration{{m1}, {m1, m2}, {m1, m2}},
			wantErr:     []bool{false, false, false},
			wantVersion: []int{1, 2},
			wantTables:  []string{"a", "b", "schema_migrations"},
		},
		{
			name:        "failed migration rolls back entirely",
			runs:        [][]migration.Migration{{m1, bad}},
			wantErr:     []bool{true},
			wantVersion: []int{1},
			wantTables:  []string{"a", "schema_migrations"},
		},
		{
			name:        "fixed migration applies after a failure",
			runs:        [][]migration.Migration{{m1, bad}, {m1, m2}},
			wantErr:     []bool{true, false},
			wantVersion: []int{1, 2},
			wantTables:  []string{"a", "b", "schema_migrations"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			schema, dsn := newSchema(t)
			for i, ms := range tt.runs {
				s, err := open(ctx, dsn, ms)
				if (err != nil) != tt.wantErr[i] {
					t.Fatalf("run %d: open error = %v, want error %v", i, err, tt.wantErr[i])
				}
				if err == nil {
					_ = s.Close()
				}
			}
			s, err := open(ctx, dsn, nil)
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
			if got := tables(t, s, schema); !slices.Equal(got, tt.wantTables) {
				t.Errorf("tables = %v, want %v", got, tt.wantTables)
			}
			if slices.Contains(tt.wantTables, "b") {
				var rows int
				if err := s.pool.QueryRow(ctx, `SELECT count(*) FROM b`).Scan(&rows); err != nil || rows != 1 {
					t.Errorf("rows in b = %d, %v, want 1 (migration applied exactly once)", rows, err)
				}
			}
		})
	}
}

// TestMigrationLockIsPerSchema holds the migration lock of one schema and
// opens a store on another: it must not wait.
func TestMigrationLockIsPerSchema(t *testing.T) {
	ctx := context.Background()
	held, heldDSN := newSchema(t)
	_, otherDSN := newSchema(t)
	conn, err := pgx.Connect(ctx, heldDSN)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_lock($1, hashtext($2))`, migrateLockClass, held); err != nil {
		t.Fatal(err)
	}
	openCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	s, err := Open(openCtx, otherDSN)
	if err != nil {
		t.Fatalf("Open on another schema while the lock is held: %v", err)
	}
	_ = s.Close()

	// The held schema's Open waits for the lock, and gives up with its context.
	waitCtx, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	if s, err := Open(waitCtx, heldDSN); err == nil {
		_ = s.Close()
		t.Fatal("Open succeeded while another session held the schema's migration lock")
	}
	if _, err := conn.Exec(ctx, `SELECT pg_advisory_unlock($1, hashtext($2))`, migrateLockClass, held); err != nil {
		t.Fatal(err)
	}
	openDSN(t, heldDSN)
}

func TestOpenErrors(t *testing.T) {
	base := baseDSN(t)
	tests := []struct {
		name string
		dsn  string
	}{
		{"empty dsn", ""},
		{"unparsable dsn", "postgres://%zz"},
		{"nobody listening", "postgres://postgres@127.0.0.1:1/test?connect_timeout=2"},
		{"missing schema", withSearchPath(t, base, "sy_test_no_such_schema")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			s, err := Open(ctx, tt.dsn)
			if err == nil {
				_ = s.Close()
				t.Fatalf("Open(%q) succeeded, want an error", tt.dsn)
			}
		})
	}
}

func TestOpenErrorHidesPassword(t *testing.T) {
	const password = "hunter2-secret-pw"
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	for _, dsn := range []string{
		"postgres://postgres:" + password + "@127.0.0.1:1/test?connect_timeout=2",
		"postgres://postgres:" + password + "@127.0.0.1:1/test?sslmode=bogus",
	} {
		_, err := Open(ctx, dsn)
		if err == nil {
			t.Fatalf("Open(%q) succeeded, want an error", dsn)
		}
		if strings.Contains(err.Error(), password) {
			t.Errorf("Open error %q repeats the password", err)
		}
	}
}

// textColumns returns every column of schema whose values are text once cast
// (text, varchar, char, json, jsonb), as table.column pairs.
func textColumns(t *testing.T, s *Store, schema string) [][2]string {
	t.Helper()
	rows, err := s.pool.Query(context.Background(), `SELECT table_name::text, column_name::text
		FROM information_schema.columns
		WHERE table_schema = $1 AND data_type IN ('text', 'character varying', 'character', 'json', 'jsonb')
		ORDER BY 1, 2`, schema)
	if err != nil {
		t.Fatalf("listing text columns: %v", err)
	}
	var out [][2]string
	var table, column string
	if _, err := pgx.ForEachRow(rows, []any{&table, &column}, func() error {
		out = append(out, [2]string{table, column})
		return nil
	}); err != nil {
		t.Fatalf("listing text columns: %v", err)
	}
	return out
}

// TestPlaintextKeyNeverStored offers the store every wrong form of a client
// key, writes every other kind of row, then searches every text column of
// the schema for the secret.
func TestPlaintextKeyNeverStored(t *testing.T) {
	ctx := context.Background()
	s, schema := openTest(t)
	hash := storetest.TryPlaintextKeys(t, s)
	if err := s.UpsertUpstream(ctx, storetest.Upstream("u")); err != nil {
		t.Fatal(err)
	}
	if err := s.UpsertRoute(ctx, storetest.Route("m")); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertRequestLogs(ctx, []store.RequestLog{storetest.Log(1)}); err != nil {
		t.Fatal(err)
	}
	if err := s.AddSpend(ctx, []store.SpendDelta{{Scope: "key", Name: "a", PeriodStart: storetest.Day(3, 1), USD: 1}}); err != nil {
		t.Fatal(err)
	}
	cols := textColumns(t, s, schema)
	if len(cols) < 20 {
		t.Fatalf("found only %d text columns: %v; the scan is not looking at the schema", len(cols), cols)
	}
	count := func(table, column, needle string) int {
		t.Helper()
		q := fmt.Sprintf(`SELECT count(*) FROM %s WHERE strpos(%s::text, $1) > 0`,
			pgx.Identifier{table}.Sanitize(), pgx.Identifier{column}.Sanitize())
		var n int
		if err := s.pool.QueryRow(ctx, q, needle).Scan(&n); err != nil {
			t.Fatalf("searching %s.%s: %v", table, column, err)
		}
		return n
	}
	hashFound := false
	for _, c := range cols {
		if count(c[0], c[1], storetest.PlaintextSecret) > 0 {
			t.Errorf("%s.%s holds the plaintext client key", c[0], c[1])
		}
		if count(c[0], c[1], hash) > 0 {
			hashFound = true
		}
	}
	if !hashFound {
		t.Error("the key's hash is in no text column; the scan is not looking at the data")
	}
}

func TestUpstreamAPIKeyNotInSpec(t *testing.T) {
	s, _ := openTest(t)
	storetest.CheckAPIKeyColumn(t, s, func(ctx context.Context) (spec, apiKey string, err error) {
		err = s.pool.QueryRow(ctx, `SELECT spec::text, api_key FROM upstreams WHERE name = 'a'`).Scan(&spec, &apiKey)
		return spec, apiKey, err
	})
}

// TestQueryableColumns checks that the columns operators query by hold the
// objects' values, next to the JSONB spec.
func TestQueryableColumns(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	u, k, r := storetest.Upstream("u"), storetest.Key("k"), storetest.Route("m")
	if err := s.UpsertUpstream(ctx, u); err != nil {
		t.Fatal(err)
	}
	if err := s.UpsertKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	if err := s.UpsertRoute(ctx, r); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name  string
		query string
		want  string
	}{
		{"upstream", `SELECT format('%s|%s|%s|%s|%s|%s', provider, base_url, priority, weight, active::text, spec->>'provider') FROM upstreams`,
			fmt.Sprintf("%s|%s|%d|%d|%t|%s", u.Provider, u.BaseURL, u.Priority, u.Weight, u.Active, u.Provider)},
		{"key", `SELECT format('%s|%s|%s', key_sha256, rpm, spec->>'key_sha256') FROM keys`,
			fmt.Sprintf("%s|%d|%s", k.KeySHA256, k.RPM, k.KeySHA256)},
		{"route", `SELECT format('%s|%s|%s', strategy, retries, jsonb_typeof(spec->'fallback_models')) FROM routes`,
			fmt.Sprintf("%s|%d|array", r.Strategy, r.Retries)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got string
			if err := s.pool.QueryRow(ctx, tt.query).Scan(&got); err != nil {
				t.Fatal(err)
			}
			if got != tt.want {
				t.Errorf("columns = %q, want %q", got, tt.want)
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
	old := time.Date(2000, 1, 1, 0, 0, 0, 0, time.UTC)
	if _, err := s.pool.Exec(ctx, `UPDATE routes SET created_at = $1, updated_at = $1`, old); err != nil {
		t.Fatal(err)
	}
	if err := s.UpsertRoute(ctx, config.Route{Model: "m", RouteSettings: config.RouteSettings{Retries: 3}}); err != nil {
		t.Fatal(err)
	}
	var created, updated time.Time
	if err := s.pool.QueryRow(ctx, `SELECT created_at, updated_at FROM routes WHERE model = 'm'`).Scan(&created, &updated); err != nil {
		t.Fatal(err)
	}
	if !created.Equal(old) || !updated.After(created) {
		t.Errorf("created_at, updated_at = %s, %s; want created kept and updated later", created, updated)
	}
}

// TestRequestLogTimeColumns checks that time is a queryable timestamptz and
// time_nsec keeps the nanoseconds PostgreSQL cannot.
func TestRequestLogTimeColumns(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	l := storetest.Log(0) // 05:06:07.123456789
	if err := s.InsertRequestLogs(ctx, []store.RequestLog{l}); err != nil {
		t.Fatal(err)
	}
	var (
		at   time.Time
		nsec int16
	)
	if err := s.pool.QueryRow(ctx, `SELECT time, time_nsec FROM request_logs
		WHERE time > '2025-03-04 05:06:07Z' AND time < '2025-03-04 05:06:08Z'`).Scan(&at, &nsec); err != nil {
		t.Fatal(err)
	}
	if want := l.Time.Truncate(time.Microsecond); !at.Equal(want) || nsec != 789 {
		t.Errorf("time, time_nsec = %v, %d; want %v, 789", at, nsec, want)
	}
}

// failOn installs on table a trigger that raises an error for rows whose
// column equals value.
func failOn(t *testing.T, s *Store, table, column, value string) {
	t.Helper()
	ctx := context.Background()
	fn := fmt.Sprintf(`CREATE FUNCTION fail_%[1]s() RETURNS trigger LANGUAGE plpgsql AS $$
		BEGIN
			IF NEW.%[2]s = '%[3]s' THEN RAISE EXCEPTION 'boom'; END IF;
			RETURN NEW;
		END $$`, table, column, value)
	trg := fmt.Sprintf(`CREATE TRIGGER fail BEFORE INSERT ON %[1]s FOR EACH ROW EXECUTE FUNCTION fail_%[1]s()`, table)
	for _, q := range []string{fn, trg} {
		if _, err := s.pool.Exec(ctx, q); err != nil {
			t.Fatalf("installing the failing trigger: %v", err)
		}
	}
}

func TestInsertRequestLogsIsOneTransaction(t *testing.T) {
	s, _ := openTest(t)
	failOn(t, s, "request_logs", "id", storetest.FailingID)
	storetest.CheckRequestLogsAtomic(t, s)
}

func TestAddSpendIsOneTransaction(t *testing.T) {
	s, _ := openTest(t)
	failOn(t, s, "spend", "name", storetest.FailingName)
	storetest.CheckSpendAtomic(t, s)
}

// TestConfigVersionCountsConfigChangesOnly checks the counter Watch polls:
// it moves with every config write, whatever the session's search_path,
// and not with request logs or spend.
func TestConfigVersionCountsConfigChangesOnly(t *testing.T) {
	ctx := context.Background()
	s, schema := openTest(t)
	// An operator session whose search_path does not name the schema.
	operator, err := pgx.Connect(ctx, baseDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer operator.Close(ctx)
	storetest.CheckConfigVersion(t, func() (int64, error) { return s.configVersion(ctx) }, []storetest.VersionStep{
		{Name: "upsert upstream", Change: func() error { return s.UpsertUpstream(ctx, storetest.Upstream("u")) }, Moves: true},
		{Name: "upsert key", Change: func() error { return s.UpsertKey(ctx, storetest.Key("k")) }, Moves: true},
		{Name: "upsert route", Change: func() error { return s.UpsertRoute(ctx, storetest.Route("m")) }, Moves: true},
		{Name: "delete route", Change: func() error { return s.DeleteRoute(ctx, "m") }, Moves: true},
		{Name: "operator update", Change: func() error {
			_, err := operator.Exec(ctx, fmt.Sprintf(`UPDATE %s.upstreams SET weight = 2`, pgx.Identifier{schema}.Sanitize()))
			return err
		}, Moves: true},
		{Name: "operator truncate", Change: func() error {
			_, err := operator.Exec(ctx, fmt.Sprintf(`TRUNCATE %s.keys`, pgx.Identifier{schema}.Sanitize()))
			return err
		}, Moves: true},
		{Name: "request logs", Change: func() error { return s.InsertRequestLogs(ctx, []store.RequestLog{storetest.Log(1)}) }, Moves: false},
		{Name: "spend", Change: func() error {
			return s.AddSpend(ctx, []store.SpendDelta{{Scope: "key", Name: "k", PeriodStart: storetest.Day(3, 1), USD: 1}})
		}, Moves: false},
	})
}

// startWatch runs s.Watch until the end of t and returns a channel that
// receives a value per call of onChange.
func startWatch(t *testing.T, s *Store) <-chan struct{} {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	calls := make(chan struct{}, 100)
	done := make(chan error, 1)
	go func() {
		done <- s.Watch(ctx, func() {
			select {
			case calls <- struct{}{}:
			default:
			}
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Watch = %v, want nil", err)
		}
	})
	return calls
}

// await waits up to storetest.WatchDeadline for a value from ch.
func await[T any](t *testing.T, ch <-chan T, what string) T {
	t.Helper()
	select {
	case v := <-ch:
		return v
	case <-time.After(storetest.WatchDeadline):
		t.Fatalf("no %s within %v", what, storetest.WatchDeadline)
		panic("unreachable")
	}
}

// drain empties ch of the values already sent.
func drain[T any](ch <-chan T) {
	for {
		select {
		case <-ch:
		default:
			return
		}
	}
}

// TestWatchNotifiesWithoutPolling turns the fallback poll off: a change by
// another instance must arrive as a notification, and a change in another
// schema of the database must not.
func TestWatchNotifiesWithoutPolling(t *testing.T) {
	ctx := context.Background()
	_, dsn := newSchema(t)
	a, b := openDSN(t, dsn), openDSN(t, dsn)
	other, _ := openTest(t)
	a.pollEvery = time.Hour
	calls := startWatch(t, a)
	await(t, calls, "first call of onChange")
	drain(calls)

	if err := other.UpsertUpstream(ctx, storetest.Upstream("elsewhere")); err != nil {
		t.Fatal(err)
	}
	if err := b.UpsertUpstream(ctx, storetest.Upstream("here")); err != nil {
		t.Fatal(err)
	}
	await(t, calls, "call of onChange after b's upsert")
	// The other schema's notification was delivered before b's (it was
	// committed first); had it not been ignored, a second call would be due.
	if err := b.UpsertRoute(ctx, storetest.Route("sync")); err != nil {
		t.Fatal(err)
	}
	await(t, calls, "call of onChange after b's second change")
	us, err := a.ListUpstreams(ctx)
	if err != nil || len(us) != 1 || us[0].Name != "here" {
		t.Errorf("ListUpstreams on a = %+v, %v; want only b's upstream", us, err)
	}
}

// TestWatchFallsBackToPolling changes the counter without a notification, as
// when one is lost: the poll must report it.
func TestWatchFallsBackToPolling(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	s.pollEvery = 50 * time.Millisecond
	calls := startWatch(t, s)
	await(t, calls, "first call of onChange")
	drain(calls)
	if _, err := s.pool.Exec(ctx, `UPDATE config_version SET version = version + 1`); err != nil {
		t.Fatal(err)
	}
	await(t, calls, "call of onChange after the counter moved silently")
}

// TestWatchReconnects kills the listener's backend: Watch must reconnect,
// report the possible gap with a call, and then receive notifications again
// (the fallback poll is off, so only the new listener can report).
func TestWatchReconnects(t *testing.T) {
	ctx := context.Background()
	_, dsn := newSchema(t)
	a, b := openDSN(t, dsn), openDSN(t, dsn)
	a.pollEvery = time.Hour
	a.backoffMin, a.backoffMax = 10*time.Millisecond, 100*time.Millisecond
	pids := make(chan uint32, 10)
	a.onListen = func(pid uint32) { pids <- pid }
	calls := startWatch(t, a)
	first := await(t, pids, "listener")
	await(t, calls, "first call of onChange")

	for i := range 2 {
		var killed bool
		if err := b.pool.QueryRow(ctx, `SELECT pg_terminate_backend($1)`, int32(first)).Scan(&killed); err != nil || !killed {
			t.Fatalf("terminating the listener (pid %d): %v, %v", first, killed, err)
		}
		next := await(t, pids, "new listener after the kill")
		if next == first {
			t.Fatalf("listener pid %d unchanged after the kill", next)
		}
		await(t, calls, "call of onChange after reconnecting")
		drain(calls)
		if err := b.UpsertUpstream(ctx, storetest.Upstream(fmt.Sprintf("u%d", i))); err != nil {
			t.Fatal(err)
		}
		await(t, calls, "call of onChange after reconnecting and b's upsert")
		first = next
	}
}

// TestWatchRetriesUntilTheDatabaseAnswers points the listener at a port
// nobody listens on: Watch must keep retrying, without ending, and the
// fallback poll (on the working pool) must still report changes.
func TestWatchRetriesUntilTheDatabaseAnswers(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	s.listenConfig = s.listenConfig.Copy()
	s.listenConfig.Host, s.listenConfig.Port = "127.0.0.1", 1
	s.listenConfig.Fallbacks = nil
	s.backoffMin, s.backoffMax = 5*time.Millisecond, 20*time.Millisecond
	s.pollEvery = 50 * time.Millisecond
	calls := startWatch(t, s)
	await(t, calls, "first call of onChange, from the poll")
	drain(calls)
	if err := s.UpsertUpstream(ctx, storetest.Upstream("u")); err != nil {
		t.Fatal(err)
	}
	await(t, calls, "call of onChange from the poll while the listener cannot connect")
}

func BenchmarkInsertRequestLogs(b *testing.B) {
	for _, batch := range []int{1, 100, 500} {
		b.Run(fmt.Sprintf("batch=%d", batch), func(b *testing.B) {
			_, dsn := newSchema(b)
			s := openDSN(b, dsn)
			logs := make([]store.RequestLog, batch)
			for i := range logs {
				logs[i] = storetest.Log(i)
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

func BenchmarkAddSpend(b *testing.B) {
	_, dsn := newSchema(b)
	s := openDSN(b, dsn)
	deltas := make([]store.SpendDelta, 50)
	for i := range deltas {
		deltas[i] = store.SpendDelta{Scope: "key", Name: fmt.Sprintf("k%02d", i), PeriodStart: storetest.Day(3, 1), USD: 0.001}
	}
	b.ReportAllocs()
	for b.Loop() {
		if err := s.AddSpend(context.Background(), deltas); err != nil {
			b.Fatal(err)
		}
	}
}
