package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"google.golang.org/genai"

	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/gateway"
	"switchyard/internal/mock"
	"switchyard/internal/provider"
	"switchyard/internal/store"
	"switchyard/internal/store/sqlite"
)

// testKey is the client key every end-to-end gateway accepts (key name "e2e").
const testKey = "sk-e2e-client-key"

// spec describes a gateway for startGateway.
type spec struct {
	// upstreams are the gateway's upstreams (see upstreamAt).
	upstreams []config.Upstream
	// keys replace the default single key {e2e, testKey}.
	keys []config.Key
	// edit tweaks the config before it is validated.
	edit func(*config.Config)
	// clock drives the gateway; nil is the wall clock.
	clock clock.Clock
	// logger receives the gateway's logs; nil discards them.
	logger *slog.Logger
}

// env is one gateway serving on a loopback listener.
type env struct {
	t    testing.TB
	G    *gateway.Gateway
	URL  string // http://127.0.0.1:PORT
	Addr string // 127.0.0.1:PORT
	DSN  string // the sqlite file

	stop       context.CancelFunc
	served     chan error
	shutdown   sync.Once
	serveErr   error
	closeOnce  sync.Once
	closeError error
}

// startGateway builds a config (config.Default, a per-test sqlite file, no
// active probes, the test key, s.upstreams, then s.edit), validates it and
// serves a gateway for it on 127.0.0.1:0. The gateway is closed at the end of
// the test.
func startGateway(t testing.TB, s spec) *env {
	t.Helper()
	return startGatewayWith(t, s, gateway.Options{})
}

// startGatewayWith is startGateway with more gateway.Options (a Store, the
// read timeouts); Clock, Seed and Logger still come from s.
func startGatewayWith(t testing.TB, s spec, opts gateway.Options) *env {
	t.Helper()
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.Store.DSN = filepath.Join(t.TempDir(), "switchyard.db")
	cfg.Health.Interval = 0
	cfg.Keys = s.keys
	if cfg.Keys == nil {
		k := config.DefaultKey()
		k.Name, k.Key = "e2e", testKey
		cfg.Keys = []config.Key{k}
	}
	cfg.Upstreams = s.upstreams
	if s.edit != nil {
		s.edit(&cfg)
	}
	if errs := cfg.Validate(); len(errs) > 0 {
		t.Fatalf("test config is invalid:\n%v", errs)
	}
	opts.Clock, opts.Seed, opts.Logger = s.clock, 1, s.logger
	return serveGateway(t, &cfg, opts)
}

// serveGateway serves a gateway for cfg on a fresh loopback listener.
func serveGateway(t testing.TB, cfg *config.Config, opts gateway.Options) *env {
	t.Helper()
	g, err := gateway.New(context.Background(), cfg, opts)
	if err != nil {
		t.Fatalf("gateway.New: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		_ = g.Close(context.Background())
		t.Fatal(err)
	}
	ctx, stop := context.WithCancel(context.Background())
	e := &env{
		t: t, G: g, URL: "http://" + ln.Addr().String(), Addr: ln.Addr().String(), DSN: cfg.Store.DSN,
		stop: stop, served: make(chan error, 1),
	}
	go func() { e.served <- g.Serve(ctx, ln, 10*time.Second) }()
	t.Cleanup(func() {
		if err := e.Close(); err != nil {
			t.Errorf("closing the gateway: %v", err)
		}
	})
	return e
}

// Shutdown cancels Serve's context and returns what Serve returned.
func (e *env) Shutdown() error {
	e.shutdown.Do(func() {
		e.stop()
		e.serveErr = <-e.served
	})
	return e.serveErr
}

// Close shuts the server down and closes the gateway, which flushes the
// request logs and closes the store.
func (e *env) Close() error {
	e.closeOnce.Do(func() {
		serveErr := e.Shutdown()
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		e.closeError = e.G.Close(ctx)
		if serveErr != nil && e.closeError == nil {
			e.closeError = serveErr
		}
	})
	return e.closeError
}

// RequestLogs closes the gateway (flushing its LogWriter) and reads the
// request logs back from its sqlite file, newest first.
func (e *env) RequestLogs() []store.RequestLog {
	e.t.Helper()
	if err := e.Close(); err != nil {
		e.t.Fatalf("closing the gateway: %v", err)
	}
	st, err := sqlite.Open(context.Background(), e.DSN)
	if err != nil {
		e.t.Fatal(err)
	}
	defer st.Close()
	logs, err := st.RecentRequestLogs(context.Background(), 100000)
	if err != nil {
		e.t.Fatal(err)
	}
	return logs
}

// openAI is an OpenAI SDK client for the gateway with key (no SDK retries,
// so every failure is the gateway's).
func (e *env) openAI(key string) openai.Client {
	return openai.NewClient(
		option.WithBaseURL(e.URL+"/v1/"),
		option.WithAPIKey(key),
		option.WithMaxRetries(0),
	)
}

// anthropic is an Anthropic SDK client for the gateway with key.
func (e *env) anthropic(key string) anthropic.Client {
	return anthropic.NewClient(
		aoption.WithoutEnvironmentDefaults(),
		aoption.WithBaseURL(e.URL),
		aoption.WithAPIKey(key),
		aoption.WithMaxRetries(0),
	)
}

// genAI is a Google Gen AI SDK client for the gateway's Gemini API with key
// (sent as x-goog-api-key), over hc; nil hc is the SDK's default client.
func (e *env) genAI(t testing.TB, key string, hc *http.Client) *genai.Client {
	t.Helper()
	c, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey:      key,
		Backend:     genai.BackendGeminiAPI,
		HTTPClient:  hc,
		HTTPOptions: genai.HTTPOptions{BaseURL: e.URL},
	})
	if err != nil {
		t.Fatalf("genai.NewClient: %v", err)
	}
	return c
}

