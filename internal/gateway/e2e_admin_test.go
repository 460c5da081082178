package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/gateway"
	"switchyard/internal/mock"
	"switchyard/internal/store"
	"switchyard/internal/store/sqlite"
)

// adminToken is the admin token of the end-to-end gateways here.
const adminToken = "e2e-admin-token-0123"

// withAdmin is a spec edit that enables the admin API.
func withAdmin(c *config.Config) { c.Admin.Token = adminToken }

// admin calls the admin API with the admin token.
func (e *env) admin(t testing.TB, method, path, body string) result {
	t.Helper()
	var r io.Reader
	if body != "" {
		r = strings.NewReader(body)
	}
	return rawRequest(t, method, e.URL+"/admin/api"+path, r, "Authorization", "Bearer "+adminToken)
}

// mustAdmin is admin that fails the test unless the answer has status want.
func (e *env) mustAdmin(t testing.TB, method, path, body string, want int) result {
	t.Helper()
	r := e.admin(t, method, path, body)
	if r.status != want {
		t.Fatalf("%s /admin/api%s: status %d, want %d: %s", method, path, r.status, want, r.body)
	}
	return r
}

// spread sends n chat requests, 8 at a time, and counts them by the
// upstream that served them; any failure fails the test.
func (e *env) spread(t *testing.T, n int) map[string]int {
	t.Helper()
	var mu sync.Mutex
	counts := map[string]int{}
	var failed []string
	work := make(chan struct{})
	var wg sync.WaitGroup
	for range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range work {
				r := <-e.goPost(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
				mu.Lock()
				if r.status != http.StatusOK {
					failed = append(failed, string(r.body))
				}
				counts[r.header.Get("X-Switchyard-Upstream")]++
				mu.Unlock()
			}
		}()
	}
	for range n {
		work <- struct{}{}
	}
	close(work)
	wg.Wait()
	if len(failed) > 0 {
		t.Fatalf("%d of %d requests failed, first: %s", len(failed), n, failed[0])
	}
	return counts
}

// twoUpstreams starts two mocks and a gateway with the admin API over them:
// up-a and up-b, both weight 1 in tier 0, serving gpt-4o.
func twoUpstreams(t *testing.T, logger *slog.Logger) *env {
	_, urlA := startMock(t, "a", mock.Behavior{})
	_, urlB := startMock(t, "b", mock.Behavior{})
	return startGateway(t, spec{
		upstreams: []config.Upstream{
			upstreamAt("up-a", config.ProviderOpenAI, urlA, 0, "gpt-4o"),
			upstreamAt("up-b", config.ProviderOpenAI, urlB, 0, "gpt-4o"),
		},
		edit:   withAdmin,
		logger: logger,
	})
}

func TestAdminDeactivateIsImmediate(t *testing.T) {
	e := twoUpstreams(t, nil)
	before := e.spread(t, 40)
	if before["up-a"] == 0 || before["up-b"] == 0 {
		t.Fatalf("before the change %v: want both upstreams used", before)
	}

	r := e.mustAdmin(t, "PATCH", "/upstreams/up-b", `{"active":false}`, http.StatusOK)
	var got struct {
		Name   string `json:"name"`
		Active bool   `json:"active"`
	}
	if err := json.Unmarshal(r.body, &got); err != nil || got.Active || got.Name != "up-b" {
		t.Fatalf("PATCH answered %s", r.body)
	}
	after := e.spread(t, 200)
	if after["up-b"] != 0 || after["up-a"] != 200 {
		t.Fatalf("after deactivating up-b: %v, want all 200 on up-a", after)
	}

	e.mustAdmin(t, "PATCH", "/upstreams/up-b", `{"active":true}`, http.StatusOK)
	if again := e.spread(t, 40); again["up-b"] == 0 {
		t.Fatalf("after reactivating up-b: %v, want it used again", again)
	}
}

