package proxy

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"switchyard/internal/config"
)

// clientTrace is the trace a client continues in these tests.
const (
	clientTraceID = "4bf92f3577b34da6a3ce929d0e0e4736"
	clientSpanID  = "00f067aa0ba902b7"
)

// headerLog records one header of every request an upstream receives.
type headerLog struct {
	mu   sync.Mutex
	seen []string
}

func (h *headerLog) wrap(name string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.mu.Lock()
		h.seen = append(h.seen, r.Header.Get(name))
		h.mu.Unlock()
		next.ServeHTTP(w, r)
	})
}

func (h *headerLog) all() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.seen)
}

// attrs indexes a span's or event's attributes by key.
func attrs(kvs []attribute.KeyValue) map[attribute.Key]attribute.Value {
	m := map[attribute.Key]attribute.Value{}
	for _, kv := range kvs {
		m[kv.Key] = kv.Value
	}
	return m
}

// TestTraceOfAFailover: a request whose first attempt fails (500) and
// whose second succeeds, with one candidate skipped by the plan, is one
// server span under the client's trace with two attempt spans and the
// plan as an event; the upstream that served it got the second attempt's
// traceparent. Sampled out, the trace id still reaches the log and the
// upstream; with tracing off the client's traceparent passes through.
func TestTraceOfAFailover(t *testing.T) {
	tests := []struct {
		name      string
		tracing   bool
		flags     string // of the client's traceparent
		wantSpans bool
	}{
		{"traced", true, "01", true},
		{"sampled out by the client", true, "00", false},
		{"tracing off", false, "01", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var hits atomic.Int64
			var brokenSaw, goodSaw headerLog
			broken := upstreamCfg("broken", config.ProviderOpenAI, upstreamServer(t, brokenSaw.wrap("Traceparent", status(500))), "gpt-4o")
			good := upstreamCfg("good", config.ProviderOpenAI, upstreamServer(t, goodSaw.wrap("Traceparent", chatOK(&hits))), "gpt-4o")
			good.Priority = 1
			off := upstreamCfg("off", config.ProviderOpenAI, deadURL(t), "gpt-4o")
			off.Active = false
			rec := tracetest.NewSpanRecorder()
			var o fixtureOpts
			if tt.tracing {
				o.tracer = sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec),
					sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.AlwaysSample()))).Tracer("test")
			}
			f := newFixture(t, []config.Upstream{broken, good, off}, o)
			traceparent := "00-" + clientTraceID + "-" + clientSpanID + "-" + tt.flags
			resp := f.post("/v1/chat/completions", chatBody, "Traceparent", traceparent)
			if body := readAll(t, resp); resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			log := f.logs.next(t)
			brokenGot, goodGot := brokenSaw.all(), goodSaw.all()
			if len(brokenGot) != 1 || len(goodGot) != 1 {
				t.Fatalf("upstream requests: broken %d, good %d; want 1 each", len(brokenGot), len(goodGot))
			}
			if !tt.tracing {
				if log.TraceID != "" {
					t.Errorf("log trace_id = %q with tracing off", log.TraceID)
				}
				if goodGot[0] != traceparent {
					t.Errorf("upstream traceparent = %q, want the client's %q passed through", goodGot[0], traceparent)
				}
				return
			}
			if log.TraceID != clientTraceID {
				t.Errorf("log trace_id = %q, want the client's %s", log.TraceID, clientTraceID)
			}
			for i, tp := range []string{brokenGot[0], goodGot[0]} {
				if !strings.HasPrefix(tp, "00-"+clientTraceID+"-") || !strings.HasSuffix(tp, "-"+tt.flags) || strings.Contains(tp, clientSpanID) {
					t.Errorf("attempt %d sent traceparent %q, want the client's trace, a span of its own, flags %s", i+1, tp, tt.flags)
				}
			}
			if brokenGot[0] == goodGot[0] {
				t.Errorf("both attempts sent traceparent %q: want one span each", goodGot[0])
			}
			spans := rec.Ended()
			if !tt.wantSpans {
				if len(spans) != 0 {
					t.Errorf("%d spans recorded for a request the client sampled out", len(spans))
				}
				return
			}
			checkFailoverSpans(t, spans, goodGot[0])
		})
	}
}

