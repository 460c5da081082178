package gateway_test

// Security properties of issue 9 item 5, proven end to end through real
// loopback servers (and, where the whole process's output matters, the real
// binary): client keys hashed at rest, the admin token on every admin route,
// restricted keys confined to their upstreams, no bodies in logs, upstream
// secrets in no output, random request ids, and the dashboard's headers.

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"log"
	"log/slog"
	"math/big"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"switchyard/internal/config"
	"switchyard/internal/mock"
)

// ---------------------------------------------------------------------------
// 1. Client keys are hashed at rest.

// Secrets of the at-rest test; each is distinctive enough that a hit is no accident.
const (
	restCfgSecret     = "sk-cfg-SECRET-at-rest-1111"
	restGivenSecret   = "sk-given-SECRET-at-rest-2222"
	restRotatedSecret = "sk-rotated-SECRET-at-rest-3333"
	restBogusSecret   = "sk-bogus-SECRET-at-rest-4444"
	restUpPosted      = "sk-upstream-SECRET-posted-5555"
	restUpPatched     = "sk-upstream-SECRET-patched-6666"
)

// cell is one value of one column of one stored row, as text.
type cell struct{ table, column, value string }

// secretsAtRestFlow drives a gateway with the admin API through every way a
// client key's secret reaches it — the config file, an API-generated key, a
// given plaintext, a rotation — and every way an upstream's api_key does,
// plus requests with each key and one with an unknown secret. It returns
// the client secrets that must not be stored and the upstream api_keys in
// force.
func secretsAtRestFlow(t *testing.T, e *env) (clientSecrets, upstreamKeys []string) {
	t.Helper()
	created := e.mustAdmin(t, "POST", "/keys", `{"name":"generated"}`, http.StatusCreated)
	var gen struct{ Key string }
	if err := json.Unmarshal(created.body, &gen); err != nil || gen.Key == "" {
		t.Fatalf("creating a key answered %s", created.body)
	}
	e.mustAdmin(t, "POST", "/keys", `{"name":"given","key":"`+restGivenSecret+`"}`, http.StatusCreated)
	e.mustAdmin(t, "PATCH", "/keys/given", `{"key":"`+restRotatedSecret+`"}`, http.StatusOK)
	e.mustAdmin(t, "POST", "/upstreams", `{"name":"posted","provider":"openai","base_url":"http://127.0.0.1:1/v1","api_key":"`+
		restUpPosted+`","models":["gpt-4o"],"active":false}`, http.StatusCreated)
	e.mustAdmin(t, "PATCH", "/upstreams/up-b", `{"api_key":"`+restUpPatched+`"}`, http.StatusOK)

	body := `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`
	for _, s := range []string{testKey, restCfgSecret, gen.Key, restRotatedSecret} {
		if r := e.postAs(t, s, chatPath, body); r.status != http.StatusOK {
			t.Fatalf("a request with a valid key: status %d %s", r.status, r.body)
		}
	}
	for _, s := range []string{restBogusSecret, restGivenSecret} { // unknown, and rotated away
		if r := e.postAs(t, s, chatPath, body); r.status != http.StatusUnauthorized {
			t.Fatalf("a request with secret %q: status %d, want 401", s, r.status)
		}
	}
	return []string{testKey, restCfgSecret, gen.Key, restGivenSecret, restRotatedSecret, restBogusSecret},
		[]string{"sk-upstream-up-a", restUpPatched, restUpPosted}
}

// securityAtRestGateway is two upstreams, the admin API, and the keys e2e
// and cfg-key from the config file, over the store that edit chooses.
func securityAtRestGateway(t *testing.T, edit func(*config.Config)) *env {
	t.Helper()
	_, urlA := startMock(t, "a", mock.Behavior{})
	_, urlB := startMock(t, "b", mock.Behavior{})
	return startGateway(t, spec{
		upstreams: []config.Upstream{
			upstreamAt("up-a", config.ProviderOpenAI, urlA, 0, "gpt-4o"),
			upstreamAt("up-b", config.ProviderOpenAI, urlB, 0, "gpt-4o"),
		},
		keys: []config.Key{clientKey("e2e", testKey), clientKey("cfg-key", restCfgSecret)},
		edit: func(c *config.Config) {
			withAdmin(c)
			if edit != nil {
				edit(c)
			}
		},
	})
}

// checkCellsAtRest fails if any stored value holds a client secret, or an
// upstream api_key anywhere but upstreams.api_key; and, so that a scan that
// looks in the wrong place cannot pass, unless the keys' hashes and the
// upstream keys are where they belong.
func checkCellsAtRest(t *testing.T, cells []cell, clientSecrets, upstreamKeys []string) {
	t.Helper()
	found := map[string]bool{}
	for _, c := range cells {
		for _, s := range clientSecrets {
			if strings.Contains(c.value, s) {
				t.Errorf("%s.%s holds the client secret %q: %q", c.table, c.column, s, c.value)
			}
		}
		for _, s := range upstreamKeys {
			if !strings.Contains(c.value, s) {
				continue
			}
			if c.table != "upstreams" || c.column != "api_key" {
				t.Errorf("%s.%s holds the upstream api_key %q: %q", c.table, c.column, s, c.value)
			}
			found[s] = true
		}
		if c.table == "keys" && c.column == "key_sha256" {
			found[c.value] = true
		}
	}
	for _, s := range upstreamKeys {
		if !found[s] {
			t.Errorf("upstreams.api_key does not hold %q: the scan does not look where the data is", s)
		}
	}
	for _, s := range []string{testKey, restCfgSecret, restRotatedSecret} {
		if !found[config.HashKey(s)] {
			t.Errorf("keys.key_sha256 lacks the hash of %q: the scan does not look where the keys are", s)
		}
	}
	if len(cells) < 20 {
		t.Errorf("only %d stored values scanned", len(cells))
	}
}