func TestAdminWeightChangeIsImmediate(t *testing.T) {
	e := twoUpstreams(t, nil)
	e.mustAdmin(t, "PATCH", "/upstreams/up-a", `{"weight":100}`, http.StatusOK)
	counts := e.spread(t, 1000)
	// Expected share of up-b: 1/101 ≈ 1%, about 10 requests; 5% is far out.
	if counts["up-b"] > 50 || counts["up-a"]+counts["up-b"] != 1000 {
		t.Fatalf("weights 100:1 gave %v, want at most 5%% (50) on up-b", counts)
	}
	if counts["up-b"] == 0 {
		t.Fatalf("weights 100:1 gave %v: weight 1 must still get some traffic", counts)
	}

	// The state shows the new weights and the shares that followed.
	var st struct {
		Upstreams []struct {
			Name            string  `json:"name"`
			Weight          int     `json:"weight"`
			Share           float64 `json:"share"`
			ConfiguredShare float64 `json:"configured_share"`
			Requests5m      int64   `json:"requests_5m"`
		} `json:"upstreams"`
	}
	if err := json.Unmarshal(e.mustAdmin(t, "GET", "/state", "", http.StatusOK).body, &st); err != nil {
		t.Fatal(err)
	}
	for _, u := range st.Upstreams {
		if u.Name == "up-a" && (u.Weight != 100 || u.ConfiguredShare < 0.99 || u.Share < 0.95 || u.Requests5m != int64(counts["up-a"])) {
			t.Fatalf("state of up-a %+v (served %d)", u, counts["up-a"])
		}
	}
}

func TestAdminChangeKeepsInFlightStream(t *testing.T) {
	// up-a streams 20 tokens at 20 tokens/s: about a second of stream.
	_, slowURL := startMock(t, "slow", mock.Behavior{TTFT: 20 * time.Millisecond, TPS: 20, CompletionTokens: 20})
	_, fastURL := startMock(t, "fast", mock.Behavior{})
	b := upstreamAt("up-b", config.ProviderOpenAI, fastURL, 0, "gpt-4o")
	b.Active = false
	e := startGateway(t, spec{
		upstreams: []config.Upstream{upstreamAt("up-a", config.ProviderOpenAI, slowURL, 0, "gpt-4o"), b},
		edit:      withAdmin,
	})

	br := bufio.NewReader(e.openStream(t, chatPath, `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"x"}]}`, "up-a").Body)
	first := readEvent(t, br)

	// While up-a streams: take it out of routing, change its weight, and
	// bring up-b in.
	e.mustAdmin(t, "PATCH", "/upstreams/up-a", `{"active":false,"weight":5}`, http.StatusOK)
	e.mustAdmin(t, "PATCH", "/upstreams/up-b", `{"active":true}`, http.StatusOK)
	if r := e.post(t, chatPath, `{"model":"gpt-4o","messages":[]}`); r.status != 200 || r.header.Get("X-Switchyard-Upstream") != "up-b" {
		t.Fatalf("a new request during the stream: status %d on %q", r.status, r.header.Get("X-Switchyard-Upstream"))
	}

	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatalf("the stream broke after the change: %v", err)
	}
	events := parseSSE(append([]byte(first), rest...))
	tokens := 0
	for _, ev := range events {
		if strings.Contains(ev.data, `"error"`) {
			t.Fatalf("error event in the stream: %s", ev.data)
		}
		if strings.Contains(ev.data, `"content":"`) {
			tokens++
		}
	}
	if len(events) == 0 || events[len(events)-1].data != "[DONE]" || tokens < 20 {
		t.Fatalf("stream ended after %d events (%d with content), last %+v; want all 20 tokens and [DONE]",
			len(events), tokens, events[len(events)-1])
	}
}

