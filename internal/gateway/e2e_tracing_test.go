package gateway_test

import (
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/openai/openai-go/v3/option"
	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"switchyard/internal/config"
	"switchyard/internal/mock"
)

// receiver is an in-process OTLP collector: it keeps every span exported
// to it, over OTLP/HTTP (protobuf) or OTLP/gRPC.
type receiver struct {
	collectortrace.UnimplementedTraceServiceServer
	mu       sync.Mutex
	spans    []*tracepb.Span
	services []string // service.name of each export's resource
}

func (rc *receiver) keep(req *collectortrace.ExportTraceServiceRequest) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	for _, rs := range req.ResourceSpans {
		for _, a := range rs.GetResource().GetAttributes() {
			if a.Key == "service.name" {
				rc.services = append(rc.services, a.Value.GetStringValue())
			}
		}
		for _, ss := range rs.ScopeSpans {
			rc.spans = append(rc.spans, ss.Spans...)
		}
	}
}

// Export is the OTLP/gRPC trace service.
func (rc *receiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	rc.keep(req)
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

// ServeHTTP is the OTLP/HTTP endpoint, POST /v1/traces with a protobuf body.
func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/v1/traces" || r.Header.Get("Content-Type") != "application/x-protobuf" {
		http.Error(w, "want POST /v1/traces with application/x-protobuf", http.StatusBadRequest)
		return
	}
	body, err := io.ReadAll(r.Body)
	var req collectortrace.ExportTraceServiceRequest
	if err == nil {
		err = proto.Unmarshal(body, &req)
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	rc.keep(&req)
	out, _ := proto.Marshal(&collectortrace.ExportTraceServiceResponse{})
	w.Header().Set("Content-Type", "application/x-protobuf")
	_, _ = w.Write(out)
}

func (rc *receiver) received() ([]*tracepb.Span, []string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return slices.Clone(rc.spans), slices.Clone(rc.services)
}

