package proxy

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/tidwall/gjson"

	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/health"
	"switchyard/internal/pricing"
	"switchyard/internal/provider"
	"switchyard/internal/state"
	"switchyard/internal/store"

	"go.opentelemetry.io/otel/trace"
)

const testKey = "sk-test-client"

// fixture is a proxy Server on loopback with its collaborators exposed.
type fixture struct {
	t        *testing.T
	clock    *clock.Fake
	breakers *health.Breakers
	srv      *Server
	url      string
	logs     *logRecorder
}

type logRecorder struct {
	ch chan store.RequestLog
}

func (l *logRecorder) Enqueue(r store.RequestLog) bool {
	select {
	case l.ch <- r:
		return true
	default:
		return false
	}
}

// next returns the next request log.
func (l *logRecorder) next(t *testing.T) store.RequestLog {
	t.Helper()
	select {
	case r := <-l.ch:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("no request log")
		return store.RequestLog{}
	}
}

type fixtureOpts struct {
	keys     []config.Key
	routes   []config.Route
	defaults *config.RouteSettings
	circuit  *config.Circuit
	// providers, when set, resolves provider names instead of the built-in registry.
	providers *provider.Registry
	// tracer, when set, traces the requests.
	tracer trace.Tracer
	// catalogue is the price catalogue; nil is none.
	catalogue *pricing.Catalogue
}

func newFixture(t *testing.T, ups []config.Upstream, o fixtureOpts) *fixture {
	t.Helper()
	fc := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cfg := config.Default()
	if o.defaults != nil {
		cfg.Defaults = *o.defaults
	}
	circuit := cfg.Circuit
	if o.circuit != nil {
		circuit = *o.circuit
	}
	keys := o.keys
	if keys == nil {
		keys = []config.Key{{Name: "test", Key: testKey}}
	}
	for i := range o.routes {
		if o.routes[i].Strategy == "" {
			o.routes[i].RouteSettings = cfg.Defaults
		}
	}
	cat, err := NewCatalog(CatalogInput{Upstreams: ups, Keys: keys, Routes: o.routes, Defaults: cfg.Defaults, Seed: 1, Now: fc.Now,
		Clock: fc, Providers: o.providers, Catalogue: o.catalogue})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, clock: fc, breakers: health.NewBreakers(circuit, fc), logs: &logRecorder{ch: make(chan store.RequestLog, 10000)}}
	f.srv = New(Options{Clock: fc, State: state.NewLocal(state.LocalOptions{Clock: fc, Breakers: f.breakers}), Logs: f.logs,
		Tracer: o.tracer}, cat)
	ts := httptest.NewServer(f.srv)
	t.Cleanup(ts.Close)
	f.url = ts.URL
	return f
}

// upstreamCfg returns an upstream config pointing at url.
func upstreamCfg(name, provider, url string, models ...string) config.Upstream {
	u := config.DefaultUpstream()
	u.Name, u.Provider, u.BaseURL, u.APIKey, u.Models = name, provider, url, "sk-upstream-"+name+"-secret", models
	return u
}

// post sends body to path with the test key.
func (f *fixture) post(path, body string, hdr ...string) *http.Response {
	f.t.Helper()
	req, err := http.NewRequest(http.MethodPost, f.url+path, strings.NewReader(body))
	if err != nil {
		f.t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		f.t.Fatal(err)
	}
	return resp
}