func TestAdminKeyWorksAtOnceAndStaysHashed(t *testing.T) {
	e := twoUpstreams(t, nil)
	r := e.mustAdmin(t, "POST", "/keys", `{"name":"ci","allowed_models":["gpt-4o"]}`, http.StatusCreated)
	var created struct {
		Name      string `json:"name"`
		Key       string `json:"key"`
		KeySHA256 string `json:"key_sha256"`
	}
	if err := json.Unmarshal(r.body, &created); err != nil || created.Key == "" || created.KeySHA256 != config.HashKey(created.Key) {
		t.Fatalf("create answered %s", r.body)
	}
	secret := created.Key

	// At once, through the official SDK.
	client := e.openAI(secret)
	if _, err := client.Chat.Completions.New(context.Background(), chatParams("gpt-4o", "hi")); err != nil {
		t.Fatalf("the new key does not work at once: %v", err)
	}
	// It is never shown again.
	for _, path := range []string{"/keys", "/keys/ci"} {
		if got := e.mustAdmin(t, "GET", path, "", http.StatusOK); bytes.Contains(got.body, []byte(secret)) {
			t.Fatalf("GET %s shows the secret: %s", path, got.body)
		}
	}
	// A second key with the same secret is refused with the field's path.
	dup := e.mustAdmin(t, "POST", "/keys", `{"name":"ci2","key":"`+secret+`"}`, http.StatusBadRequest)
	if !bytes.Contains(dup.body, []byte(`"path":"key","message":"same secret as key \"ci\"`)) || bytes.Contains(dup.body, []byte(secret)) {
		t.Fatalf("duplicate secret answered %s", dup.body)
	}

	// Deleting it takes effect at once too.
	e.mustAdmin(t, "DELETE", "/keys/ci", "", http.StatusNoContent)
	if got := e.postAs(t, secret, chatPath, `{"model":"gpt-4o","messages":[]}`); got.status != http.StatusUnauthorized {
		t.Fatalf("a deleted key: status %d, want 401", got.status)
	}
	e.mustAdmin(t, "POST", "/keys", `{"name":"ci","key":"`+secret+`"}`, http.StatusCreated)

	// The database files hold the hash, never the secret.
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	dir := filepath.Dir(e.DSN)
	files, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var all []byte
	for _, f := range files {
		b, err := os.ReadFile(filepath.Join(dir, f.Name()))
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(b, []byte(secret)) {
			t.Fatalf("%s contains the key's secret", f.Name())
		}
		all = append(all, b...)
	}
	if !bytes.Contains(all, []byte(config.HashKey(secret))) {
		t.Fatal("the database does not hold the key's hash: the test does not look where the keys are")
	}
}