// startMock starts a mock upstream on loopback; it stops at the end of the test.
func startMock(t testing.TB, name string, b mock.Behavior) (*mock.Server, string) {
	t.Helper()
	return startMockWith(t, mock.Options{Name: name, Behavior: b})
}

// startMockWith starts a mock upstream with opts (seeded with 42) on
// loopback; it stops at the end of the test.
func startMockWith(t testing.TB, opts mock.Options) (*mock.Server, string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	opts.Seed = 42
	srv, url, err := mock.Start(ctx, "127.0.0.1:0", opts)
	if err != nil {
		t.Fatal(err)
	}
	return srv, url
}

// upstreamAt is an upstream named name at a mock's base URL, followed by
// the provider's version path as for the real service (/v1 for OpenAI,
// /v1beta for Gemini: provider.Registry.BaseURLAt).
func upstreamAt(name, prov, mockURL string, priority int, models ...string) config.Upstream {
	u := config.DefaultUpstream()
	u.Name, u.Provider, u.APIKey = name, prov, "sk-upstream-"+name
	u.BaseURL = provider.Builtin().BaseURLAt(prov, mockURL)
	u.Priority, u.Models = priority, models
	return u
}

// deadURL is a loopback URL where nothing listens: port 1, which no
// listener of a test gets (":0" hands out ephemeral ports), so that a
// mock started by a parallel test cannot take it over (a port freed by
// closing a listener could be).
func deadURL(t testing.TB) string {
	t.Helper()
	c, err := net.DialTimeout("tcp", "127.0.0.1:1", time.Second)
	if err == nil {
		c.Close()
		t.Skip("something listens on 127.0.0.1:1; the tests need a port that refuses connections")
	}
	return "http://127.0.0.1:1"
}

// result is a finished raw HTTP exchange.
type result struct {
	status int
	header http.Header
	body   []byte
}

// rawRequest sends one request through a real connection and reads the whole
// answer. hdr are name/value pairs.
func rawRequest(t testing.TB, method, url string, body io.Reader, hdr ...string) result {
	t.Helper()
	req, err := http.NewRequest(method, url, body)
	if err != nil {
		t.Fatal(err)
	}
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("%s %s: reading the body: %v", method, url, err)
	}
	return result{status: resp.StatusCode, header: resp.Header, body: b}
}

// post sends a JSON body to the gateway with the test key as a Bearer token.
func (e *env) post(t testing.TB, path, body string, hdr ...string) result {
	t.Helper()
	return rawRequest(t, http.MethodPost, e.URL+path, strings.NewReader(body),
		append([]string{"Authorization", "Bearer " + testKey}, hdr...)...)
}

// tableRequest builds a bad-input table row's request: method (POST when
// empty) to url, with body only for POST, and with chunked framing (the
// length hidden) when chunked is set. The caller adds the headers.
func tableRequest(t testing.TB, method, url, body string, chunked bool) *http.Request {
	t.Helper()
	if method == "" {
		method = http.MethodPost
	}
	var r io.Reader
	if method == http.MethodPost {
		r = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, url, r)
	if err != nil {
		t.Fatal(err)
	}
	if chunked {
		req.Body, req.ContentLength = io.NopCloser(strings.NewReader(body)), -1
	}
	return req
}

// openStream posts a streaming request to the gateway with the test key and
// returns the response, whose body is still streaming, once upstream
// wantUpstream has answered 200; the body is closed at the end of the test.
func (e *env) openStream(t testing.TB, path, body, wantUpstream string) *http.Response {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.URL+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { resp.Body.Close() })
	if got := resp.Header.Get("X-Switchyard-Upstream"); resp.StatusCode != http.StatusOK || got != wantUpstream {
		t.Fatalf("stream status %d from %q, want 200 from %s", resp.StatusCode, got, wantUpstream)
	}
	return resp
}

// sseEvent is one parsed server-sent event.
type sseEvent struct {
	name string // event: field
	data string // data: lines joined
}

// parseSSE splits an event stream into events.
func parseSSE(body []byte) []sseEvent {
	var out []sseEvent
	for _, block := range bytes.Split(bytes.ReplaceAll(body, []byte("\r\n"), []byte("\n")), []byte("\n\n")) {
		var ev sseEvent
		sc := bufio.NewScanner(bytes.NewReader(block))
		sc.Buffer(nil, 1<<20)
		found := false
		for sc.Scan() {
			field, value, _ := strings.Cut(sc.Text(), ":")
			value = strings.TrimPrefix(value, " ")
			switch field {
			case "event":
				ev.name, found = value, true
			case "data":
				if ev.data != "" {
					ev.data += "\n"
				}
				ev.data += value
				found = true
			}
		}
		if found {
			out = append(out, ev)
		}
	}
	return out
}

// readEvent reads one SSE event (through its blank line) from br.
func readEvent(t testing.TB, br *bufio.Reader) string {
	t.Helper()
	var sb strings.Builder
	for {
		line, err := br.ReadString('\n')
		sb.WriteString(line)
		if err != nil {
			t.Fatalf("reading an event: %v (got %q)", err, sb.String())
		}
		if line == "\n" || line == "\r\n" {
			return sb.String()
		}
	}
}
