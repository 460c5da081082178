package proxy

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"switchyard/internal/benchutil"
	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/health"
	"switchyard/internal/state"
	"switchyard/internal/store"
	"switchyard/internal/tracing"

	"go.opentelemetry.io/otel/trace"
)

// cannedTransport answers every request at once with the same chat completion.
type cannedTransport struct{ body []byte }

func (c cannedTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, req.Body)
	h := http.Header{"Content-Type": {"application/json"}, "X-Ratelimit-Remaining-Requests": {"499"}}
	return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(bytes.NewReader(c.body)),
		ContentLength: int64(len(c.body)), Request: req}, nil
}

// BenchmarkServeHTTPTranslated is BenchmarkServeHTTP's one-upstream case
// from an Anthropic client: the request is translated to Chat Completions
// and the answer back, so the difference is the translation's cost.
func BenchmarkServeHTTPTranslated(b *testing.B) {
	d := config.Default()
	cat, err := NewCatalog(CatalogInput{Upstreams: []config.Upstream{upstreamCfg("u0", config.ProviderOpenAI, "http://upstream.invalid/v1", "gpt-4o")},
		Keys: []config.Key{{Name: "k", Key: testKey}}, Defaults: d.Defaults, Affinity: d.Affinity, Seed: 1, Now: clock.Real{}.Now})
	if err != nil {
		b.Fatal(err)
	}
	srv := New(Options{Clock: clock.Real{}, State: state.NewLocal(state.LocalOptions{Clock: clock.Real{}, Breakers: health.NewBreakers(d.Circuit, clock.Real{})}),
		Transport: cannedTransport{body: []byte(`{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hello!"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}`)},
		Logs:      discardLogs{}}, cat)
	body := []byte(`{"model":"gpt-4o","max_tokens":64,"messages":[{"role":"user","content":"Hello, how are you today?"}]}`)
	b.ReportAllocs()
	cpu := benchutil.CPUNow()
	defer benchutil.ReportCPU(b, cpu)
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/v1/messages", bytes.NewReader(body))
		req.Header.Set("X-Api-Key", testKey)
		req.Header.Set("Anthropic-Version", "2023-06-01")
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		if w.Code != 200 || w.Header().Get("X-Switchyard-Translated") == "" {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}

// BenchmarkServeHTTP measures the gateway's own work per request — auth,
// peek, plan, admission, start, commit, done, the request log — with the
// network taken out: the upstream is an in-memory transport and the client
// a ResponseRecorder.
//
// The hedged case runs the same request on a route with hedging on whose
// delay never passes: the race's own cost (a goroutine per attempt) with
// no hedge sent. The traced case records every request (sample_ratio 1)
// and exports it with the batch exporter over OTLP/HTTP to a collector
// that drops it; its cpu-ns/op counts the exporter's goroutines too. The
// sampled-out case (sample_ratio 0) is what a request not sampled costs:
// a trace id for its log and a traceparent for the upstream; the 10pct
// case (sample_ratio 0.1) is the average of a gateway recording one
// request in ten.
func BenchmarkServeHTTP(b *testing.B) {
	cases := []struct {
		name   string
		n      int
		hedge  config.Hedge
		traced float64 // the sample ratio; < 0: tracing off
	}{
		{"1-upstreams", 1, config.Hedge{}, -1},
		{"1-upstreams-traced", 1, config.Hedge{}, 1},
		{"1-upstreams-traced-sampled-out", 1, config.Hedge{}, 0},
		{"1-upstreams-traced-10pct", 1, config.Hedge{}, 0.1},
		{"10-upstreams", 10, config.Hedge{}, -1},
		{"10-upstreams-hedged", 10, config.Hedge{Delay: "30s", Max: 1, Budget: 0.1}, -1},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			var ups []config.Upstream
			for i := range c.n {
				ups = append(ups, upstreamCfg("u"+strconv.Itoa(i), config.ProviderOpenAI, "http://upstream.invalid/v1", "gpt-4o"))
			}
			d := config.Default()
			if c.hedge.Max > 0 {
				d.Defaults.Hedge = c.hedge
			}
			cat, err := NewCatalog(CatalogInput{Upstreams: ups, Keys: []config.Key{{Name: "k", Key: testKey}}, Defaults: d.Defaults,
				Affinity: d.Affinity, Seed: 1, Now: clock.Real{}.Now})
			if err != nil {
				b.Fatal(err)
			}
			opts := Options{Clock: clock.Real{}, State: state.NewLocal(state.LocalOptions{Clock: clock.Real{}, Breakers: health.NewBreakers(d.Circuit, clock.Real{})}),
				Transport: cannedTransport{body: []byte(`{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hello!"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}`)},
				Logs:      discardLogs{}}
			if c.traced >= 0 {
				opts.Tracer = benchTracer(b, c.traced)
			}
			srv := New(opts, cat)
			body := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"Hello, how are you today?"}],"max_tokens":64}`)
			b.ReportAllocs()
			b.ResetTimer()
			cpu := benchutil.CPUNow()
			benchPost(b, srv, "/v1/chat/completions", body)
			benchutil.ReportCPU(b, cpu)
		})
	}
}

// benchTracer returns a tracer exporting, with the batch exporter, to an
// OTLP/HTTP collector that reads and drops every export; the provider is
// shut down (its last batch exported) when b ends.
func benchTracer(b *testing.B, ratio float64) trace.Tracer {
	collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/x-protobuf")
	}))
	b.Cleanup(collector.Close)
	cfg := config.Default().Tracing
	cfg.OTLPEndpoint, cfg.SampleRatio = collector.URL, ratio
	tp, err := tracing.New(context.Background(), cfg, tracing.Options{Version: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp.Tracer()
}

type discardLogs struct{}

func (discardLogs) Enqueue(store.RequestLog) bool { return true }

// benchPost posts body to path with the test key until the benchmark's
// loop ends, failing on any answer but 200.
func benchPost(b *testing.B, srv *Server, path string, body []byte) {
	b.Helper()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, path, bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+testKey)
		req.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		if w.Code != 200 {
			b.Fatalf("status %d: %s", w.Code, w.Body)
		}
	}
}

// BenchmarkServeHTTPPreferences is BenchmarkServeHTTP/10-upstreams with
// routing preferences in the body (sort by price, one upstream ignored),
// which the gateway parses, strips from the body and plans with.
func BenchmarkServeHTTPPreferences(b *testing.B) {
	var ups []config.Upstream
	for i := range 10 {
		u := upstreamCfg("u"+strconv.Itoa(i), config.ProviderOpenAI, "http://upstream.invalid/v1", "gpt-4o")
		u.Price = config.Price{InputPerMTok: float64(1 + i%3), OutputPerMTok: float64(4 + i%5)}
		ups = append(ups, u)
	}
	d := config.Default()
	key := config.DefaultKey()
	key.Name, key.Key = "k", testKey
	cat, err := NewCatalog(CatalogInput{Upstreams: ups, Keys: []config.Key{key}, Defaults: d.Defaults,
		Affinity: d.Affinity, Seed: 1, Now: clock.Real{}.Now})
	if err != nil {
		b.Fatal(err)
	}
	srv := New(Options{Clock: clock.Real{}, State: state.NewLocal(state.LocalOptions{Clock: clock.Real{}, Breakers: health.NewBreakers(d.Circuit, clock.Real{})}),
		Transport: cannedTransport{body: []byte(`{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hello!"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}`)},
		Logs:      discardLogs{}}, cat)
	body := []byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"Hello, how are you today?"}],"max_tokens":64,"provider":{"sort":"price","ignore":["u0"]}}`)
	b.ReportAllocs()
	b.ResetTimer()
	cpu := benchutil.CPUNow()
	benchPost(b, srv, "/v1/chat/completions", body)
	benchutil.ReportCPU(b, cpu)
}