func TestSecurityKeysHashedAtRest(t *testing.T) {
	t.Run("sqlite", func(t *testing.T) {
		e := securityAtRestGateway(t, nil)
		clientSecrets, upstreamKeys := secretsAtRestFlow(t, e)
		if err := e.Close(); err != nil { // flushes request logs, checkpoints the WAL
			t.Fatal(err)
		}
		checkCellsAtRest(t, sqliteCells(t, e.DSN), clientSecrets, upstreamKeys)
		// The files themselves, WAL and free pages included, never held a
		// client secret.
		dir := filepath.Dir(e.DSN)
		files, err := os.ReadDir(dir)
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range files {
			b, err := os.ReadFile(filepath.Join(dir, f.Name()))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range clientSecrets {
				if bytes.Contains(b, []byte(s)) {
					t.Errorf("file %s contains the client secret %q", f.Name(), s)
				}
			}
		}
	})
	t.Run("postgres", func(t *testing.T) {
		dsn := pgSchema(t) // skips without SWITCHYARD_TEST_POSTGRES_DSN
		e := securityAtRestGateway(t, func(c *config.Config) { c.Store.Driver, c.Store.DSN = "postgres", dsn })
		clientSecrets, upstreamKeys := secretsAtRestFlow(t, e)
		if err := e.Close(); err != nil {
			t.Fatal(err)
		}
		checkCellsAtRest(t, postgresCells(t, dsn), clientSecrets, upstreamKeys)
	})
}

