package gateway_test

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"net/url"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"switchyard/internal/config"
	"switchyard/internal/gateway"
	"switchyard/internal/mock"
)

// What the other bad-input tests already cover, so this file does not:
// TestBadInputThroughServer (e2e_errors_test.go) sends every gateway error
// of docs/reference.md#errors over HTTP/1.1 — malformed, truncated and empty
// JSON, a non-object body, missing, null, empty and non-string model, a
// non-boolean stream, unknown keys, forbidden and unknown models, 413 with a
// small max_body_bytes, unknown paths and wrong methods, in both error shapes.
// TestRawConnectionHardening (e2e_hardening_test.go) sends raw requests:
// HTTP/1.0, 1,000 headers, invalid UTF-8, max_body_bytes+1 at the default
// 10 MiB, unknown endpoints. TestRawChunkedBodyNeverEnds holds a chunked
// body open. This file adds: every row again over h2c, the wrong types the
// gateway leaves to the upstream (max_tokens), the Anthropic shape of the
// raw-only rows, encoded traversal under /admin with and without the admin
// token, slow clients (headers and bodies trickled) and the heap afterwards.

// h2cClient is an HTTP client that speaks HTTP/2 without TLS (prior knowledge).
func h2cClient() *http.Client {
	tr := &http.Transport{}
	tr.Protocols = new(http.Protocols)
	tr.Protocols.SetUnencryptedHTTP2(true)
	return &http.Client{Transport: tr}
}

// clientProtocols are the client protocols every matrix row is sent with.
var clientProtocols = []struct {
	name   string
	client func() *http.Client
	major  int // the response's ProtoMajor
}{
	{"http1.1", func() *http.Client { return &http.Client{Transport: &http.Transport{}} }, 1},
	{"h2c", h2cClient, 2},
}