func TestAdminNeverRevealsSecrets(t *testing.T) {
	var logs syncBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	e := twoUpstreams(t, logger)
	secrets := []string{"sk-upstream-up-a", "sk-upstream-up-b", testKey, adminToken}

	e.spread(t, 10)
	created := e.mustAdmin(t, "POST", "/keys", `{"name":"ci"}`, http.StatusCreated)
	var k struct{ Key string }
	if err := json.Unmarshal(created.body, &k); err != nil || k.Key == "" {
		t.Fatalf("create answered %s", created.body)
	}
	if r := e.postAs(t, k.Key, chatPath, `{"model":"gpt-4o","messages":[]}`); r.status != 200 {
		t.Fatalf("the new key: status %d", r.status)
	}
	secrets = append(secrets, k.Key)

	calls := []struct{ method, path, body string }{
		{"GET", "/upstreams", ""},
		{"GET", "/upstreams/up-a", ""},
		{"PATCH", "/upstreams/up-a", `{"weight":2}`},
		{"PATCH", "/upstreams/up-a", `{"api_key":"sk-…up-a"}`}, // the hint sent back keeps the key
		{"PUT", "/upstreams/up-b", `{"provider":"openai","base_url":"` + e.URL + `/nowhere/v1","models":["gpt-4o"],"active":false}`},
		{"POST", "/upstreams", `{"name":"up-c","provider":"openai","base_url":"http://127.0.0.1:1/v1","api_key":"sk-upstream-up-c","models":["gpt-4o"],"active":false}`},
		{"PATCH", "/upstreams/up-a", `{"weight":0}`},
		{"GET", "/keys", ""},
		{"GET", "/keys/ci", ""},
		{"PATCH", "/keys/e2e", `{"rpm":1000}`},
		{"GET", "/routes", ""},
		{"PUT", "/routes/gpt-4o", `{"retries":1}`},
		{"GET", "/state", ""},
		{"GET", "/explain?model=gpt-4o&key=e2e&stream=true", ""},
		{"GET", "/decisions?limit=1000", ""},
		{"GET", "/usage", ""},
		{"GET", "/usage?by=key", ""},
		{"GET", "/affinity?session=s", ""},
	}
	secrets = append(secrets, "sk-upstream-up-c")
	for _, c := range calls {
		r := e.admin(t, c.method, c.path, c.body)
		if r.status >= 500 || r.status == http.StatusUnauthorized {
			t.Fatalf("%s %s: status %d: %s", c.method, c.path, r.status, r.body)
		}
		for _, s := range secrets {
			if bytes.Contains(r.body, []byte(s)) {
				t.Fatalf("%s %s reveals %q: %s", c.method, c.path, s, r.body)
			}
		}
	}
	// The hint sent back kept the real key: up-a still serves.
	if r := e.post(t, chatPath, `{"model":"gpt-4o","messages":[]}`); r.status != 200 || r.header.Get("X-Switchyard-Upstream") != "up-a" {
		t.Fatalf("after the PATCHes: status %d on %q", r.status, r.header.Get("X-Switchyard-Upstream"))
	}
	if up := e.mustAdmin(t, "GET", "/upstreams/up-a", "", http.StatusOK); !bytes.Contains(up.body, []byte(`"api_key":"sk-…up-a"`)) {
		t.Fatalf("up-a shows %s", up.body)
	}

	for _, path := range []string{"/admin/", "/admin/app.js", "/admin/style.css"} {
		r := rawRequest(t, "GET", e.URL+path, nil)
		if r.status != 200 {
			t.Fatalf("GET %s: status %d", path, r.status)
		}
		for _, s := range secrets {
			if bytes.Contains(r.body, []byte(s)) {
				t.Fatalf("GET %s reveals %q", path, s)
			}
		}
	}

	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	out := logs.String()
	if !strings.Contains(out, "admin: upstream updated") || !strings.Contains(out, "routing decision") {
		t.Fatalf("the captured log lacks the admin changes or the decisions: the check below would prove nothing:\n%s", out)
	}
	for _, s := range secrets {
		if strings.Contains(out, s) {
			t.Fatalf("the log reveals %q", s)
		}
	}
}

func TestAdminAuthAndMounting(t *testing.T) {
	e := twoUpstreams(t, nil)
	for _, auth := range []string{"", "Bearer wrong", "Bearer " + testKey} {
		var hdr []string
		if auth != "" {
			hdr = []string{"Authorization", auth}
		}
		r := rawRequest(t, "GET", e.URL+"/admin/api/upstreams", nil, hdr...)
		if r.status != http.StatusUnauthorized || !bytes.Contains(r.body, []byte(`"message"`)) {
			t.Fatalf("Authorization %q: status %d %s, want 401 with a JSON error", auth, r.status, r.body)
		}
	}
	if r := rawRequest(t, "GET", e.URL+"/admin", nil); r.status != 200 || !bytes.Contains(r.body, []byte("<title>")) {
		t.Fatalf("GET /admin: status %d, want the dashboard after a redirect", r.status)
	}

	// Without a token the admin API does not exist.
	off := startGateway(t, spec{upstreams: []config.Upstream{upstreamAt("up-a", config.ProviderOpenAI, deadURL(t), 0, "gpt-4o")}})
	for _, path := range []string{"/admin/", "/admin/api/upstreams"} {
		if r := rawRequest(t, "GET", off.URL+path, nil, "Authorization", "Bearer "+adminToken); r.status != http.StatusNotFound {
			t.Fatalf("GET %s without admin.token: status %d, want 404", path, r.status)
		}
	}
}