// sqliteCells reads every column of every row of every table of the sqlite
// file at dsn as text.
func sqliteCells(t *testing.T, dsn string) []cell {
	t.Helper()
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT name FROM sqlite_master WHERE type = 'table'`)
	if err != nil {
		t.Fatal(err)
	}
	var tables []string
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		tables = append(tables, n)
	}
	if err := rows.Close(); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(tables, "keys") || !slices.Contains(tables, "upstreams") || !slices.Contains(tables, "request_logs") {
		t.Fatalf("tables %v lack keys, upstreams or request_logs", tables)
	}
	var out []cell
	for _, table := range tables {
		rows, err := db.Query(`SELECT * FROM "` + table + `"`)
		if err != nil {
			t.Fatal(err)
		}
		cols, err := rows.Columns()
		if err != nil {
			t.Fatal(err)
		}
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			if err := rows.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			for i, v := range vals {
				s := fmt.Sprint(v)
				if b, ok := v.([]byte); ok {
					s = string(b)
				}
				out = append(out, cell{table, cols[i], s})
			}
		}
		if err := rows.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

// postgresCells reads every column of every row of every table of the
// schema dsn points at, as text.
func postgresCells(t *testing.T, dsn string) []cell {
	t.Helper()
	ctx := context.Background()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(ctx)
	rows, err := conn.Query(ctx, `SELECT table_name, column_name FROM information_schema.columns
		WHERE table_schema = current_schema() ORDER BY table_name, ordinal_position`)
	if err != nil {
		t.Fatal(err)
	}
	type col struct{ table, column string }
	var cols []col
	for rows.Next() {
		var c col
		if err := rows.Scan(&c.table, &c.column); err != nil {
			t.Fatal(err)
		}
		cols = append(cols, c)
	}
	rows.Close()
	var out []cell
	for _, c := range cols {
		rows, err := conn.Query(ctx, fmt.Sprintf(`SELECT %s::text FROM %s`,
			pgx.Identifier{c.column}.Sanitize(), pgx.Identifier{c.table}.Sanitize()))
		if err != nil {
			t.Fatal(err)
		}
		for rows.Next() {
			var v *string
			if err := rows.Scan(&v); err != nil {
				t.Fatal(err)
			}
			if v != nil {
				out = append(out, cell{c.table, c.column, *v})
			}
		}
		rows.Close()
	}
	return out
}

// ---------------------------------------------------------------------------
// 2 and 3. The admin token, compared in constant time (see the unit tests in
// internal/admin and internal/metrics), is required on every admin route.

// adminRoute is a route registered in internal/admin/admin.go.
type adminRoute struct {
	pattern string   // the mux pattern
	methods []string // the methods it takes; nil = any (the profiler, the fallback)
}

// registeredAdminRoutes reads internal/admin/admin.go and returns every
// route New registers on the API mux with the methods it takes, so that a
// route added later is covered here without anyone remembering to list it.
func registeredAdminRoutes(t *testing.T) []adminRoute {
	t.Helper()
	f, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "admin", "admin.go"), nil, 0)
	if err != nil {
		t.Fatal(err)
	}
	var out []adminRoute
	ast.Inspect(f, func(n ast.Node) bool {
		call, ok := n.(*ast.CallExpr)
		if !ok || len(call.Args) != 2 {
			return true
		}
		sel, ok := call.Fun.(*ast.SelectorExpr)
		if !ok || (sel.Sel.Name != "Handle" && sel.Sel.Name != "HandleFunc") {
			return true
		}
		if recv, ok := sel.X.(*ast.Ident); !ok || recv.Name != "api" {
			return true
		}
		lit, ok := call.Args[0].(*ast.BasicLit)
		if !ok {
			t.Fatalf("admin.go registers a route with a non-literal pattern")
		}
		pattern, err := strconv.Unquote(lit.Value)
		if err != nil {
			t.Fatal(err)
		}
		r := adminRoute{pattern: pattern}
		if cl, ok := call.Args[1].(*ast.CompositeLit); ok {
			for _, el := range cl.Elts {
				kv := el.(*ast.KeyValueExpr)
				m := kv.Key.(*ast.SelectorExpr).Sel.Name // http.MethodGet
				r.methods = append(r.methods, strings.ToUpper(strings.TrimPrefix(m, "Method")))
			}
		}
		out = append(out, r)
		return true
	})
	if len(out) < 15 {
		t.Fatalf("found only %d admin routes in admin.go: the parser no longer matches it", len(out))
	}
	return out
}

// concretePath turns a mux pattern into a path that matches it.
func concretePath(pattern string) string {
	p := strings.NewReplacer("{name}", "nope", "{model...}", "gpt-4o/x").Replace(pattern)
	if p == "/" {
		return "/admin/api/no-such-endpoint"
	}
	return p
}

func TestSecurityAdminTokenEverywhere(t *testing.T) {
	routes := registeredAdminRoutes(t)
	e := twoUpstreams(t, nil)
	allMethods := []string{"GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"}
	basicAuth := func(user, pass string) string {
		r, _ := http.NewRequest("GET", "/", nil)
		r.SetBasicAuth(user, pass)
		return r.Header.Get("Authorization")
	}
	badAuth := []struct {
		name  string
		query string
		hdr   []string
	}{
		{"no token", "", nil},
		{"wrong token", "", []string{"Authorization", "Bearer wrong-" + adminToken}},
		{"token prefix", "", []string{"Authorization", "Bearer " + adminToken[:len(adminToken)-1]}},
		{"token plus a byte", "", []string{"Authorization", "Bearer " + adminToken + "0"}},
		{"client key", "", []string{"Authorization", "Bearer " + testKey}},
		{"token in the query", "token=" + adminToken + "&access_token=" + adminToken, nil},
		{"basic auth, token as password", "", []string{"Authorization", basicAuth("admin", adminToken)}},
		{"basic auth, token as user", "", []string{"Authorization", basicAuth(adminToken, "")}},
		{"other scheme", "", []string{"Authorization", "Token " + adminToken}},
		{"cookie", "", []string{"Cookie", "token=" + adminToken}},
		{"x-api-key", "", []string{"X-Api-Key", adminToken}},
	}
	paths := []string{"/admin/api"} // the bare prefix is guarded too
	for _, r := range routes {
		paths = append(paths, concretePath(r.pattern))
	}
	n := 0
	for _, path := range paths {
		for _, method := range allMethods {
			for _, a := range badAuth {
				url := e.URL + path
				if a.query != "" {
					url += "?" + a.query
				}
				r := rawRequest(t, method, url, nil, a.hdr...)
				n++
				what := fmt.Sprintf("%s %s with %s", method, path, a.name)
				if r.status != http.StatusUnauthorized {
					t.Fatalf("%s: status %d, want 401: %s", what, r.status, r.body)
				}
				if got := r.header.Get("WWW-Authenticate"); got != `Bearer realm="switchyard-admin"` {
					t.Errorf("%s: WWW-Authenticate %q", what, got)
				}
				if got := r.header.Get("Cache-Control"); got != "no-store" {
					t.Errorf("%s: Cache-Control %q", what, got)
				}
				if method != "HEAD" && string(r.body) != `{"error":{"message":"missing or invalid admin token"}}`+"\n" {
					t.Errorf("%s: body %q, want the admin error shape", what, r.body)
				}
			}
		}
	}
	// The same paths with the token are routed (so the 401s above are the
	// guard's, not an unknown path's): a method the route does not take is
	// 405, one it takes is anything but 401. The CPU profile is skipped: it
	// runs for at least a second.
	for _, rt := range routes {
		path := concretePath(rt.pattern)
		if strings.HasSuffix(path, "/pprof/profile") {
			continue
		}
		for _, method := range allMethods {
			url := e.URL + path
			if strings.HasSuffix(path, "/pprof/trace") {
				url += "?seconds=0.01"
			}
			r := rawRequest(t, method, url, nil, "Authorization", "Bearer "+adminToken)
			switch {
			case r.status == http.StatusUnauthorized:
				t.Errorf("%s %s with the token: 401", method, path)
			case rt.methods != nil && !slices.Contains(rt.methods, method) && method != "HEAD" && r.status != http.StatusMethodNotAllowed:
				t.Errorf("%s %s with the token: status %d, want 405 (takes %v)", method, path, r.status, rt.methods)
			}
		}
	}
	t.Logf("%d unauthorised requests over %d admin paths, all 401", n, len(paths))

	// Without admin.token the admin API does not exist: 404 everywhere, with
	// or without a token.
	off := startGateway(t, spec{upstreams: []config.Upstream{upstreamAt("up-a", config.ProviderOpenAI, deadURL(t), 0, "gpt-4o")}})
	for _, path := range append(paths, "/admin/", "/admin/app.js") {
		for _, method := range allMethods {
			for _, hdr := range [][]string{nil, {"Authorization", "Bearer " + adminToken}, {"Authorization", "Bearer "}} {
				r := rawRequest(t, method, off.URL+path, nil, hdr...)
				if r.status != http.StatusNotFound {
					t.Fatalf("%s %s without admin.token (Authorization %v): status %d, want 404: %s", method, path, hdr, r.status, r.body)
				}
				if bytes.Contains(r.body, []byte("up-a")) {
					t.Fatalf("%s %s without admin.token reveals configuration: %s", method, path, r.body)
				}
			}
		}
	}
}

// ---------------------------------------------------------------------------
// 4. A restricted key reaches only its upstreams and never learns another's name.

// countingUpstream is an OpenAI-compatible upstream that counts requests and
// answers with a status that can be changed at run time.
type countingUpstream struct {
	srv      *httptest.Server
	requests atomic.Int64
	status   atomic.Int64 // 0 = 200
	mu       sync.Mutex   // guards lastAuth
	lastAuth string
}

func newCountingUpstream(t *testing.T, reply string) *countingUpstream {
	t.Helper()
	u := &countingUpstream{}
	u.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u.requests.Add(1)
		u.mu.Lock()
		u.lastAuth = r.Header.Get("Authorization") + r.Header.Get("X-Api-Key")
		u.mu.Unlock()
		body, _ := io.ReadAll(r.Body)
		if s := u.status.Load(); s != 0 {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(int(s))
			_, _ = io.WriteString(w, `{"error":{"message":"upstream says no","type":"server_error"}}`)
			return
		}
		writeChatReply(w, r, bytes.Contains(body, []byte(`"stream":true`)), reply)
	}))
	t.Cleanup(u.srv.Close)
	return u
}

// writeChatReply answers a chat request with content reply, as one JSON body
// or, for a stream, as SSE; an Anthropic Messages request gets the Anthropic
// shape.
func writeChatReply(w http.ResponseWriter, r *http.Request, stream bool, reply string) {
	if strings.HasSuffix(r.URL.Path, "/messages") {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[{"type":"text","text":%q}],`+
			`"stop_reason":"end_turn","usage":{"input_tokens":3,"output_tokens":2}}`, reply)
		return
	}
	if stream {
		w.Header().Set("Content-Type", "text/event-stream")
		fmt.Fprintf(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", reply)
		fmt.Fprint(w, "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[],\"usage\":{\"prompt_tokens\":3,\"completion_tokens\":2,\"total_tokens\":5}}\n\ndata: [DONE]\n\n")
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"c1","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],`+
		`"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`, reply)
}