// checkFailoverSpans checks the spans of TestTraceOfAFailover's request;
// served is the traceparent the serving upstream received.
func checkFailoverSpans(t *testing.T, spans []sdktrace.ReadOnlySpan, served string) {
	t.Helper()
	if len(spans) != 3 {
		t.Fatalf("%d spans, want 3 (server, two attempts)", len(spans))
	}
	var server sdktrace.ReadOnlySpan
	var attempts []sdktrace.ReadOnlySpan
	for _, s := range spans {
		if s.SpanContext().TraceID().String() != clientTraceID {
			t.Errorf("span %q in trace %s, want the client's", s.Name(), s.SpanContext().TraceID())
		}
		if s.SpanKind() == trace.SpanKindServer {
			server = s
		} else {
			attempts = append(attempts, s)
		}
	}
	if server == nil || server.Name() != "POST /v1/chat/completions" || server.Parent().SpanID().String() != clientSpanID {
		t.Fatalf("no server span POST /v1/chat/completions under the client's span: %v", spans)
	}
	sa := attrs(server.Attributes())
	for k, want := range map[attribute.Key]string{
		"http.response.status_code": "200", "switchyard.upstream": "good", "switchyard.attempts": "2",
		"gen_ai.request.model": "gpt-4o", "switchyard.strategy": config.StrategyWeightedRandom, "switchyard.translated": "false",
	} {
		if got := sa[k].Emit(); got != want {
			t.Errorf("server span %s = %q, want %q", k, got, want)
		}
	}
	if _, ok := sa["error.type"]; ok {
		t.Errorf("server span of a success has error.type %q", sa["error.type"].Emit())
	}
	events := server.Events()
	if len(events) != 1 || events[0].Name != "switchyard.plan" {
		t.Fatalf("server span events %v, want one switchyard.plan", events)
	}
	ev := attrs(events[0].Attributes)
	if got := ev["switchyard.order"].AsStringSlice(); !slices.Equal(got, []string{"broken", "good"}) {
		t.Errorf("plan order %v, want [broken good]", got)
	}
	if got := ev["switchyard.skipped"].AsStringSlice(); !slices.Equal(got, []string{"off: inactive"}) {
		t.Errorf("plan skipped %v, want [off: inactive]", got)
	}
	slices.SortFunc(attempts, func(a, b sdktrace.ReadOnlySpan) int {
		return int(attrs(a.Attributes())["switchyard.attempt"].AsInt64() - attrs(b.Attributes())["switchyard.attempt"].AsInt64())
	})
	want := []map[attribute.Key]string{
		{"switchyard.upstream": "broken", "switchyard.attempt": "1", "switchyard.hedge": "false", "gen_ai.system": "openai",
			"http.response.status_code": "500", "error.type": "status_5xx", "switchyard.outcome": "server_error"},
		{"switchyard.upstream": "good", "switchyard.attempt": "2", "switchyard.hedge": "false", "gen_ai.system": "openai",
			"http.response.status_code": "200", "gen_ai.usage.input_tokens": "7", "gen_ai.usage.output_tokens": "3",
			"gen_ai.request.model": "gpt-4o", "switchyard.outcome": "success"},
	}
	for i, a := range attempts {
		if a.Parent().SpanID() != server.SpanContext().SpanID() || a.SpanKind() != trace.SpanKindClient || a.Name() != "chat gpt-4o" {
			t.Errorf("attempt %d: %q kind %v parent %s, want client span chat gpt-4o under the server span", i+1, a.Name(), a.SpanKind(), a.Parent().SpanID())
		}
		got := attrs(a.Attributes())
		for k, w := range want[i] {
			if got[k].Emit() != w {
				t.Errorf("attempt %d %s = %q, want %q", i+1, k, got[k].Emit(), w)
			}
		}
		if _, ok := got["error.type"]; i == 1 && ok {
			t.Errorf("the winning attempt has error.type %q", got["error.type"].Emit())
		}
	}
	if len(attempts) == 2 && !strings.Contains(served, attempts[1].SpanContext().SpanID().String()) {
		t.Errorf("serving upstream got traceparent %q, want the second attempt's span %s", served, attempts[1].SpanContext().SpanID())
	}
}

// TestProbeSpan: an active probe is a root span of its own, with the
// upstream, its status and, when it fails, error.type.
func TestProbeSpan(t *testing.T) {
	tests := []struct {
		name      string
		handler   http.Handler
		wantError string
	}{
		{"healthy", chatOK(new(atomic.Int64)), ""},
		{"failing", status(503), "server_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := tracetest.NewSpanRecorder()
			tracer := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec)).Tracer("test")
			f := newFixture(t, []config.Upstream{upstreamCfg("u", config.ProviderOpenAI, upstreamServer(t, tt.handler), "gpt-4o")},
				fixtureOpts{tracer: tracer})
			err := f.srv.Probe(context.Background(), "u", "models")
			if (err != nil) != (tt.wantError != "") {
				t.Fatalf("Probe: %v", err)
			}
			spans := rec.Ended()
			if len(spans) != 1 || spans[0].Name() != "probe u" || spans[0].Parent().IsValid() {
				t.Fatalf("spans %v, want one root span \"probe u\"", spans)
			}
			a := attrs(spans[0].Attributes())
			if a["switchyard.upstream"].AsString() != "u" || a["switchyard.probe"].AsString() != "models" {
				t.Errorf("probe span attributes %v", a)
			}
			if got := a["error.type"].AsString(); got != tt.wantError {
				t.Errorf("error.type = %q, want %q", got, tt.wantError)
			}
		})
	}
}