func TestAdminSeparateListener(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	adminAddr := ln.Addr().String()
	_ = ln.Close()
	_, url := startMock(t, "a", mock.Behavior{})
	e := startGateway(t, spec{
		upstreams: []config.Upstream{upstreamAt("up-a", config.ProviderOpenAI, url, 0, "gpt-4o")},
		edit: func(c *config.Config) {
			withAdmin(c)
			c.Admin.Listen = adminAddr
		},
	})
	if r := e.admin(t, "GET", "/state", ""); r.status != http.StatusNotFound {
		t.Fatalf("admin API on the main listener: status %d, want 404", r.status)
	}
	r := rawRequest(t, "GET", "http://"+adminAddr+"/admin/api/state", nil, "Authorization", "Bearer "+adminToken)
	if r.status != 200 || !bytes.Contains(r.body, []byte(`"name":"up-a"`)) {
		t.Fatalf("admin listener: status %d %s", r.status, r.body)
	}
	if r := rawRequest(t, "GET", "http://"+adminAddr+"/", nil); r.status != 200 || !bytes.Contains(r.body, []byte("<title>")) {
		t.Fatalf("admin listener /: status %d, want the dashboard", r.status)
	}
	if err := e.Shutdown(); err != nil {
		t.Fatal(err)
	}
	if c, err := net.DialTimeout("tcp", adminAddr, time.Second); err == nil {
		_ = c.Close()
		t.Fatal("the admin listener outlives Serve")
	}
}

func TestAdminValidationAgainstTheRest(t *testing.T) {
	e := twoUpstreams(t, nil)
	cases := []struct {
		name, method, path, body string
		status                   int
		field                    string
	}{
		{"unknown allowed upstream", "PATCH", "/keys/e2e", `{"allowed_upstreams":["ghost"]}`, 400, "allowed_upstreams[0]"},
		{"fallback nobody serves", "PUT", "/routes/gpt-4o", `{"fallback_models":["o9"]}`, 400, "fallback_models[0]"},
		{"invalid weight", "PATCH", "/upstreams/up-a", `{"weight":101}`, 400, "weight"},
		{"bad strategy", "PUT", "/routes/gpt-4o", `{"strategy":"fastest"}`, 400, "strategy"},
		{"duplicate upstream", "POST", "/upstreams", `{"name":"up-a","provider":"openai-compatible","base_url":"http://x/v1","models":["m"]}`, 409, ""},
		{"unknown upstream", "PATCH", "/upstreams/ghost", `{"weight":2}`, 404, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := e.mustAdmin(t, c.method, c.path, c.body, c.status)
			if c.field != "" && !bytes.Contains(r.body, []byte(`"path":"`+c.field+`"`)) {
				t.Fatalf("answer %s, want a field error at %s", r.body, c.field)
			}
		})
	}
	// Nothing above changed routing: both upstreams still serve, at weight 1.
	if counts := e.spread(t, 40); counts["up-a"] == 0 || counts["up-b"] == 0 {
		t.Fatalf("after rejected changes: %v", counts)
	}
	// A valid route change is stored and used.
	e.mustAdmin(t, "PUT", "/routes/gpt-4o", `{"strategy":"failover"}`, http.StatusOK)
	if counts := e.spread(t, 20); counts["up-a"] != 20 {
		t.Fatalf("failover route: %v, want all on up-a (name order at equal weight)", counts)
	}
}