func TestSecurityRestrictedKeyConfined(t *testing.T) {
	const (
		forbidden  = "alpha-forbidden" // tier 0, heavy: what routing would pick
		allowed    = "beta-allowed"
		allowedDie = "gamma-allowed-down" // nothing listens
		forbidAnt  = "delta-forbidden-anthropic"
		restricted = "sk-e2e-restricted-key"
	)
	alpha := newCountingUpstream(t, "from alpha")
	beta := newCountingUpstream(t, "from beta")
	delta := newCountingUpstream(t, "from delta")

	up := func(name, provider, url string, priority, weight int, models ...string) config.Upstream {
		u := upstreamAt(name, provider, url, priority, models...)
		u.Weight = weight
		return u
	}
	rk := clientKey("restricted", restricted)
	rk.AllowedUpstreams = []string{allowed, allowedDie}
	e := startGateway(t, spec{
		upstreams: []config.Upstream{
			up(forbidden, config.ProviderOpenAI, alpha.srv.URL, 0, 100, "gpt-4o", "gpt-4o-mini", "solo-model"),
			up(allowed, config.ProviderOpenAI, beta.srv.URL, 0, 1, "gpt-4o"),
			up(allowedDie, config.ProviderOpenAI, deadURL(t), 1, 1, "gpt-4o"),
			up(forbidAnt, config.ProviderAnthropic, delta.srv.URL, 0, 1, "claude-3-5-haiku"),
		},
		keys: []config.Key{clientKey("e2e", testKey), rk},
		edit: func(c *config.Config) {
			rt := config.Route{Model: "gpt-4o", RouteSettings: c.Defaults, FallbackModels: []string{"gpt-4o-mini"}}
			rt.Retries = 3
			c.Routes = []config.Route{rt}
			c.Circuit.FailureThreshold = 1000 // keep beta in the plan through every failure phase
		},
	})

	// check fails if a response to the restricted key names a forbidden
	// upstream anywhere: status line aside, in any header or the body.
	check := func(what string, r result) {
		t.Helper()
		var all bytes.Buffer
		_ = r.header.Write(&all)
		all.Write(r.body)
		for _, name := range []string{forbidden, forbidAnt} {
			if bytes.Contains(all.Bytes(), []byte(name)) {
				t.Errorf("%s: the answer names %q:\n%s", what, name, all.Bytes())
			}
		}
		if got := r.header.Get("X-Switchyard-Upstream"); got != "" && got != allowed && got != allowedDie {
			t.Errorf("%s: served by %q", what, got)
		}
	}
	chat := `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`
	stream := `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}`
	send := func(body string, hdr ...string) result {
		return rawRequest(t, "POST", e.URL+chatPath, strings.NewReader(body), append([]string{"Authorization", "Bearer " + restricted}, hdr...)...)
	}

	// Healthy beta: every request lands on it although alpha weighs 100×.
	for i := range 40 {
		r := send(chat)
		if i%2 == 1 {
			r = send(stream)
		}
		if r.status != http.StatusOK || r.header.Get("X-Switchyard-Upstream") != allowed {
			t.Fatalf("healthy beta: status %d on %q: %s", r.status, r.header.Get("X-Switchyard-Upstream"), r.body)
		}
		check("healthy beta", r)
	}
	// Failing beta: retries go to gamma (down) and the fallback model has no
	// upstream for this key; alpha serves both but is never tried, and the
	// error's list of failures does not mention it.
	for _, status := range []int{500, 503, 429, 401, 403} {
		beta.status.Store(int64(status))
		for i := range 6 {
			body := chat
			if i%2 == 1 {
				body = stream
			}
			r := send(body)
			if r.status < 400 {
				t.Fatalf("beta answering %d: status %d", status, r.status)
			}
			if status == 500 && i == 0 && !bytes.Contains(r.body, []byte(allowed)) {
				t.Errorf("the error does not list the key's own failures (the check for others proves nothing): %s", r.body)
			}
			check(fmt.Sprintf("beta answering %d", status), r)
		}
	}
	beta.status.Store(0)

	// Models it may not use, and the model list.
	for _, c := range []struct{ path, body string }{
		{chatPath, `{"model":"solo-model","messages":[]}`},
		{chatPath, `{"model":"gpt-4o-mini","messages":[]}`},
		{"/v1/messages", `{"model":"claude-3-5-haiku","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`},
	} {
		r := rawRequest(t, "POST", e.URL+c.path, strings.NewReader(c.body), "Authorization", "Bearer "+restricted)
		if r.status < 400 {
			t.Fatalf("%s: status %d, want an error", c.body, r.status)
		}
		check(c.body, r)
	}
	for _, hdr := range [][]string{nil, {"anthropic-version", "2023-06-01"}} {
		r := rawRequest(t, "GET", e.URL+"/v1/models", nil, append([]string{"Authorization", "Bearer " + restricted}, hdr...)...)
		if r.status != http.StatusOK || !bytes.Contains(r.body, []byte(`"gpt-4o"`)) {
			t.Fatalf("GET /v1/models: status %d %s", r.status, r.body)
		}
		for _, m := range []string{"solo-model", "gpt-4o-mini", "claude-3-5-haiku"} {
			if bytes.Contains(r.body, []byte(m)) {
				t.Errorf("GET /v1/models lists %q, served only by forbidden upstreams: %s", m, r.body)
			}
		}
		check("GET /v1/models", r)
	}
	if n := alpha.requests.Load() + delta.requests.Load(); n != 0 {
		t.Fatalf("the restricted key reached a forbidden upstream %d times", n)
	}
	if beta.requests.Load() < 40 {
		t.Fatalf("beta saw only %d requests", beta.requests.Load())
	}
	// The same requests with an unrestricted key do reach alpha: the zero
	// above is the restriction's doing.
	if r := e.post(t, chatPath, `{"model":"solo-model","messages":[]}`); r.status != http.StatusOK || alpha.requests.Load() == 0 {
		t.Fatalf("an unrestricted key: status %d, alpha saw %d requests", r.status, alpha.requests.Load())
	}
}

// ---------------------------------------------------------------------------
// 5. No request or response bodies in logs.