func readAll(t *testing.T, r *http.Response) string {
	t.Helper()
	defer r.Body.Close()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// chatOK is a minimal upstream answering chat completions, recording hits.
func chatOK(hits *atomic.Int64) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		hits.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"hi"},"finish_reason":"stop"}],"usage":{"prompt_tokens":7,"completion_tokens":3,"total_tokens":10}}`)
	}
}

func status(code int) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(code)
		_, _ = fmt.Fprintf(w, `{"error":{"message":"status %d","type":"x","code":"y"}}`, code)
	}
}

// deadURL returns a loopback URL where nothing listens.
func deadURL(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return "http://" + addr
}

func upstreamServer(t *testing.T, h http.Handler) string {
	t.Helper()
	s := httptest.NewServer(h)
	t.Cleanup(s.Close)
	return s.URL
}

const chatBody = `{"model":"gpt-4o","messages":[{"role":"user","content":"hello"}]}`

func TestFailoverAbsorbsDeadAnd500(t *testing.T) {
	var hits atomic.Int64
	f := newFixture(t, []config.Upstream{
		upstreamCfg("dead", config.ProviderOpenAI, deadURL(t), "gpt-4o"),
		upstreamCfg("broken", config.ProviderOpenAI, upstreamServer(t, status(500)), "gpt-4o"),
		upstreamCfg("good", config.ProviderOpenAI, upstreamServer(t, chatOK(&hits)), "gpt-4o"),
	}, fixtureOpts{})
	for i := 0; i < 1000; i++ {
		resp := f.post("/v1/chat/completions", chatBody)
		body := readAll(t, resp)
		if resp.StatusCode != 200 {
			t.Fatalf("request %d: status %d: %s", i, resp.StatusCode, body)
		}
		if got := resp.Header.Get("X-Switchyard-Upstream"); got != "good" {
			t.Fatalf("request %d served by %q", i, got)
		}
	}
	if hits.Load() != 1000 {
		t.Fatalf("good upstream hits = %d, want 1000", hits.Load())
	}
	// The breakers of the failing upstreams are open: they stopped being tried.
	for _, name := range []string{"dead", "broken"} {
		if v := f.breakers.View(name); !v.Open {
			t.Errorf("breaker of %s is not open", name)
		}
	}
}

func TestFirstByteTimeoutFailsOver(t *testing.T) {
	var hits atomic.Int64
	var f *fixture
	hang := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body) // so the server notices the gateway hanging up
		f.clock.Advance(time.Second)       // the gateway's first_byte_timeout fires
		<-r.Context().Done()
	})
	d := config.Default().Defaults
	d.FirstByteTimeout = time.Second
	d.Retries = 1
	f = newFixture(t, []config.Upstream{
		upstreamCfg("hang", config.ProviderOpenAI, upstreamServer(t, hang), "gpt-4o"),
		upstreamCfg("good", config.ProviderOpenAI, upstreamServer(t, chatOK(&hits)), "gpt-4o"),
	}, fixtureOpts{defaults: &d})
	for i := 0; i < 20; i++ {
		resp := f.post("/v1/chat/completions", chatBody)
		if body := readAll(t, resp); resp.StatusCode != 200 {
			t.Fatalf("status %d: %s", resp.StatusCode, body)
		}
	}
	if hits.Load() != 20 {
		t.Fatalf("good hits = %d", hits.Load())
	}
}

func TestClientErrorPassesThroughWithoutFailover(t *testing.T) {
	for _, code := range []int{400, 404, 413, 422} {
		t.Run(fmt.Sprint(code), func(t *testing.T) {
			var calls atomic.Int64
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				calls.Add(1)
				status(code)(w, r)
			})
			f := newFixture(t, []config.Upstream{
				upstreamCfg("a", config.ProviderOpenAI, upstreamServer(t, h), "gpt-4o"),
				upstreamCfg("b", config.ProviderOpenAI, upstreamServer(t, h), "gpt-4o"),
			}, fixtureOpts{})
			resp := f.post("/v1/chat/completions", chatBody)
			body := readAll(t, resp)
			if resp.StatusCode != code {
				t.Fatalf("status %d, want %d", resp.StatusCode, code)
			}
			if want := fmt.Sprintf(`{"error":{"message":"status %d","type":"x","code":"y"}}`, code); body != want {
				t.Fatalf("body %s, want unchanged %s", body, want)
			}
			if calls.Load() != 1 {
				t.Fatalf("upstream calls = %d, want 1", calls.Load())
			}
			if resp.Header.Get("X-Switchyard-Attempts") != "1" {
				t.Fatalf("attempts header %q", resp.Header.Get("X-Switchyard-Attempts"))
			}
		})
	}
}

func TestTiers(t *testing.T) {
	var t0, t1 atomic.Int64
	var broken atomic.Bool
	tier0 := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if broken.Load() {
			status(503)(w, r)
			return
		}
		chatOK(&t0)(w, r)
	})
	primary := upstreamCfg("primary", config.ProviderOpenAI, upstreamServer(t, tier0), "gpt-4o")
	backup := upstreamCfg("backup", config.ProviderOpenAI, upstreamServer(t, chatOK(&t1)), "gpt-4o")
	backup.Priority = 1
	f := newFixture(t, []config.Upstream{primary, backup}, fixtureOpts{})
	for i := 0; i < 200; i++ {
		resp := f.post("/v1/chat/completions", chatBody)
		readAll(t, resp)
		if resp.StatusCode != 200 {
			t.Fatalf("status %d", resp.StatusCode)
		}
	}
	if t1.Load() != 0 || t0.Load() != 200 {
		t.Fatalf("healthy tier 0: tier0=%d tier1=%d, want 200/0", t0.Load(), t1.Load())
	}
	broken.Store(true)
	for i := 0; i < 200; i++ {
		resp := f.post("/v1/chat/completions", chatBody)
		if body := readAll(t, resp); resp.StatusCode != 200 {
			t.Fatalf("tier 0 down: status %d: %s", resp.StatusCode, body)
		}
	}
	if t1.Load() != 200 {
		t.Fatalf("tier 1 took %d of 200", t1.Load())
	}
}

func TestAllFailedIs502AndAllRateLimitedIs503(t *testing.T) {
	rateLimited := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "7")
		status(429)(w, r)
	})
	tests := []struct {
		name       string
		handler    http.Handler
		wantStatus int
		wantRetry  string
	}{
		{"server errors", status(500), 502, ""},
		{"rate limited", rateLimited, 503, "7"},
		{"auth errors", status(401), 502, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, []config.Upstream{
				upstreamCfg("a", config.ProviderOpenAI, upstreamServer(t, tc.handler), "gpt-4o"),
				upstreamCfg("b", config.ProviderOpenAI, upstreamServer(t, tc.handler), "gpt-4o"),
			}, fixtureOpts{})
			resp := f.post("/v1/chat/completions", chatBody)
			body := readAll(t, resp)
			if resp.StatusCode != tc.wantStatus {
				t.Fatalf("status %d, want %d: %s", resp.StatusCode, tc.wantStatus, body)
			}
			var e struct {
				Error struct{ Message, Type, Code string }
			}
			if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Code != "no_upstream_available" {
				t.Fatalf("error body %s (%v)", body, err)
			}
			if got := resp.Header.Get("Retry-After"); got != tc.wantRetry {
				t.Fatalf("Retry-After %q, want %q", got, tc.wantRetry)
			}
			if resp.Header.Get("X-Switchyard-Attempts") != "2" {
				t.Fatalf("attempts %q", resp.Header.Get("X-Switchyard-Attempts"))
			}
			if strings.Contains(body, "secret") {
				t.Fatalf("error leaks an upstream key: %s", body)
			}
		})
	}
}

func TestUpstreamRequestShapePerProvider(t *testing.T) {
	type seen struct {
		path, query string
		header      http.Header
		body        string
	}
	tests := []struct {
		name      string
		provider  string
		path      string
		body      string
		modelMap  map[string]string
		hdr       []string
		wantPath  string
		wantQuery string
		wantAuth  [2]string // header, value
		wantModel string
	}{
		{"openai", config.ProviderOpenAI, "/v1/chat/completions", chatBody, map[string]string{"gpt-4o": "gpt-4o-2024-08-06"}, nil,
			"/v1/chat/completions", "", [2]string{"Authorization", "Bearer sk-upstream-u-secret"}, `"model":"gpt-4o-2024-08-06"`},
		{"azure", config.ProviderAzureOpenAI, "/v1/chat/completions", chatBody, map[string]string{"gpt-4o": "my-deploy"}, nil,
			"/openai/deployments/my-deploy/chat/completions", "api-version=2024-10-21", [2]string{"Api-Key", "sk-upstream-u-secret"}, `"model":"my-deploy"`},
		{"anthropic default version", config.ProviderAnthropic, "/v1/messages", `{"model":"claude","max_tokens":5,"messages":[]}`, nil, nil,
			"/v1/messages", "", [2]string{"X-Api-Key", "sk-upstream-u-secret"}, `"model":"claude"`},
		{"anthropic client version wins", config.ProviderAnthropic, "/v1/messages", `{"model":"claude","max_tokens":5,"messages":[]}`, nil,
			[]string{"anthropic-version", "2099-01-01"}, "/v1/messages", "", [2]string{"Anthropic-Version", "2099-01-01"}, `"model":"claude"`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := make(chan seen, 1)
			h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				got <- seen{r.URL.Path, r.URL.RawQuery, r.Header.Clone(), string(b)}
				w.Header().Set("Content-Type", "application/json")
				_, _ = io.WriteString(w, `{"usage":{"input_tokens":1,"output_tokens":2}}`)
			})
			base := upstreamServer(t, h)
			if tc.provider != config.ProviderAzureOpenAI {
				base += "/v1"
			}
			model := "gpt-4o"
			if tc.provider == config.ProviderAnthropic {
				model = "claude"
			}
			u := upstreamCfg("u", tc.provider, base, model)
			u.ModelMap = tc.modelMap
			u.Headers = map[string]string{"X-Extra": "1"}
			f := newFixture(t, []config.Upstream{u}, fixtureOpts{})
			resp := f.post(tc.path, tc.body, append([]string{"Idempotency-Key", "kept"}, tc.hdr...)...)
			if b := readAll(t, resp); resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, b)
			}
			s := <-got
			if s.path != tc.wantPath || s.query != tc.wantQuery {
				t.Fatalf("upstream URL %s?%s, want %s?%s", s.path, s.query, tc.wantPath, tc.wantQuery)
			}
			if v := s.header.Get(tc.wantAuth[0]); v != tc.wantAuth[1] {
				t.Fatalf("%s = %q, want %q", tc.wantAuth[0], v, tc.wantAuth[1])
			}
			if strings.Contains(fmt.Sprint(s.header), testKey) {
				t.Fatalf("client key forwarded upstream: %v", s.header)
			}
			if s.header.Get("Idempotency-Key") != "kept" || s.header.Get("X-Extra") != "1" {
				t.Fatalf("headers not forwarded: %v", s.header)
			}
			if !strings.Contains(s.body, tc.wantModel) {
				t.Fatalf("body %s lacks %s", s.body, tc.wantModel)
			}
			if strings.Contains(s.body, `"model":"gpt-4o"`) && tc.modelMap != nil {
				t.Fatalf("model not rewritten: %s", s.body)
			}
		})
	}
}

// sseUpstream streams the given events, then either ends or breaks the connection.
func sseUpstream(events []string, breakAfter bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for _, e := range events {
			_, _ = io.WriteString(w, e)
			fl.Flush()
		}
		if breakAfter {
			panic(http.ErrAbortHandler)
		}
	}
}

func TestStreamingPassthroughAndUsage(t *testing.T) {
	events := []string{
		"data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n",
		"data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\n",
		"data: {\"choices\":[],\"usage\":{\"prompt_tokens\":11,\"completion_tokens\":2}}\n\n",
		"data: [DONE]\n\n",
	}
	// A client that did not ask for usage does not get the usage chunk
	// the gateway asked for (codec.StreamUsage); its tokens count all
	// the same.
	tests := []struct {
		name, body string
		want       []string
	}{
		{"usage asked", `{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},"messages":[]}`, events},
		{"usage not asked", `{"model":"gpt-4o","stream":true,"messages":[]}`, []string{events[0], events[1], events[3]}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var sent []byte
			up := upstreamServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				sent, _ = io.ReadAll(r.Body)
				sseUpstream(events, false)(w, r)
			}))
			f := newFixture(t, []config.Upstream{upstreamCfg("s", config.ProviderOpenAI, up, "gpt-4o")}, fixtureOpts{})
			resp := f.post("/v1/chat/completions", tc.body)
			body := readAll(t, resp)
			if body != strings.Join(tc.want, "") {
				t.Fatalf("stream:\n%s", body)
			}
			if !gjson.GetBytes(sent, "stream_options.include_usage").Bool() {
				t.Errorf("the upstream was not asked for usage: %s", sent)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "text/event-stream" {
				t.Fatalf("content type %q", ct)
			}
			l := f.logs.next(t)
			if l.InputTokens != 11 || l.OutputTokens != 2 || !l.Stream || l.Upstream != "s" || l.Status != 200 {
				t.Fatalf("log %+v", l)
			}
		})
	}
}

func TestStreamInterruptedEndsWithErrorEvent(t *testing.T) {
	tests := []struct {
		name     string
		provider string
		path     string
		body     string
		events   []string
		wantLast string
	}{
		{"openai", config.ProviderOpenAI, "/v1/chat/completions", `{"model":"m","stream":true}`,
			[]string{"data: {\"choices\":[]}\n\n"}, `"code":"stream_interrupted"`},
		{"anthropic", config.ProviderAnthropic, "/v1/messages", `{"model":"m","stream":true}`,
			[]string{"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"usage\":{\"input_tokens\":3}}}\n\n"}, "event: error\ndata: {\"error\":{\"message\""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var other atomic.Int64
			f := newFixture(t, []config.Upstream{
				upstreamCfg("s", tc.provider, upstreamServer(t, sseUpstream(tc.events, true)), "m"),
			}, fixtureOpts{})
			resp := f.post(tc.path, tc.body)
			body := readAll(t, resp)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d", resp.StatusCode)
			}
			if !strings.HasPrefix(body, tc.events[0]) {
				t.Fatalf("first event lost: %s", body)
			}
			last := body[len(tc.events[0]):]
			if !strings.Contains(last, tc.wantLast) || strings.Contains(last, "[DONE]") {
				t.Fatalf("last event %q lacks %q", last, tc.wantLast)
			}
			if other.Load() != 0 {
				t.Fatal("failed over after the first byte")
			}
			if l := f.logs.next(t); l.ErrorClass != "stream_interrupted" {
				t.Fatalf("log error class %q", l.ErrorClass)
			}
		})
	}
}

func TestStreamFailsOverBeforeFirstEvent(t *testing.T) {
	good := []string{"data: {\"choices\":[]}\n\n", "data: [DONE]\n\n"}
	f := newFixture(t, []config.Upstream{
		upstreamCfg("a-broken", config.ProviderOpenAI, upstreamServer(t, sseUpstream(nil, true)), "m"),
		upstreamCfg("b-good", config.ProviderOpenAI, upstreamServer(t, sseUpstream(good, false)), "m"),
	}, fixtureOpts{})
	for i := 0; i < 20; i++ {
		resp := f.post("/v1/chat/completions", `{"model":"m","stream":true}`)
		if body := readAll(t, resp); body != strings.Join(good, "") {
			t.Fatalf("request %d: %d %q", i, resp.StatusCode, body)
		}
	}
}

func TestStreamIsFlushedPerEvent(t *testing.T) {
	release := make(chan struct{})
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, "data: {\"n\":1}\n\n")
		w.(http.Flusher).Flush()
		<-release
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	})
	f := newFixture(t, []config.Upstream{upstreamCfg("s", config.ProviderOpenAI, upstreamServer(t, h), "m")}, fixtureOpts{})
	resp := f.post("/v1/chat/completions", `{"model":"m","stream":true}`)
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	line, err := br.ReadString('\n')
	if err != nil || line != "data: {\"n\":1}\n" {
		t.Fatalf("first event not delivered before the upstream finished: %q %v", line, err)
	}
	close(release)
	rest, _ := io.ReadAll(br)
	if string(rest) != "\ndata: [DONE]\n\n" {
		t.Fatalf("rest %q", rest)
	}
}

func TestClientCancelIsNotAnUpstreamFailure(t *testing.T) {
	started := make(chan struct{}, 10)
	h := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		started <- struct{}{}
		<-r.Context().Done()
	})
	c := config.Default().Circuit
	c.FailureThreshold = 1
	f := newFixture(t, []config.Upstream{upstreamCfg("slow", config.ProviderOpenAI, upstreamServer(t, h), "m")}, fixtureOpts{circuit: &c})
	ctx, cancel := context.WithCancel(context.Background())
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, f.url+"/v1/chat/completions", strings.NewReader(`{"model":"m"}`))
	req.Header.Set("Authorization", "Bearer "+testKey)
	errc := make(chan error, 1)
	go func() {
		_, err := http.DefaultClient.Do(req)
		errc <- err
	}()
	<-started
	cancel()
	<-errc
	l := f.logs.next(t)
	if l.Status != 499 {
		t.Fatalf("log status %d, want 499", l.Status)
	}
	if f.breakers.View("slow").Open {
		t.Fatal("client cancel opened the upstream's breaker")
	}
}

func TestReadSized(t *testing.T) {
	body := strings.Repeat("x", 3000)
	tests := []struct {
		name string
		hint int64
	}{
		{"exact hint", 3000},
		{"hint too small", 100},
		{"hint too large", 5000},
		{"unknown", -1},
		{"hint over 1 MiB", 2 << 20},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, err := readSized(iotest.OneByteReader(strings.NewReader(body)), tc.hint)
			if err != nil || string(got) != body {
				t.Fatalf("read %d bytes, err %v; want %d bytes", len(got), err, len(body))
			}
		})
	}
	if _, err := readSized(iotest.ErrReader(io.ErrUnexpectedEOF), 10); err != io.ErrUnexpectedEOF {
		t.Fatalf("error %v, want %v", err, io.ErrUnexpectedEOF)
	}
}