func TestAdminUsage(t *testing.T) {
	now := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	dsn := filepath.Join(t.TempDir(), "switchyard.db")
	st, err := sqlite.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	logs := []store.RequestLog{
		// Costs as logged when served, at up-a's price then (2 and 10 USD
		// per million tokens); up-a's price today is another.
		{ID: "yesterday", Time: now.Add(-14 * time.Hour), Key: "e2e", Model: "gpt-4o", Upstream: "up-a", Status: 200, InputTokens: 100, OutputTokens: 100, CostUSD: 0.0012},
		{ID: "old", Time: now.Add(-2 * time.Hour), Key: "e2e", Model: "gpt-4o", Upstream: "up-a", Status: 200, InputTokens: 1000, OutputTokens: 1000, CostUSD: 0.012},
		{ID: "1", Time: now.Add(-30 * time.Minute), Key: "e2e", Model: "gpt-4o", Upstream: "up-a", Status: 200, InputTokens: 1_000_000, OutputTokens: 100_000,
			CacheReadTokens: 500_000, CacheWriteTokens: 1000, CostUSD: 3},
		{ID: "2", Time: now.Add(-20 * time.Minute), Key: "other", Model: "gpt-4o-mini", Upstream: "up-a", Status: 200, InputTokens: 10, OutputTokens: 20, CostUSD: 0.00022},
		{ID: "3", Time: now.Add(-10 * time.Minute), Key: "e2e", Model: "gpt-4o", Upstream: "up-b", Status: 200, InputTokens: 5, OutputTokens: 7, ErrorClass: "stream_interrupted", Unpriced: true},
		{ID: "4", Time: now.Add(-time.Minute), Key: "e2e", Status: 502, ErrorClass: "no_upstream_available"},
	}
	if err := st.InsertRequestLogs(context.Background(), logs); err != nil {
		t.Fatal(err)
	}
	a := upstreamAt("up-a", config.ProviderOpenAI, deadURL(t), 0, "gpt-4o")
	a.Price = config.Price{InputPerMTok: 200, OutputPerMTok: 1000}
	cfg := config.Default()
	cfg.Listen, cfg.Store.DSN, cfg.Health.Interval, cfg.Admin.Token = "127.0.0.1:0", dsn, 0, adminToken
	k := config.DefaultKey()
	k.Name, k.Key = "e2e", testKey
	cfg.Keys = []config.Key{k}
	cfg.Upstreams = []config.Upstream{a, upstreamAt("up-b", config.ProviderOpenAI, deadURL(t), 0, "gpt-4o")}
	e := serveGateway(t, &cfg, gateway.Options{Store: st, Clock: clock.NewFake(now), Seed: 1})

	type row struct {
		Name         string  `json:"name"`
		Requests     int64   `json:"requests"`
		InputTokens  int64   `json:"input_tokens"`
		OutputTokens int64   `json:"output_tokens"`
		CacheRead    int64   `json:"cache_read_tokens"`
		CacheWrite   int64   `json:"cache_write_tokens"`
		USD          float64 `json:"usd"`
		Unpriced     int64   `json:"unpriced"`
		Errors       int64   `json:"errors"`
	}
	cases := []struct {
		query string
		want  []row
	}{
		{"", []row{ // the last 24 hours, by upstream
			{Name: "(none)", Requests: 1, Errors: 1},
			{Name: "up-a", Requests: 4, InputTokens: 1_001_110, OutputTokens: 101_120, CacheRead: 500_000, CacheWrite: 1000, USD: 0.0012 + 0.012 + 3 + 0.00022},
			{Name: "up-b", Requests: 1, InputTokens: 5, OutputTokens: 7, Unpriced: 1, Errors: 1},
		}},
		{"?by=day", []row{
			{Name: "2025-05-31", Requests: 1, InputTokens: 100, OutputTokens: 100, USD: 0.0012},
			{Name: "2025-06-01", Requests: 5, InputTokens: 1_001_015, OutputTokens: 101_027, CacheRead: 500_000, CacheWrite: 1000,
				USD: 0.012 + 3 + 0.00022, Unpriced: 1, Errors: 2},
		}},
		{"?by=model", []row{ // the client's model, whichever upstream served it
			{Name: "(none)", Requests: 1, Errors: 1},
			{Name: "gpt-4o", Requests: 4, InputTokens: 1_001_105, OutputTokens: 101_107, CacheRead: 500_000, CacheWrite: 1000,
				USD: 0.0012 + 0.012 + 3, Unpriced: 1, Errors: 1},
			{Name: "gpt-4o-mini", Requests: 1, InputTokens: 10, OutputTokens: 20, USD: 0.00022},
		}},
		{"?since=1h", []row{
			{Name: "(none)", Requests: 1, Errors: 1},
			{Name: "up-a", Requests: 2, InputTokens: 1_000_010, OutputTokens: 100_020, CacheRead: 500_000, CacheWrite: 1000, USD: 3 + 0.00022},
			{Name: "up-b", Requests: 1, InputTokens: 5, OutputTokens: 7, Unpriced: 1, Errors: 1},
		}},
		{"?since=" + now.Add(-15*time.Minute).Format(time.RFC3339) + "&by=key", []row{
			{Name: "e2e", Requests: 2, InputTokens: 5, OutputTokens: 7, Unpriced: 1, Errors: 2},
		}},
		{"?since=25m&by=key", []row{
			{Name: "e2e", Requests: 2, InputTokens: 5, OutputTokens: 7, Unpriced: 1, Errors: 2},
			{Name: "other", Requests: 1, InputTokens: 10, OutputTokens: 20, USD: 0.00002 + 0.0002},
		}},
	}
	for _, c := range cases {
		t.Run(c.query, func(t *testing.T) {
			var got []row
			if err := json.Unmarshal(e.mustAdmin(t, "GET", "/usage"+c.query, "", http.StatusOK).body, &got); err != nil {
				t.Fatal(err)
			}
			if len(got) != len(c.want) {
				t.Fatalf("rows %+v, want %+v", got, c.want)
			}
			for i := range got {
				w, g := c.want[i], got[i]
				gUSD, wUSD := g.USD, w.USD
				g.USD, w.USD = 0, 0
				if g != w || abs(gUSD-wUSD) > 1e-9 {
					t.Fatalf("row %d: %+v usd %v, want %+v usd %v", i, g, gUSD, w, wUSD)
				}
			}
		})
	}
}