func TestSecurityNoBodiesInLogs(t *testing.T) {
	const (
		promptMarker = "PROMPT-MARKER-q7Zx"
		replyMarker  = "REPLY-MARKER-w3Kv"
		errMarker    = "UPSTREAM-ERROR-MARKER-p9Lm"
	)
	ok := newCountingUpstream(t, replyMarker)
	// bad answers a client error (relayed to the caller as it is) with the
	// error marker to model client-error, 500 with it to everything else.
	bad := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		w.Header().Set("Content-Type", "application/json")
		status := http.StatusInternalServerError
		if strings.Contains(r.URL.Path, "chat") && bytes.Contains(body, []byte(`"model":"client-error"`)) {
			status = http.StatusBadRequest
		}
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"message":"%s","type":"invalid_request_error"}}`, errMarker)
	}))
	t.Cleanup(bad.Close)
	var logs syncBuffer
	e := startGateway(t, spec{
		upstreams: []config.Upstream{
			upstreamAt("bad", config.ProviderOpenAI, bad.URL, 0, "gpt-4o", "client-error", "server-error"),
			upstreamAt("ok", config.ProviderOpenAI, ok.srv.URL, 1, "gpt-4o"),
			upstreamAt("ant", config.ProviderAnthropic, ok.srv.URL, 0, "claude-3-5-haiku"),
		},
		edit: func(c *config.Config) {
			c.Log.Level = "debug"
			c.Circuit.FailureThreshold = 1000
		},
		logger: debugLogger(&logs),
	})
	prompt := `"messages":[{"role":"user","content":"` + promptMarker + `"}],"user":"` + promptMarker + `"`
	cases := []struct {
		name, path, body string
		want             int
	}{
		{"chat, after a failover", chatPath, `{"model":"gpt-4o",` + prompt + `}`, 200},
		{"chat stream", chatPath, `{"model":"gpt-4o","stream":true,` + prompt + `}`, 200},
		{"anthropic", "/v1/messages", `{"model":"claude-3-5-haiku","max_tokens":5,` + prompt + `}`, 200},
		{"upstream client error relayed", chatPath, `{"model":"client-error",` + prompt + `}`, 400},
		{"every upstream fails", chatPath, `{"model":"server-error",` + prompt + `}`, 502},
		{"malformed JSON", chatPath, `{"model":"gpt-4o",` + prompt + `,`, 400},
		{"unknown model", chatPath, `{"model":"` + promptMarker + `",` + prompt + `}`, 404},
	}
	for _, c := range cases {
		r := e.post(t, c.path, c.body)
		if r.status != c.want {
			t.Fatalf("%s: status %d, want %d: %s", c.name, r.status, c.want, r.body)
		}
		if c.want == 200 && !bytes.Contains(r.body, []byte(replyMarker)) {
			t.Fatalf("%s: the reply lacks its marker (the check below would prove nothing): %s", c.name, r.body)
		}
	}
	stored := e.RequestLogs() // closes the gateway: every log line is written
	out := logs.String()
	if !strings.Contains(out, "routing decision") || !strings.Contains(out, `"level":"DEBUG"`) {
		t.Fatalf("the captured log has no debug decisions: the check below would prove nothing:\n%s", out)
	}
	if len(stored) != len(cases) {
		t.Fatalf("%d request logs stored, want %d", len(stored), len(cases))
	}
	storedJSON, err := json.Marshal(stored)
	if err != nil {
		t.Fatal(err)
	}
	// The unknown model's name is the marker by construction: a model name
	// is logged, a body is not; check that case apart.
	for _, m := range []string{replyMarker, errMarker} {
		if strings.Contains(out, m) {
			t.Errorf("the log holds %q from a body", m)
		}
		if bytes.Contains(storedJSON, []byte(m)) {
			t.Errorf("the request logs hold %q from a body", m)
		}
	}
	for _, line := range strings.Split(out, "\n") {
		if strings.Contains(line, promptMarker) && !strings.Contains(line, `"model":"`+promptMarker+`"`) {
			t.Errorf("a log line holds the prompt: %s", line)
		}
	}
	for _, l := range stored {
		b, _ := json.Marshal(l)
		if l.Model != promptMarker && bytes.Contains(b, []byte(promptMarker)) {
			t.Errorf("a request log holds the prompt: %s", b)
		}
	}
}

// ---------------------------------------------------------------------------
// 6. Upstream secrets (and client keys) appear in no output of the process.

// capturedProc is a running `switchyard serve` whose whole stdout and
// stderr are kept.
type capturedProc struct {
	cmd    *exec.Cmd
	url    string
	out    syncBuffer // stdout and stderr
	exited chan error
}

// startCaptured runs `bin serve --config cfg args...` with extra
// environment, keeps everything it prints, and waits (at most 30 s) for its
// "switchyard serving" line.
func startCaptured(t *testing.T, bin, cfg string, env []string, args ...string) *capturedProc {
	t.Helper()
	p := &capturedProc{exited: make(chan error, 1)}
	p.cmd = exec.Command(bin, append([]string{"serve", "--config", cfg}, args...)...)
	p.cmd.Env = append(os.Environ(), env...)
	p.cmd.Stdout = &p.out
	stderr, err := p.cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := p.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		sc.Buffer(nil, 1<<20)
		for sc.Scan() {
			_, _ = p.out.Write(append(sc.Bytes(), '\n'))
			var line struct{ Msg, Addr string }
			if json.Unmarshal(sc.Bytes(), &line) == nil && line.Msg == "switchyard serving" {
				addr <- line.Addr
			}
		}
		p.exited <- p.cmd.Wait()
	}()
	t.Cleanup(func() { _ = p.cmd.Process.Kill() })
	select {
	case a := <-addr:
		p.url = "http://" + a
	case err := <-p.exited:
		t.Fatalf("switchyard exited before serving: %v\n%s", err, p.out.String())
	case <-time.After(30 * time.Second):
		t.Fatal("switchyard did not log its address within 30 s")
	}
	return p
}

// echoAuthUpstream answers every request with status and a body that repeats
// the credentials it was sent, as some providers' error pages do; it closes
// probed on its first GET …/models (an active probe).
func echoAuthUpstream(t *testing.T, status int, tls bool) (url string, probed <-chan struct{}, seen func() string) {
	t.Helper()
	ch := make(chan struct{})
	var once sync.Once
	var mu sync.Mutex
	var last string
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth := r.Header.Get("Authorization") + r.Header.Get("X-Api-Key")
		mu.Lock()
		last = auth
		mu.Unlock()
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/models") {
			once.Do(func() { close(ch) })
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("X-Echo-Auth", auth)
		w.WriteHeader(status)
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s","type":"invalid_request_error"}}`, auth)
	})
	var srv *httptest.Server
	if tls {
		srv = httptest.NewUnstartedServer(h)
		srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the gateway's refused handshakes
		srv.StartTLS()
	} else {
		srv = httptest.NewServer(h)
	}
	t.Cleanup(srv.Close)
	return srv.URL, ch, func() string { mu.Lock(); defer mu.Unlock(); return last }
}