// strictUpstream is an upstream that, like the real APIs, rejects a
// max_tokens that is not a positive integer with 400 in its protocol's
// error shape, and otherwise answers as the mock does.
func strictUpstream(t *testing.T, name string) string {
	t.Helper()
	m := mock.New(mock.Options{Name: name})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		if v := gjson.GetBytes(body, "max_tokens"); v.Exists() && (v.Type != gjson.Number || v.Num != float64(int64(v.Num)) || v.Num < 1 || v.Num > 1<<20) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusBadRequest)
			if strings.HasSuffix(r.URL.Path, "/messages") {
				_, _ = io.WriteString(w, `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: Input should be a valid integer"}}`)
			} else {
				_, _ = io.WriteString(w, `{"error":{"message":"Invalid type for 'max_tokens': expected an integer.","type":"invalid_request_error","param":"max_tokens","code":"invalid_type"}}`)
			}
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		m.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestBadInputMatrix sends each bad input over HTTP/1.1 and h2c through the
// real server and checks status and error shape (OpenAI on the OpenAI
// endpoints, Anthropic on /v1/messages); then that the heap is bounded.
func TestBadInputMatrix(t *testing.T) {
	_, oaURL := startMock(t, "oa", mock.Behavior{CompletionTokens: 3})
	_, antURL := startMock(t, "ant", mock.Behavior{CompletionTokens: 3})
	e := startGateway(t, spec{upstreams: []config.Upstream{
		upstreamAt("oa", config.ProviderOpenAI, oaURL, 0, "gpt-4o"),
		upstreamAt("ant", config.ProviderAnthropic, antURL, 0, "claude-3-5-haiku"),
		upstreamAt("strict-oa", config.ProviderOpenAI, strictUpstream(t, "strict-oa"), 0, "strict-gpt"),
		upstreamAt("strict-ant", config.ProviderAnthropic, strictUpstream(t, "strict-ant"), 0, "strict-claude"),
	}})
	maxBody := int(config.Default().Defaults.MaxBodyBytes)

	const (
		chat     = "/v1/chat/completions"
		messages = "/v1/messages"
	)
	oaBody := func(fields string) string {
		return `{"model":"gpt-4o",` + fields + `"messages":[{"role":"user","content":"hi"}]}`
	}
	antBody := func(fields string) string {
		return `{"model":"claude-3-5-haiku",` + fields + `"messages":[{"role":"user","content":"hi"}]}`
	}
	sized := func(prefix string, n int) string { // a JSON body of exactly n bytes
		suffix := `"}]}`
		return prefix + strings.Repeat("x", n-len(prefix)-len(suffix)) + suffix
	}
	bigOA := sized(`{"model":"gpt-4o","messages":[{"role":"user","content":"`, maxBody+1)
	bigAnt := sized(`{"model":"claude-3-5-haiku","max_tokens":5,"messages":[{"role":"user","content":"`, maxBody+1)
	manyHeaders := make([]string, 0, 2000)
	for i := range 1000 {
		manyHeaders = append(manyHeaders, fmt.Sprintf("X-Filler-%d", i), "v")
	}

	tests := []struct {
		name    string
		method  string // default POST
		path    string
		body    string
		chunked bool     // send without Content-Length
		header  []string // extra name/value pairs
		status  int
		shape   errShape
		code    string // OpenAI error.code or Anthropic error.type
		// upstream: the answer came from this upstream after one attempt
		// (an upstream's own 400 passed through unchanged).
		upstream string
		check    func(t *testing.T, body []byte)
	}{
		// Controls: the same gateway serves good requests on both protocols.
		{name: "good chat", path: chat, body: oaBody(""), status: 200, upstream: "oa"},
		{name: "good stream", path: chat, body: oaBody(`"stream":true,`), status: 200, upstream: "oa",
			check: func(t *testing.T, body []byte) {
				if ev := parseSSE(body); len(ev) == 0 || ev[len(ev)-1].data != "[DONE]" {
					t.Errorf("stream did not end with [DONE]: %s", body)
				}
			}},
		{name: "good messages", path: messages, body: antBody(`"max_tokens":5,`), status: 200, upstream: "ant"},
		{name: "stream null is absent", path: chat, body: oaBody(`"stream":null,`), status: 200, upstream: "oa"},

		// JSON the gateway rejects itself.
		{name: "truncated JSON anthropic", path: messages, body: `{"model":"claude-3-5-haiku","messages":[{"role":"user","content":"hi"`, status: 400, shape: anthropicError, code: "invalid_request_error"},
		{name: "empty body anthropic", path: messages, body: ``, status: 400, shape: anthropicError, code: "invalid_request_error"},
		{name: "malformed JSON", path: chat, body: `{"model":"gpt-4o",}`, status: 400, shape: openAIError, code: "invalid_json"},
		{name: "invalid UTF-8", path: chat, body: oaBody(`"user":"` + "\xff\xfe" + `",`), status: 400, shape: openAIError, code: "invalid_json"},
		{name: "invalid UTF-8 anthropic", path: messages, body: antBody(`"system":"` + "\xc3\x28" + `",`), status: 400, shape: anthropicError, code: "invalid_request_error"},
		{name: "lone surrogate escape is valid JSON", path: chat, body: oaBody(`"user":"\ud800",`), status: 200, upstream: "oa"},

		// Wrong types of model and stream: the gateway's 400.
		{name: "model array", path: chat, body: `{"model":["gpt-4o"]}`, status: 400, shape: openAIError, code: "invalid_request"},
		{name: "model object", path: chat, body: `{"model":{"id":"gpt-4o"}}`, status: 400, shape: openAIError, code: "invalid_request"},
		{name: "model bool anthropic", path: messages, body: `{"model":true,"max_tokens":5}`, status: 400, shape: anthropicError, code: "invalid_request_error"},
		{name: "model number anthropic", path: messages, body: `{"model":42,"max_tokens":5}`, status: 400, shape: anthropicError, code: "invalid_request_error"},
		{name: "stream string", path: chat, body: oaBody(`"stream":"true",`), status: 400, shape: openAIError, code: "invalid_request"},
		{name: "stream object anthropic", path: messages, body: antBody(`"max_tokens":5,"stream":{},`), status: 400, shape: anthropicError, code: "invalid_request_error"},

		// Wrong types of max_tokens: the gateway does not validate the
		// generation parameters (each provider has its own rules); it
		// forwards once, without failover, and passes the upstream's 400 on.
		{name: "max_tokens string", path: chat, body: `{"model":"strict-gpt","max_tokens":"100","messages":[]}`, status: 400, shape: openAIError, code: "invalid_type", upstream: "strict-oa"},
		{name: "max_tokens negative", path: chat, body: `{"model":"strict-gpt","max_tokens":-1,"messages":[]}`, status: 400, shape: openAIError, code: "invalid_type", upstream: "strict-oa"},
		{name: "max_tokens fraction", path: chat, body: `{"model":"strict-gpt","max_tokens":1.5,"messages":[]}`, status: 400, shape: openAIError, code: "invalid_type", upstream: "strict-oa"},
		{name: "max_tokens huge", path: chat, body: `{"model":"strict-gpt","max_tokens":1e400,"messages":[]}`, status: 400, shape: openAIError, code: "invalid_type", upstream: "strict-oa"},
		{name: "max_tokens object", path: chat, body: `{"model":"strict-gpt","max_tokens":{},"messages":[]}`, status: 400, shape: openAIError, code: "invalid_type", upstream: "strict-oa"},
		{name: "max_tokens string anthropic", path: messages, body: `{"model":"strict-claude","max_tokens":"5","messages":[]}`, status: 400, shape: anthropicError, code: "invalid_request_error", upstream: "strict-ant"},
		{name: "max_tokens array anthropic", path: messages, body: `{"model":"strict-claude","max_tokens":[5],"messages":[]}`, status: 400, shape: anthropicError, code: "invalid_request_error", upstream: "strict-ant"},
		{name: "max_tokens valid", path: messages, body: `{"model":"strict-claude","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`, status: 200, upstream: "strict-ant"},

		// Sizes at the default 10 MiB limit.
		{name: "max_body_bytes+1", path: chat, body: bigOA, status: 413, shape: openAIError, code: "request_too_large"},
		{name: "max_body_bytes+1 chunked", path: chat, body: bigOA, chunked: true, status: 413, shape: openAIError, code: "request_too_large"},
		{name: "max_body_bytes+1 anthropic", path: messages, body: bigAnt, status: 413, shape: anthropicError, code: "request_too_large"},
		{name: "max_body_bytes+1 chunked anthropic", path: messages, body: bigAnt, chunked: true, status: 413, shape: anthropicError, code: "request_too_large"},

		// Headers: 1,000 small ones fit in MaxHeaderBytes and are served.
		{name: "1000 small headers", path: chat, body: oaBody(""), header: manyHeaders, status: 200, upstream: "oa"},

		// Unknown endpoints in the caller's shape.
		{name: "unknown endpoint", method: http.MethodGet, path: "/v1/fine_tuning/jobs", status: 404, shape: openAIError, code: "not_found"},
		{name: "unknown endpoint anthropic", path: "/v1/messages/batches", body: antBody(""), status: 404, shape: anthropicError, code: "not_found_error"},
		{name: "unknown endpoint anthropic version header", method: http.MethodGet, path: "/v1/nope", header: []string{"anthropic-version", "2023-06-01"}, status: 404, shape: anthropicError, code: "not_found_error"},
	}
	clients := make([]*http.Client, len(clientProtocols))
	for i, proto := range clientProtocols {
		clients[i] = proto.client()
	}
	for i, proto := range clientProtocols {
		client := clients[i]
		for _, tc := range tests {
			t.Run(proto.name+"/"+tc.name, func(t *testing.T) {
				req := tableRequest(t, tc.method, e.URL+tc.path, tc.body, tc.chunked)
				req.Header.Set("Authorization", "Bearer "+testKey)
				req.Header.Set("Content-Type", "application/json")
				for i := 0; i+1 < len(tc.header); i += 2 {
					req.Header.Set(tc.header[i], tc.header[i+1])
				}
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				raw, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err != nil {
					t.Fatal(err)
				}
				if resp.ProtoMajor != proto.major {
					t.Fatalf("answered over %s, want HTTP/%d", resp.Proto, proto.major)
				}
				if resp.StatusCode != tc.status {
					t.Fatalf("status %d, want %d: %.300s", resp.StatusCode, tc.status, raw)
				}
				checkErrorShape(t, raw, resp.Header, tc.shape, tc.code)
				if tc.upstream != "" {
					if up, n := resp.Header.Get("X-Switchyard-Upstream"), resp.Header.Get("X-Switchyard-Attempts"); up != tc.upstream || n != "1" {
						t.Errorf("answered by %q after %s attempts, want %s after 1", up, n, tc.upstream)
					}
				}
				if tc.check != nil {
					tc.check(t, raw)
				}
			})
		}
	}

	t.Run("heap bounded after concurrent oversized bodies", func(t *testing.T) {
		// 32 bodies of max_body_bytes+1 at once (16 per protocol): each is
		// refused after at most max_body_bytes is read, and none is kept.
		var wg sync.WaitGroup
		var answered atomic.Int64
		errs := make(chan error, 32)
		for i := range 32 {
			proto, client := clientProtocols[i%2], clients[i%2]
			wg.Go(func() {
				req, err := http.NewRequest(http.MethodPost, e.URL+chat, strings.NewReader(bigOA))
				if err != nil {
					errs <- err
					return
				}
				req.Header.Set("Authorization", "Bearer "+testKey)
				if i%4 >= 2 {
					req.Body, req.ContentLength = io.NopCloser(strings.NewReader(bigOA)), -1
				}
				resp, err := client.Do(req)
				if err != nil {
					// The gateway answers 413 and closes the connection once
					// max_body_bytes is read; a client still sending the
					// rest may see its write fail before it reads the 413
					// (on a busy machine): refused all the same.
					if !isWriteRefused(err) {
						errs <- err
					}
					return
				}
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				if resp.StatusCode != http.StatusRequestEntityTooLarge {
					errs <- fmt.Errorf("request %d over %s: status %d, want 413", i, proto.name, resp.StatusCode)
					return
				}
				answered.Add(1)
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
		if answered.Load() == 0 {
			t.Error("no oversized request got its 413")
		}
		assertHeapBounded(t)
	})
}

// isWriteRefused reports whether err is a client's write failing because
// the server closed the connection on it (broken pipe, reset).
func isWriteRefused(err error) bool {
	return errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNRESET)
}

// heapInuseBound is the most heap (HeapInuse after a GC) the test process
// may hold after a bad-input matrix: the gateway, its mocks, the test's own
// ~20 MiB of request bodies and slack (about 10–30 MiB are in use when it
// passes). A gateway that kept three of the 32 refused 10 MiB bodies would
// exceed it.
const heapInuseBound = 64 << 20

// assertHeapBounded fails the test when HeapInuse after a GC is at or
// above heapInuseBound.
func assertHeapBounded(t *testing.T) {
	t.Helper()
	runtime.GC()
	runtime.GC() // a second cycle frees what the first one's finalizers released
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	t.Logf("HeapInuse after GC: %d MiB (bound %d MiB)", ms.HeapInuse>>20, heapInuseBound>>20)
	if ms.HeapInuse >= heapInuseBound {
		t.Fatalf("HeapInuse after GC = %d MiB, want < %d MiB", ms.HeapInuse>>20, heapInuseBound>>20)
	}
}

// checkErrorShape checks an error body's protocol shape and code
// (error.code for OpenAI, error.type for Anthropic); noError checks that
// the body is no error.
func checkErrorShape(t *testing.T, raw []byte, h http.Header, shape errShape, code string) {
	t.Helper()
	if shape == noError {
		if gjson.GetBytes(raw, "error").Exists() {
			t.Errorf("unexpected error body %.300s", raw)
		}
		return
	}
	if !gjson.ValidBytes(raw) {
		t.Fatalf("error body is not JSON: %.300q", raw)
	}
	if ct := h.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
		t.Errorf("error Content-Type %q", ct)
	}
	got := gjson.ParseBytes(raw)
	eo := got.Get("error")
	switch shape {
	case openAIError:
		if !eo.IsObject() || eo.Get("message").String() == "" || eo.Get("type").String() == "" || got.Get("type").Exists() {
			t.Errorf(`want OpenAI {"error":{"message","type","code"}}, got %.300s`, raw)
		}
		if c := eo.Get("code").String(); c != code {
			t.Errorf("error.code = %q, want %q (%.300s)", c, code, raw)
		}
	case anthropicError:
		if got.Get("type").String() != "error" || !eo.IsObject() || eo.Get("message").String() == "" {
			t.Errorf(`want Anthropic {"type":"error","error":{"type","message"}}, got %.300s`, raw)
		}
		if typ := eo.Get("type").String(); typ != code {
			t.Errorf("error.type = %q, want %q (%.300s)", typ, code, raw)
		}
	}
}

// rawAdminExchange sends method target over a raw HTTP/1.1 connection, with
// the admin token when token is set, and follows redirects (at most 5) the
// same way. It returns every answer, the last one last.
func rawAdminExchange(t *testing.T, addr, method, target string, token bool) []result {
	t.Helper()
	var out []result
	for range 6 {
		var req strings.Builder
		fmt.Fprintf(&req, "%s %s HTTP/1.1\r\nHost: gw\r\nConnection: close\r\n", method, target)
		if token {
			req.WriteString("Authorization: Bearer " + hardeningToken + "\r\n")
		}
		req.WriteString("\r\n")
		got := rawExchange(t, addr, strings.NewReader(req.String()))
		out = append(out, got)
		if got.status < 300 || got.status > 399 {
			return out
		}
		base, err := url.Parse(target)
		if err != nil {
			t.Fatalf("parsing %q: %v", target, err)
		}
		loc, err := url.Parse(got.header.Get("Location"))
		// Only a path on this server: never another host (an open redirect).
		if err != nil || loc.Scheme != "" || loc.Host != "" || strings.HasPrefix(loc.Path, "//") {
			t.Fatalf("%s %s redirects to %q, outside this server", method, target, got.header.Get("Location"))
		}
		if got.status == http.StatusMovedPermanently || got.status == http.StatusFound {
			method = http.MethodGet
		}
		target = base.ResolveReference(loc).RequestURI()
	}
	t.Fatalf("%s: more than 5 redirects: %+v", target, out)
	return nil
}

// statuses lists a redirect chain's statuses, for the test log.
func statuses(chain []result) []int {
	out := make([]int, len(chain))
	for i, r := range chain {
		out[i] = r.status
	}
	return out
}

// TestBadInputAdminTraversal: dot segments, encoded dots and slashes,
// double slashes and CONNECT (which ServeMux does not clean) under /admin
// never reach the admin API without the token, never serve anything but
// the embedded dashboard's files, and never redirect off the server.
func TestBadInputAdminTraversal(t *testing.T) {
	e := startHardeningGateway(t)
	// The dashboard's files, as served at their canonical paths.
	var dashboard [][]byte
	for _, p := range []string{"/admin/", "/admin/app.js", "/admin/style.css"} {
		r := rawRequest(t, http.MethodGet, e.URL+p, nil)
		if r.status != http.StatusOK || len(r.body) == 0 {
			t.Fatalf("dashboard file %s: %d", p, r.status)
		}
		dashboard = append(dashboard, r.body)
	}
	isDashboard := func(b []byte) bool {
		for _, d := range dashboard {
			if bytes.Equal(b, d) {
				return true
			}
		}
		return false
	}

	tests := []struct {
		name, method, target string
		// api: the path resolves to an admin API route, so without the
		// token the answer is 401 and with it the API's 200 — proving the
		// row reaches the API at all.
		api bool
	}{
		{name: "dot segments inside the API", target: "/admin/api/../api/keys", api: true},
		// Encoded dots are not dot segments to ServeMux: "/admin/%2e%2e/…"
		// reaches the dashboard, whose file server resolves it inside the
		// embedded tree, and "/admin/api/%2e%2e/…" is an unknown API path.
		{name: "encoded dots from the dashboard", target: "/admin/%2e%2e/admin/api/keys"},
		{name: "encoded dots upper case", target: "/admin/%2E%2E/admin/api/upstreams"},
		{name: "encoded dots inside the API", target: "/admin/api/%2e%2e/api/keys"},
		{name: "double slash", target: "//admin/api/keys", api: true},
		{name: "double slash inside", target: "/admin//api/keys", api: true},
		{name: "dot segment", target: "/admin/./api/keys", api: true},
		{name: "encoded dots to pprof", target: "/admin/%2e%2e/admin/api/debug/pprof/cmdline"},
		{name: "dots to pprof", target: "/admin/x/../api/debug/pprof/cmdline", api: true},
		{name: "dots from a client path", target: "/v1/../admin/api/keys", api: true},
		{name: "encoded slash and dots", target: "/admin/..%2fadmin/api/keys"},
		{name: "encoded slash", target: "/admin/api%2fkeys"},
		{name: "encoded backslash", target: "/admin/..%5cadmin/api/keys"},
		{name: "double encoded dots", target: "/admin/%252e%252e/admin/api/keys"},
		{name: "dots out of admin", target: "/admin/api/../../etc/passwd"},
		{name: "encoded dots out of admin", target: "/admin/%2e%2e/%2e%2e/%2e%2e/etc/passwd"},
		{name: "encoded dots to the dashboard", target: "/admin/%2e%2e/"},
		{name: "dashboard file through dots", target: "/admin/../admin/index.html"},
		{name: "embedded tree root", target: "/admin/%2e%2e/web/index.html"},
		{name: "null byte", target: "/admin/api/keys%00"},
		{name: "open redirect double slash", target: "//evil.example/admin/"},
		{name: "open redirect inside admin", target: "/admin//evil.example/%2e%2e/"},
		{name: "CONNECT dots into the API", method: "CONNECT", target: "/admin/api/../api/keys"},
		{name: "CONNECT dots from the dashboard", method: "CONNECT", target: "/admin/../admin/api/keys"},
		{name: "CONNECT encoded dots", method: "CONNECT", target: "/admin/%2e%2e/admin/api/keys"},
	}
	for _, tc := range tests {
		method := tc.method
		if method == "" {
			method = http.MethodGet
		}
		t.Run(tc.name+"/without token", func(t *testing.T) {
			chain := rawAdminExchange(t, e.Addr, method, tc.target, false)
			t.Logf("%s %s → %v", method, tc.target, statuses(chain))
			for _, r := range chain {
				if bytes.Contains(r.body, []byte("root:")) || bytes.Contains(r.body, []byte(testKey)) {
					t.Fatalf("leak: %.300s", r.body)
				}
			}
			last := chain[len(chain)-1]
			switch {
			case tc.api && last.status != http.StatusUnauthorized:
				t.Fatalf("status %d, want 401 (an admin API path needs the token): %.300s", last.status, last.body)
			case last.status == http.StatusOK && !isDashboard(last.body):
				t.Fatalf("200 without the token that is not a dashboard file: %.300s", last.body)
			case last.status != http.StatusOK && last.status != http.StatusUnauthorized && last.status != http.StatusNotFound &&
				last.status != http.StatusBadRequest && last.status != http.StatusMethodNotAllowed:
				t.Fatalf("status %d: %.300s", last.status, last.body)
			}
		})
		t.Run(tc.name+"/with token", func(t *testing.T) {
			chain := rawAdminExchange(t, e.Addr, method, tc.target, true)
			t.Logf("%s %s → %v", method, tc.target, statuses(chain))
			last := chain[len(chain)-1]
			if bytes.Contains(last.body, []byte("root:")) {
				t.Fatalf("leak: %.300s", last.body)
			}
			switch {
			case tc.api && (last.status != http.StatusOK || isDashboard(last.body)):
				t.Fatalf("status %d, want the API's 200: %.300s", last.status, last.body)
			case !tc.api && last.status == http.StatusOK && !isDashboard(last.body):
				t.Fatalf("200 that is neither the API nor a dashboard file: %.300s", last.body)
			}
		})
	}
}

// slowConn dials addr and writes head, then one byte of drip every tick
// until the connection fails or stop is closed.
func slowConn(t *testing.T, addr, head, drip string, stop <-chan struct{}) net.Conn {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if _, err := io.WriteString(c, head); err != nil {
		t.Fatal(err)
	}
	go func() {
		tick := time.NewTicker(50 * time.Millisecond)
		defer tick.Stop()
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			case <-tick.C:
			}
			if _, err := io.WriteString(c, drip[i%len(drip):i%len(drip)+1]); err != nil {
				return
			}
		}
	}()
	return c
}