func abs(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}

// TestFavicon: a browser's request for the icon is answered with the
// dashboard's SVG, on the gateway's own address whether or not the admin
// API is enabled, and under /admin/; never with the client API's 404.
func TestFavicon(t *testing.T) {
	_, url := startMock(t, "a", mock.Behavior{})
	ups := []config.Upstream{upstreamAt("up-a", config.ProviderOpenAI, url, 0, "gpt-4o")}
	withAdminOn := startGateway(t, spec{upstreams: ups, edit: withAdmin})
	withAdminOff := startGateway(t, spec{upstreams: ups})
	cases := []struct {
		name, url string
		method    string
		status    int
	}{
		{"gateway with admin", withAdminOn.URL + "/favicon.ico", "GET", http.StatusOK},
		{"gateway without admin", withAdminOff.URL + "/favicon.ico", "GET", http.StatusOK},
		{"under the dashboard", withAdminOn.URL + "/admin/favicon.ico", "GET", http.StatusOK},
		{"the dashboard's link", withAdminOn.URL + "/admin/favicon.svg", "GET", http.StatusOK},
		{"head", withAdminOff.URL + "/favicon.ico", "HEAD", http.StatusOK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := rawRequest(t, c.method, c.url, nil)
			if r.status != c.status || r.header.Get("Content-Type") != "image/svg+xml" {
				t.Fatalf("%s %s: status %d Content-Type %q, want %d image/svg+xml", c.method, c.url, r.status, r.header.Get("Content-Type"), c.status)
			}
			if c.method == "GET" && !bytes.HasPrefix(r.body, []byte("<svg")) {
				t.Fatalf("the body is not the SVG icon: %.80s", r.body)
			}
		})
	}
}