func TestSecurityUpstreamSecretsNeverLeak(t *testing.T) {
	bin := buildSwitchyard(t)
	secret := func(name string) string { return "sk-upstream-SECRET-" + name + "-xyz9" }
	names := []string{"t0-500", "t0-401", "t0-refused", "t0-tls", "t1-ok", "ant-ok", "from-env", "posted"}
	url500, probed500, seen500 := echoAuthUpstream(t, http.StatusInternalServerError, false)
	url401, probed401, _ := echoAuthUpstream(t, http.StatusUnauthorized, false)
	urlTLS, _, _ := echoAuthUpstream(t, http.StatusOK, true)
	_, urlOK := startMock(t, "t1-ok", mock.Behavior{})
	_, urlAnt := startMock(t, "ant-ok", mock.Behavior{})
	const (
		cfgClientSecret = "sk-client-SECRET-config-7777"
		envName         = "SWITCHYARD_TEST_SECURITY_UPSTREAM_KEY"
	)
	dir := t.TempDir()
	cfg := filepath.Join(dir, "switchyard.yaml")
	yaml := fmt.Sprintf(`listen: "127.0.0.1:0"
admin: {token: %q}
store: {driver: sqlite, dsn: %q}
log: {level: debug, requests: true}
health: {interval: 300ms, timeout: 250ms, probe: models}
keys:
  - {name: e2e, key: %s}
  - {name: second, key: %s}
routes:
  - {model: gpt-4o, retries: 5}
  - {model: broken, retries: 5}
upstreams:
  - {name: t0-500, provider: openai, base_url: %s/v1, api_key: %s, models: [gpt-4o, broken]}
  - {name: t0-401, provider: openai, base_url: %s/v1, api_key: %s, models: [gpt-4o, broken]}
  - {name: t0-refused, provider: openai, base_url: %s/v1, api_key: %s, models: [gpt-4o, broken]}
  - {name: t0-tls, provider: openai, base_url: %s/v1, api_key: %s, models: [gpt-4o, broken]}
  - {name: t1-ok, provider: openai, base_url: %s/v1, api_key: %s, models: [gpt-4o], priority: 1}
  - {name: ant-ok, provider: anthropic, base_url: %s/v1, api_key: %s, models: [claude-3-5-haiku]}
  - {name: from-env, provider: azure-openai, base_url: %s, api_key: "${%s}", models: [broken], priority: 2}
`, adminToken, filepath.Join(dir, "switchyard.db"), testKey, cfgClientSecret,
		url500, secret("t0-500"), url401, secret("t0-401"), deadURL(t), secret("t0-refused"), urlTLS, secret("t0-tls"),
		urlOK, secret("t1-ok"), urlAnt, secret("ant-ok"), deadURL(t), envName)
	if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	p := startCaptured(t, bin, cfg, []string{envName + "=" + secret("from-env")}, "--grace", "5s")

	// Everything the gateway says over HTTP: status line aside, headers and bodies.
	var responses bytes.Buffer
	record := func(what string, r result) result {
		fmt.Fprintf(&responses, "== %s: %d\n", what, r.status)
		_ = r.header.Write(&responses)
		responses.Write(r.body)
		responses.WriteString("\n")
		return r
	}
	client := func(method, path, body string, hdr ...string) result {
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		return record(method+" "+path, rawRequest(t, method, p.url+path, rd, append([]string{"Authorization", "Bearer " + testKey}, hdr...)...))
	}
	adminCall := func(method, path, body string) result {
		var rd io.Reader
		if body != "" {
			rd = strings.NewReader(body)
		}
		return record("admin "+method+" "+path, rawRequest(t, method, p.url+"/admin/api"+path, rd, "Authorization", "Bearer "+adminToken))
	}

	// Wait for the active probes to have sent the keys to the echoing upstreams.
	for _, ch := range []<-chan struct{}{probed500, probed401} {
		select {
		case <-ch:
		case <-time.After(10 * time.Second):
			t.Fatal("no active probe within 10 s")
		}
	}
	for i := range 6 {
		body := `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`
		if i%2 == 1 {
			body = `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}`
		}
		if r := client("POST", chatPath, body); r.status != http.StatusOK {
			t.Fatalf("chat through the failing tier: status %d %s", r.status, r.body)
		}
	}
	for range 3 {
		if r := client("POST", chatPath, `{"model":"broken","messages":[{"role":"user","content":"hi"}]}`); r.status < 500 {
			t.Fatalf("the broken model: status %d %s", r.status, r.body)
		}
	}
	if r := client("POST", "/v1/messages", `{"model":"claude-3-5-haiku","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`); r.status != http.StatusOK {
		t.Fatalf("anthropic: status %d %s", r.status, r.body)
	}
	client("GET", "/v1/models", "")
	client("GET", "/v1/models", "", "anthropic-version", "2023-06-01")
	client("POST", chatPath, `{"model":`)
	record("bad key", rawRequest(t, "POST", p.url+chatPath, strings.NewReader(`{"model":"gpt-4o"}`), "Authorization", "Bearer sk-wrong"))
	for _, path := range []string{"/metrics", "/healthz", "/readyz", "/admin/", "/admin/app.js", "/admin/style.css"} {
		if r := record("GET "+path, rawRequest(t, "GET", p.url+path, nil)); r.status != http.StatusOK {
			t.Fatalf("GET %s: status %d", path, r.status)
		}
	}
	adminCall("POST", "/upstreams", `{"name":"posted","provider":"openai","base_url":"http://127.0.0.1:1/v1","api_key":"`+secret("posted")+`","models":["gpt-4o"],"active":false}`)
	adminCall("PATCH", "/upstreams/posted", `{"weight":3}`)
	adminCall("PUT", "/upstreams/posted", `{"provider":"openai","base_url":"http://127.0.0.1:2/v1","models":["gpt-4o"],"active":false}`)
	adminCall("POST", "/upstreams", `{"name":"invalid","provider":"openai","base_url":"http://127.0.0.1:1/v1","api_key":"`+secret("posted")+` ","models":["gpt-4o"],"weight":0}`)
	// The one answer that shows a new key's secret, once.
	createdKey := rawRequest(t, "POST", p.url+"/admin/api/keys", strings.NewReader(`{"name":"created"}`), "Authorization", "Bearer "+adminToken)
	var created struct{ Key string }
	if err := json.Unmarshal(createdKey.body, &created); err != nil || created.Key == "" {
		t.Fatalf("creating a key answered %d %s", createdKey.status, createdKey.body)
	}
	if r := client("POST", chatPath, `{"model":"gpt-4o","messages":[]}`, "Authorization", "Bearer "+created.Key); r.status != http.StatusOK {
		t.Fatalf("the created key: status %d", r.status)
	}
	for _, path := range []string{
		"/upstreams", "/upstreams/t0-401", "/upstreams/from-env", "/upstreams/posted", "/keys", "/keys/created", "/routes",
		"/state", "/decisions?limit=1000", "/explain?model=gpt-4o", "/explain?model=broken&key=e2e",
		"/usage", "/usage?by=key", "/affinity?session=s", "/debug/pprof/", "/debug/pprof/cmdline",
	} {
		if r := adminCall("GET", path, ""); r.status != http.StatusOK {
			t.Fatalf("admin GET %s: status %d %s", path, r.status, r.body)
		}
	}

	// check-config on an invalid file holding the same secrets: a YAML
	// syntax error whose excerpt covers the api_key lines, and validation errors.
	bad := filepath.Join(dir, "bad.yaml")
	badYAML := strings.Replace(yaml, "  - {name: t1-ok,", "  - {name: t1-ok, models: [\n", 1)
	badValid := strings.ReplaceAll(strings.ReplaceAll(yaml, "probe: models", "probe: sometimes"), "priority: 1}", "priority: 1, weight: 0}")
	var checkOut bytes.Buffer
	for _, doc := range []string{badYAML, badValid} {
		if err := os.WriteFile(bad, []byte(doc), 0o600); err != nil {
			t.Fatal(err)
		}
		cmd := exec.Command(bin, "check-config", bad)
		cmd.Env = append(os.Environ(), envName+"="+secret("from-env"))
		out, err := cmd.CombinedOutput()
		if err == nil || !bytes.Contains(out, []byte("invalid")) {
			t.Fatalf("check-config on an invalid file: %v\n%s", err, out)
		}
		checkOut.Write(out)
	}

	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-p.exited:
		if err != nil {
			t.Fatalf("switchyard exited with %v", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("switchyard still running 20 s after SIGTERM")
	}

	// The checks below would pass vacuously if the secrets never left the
	// gateway or the output were empty.
	if got := seen500(); !strings.Contains(got, secret("t0-500")) {
		t.Fatalf("the echoing upstream saw %q, not its key", got)
	}
	procOut := p.out.String()
	for _, want := range []string{"routing decision", "t0-401", "t0-tls", "t0-refused", "admin: upstream"} {
		if !strings.Contains(procOut, want) && !strings.Contains(responses.String(), want) {
			t.Fatalf("the captured output lacks %q: the check below would prove nothing", want)
		}
	}
	if !strings.Contains(responses.String(), "status 401") || !strings.Contains(responses.String(), "connection error") {
		t.Fatalf("the responses lack the failures' details:\n%s", responses.String())
	}

	outputs := map[string]string{
		"process output":     procOut,
		"HTTP responses":     responses.String(),
		"check-config":       checkOut.String(),
		"created-key answer": string(createdKey.body),
	}
	for _, n := range names {
		s := secret(n)
		for what, text := range outputs {
			// The hint shows the last four characters by design; anything
			// longer than that is a leak.
			if strings.Contains(text, s[:len(s)-4]) {
				t.Errorf("%s holds the api_key of %s", what, n)
			}
		}
	}
	for _, s := range []string{testKey, cfgClientSecret, created.Key, adminToken} {
		for what, text := range outputs {
			if what == "created-key answer" && s == created.Key {
				continue // shown once, by design
			}
			if strings.Contains(text, s) {
				t.Errorf("%s holds the secret %q", what, s)
			}
		}
	}
	if t.Failed() {
		t.Logf("process output:\n%s", procOut)
	}
}

// ---------------------------------------------------------------------------
// 7. Request ids are random; a client's own id is kept only when it is safe.

// generatedID is the format of a gateway-made request id: 128 random bits.
var generatedID = regexp.MustCompile(`^req_[0-9a-f]{32}$`)

func TestSecurityRequestIDsAreRandom(t *testing.T) {
	_, url := startMock(t, "a", mock.Behavior{})
	var logs syncBuffer
	e := startGateway(t, spec{
		upstreams: []config.Upstream{upstreamAt("up-a", config.ProviderOpenAI, url, 0, "gpt-4o")},
		edit:      func(c *config.Config) { c.Log.Level = "debug" },
		logger:    debugLogger(&logs),
	})

	const n = 1000
	ids := make([]string, n)
	var wg sync.WaitGroup
	next := make(chan int)
	var failed atomic.Int64
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				key, body := testKey, `{"model":"gpt-4o","messages":[]}`
				switch i % 10 {
				case 7:
					key = "sk-wrong" // a 401 gets an id too
				case 8:
					body = `{"model":"nope"}` // and a 404
				}
				req, _ := http.NewRequest("POST", e.URL+chatPath, strings.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+key)
				resp, err := http.DefaultClient.Do(req)
				if err != nil {
					failed.Add(1)
					continue
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				_ = resp.Body.Close()
				ids[i] = resp.Header.Get("X-Request-Id")
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	if failed.Load() > 0 {
		t.Fatalf("%d requests failed", failed.Load())
	}

	seen := map[string]bool{}
	ones := make([]int, 128) // how often each bit of the id is set
	var prev *big.Int
	for i, id := range ids {
		if !generatedID.MatchString(id) {
			t.Fatalf("request %d: X-Request-Id %q, want req_ and 32 hex digits (128 bits)", i, id)
		}
		if seen[id] {
			t.Fatalf("request %d: X-Request-Id %q repeats", i, id)
		}
		seen[id] = true
		raw, _ := hex.DecodeString(id[4:])
		for b, by := range raw {
			for k := range 8 {
				ones[b*8+k] += int(by>>k) & 1
			}
		}
		// Not a counter: consecutive ids are not close to each other.
		v := new(big.Int).SetBytes(raw)
		if prev != nil {
			if d := new(big.Int).Abs(new(big.Int).Sub(v, prev)); d.BitLen() < 64 {
				t.Fatalf("ids %d and %d differ by %v only: sequential", i-1, i, d)
			}
		}
		prev = v
	}
	// Every one of the 128 bits is set in about half the ids. Binomial(1000,
	// ½) has a standard deviation of 15.8; 350–650 is ±9.5σ, so a random
	// generator fails this with probability below 10⁻¹⁹, while a counter, a
	// timestamp or a 64-bit value padded out fails it at once.
	for b, c := range ones {
		if c < 350 || c > 650 {
			t.Fatalf("bit %d is set in %d of %d ids: not 128 random bits", b, c, n)
		}
	}

	// A client's X-Request-Id: kept when it is 1–128 printable ASCII
	// characters without spaces, replaced by a generated one otherwise, so
	// that it cannot forge or break a log line.
	long := strings.Repeat("a", 128)
	tests := []struct {
		name, sent string
		kept       bool
	}{
		{"plain", "client-id-0001", true},
		{"128 characters", long, true},
		{"punctuation", `abc"def\ghi{}`, true},
		{"129 characters", long + "a", false},
		{"space", "a b", false},
		{"tab", "a\tb", false},
		{"non-ASCII", "idé-ünïcode", false},
		{"forged JSON", `x","level":"ERROR","msg":"forged`, true}, // printable: kept, and escaped in the log
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := e.post(t, chatPath, `{"model":"gpt-4o","messages":[]}`, "X-Request-Id", tt.sent)
			got := r.header.Get("X-Request-Id")
			switch {
			case tt.kept && got != tt.sent:
				t.Fatalf("X-Request-Id %q answered as %q, want it kept", tt.sent, got)
			case !tt.kept && !generatedID.MatchString(got):
				t.Fatalf("X-Request-Id %q answered as %q, want a generated id", tt.sent, got)
			}
		})
	}
	// Bytes net/http itself refuses (CR, LF, other control characters) never
	// reach the handler: sent over a raw connection they get a 400.
	for _, raw := range []string{"a\x1bb", "a\x7fb", "a\rb", "a\x00b"} {
		conn, err := net.Dial("tcp", e.Addr)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(conn, "POST %s HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer %s\r\nX-Request-Id: %s\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}", chatPath, testKey, raw)
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("X-Request-Id %q: %v", raw, err)
		}
		_ = resp.Body.Close()
		_ = conn.Close()
		if got := resp.Header.Get("X-Request-Id"); resp.StatusCode != http.StatusBadRequest && !generatedID.MatchString(got) {
			t.Fatalf("X-Request-Id %q: status %d, id %q", raw, resp.StatusCode, got)
		}
	}

	// The log is one JSON object per line: nothing a client sent split or forged a line.
	stored := e.RequestLogs()
	for _, line := range strings.Split(strings.TrimSpace(logs.String()), "\n") {
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("a log line is not one JSON object: %q", line)
		}
		if m["level"] == "ERROR" {
			t.Fatalf("a forged log level: %q", line)
		}
	}
	for _, l := range stored {
		if len(l.ID) == 0 || len(l.ID) > 128 || strings.ContainsFunc(l.ID, func(r rune) bool { return r <= ' ' || r > '~' }) {
			t.Fatalf("a stored request id %q", l.ID)
		}
	}
}

