package gateway_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"switchyard/internal/config"
	"switchyard/internal/mock"
	"switchyard/internal/store/postgres"
)

// End-to-end test of two gateway instances sharing one PostgreSQL database
// (docs/reference.md#stores: store.driver postgres shares configuration and
// request logs between instances). It talks to the real server named by
// SWITCHYARD_TEST_POSTGRES_DSN, in a schema of its own.

// postgresDSNEnv names the DSN of a PostgreSQL database the test may create
// schemas in.
const postgresDSNEnv = "SWITCHYARD_TEST_POSTGRES_DSN"

// sharedDeadline is how soon a change made through one instance must be in
// force on the other.
const sharedDeadline = 5 * time.Second

// pgSchema creates a fresh schema, dropped at the end of t (after every
// gateway started later is closed), and returns a DSN whose search_path is
// that schema. It skips t when no database is configured.
func pgSchema(t *testing.T) string {
	t.Helper()
	base := os.Getenv(postgresDSNEnv)
	if base == "" {
		t.Skip(postgresDSNEnv + " not set")
	}
	ctx := context.Background()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	schema := "sy_e2e_" + hex.EncodeToString(b)
	conn, err := pgx.Connect(ctx, base)
	if err != nil {
		t.Fatalf("connecting to %s: %v", postgresDSNEnv, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("creating schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		conn, err := pgx.Connect(ctx, base)
		if err != nil {
			t.Errorf("connecting to drop schema %s: %v", schema, err)
			return
		}
		defer conn.Close(ctx)
		if _, err := conn.Exec(ctx, "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			t.Errorf("dropping schema %s: %v", schema, err)
		}
	})
	if !strings.HasPrefix(base, "postgres://") && !strings.HasPrefix(base, "postgresql://") {
		return base + " search_path=" + schema
	}
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("parsing %s: %v", postgresDSNEnv, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String()
}

// sentRequest is one proxied request as its client saw it.
type sentRequest struct {
	via      string // "A" or "B"
	id       string // X-Request-Id
	status   int
	upstream string // X-Switchyard-Upstream
}

// journal records every proxied request a test sends.
type journal []sentRequest

// post sends a chat request for gpt-4o to e (named via) with the client key
// secret and records it.
func (j *journal) post(t *testing.T, e *env, via, secret string) sentRequest {
	t.Helper()
	r := e.postAs(t, secret, chatPath, `{"model":"gpt-4o","messages":[{"role":"user","content":"shared"}]}`)
	s := sentRequest{via: via, id: r.header.Get("X-Request-Id"), status: r.status, upstream: r.header.Get("X-Switchyard-Upstream")}
	if s.id == "" {
		t.Fatalf("a request through %s has no X-Request-Id (status %d: %s)", via, r.status, r.body)
	}
	*j = append(*j, s)
	return s
}

// pollUntil calls try until it reports done, at most every 10 ms, and fails
// the test when sharedDeadline has passed since start. It returns how long
// it took.
func pollUntil(t *testing.T, start time.Time, what string, try func() bool) time.Duration {
	t.Helper()
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for {
		if try() {
			return time.Since(start)
		}
		if time.Since(start) > sharedDeadline {
			t.Fatalf("%s: not within %v", what, sharedDeadline)
		}
		<-tick.C
	}
}

// TestPostgresSharedByTwoGateways: gateways A and B run the same config on
// one schema. pg-b (tier 0) takes all traffic while active; pg-a (tier 1)
// is the fallback. Deactivating pg-b through A's admin API stops B routing
// to it within 5 s; a client key created through A works on B within 5 s;
// every request either gateway answered is logged in the one database.
func TestPostgresSharedByTwoGateways(t *testing.T) {
	dsn := pgSchema(t)
	_, urlA := startMock(t, "pg-a", mock.Behavior{})
	mockB, urlB := startMock(t, "pg-b", mock.Behavior{})
	ups := func() []config.Upstream {
		return []config.Upstream{
			upstreamAt("pg-a", config.ProviderOpenAI, urlA, 1, "gpt-4o"),
			upstreamAt("pg-b", config.ProviderOpenAI, urlB, 0, "gpt-4o"),
		}
	}
	edit := func(c *config.Config) {
		withAdmin(c)
		c.Store.Driver, c.Store.DSN = "postgres", dsn
	}
	a := startGateway(t, spec{upstreams: ups(), edit: edit})
	b := startGateway(t, spec{upstreams: ups(), edit: edit})
	for name, e := range map[string]*env{"A": a, "B": b} {
		if r := rawRequest(t, http.MethodGet, e.URL+"/readyz", nil); r.status != http.StatusOK {
			t.Fatalf("gateway %s /readyz: status %d: %s", name, r.status, r.body)
		}
	}

	var sent journal
	for _, g := range []struct {
		via string
		e   *env
	}{{"A", a}, {"B", b}} {
		for range 5 {
			if s := sent.post(t, g.e, g.via, testKey); s.status != http.StatusOK || s.upstream != "pg-b" {
				t.Fatalf("before the change, via %s: status %d from %q, want 200 from pg-b (tier 0)", g.via, s.status, s.upstream)
			}
		}
	}

	t.Run("upstream deactivated through A stops on B", func(t *testing.T) {
		start := time.Now()
		a.mustAdmin(t, http.MethodPatch, "/upstreams/pg-b", `{"active":false}`, http.StatusOK)
		if s := sent.post(t, a, "A", testKey); s.status != http.StatusOK || s.upstream != "pg-a" {
			t.Fatalf("A right after the change: status %d from %q, want 200 from pg-a", s.status, s.upstream)
		}
		took := pollUntil(t, start, "B still routes to pg-b", func() bool {
			s := sent.post(t, b, "B", testKey)
			if s.status != http.StatusOK {
				t.Fatalf("B while the change spreads: status %d, want 200", s.status)
			}
			return s.upstream == "pg-a"
		})
		t.Logf("B stopped routing to pg-b %v after the change through A", took)
		// For good: pg-b receives nothing more from either gateway.
		before := mockB.Stats().Requests
		for _, g := range []struct {
			via string
			e   *env
		}{{"A", a}, {"B", b}} {
			for range 10 {
				if s := sent.post(t, g.e, g.via, testKey); s.status != http.StatusOK || s.upstream != "pg-a" {
					t.Fatalf("via %s after the change: status %d from %q, want 200 from pg-a", g.via, s.status, s.upstream)
				}
			}
		}
		if after := mockB.Stats().Requests; after != before {
			t.Fatalf("pg-b got %d requests after B picked up the change, want 0", after-before)
		}
		// B's admin API reads the same store.
		r := b.mustAdmin(t, http.MethodGet, "/upstreams/pg-b", "", http.StatusOK)
		var got struct{ Active *bool }
		if err := json.Unmarshal(r.body, &got); err != nil || got.Active == nil || *got.Active {
			t.Fatalf("B's GET /upstreams/pg-b answered %s, want active false", r.body)
		}
	})

	t.Run("key created through A works on B", func(t *testing.T) {
		start := time.Now()
		r := a.mustAdmin(t, http.MethodPost, "/keys", `{"name":"ci","allowed_models":["gpt-4o"]}`, http.StatusCreated)
		var created struct{ Key string }
		if err := json.Unmarshal(r.body, &created); err != nil || created.Key == "" {
			t.Fatalf("creating a key through A answered %s", r.body)
		}
		if s := sent.post(t, a, "A", created.Key); s.status != http.StatusOK {
			t.Fatalf("the new key on A: status %d, want 200 at once", s.status)
		}
		took := pollUntil(t, start, "the new key works on B", func() bool {
			s := sent.post(t, b, "B", created.Key)
			if s.status != http.StatusOK && s.status != http.StatusUnauthorized {
				t.Fatalf("the new key on B: status %d, want 401 until B knows it, then 200", s.status)
			}
			return s.status == http.StatusOK
		})
		t.Logf("the key worked on B %v after its creation through A", took)
		if s := sent.post(t, b, "B", created.Key); s.status != http.StatusOK || s.upstream != "pg-a" {
			t.Fatalf("the new key on B: status %d from %q, want 200 from pg-a", s.status, s.upstream)
		}
	})

	t.Run("request logs of both gateways in one database", func(t *testing.T) {
		// Closing flushes each gateway's asynchronous log writer.
		for name, e := range map[string]*env{"A": a, "B": b} {
			if err := e.Close(); err != nil {
				t.Fatalf("closing gateway %s: %v", name, err)
			}
		}
		ctx := context.Background()
		st, err := postgres.Open(ctx, dsn)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		logs, err := st.RecentRequestLogs(ctx, 100000)
		if err != nil {
			t.Fatal(err)
		}
		byID := map[string]int{}
		for i, l := range logs {
			byID[l.ID] = i
		}
		if len(byID) != len(logs) {
			t.Errorf("%d logs with %d distinct request ids", len(logs), len(byID))
		}
		perGateway := map[string]int{}
		for _, s := range sent {
			i, ok := byID[s.id]
			if !ok {
				t.Errorf("request %s through %s (status %d) is not in the database", s.id, s.via, s.status)
				continue
			}
			if l := logs[i]; l.Status != s.status || l.Upstream != s.upstream || (s.status == http.StatusOK && l.Model != "gpt-4o") {
				t.Errorf("log of %s: status %d upstream %q model %q, want status %d upstream %q model gpt-4o",
					s.id, l.Status, l.Upstream, l.Model, s.status, s.upstream)
			}
			perGateway[s.via]++
		}
		if len(logs) != len(sent) {
			t.Errorf("the database holds %d request logs, want the %d requests sent", len(logs), len(sent))
		}
		if perGateway["A"] == 0 || perGateway["B"] == 0 {
			t.Errorf("logs by gateway %v, want some from each", perGateway)
		}
		ids := make([]string, 0, len(sent))
		for _, s := range sent {
			ids = append(ids, s.id)
		}
		slices.Sort(ids)
		if len(slices.Compact(ids)) != len(sent) {
			t.Errorf("request ids of the two gateways collide")
		}
	})
}