// startReceiver starts rc on loopback for exporter "http" or "grpc" and
// returns the tracing.otlp_endpoint that reaches it.
func startReceiver(t *testing.T, rc *receiver, exporter string) string {
	t.Helper()
	if exporter == "http" {
		s := httptest.NewServer(rc)
		t.Cleanup(s.Close)
		return s.URL
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	gs := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(gs, rc)
	go func() { _ = gs.Serve(ln) }()
	t.Cleanup(gs.Stop)
	return "grpc://" + ln.Addr().String()
}

// spanAttrs indexes OTLP attributes by key, each value as text.
func spanAttrs(kvs []*commonpb.KeyValue) map[string]string {
	m := map[string]string{}
	for _, kv := range kvs {
		switch v := kv.Value.Value.(type) {
		case *commonpb.AnyValue_StringValue:
			m[kv.Key] = v.StringValue
		case *commonpb.AnyValue_IntValue:
			m[kv.Key] = fmt.Sprint(v.IntValue)
		case *commonpb.AnyValue_BoolValue:
			m[kv.Key] = fmt.Sprint(v.BoolValue)
		case *commonpb.AnyValue_ArrayValue:
			var parts []string
			for _, e := range v.ArrayValue.Values {
				parts = append(parts, e.GetStringValue())
			}
			m[kv.Key] = strings.Join(parts, "|")
		}
	}
	return m
}

// TestTracesOfAFailoverThroughTheBinary: `switchyard serve` with tracing
// on exports, for a request that fails over once, one server span under
// the client's trace, two attempt spans (the first with error.type), the
// plan event naming the skipped candidate and the winner's tokens: over
// OTLP/HTTP to a receiver decoding the protobuf, and over OTLP/gRPC. The
// spans are flushed when the process stops (SIGTERM); the request log and
// the debug log line of the decision carry the trace id.
func TestTracesOfAFailoverThroughTheBinary(t *testing.T) {
	bin := buildSwitchyard(t)
	for _, exporter := range []string{"http", "grpc"} {
		t.Run(exporter, func(t *testing.T) {
			rc := &receiver{}
			endpoint := startReceiver(t, rc, exporter)
			_, badURL := startMock(t, "bad", mock.Behavior{ForceStatus: http.StatusInternalServerError})
			_, goodURL := startMock(t, "good", mock.Behavior{CompletionTokens: 3})
			cfg := filepath.Join(t.TempDir(), "switchyard.yaml")
			yaml := fmt.Sprintf(`listen: "127.0.0.1:0"
admin: {token: %s}
store: {driver: sqlite, dsn: %q}
log: {level: debug}
health: {interval: 0s}
tracing:
  otlp_endpoint: %s
  service_name: gateway-under-test
keys: [{name: e2e, key: %s}]
upstreams:
  - {name: bad, provider: openai, base_url: %s/v1, api_key: sk-bad, models: [gpt-4o], priority: 0}
  - {name: good, provider: openai, base_url: %s/v1, api_key: sk-good, models: [gpt-4o], priority: 1}
  - {name: off, provider: openai, base_url: http://127.0.0.1:1/v1, api_key: sk-off, models: [gpt-4o], active: false}
`, adminToken, filepath.Join(t.TempDir(), "sy.db"), endpoint, testKey, badURL, goodURL)
			if err := os.WriteFile(cfg, []byte(yaml), 0o600); err != nil {
				t.Fatal(err)
			}
			p := startProcess(t, bin, cfg)

			traceID, parentID := "0af7651916cd43dd8448eb211c80319c", "b7ad6b7169203331"
			var raw *http.Response
			client := (&env{URL: p.url}).openAI(testKey)
			if _, err := client.Chat.Completions.New(context.Background(), chatParams("gpt-4o", "hi"), option.WithResponseInto(&raw),
				option.WithHeader("traceparent", "00-"+traceID+"-"+parentID+"-01")); err != nil {
				t.Fatal(err)
			}
			if raw.Header.Get("X-Switchyard-Attempts") != "2" {
				t.Fatalf("%s attempts, want a failover", raw.Header.Get("X-Switchyard-Attempts"))
			}
			id := raw.Header.Get("X-Request-Id")
			v := waitRequestView(t, &env{URL: p.url}, id)
			if v.TraceID == nil || *v.TraceID != traceID || v.Log.TraceID != traceID {
				t.Errorf("request view trace_id %v, log %q; want the client's %s", v.TraceID, v.Log.TraceID, traceID)
			}

			_ = p.cmd.Process.Signal(syscall.SIGTERM)
			if err := p.wait(t, 30*time.Second); err != nil {
				t.Fatalf("switchyard exited with %v", err)
			}
			spans, services := rc.received()
			checkExportedFailover(t, spans, traceID, parentID)
			if len(services) == 0 || services[0] != "gateway-under-test" {
				t.Errorf("resource service.name %v, want gateway-under-test", services)
			}
			decided := false
			for _, line := range p.log() {
				var l struct {
					Msg      string
					Decision struct {
						RequestID string `json:"request_id"`
						TraceID   string `json:"trace_id"`
					}
				}
				if json.Unmarshal([]byte(line), &l) == nil && l.Msg == "routing decision" && l.Decision.RequestID == id {
					decided = l.Decision.TraceID == traceID
				}
			}
			if !decided {
				t.Errorf("no debug line of the decision of %s with trace_id %s", id, traceID)
			}
		})
	}
}

// checkExportedFailover checks the spans TestTracesOfAFailoverThroughTheBinary's
// request exported.
func checkExportedFailover(t *testing.T, spans []*tracepb.Span, traceID, parentID string) {
	t.Helper()
	var server *tracepb.Span
	var attempts []*tracepb.Span
	for _, s := range spans {
		if hex.EncodeToString(s.TraceId) != traceID {
			continue
		}
		switch s.Kind {
		case tracepb.Span_SPAN_KIND_SERVER:
			if server != nil {
				t.Errorf("a second server span %q", s.Name)
			}
			server = s
		case tracepb.Span_SPAN_KIND_CLIENT:
			attempts = append(attempts, s)
		}
	}
	if server == nil {
		t.Fatalf("no server span in the client's trace among %d spans", len(spans))
	}
	if server.Name != "POST /v1/chat/completions" || hex.EncodeToString(server.ParentSpanId) != parentID {
		t.Errorf("server span %q under %x, want POST /v1/chat/completions under the client's %s", server.Name, server.ParentSpanId, parentID)
	}
	sa := spanAttrs(server.Attributes)
	if sa["http.response.status_code"] != "200" || sa["switchyard.upstream"] != "good" || sa["switchyard.attempts"] != "2" {
		t.Errorf("server span attributes %v", sa)
	}
	var plan map[string]string
	for _, ev := range server.Events {
		if ev.Name == "switchyard.plan" {
			plan = spanAttrs(ev.Attributes)
		}
	}
	if plan == nil || plan["switchyard.order"] != "bad|good" || plan["switchyard.skipped"] != "off: inactive" {
		t.Errorf("plan event %v, want order bad|good and off skipped as inactive", plan)
	}
	if len(attempts) != 2 {
		t.Fatalf("%d attempt spans, want 2", len(attempts))
	}
	slices.SortFunc(attempts, func(a, b *tracepb.Span) int { return int(a.StartTimeUnixNano) - int(b.StartTimeUnixNano) })
	first, second := spanAttrs(attempts[0].Attributes), spanAttrs(attempts[1].Attributes)
	if first["switchyard.upstream"] != "bad" || first["switchyard.attempt"] != "1" || first["error.type"] != "status_5xx" ||
		attempts[0].Status.GetCode() != tracepb.Status_STATUS_CODE_ERROR {
		t.Errorf("first attempt %v (status %v), want bad failing with error.type status_5xx", first, attempts[0].Status)
	}
	if second["switchyard.upstream"] != "good" || second["switchyard.attempt"] != "2" || second["gen_ai.usage.output_tokens"] != "3" ||
		second["gen_ai.system"] != "openai" || second["error.type"] != "" || second["gen_ai.response.model"] == "" {
		t.Errorf("second attempt %v, want good winning with 3 output tokens and a response model", second)
	}
	for _, a := range attempts {
		if !slices.Equal(a.ParentSpanId, server.SpanId) {
			t.Errorf("attempt %q is not a child of the server span", a.Name)
		}
	}
}

// TestTraceOfAHedgedRequest: a hedge is an attempt span of its own,
// marked switchyard.hedge, beside the attempt it raced; the loser ends
// with error.type canceled and no error status (it did not fail), the
// winner carries the tokens.
func TestTraceOfAHedgedRequest(t *testing.T) {
	rc := &receiver{}
	endpoint := startReceiver(t, rc, "http")
	_, slowURL := startMock(t, "slow", mock.Behavior{TTFT: 3 * time.Second})
	_, fastURL := startMock(t, "fast", mock.Behavior{CompletionTokens: 4})
	e := startGateway(t, spec{
		upstreams: []config.Upstream{
			upstreamAt("primary", config.ProviderOpenAI, slowURL, 0, "gpt-4o"),
			upstreamAt("secondary", config.ProviderOpenAI, fastURL, 1, "gpt-4o"),
		},
		edit: func(c *config.Config) {
			c.Defaults.Hedge = config.Hedge{Delay: "100ms", Max: 1, Budget: 1}
			c.Tracing.OTLPEndpoint = endpoint
		}})
	r := e.post(t, "/v1/chat/completions", `{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`)
	if r.status != http.StatusOK || r.header.Get("X-Switchyard-Hedged") != "2" {
		t.Fatalf("status %d, hedged %q; want 200 after a hedge", r.status, r.header.Get("X-Switchyard-Hedged"))
	}
	if err := e.Close(); err != nil { // flushes the spans
		t.Fatal(err)
	}
	spans, _ := rc.received()
	byUpstream := map[string]map[string]string{}
	for _, s := range spans {
		if s.Kind == tracepb.Span_SPAN_KIND_CLIENT {
			a := spanAttrs(s.Attributes)
			if s.Status.GetCode() == tracepb.Status_STATUS_CODE_ERROR {
				a["status"] = "error"
			}
			byUpstream[a["switchyard.upstream"]] = a
		}
	}
	want := map[string]map[string]string{
		"primary":   {"switchyard.attempt": "1", "switchyard.hedge": "false", "error.type": "canceled", "switchyard.outcome": "canceled", "status": ""},
		"secondary": {"switchyard.attempt": "2", "switchyard.hedge": "true", "error.type": "", "gen_ai.usage.output_tokens": "4", "status": ""},
	}
	if len(byUpstream) != 2 {
		t.Fatalf("attempt spans %v, want one per upstream", byUpstream)
	}
	for up, attrs := range want {
		for k, v := range attrs {
			if got := byUpstream[up][k]; got != v {
				t.Errorf("%s attempt %s = %q, want %q", up, k, got, v)
			}
		}
	}
}