// debugLogger is a JSON logger at debug level writing to w.
func debugLogger(w io.Writer) *slog.Logger {
	return slog.New(slog.NewJSONHandler(w, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

// ---------------------------------------------------------------------------
// 8. The admin UI's headers.

func TestSecurityAdminUIHeaders(t *testing.T) {
	e := twoUpstreams(t, nil)
	wantCSP := func(what, csp string) {
		t.Helper()
		directives := map[string]string{}
		for _, d := range strings.Split(csp, ";") {
			name, value, _ := strings.Cut(strings.TrimSpace(d), " ")
			directives[name] = value
		}
		if directives["default-src"] != "'none'" || directives["script-src"] != "'self'" || directives["frame-ancestors"] != "'none'" {
			t.Errorf("%s: Content-Security-Policy %q, want default-src 'none', script-src 'self', frame-ancestors 'none'", what, csp)
		}
		if strings.Contains(csp, "unsafe-") || strings.Contains(csp, "*") || strings.Contains(csp, "http") {
			t.Errorf("%s: Content-Security-Policy %q allows inline code or other origins", what, csp)
		}
	}
	for _, path := range []string{"/admin/", "/admin/app.js", "/admin/request.js", "/admin/style.css"} {
		r := rawRequest(t, "GET", e.URL+path, nil)
		if r.status != http.StatusOK {
			t.Fatalf("GET %s: status %d", path, r.status)
		}
		wantCSP(path, r.header.Get("Content-Security-Policy"))
		for name, want := range map[string]string{
			"Cache-Control": "no-store", "X-Content-Type-Options": "nosniff",
			"X-Frame-Options": "DENY", "Referrer-Policy": "no-referrer",
		} {
			if got := r.header.Get(name); got != want {
				t.Errorf("GET %s: %s %q, want %q", path, name, got, want)
			}
		}
		if path != "/admin/" {
			continue
		}
		// The page works under that policy only if it has no inline script,
		// inline style or event-handler attribute.
		page := string(r.body)
		for _, tag := range regexp.MustCompile(`(?is)<script\b[^>]*>`).FindAllString(page, -1) {
			if !strings.Contains(tag, "src=") {
				t.Errorf("the page has an inline script %s", tag)
			}
		}
		for _, bad := range []*regexp.Regexp{regexp.MustCompile(`(?i)<style\b`), regexp.MustCompile(`(?i)\sstyle\s*=`),
			regexp.MustCompile(`(?i)\son[a-z]+\s*=`), regexp.MustCompile(`(?i)javascript:`)} {
			if m := bad.FindString(page); m != "" {
				t.Errorf("the page has %q, which the policy blocks", m)
			}
		}
	}
	// Every admin API answer — data, errors, refusals — is no-store and nosniff.
	for _, c := range []struct {
		method, path, auth string
		want               int
	}{
		{"GET", "/admin/api/state", adminToken, 200},
		{"GET", "/admin/api/upstreams", adminToken, 200},
		{"GET", "/admin/api/keys", adminToken, 200},
		{"GET", "/admin/api/upstreams/none", adminToken, 404},
		{"GET", "/admin/api/decisions?limit=x", adminToken, 400},
		{"GET", "/admin/api/requests/none", adminToken, 404},
		{"POST", "/admin/api/state", adminToken, 405},
		{"GET", "/admin/api/state", "wrong", 401},
	} {
		r := rawRequest(t, c.method, e.URL+c.path, nil, "Authorization", "Bearer "+c.auth)
		if r.status != c.want || !strings.HasPrefix(r.header.Get("Content-Type"), "application/json") {
			t.Fatalf("%s %s: status %d %q, want %d JSON", c.method, c.path, r.status, r.header.Get("Content-Type"), c.want)
		}
		if r.header.Get("Cache-Control") != "no-store" || r.header.Get("X-Content-Type-Options") != "nosniff" {
			t.Errorf("%s %s: Cache-Control %q, X-Content-Type-Options %q", c.method, c.path,
				r.header.Get("Cache-Control"), r.header.Get("X-Content-Type-Options"))
		}
	}
}