// TestBadInputSlowClients: a client that trickles its headers is cut at
// ReadHeaderTimeout, one that trickles its body (or never ends a chunked
// one) at ReadTimeout, over HTTP/1.1 and h2c — while responses longer than
// ReadTimeout, streamed or not, are not cut.
func TestBadInputSlowClients(t *testing.T) {
	const (
		headerTimeout = 300 * time.Millisecond
		readTimeout   = 600 * time.Millisecond
		slack         = 3 * time.Second // scheduling under -race
	)
	// A stream of 16 tokens at 16/s and a 1 s non-streaming answer: both
	// outlast readTimeout.
	_, url := startMock(t, "slow", mock.Behavior{TPS: 16, CompletionTokens: 16})
	_, lateURL := startMock(t, "late", mock.Behavior{Latency: time.Second})
	e := startGatewayWith(t, spec{upstreams: []config.Upstream{
		upstreamAt("slow", config.ProviderOpenAI, url, 0, "gpt-4o"),
		upstreamAt("slow-ant", config.ProviderAnthropic, url, 0, "claude-3-5-haiku"),
		upstreamAt("late", config.ProviderOpenAI, lateURL, 0, "late-model"),
	}}, gateway.Options{ReadHeaderTimeout: headerTimeout, ReadTimeout: readTimeout})

	auth := "Authorization: Bearer " + testKey + "\r\nContent-Type: application/json\r\n"
	rawTests := []struct {
		name, head, drip string
		bound            time.Duration
		// shape: when the server answers (rather than only hanging up), the
		// answer's error shape and code.
		shape errShape
		code  string
	}{
		{name: "slow-loris headers", head: "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\n", drip: "X-Slow: lorisloris\r\n", bound: headerTimeout},
		{name: "slow-loris request line", head: "GET /heal", drip: "thzthzthz", bound: headerTimeout},
		{name: "trickled body", head: "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\n" + auth + "Content-Length: 100000\r\n\r\n{\"model\":\"gpt-4o\",\"messages\":[",
			drip: " ", bound: readTimeout, shape: openAIError, code: "request_timeout"},
		{name: "trickled body anthropic", head: "POST /v1/messages HTTP/1.1\r\nHost: gw\r\n" + auth + "Content-Length: 100000\r\n\r\n{\"model\":\"claude-3-5-haiku\",",
			drip: " ", bound: readTimeout, shape: anthropicError, code: "invalid_request_error"},
		{name: "chunked body that never ends", head: "POST /v1/chat/completions HTTP/1.1\r\nHost: gw\r\n" + auth + "Transfer-Encoding: chunked\r\n\r\n",
			drip: "1\r\n \r\n", bound: readTimeout, shape: openAIError, code: "request_timeout"},
	}
	for _, tc := range rawTests {
		t.Run("http1.1/"+tc.name, func(t *testing.T) {
			t.Parallel()
			stop := make(chan struct{})
			defer close(stop)
			start := time.Now()
			c := slowConn(t, e.Addr, tc.head, tc.drip, stop)
			if err := c.SetReadDeadline(start.Add(tc.bound + slack)); err != nil {
				t.Fatal(err)
			}
			// The server answers (408) or hangs up; either way the
			// connection ends while the client is still sending.
			all, err := io.ReadAll(c)
			took := time.Since(start)
			if ne, ok := err.(net.Error); ok && ne.Timeout() {
				t.Fatalf("still open after %v (bound %v); got %q", took, tc.bound, all)
			}
			if took < tc.bound {
				t.Errorf("cut after %v, before its bound %v", took, tc.bound)
			}
			if len(all) == 0 {
				return // hung up without an answer: what net/http does for headers
			}
			resp, err := http.ReadResponse(bufio.NewReader(bytes.NewReader(all)), nil)
			if err != nil {
				t.Fatalf("not an HTTP answer: %q", all)
			}
			b, _ := io.ReadAll(resp.Body)
			if tc.shape == noError { // net/http's own answer to slow headers
				if resp.StatusCode != http.StatusBadRequest && resp.StatusCode != http.StatusRequestTimeout {
					t.Fatalf("status %d, want 400 or 408: %s", resp.StatusCode, b)
				}
				return
			}
			if resp.StatusCode != http.StatusRequestTimeout {
				t.Fatalf("status %d, want 408: %s", resp.StatusCode, b)
			}
			checkErrorShape(t, b, resp.Header, tc.shape, tc.code)
			if msg := gjson.GetBytes(b, "error.message").String(); !strings.Contains(msg, "timeout") {
				t.Errorf("message %q does not say the body timed out", msg)
			}
		})
	}

	t.Run("h2c/trickled body", func(t *testing.T) {
		t.Parallel()
		pr, pw := io.Pipe()
		stop := make(chan struct{})
		defer close(stop)
		go func() {
			_, _ = io.WriteString(pw, `{"model":"gpt-4o","messages":[`)
			tick := time.NewTicker(50 * time.Millisecond)
			defer tick.Stop()
			for {
				select {
				case <-stop:
					pw.Close()
					return
				case <-tick.C:
				}
				if _, err := io.WriteString(pw, " "); err != nil {
					return
				}
			}
		}()
		req, err := http.NewRequest(http.MethodPost, e.URL+"/v1/chat/completions", pr)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+testKey)
		client := h2cClient()
		client.Timeout = readTimeout + slack
		start := time.Now()
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("no answer within %v: %v", readTimeout+slack, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if took := time.Since(start); took < readTimeout {
			t.Errorf("cut after %v, before ReadTimeout %v", took, readTimeout)
		}
		if resp.ProtoMajor != 2 || resp.StatusCode != http.StatusRequestTimeout {
			t.Fatalf("%s status %d, want 408: %s", resp.Proto, resp.StatusCode, b)
		}
		checkErrorShape(t, b, resp.Header, openAIError, "request_timeout")
	})

	longTests := []struct {
		name, path, body string
		complete         func(body []byte) bool
	}{
		{name: "stream", path: "/v1/chat/completions", body: `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"x"}]}`,
			complete: func(b []byte) bool {
				ev := parseSSE(b)
				return len(ev) > 16 && ev[len(ev)-1].data == "[DONE]"
			}},
		{name: "anthropic stream", path: "/v1/messages", body: `{"model":"claude-3-5-haiku","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"x"}]}`,
			complete: func(b []byte) bool {
				ev := parseSSE(b)
				return len(ev) > 16 && ev[len(ev)-1].name == "message_stop"
			}},
		{name: "slow answer", path: "/v1/chat/completions", body: `{"model":"late-model","messages":[{"role":"user","content":"x"}]}`,
			complete: func(b []byte) bool { return gjson.GetBytes(b, "choices.0.message.content").String() != "" }},
	}
	for _, proto := range clientProtocols {
		for _, tc := range longTests {
			t.Run(proto.name+"/"+tc.name+" outlasts ReadTimeout", func(t *testing.T) {
				t.Parallel()
				req, err := http.NewRequest(http.MethodPost, e.URL+tc.path, strings.NewReader(tc.body))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Authorization", "Bearer "+testKey)
				start := time.Now()
				resp, err := proto.client().Do(req)
				if err != nil {
					t.Fatal(err)
				}
				b, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				took := time.Since(start)
				if err != nil || resp.StatusCode != http.StatusOK || !tc.complete(b) {
					t.Fatalf("after %v: status %d, err %v, body %.500s", took, resp.StatusCode, err, b)
				}
				if took <= readTimeout {
					t.Fatalf("took %v: the row proves nothing unless it outlasts ReadTimeout %v", took, readTimeout)
				}
			})
		}
	}
}
