package tracing

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"switchyard/internal/benchutil"
	"switchyard/internal/clock"
	"switchyard/internal/config"
)

// TestLogHandlerAddsTraceID: a line logged inside a span carries its
// trace and span ids; one logged outside any span carries neither.
func TestLogHandlerAddsTraceID(t *testing.T) {
	tp := sdktrace.NewTracerProvider()
	ctx, span := tp.Tracer("test").Start(context.Background(), "request")
	defer span.End()
	tests := []struct {
		name      string
		ctx       context.Context
		wantTrace string
		wantSpan  string
	}{
		{"inside a span", ctx, span.SpanContext().TraceID().String(), span.SpanContext().SpanID().String()},
		{"outside any span", context.Background(), "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var buf bytes.Buffer
			log := slog.New(LogHandler(slog.NewJSONHandler(&buf, nil))).With("component", "proxy")
			log.InfoContext(tt.ctx, "failed over", "upstream", "a")
			var line map[string]any
			if err := json.Unmarshal(buf.Bytes(), &line); err != nil {
				t.Fatal(err)
			}
			if got, _ := line["trace_id"].(string); got != tt.wantTrace {
				t.Errorf("trace_id = %q, want %q", got, tt.wantTrace)
			}
			if got, _ := line["span_id"].(string); got != tt.wantSpan {
				t.Errorf("span_id = %q, want %q", got, tt.wantSpan)
			}
			if line["component"] != "proxy" {
				t.Errorf("WithAttrs lost: %v", line)
			}
		})
	}
}

// TestErrorLogAggregates: export errors are one line per interval, the
// next one saying how many were held back.
func TestErrorLogAggregates(t *testing.T) {
	fc := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	var buf bytes.Buffer
	e := &errorLog{log: slog.New(slog.NewJSONHandler(&buf, nil)), clock: fc, interval: time.Minute}
	steps := []struct {
		advance time.Duration
		errors  int
	}{{0, 5}, {30 * time.Second, 10}, {31 * time.Second, 1}, {time.Second, 3}}
	for _, s := range steps {
		fc.Advance(s.advance)
		for range s.errors {
			e.Handle(errors.New("connection refused"))
		}
	}
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")
	if len(lines) != 2 {
		t.Fatalf("%d lines, want 2 (at 0 s and at 61 s):\n%s", len(lines), buf.String())
	}
	var second map[string]any
	if err := json.Unmarshal([]byte(lines[1]), &second); err != nil {
		t.Fatal(err)
	}
	if second["similar_errors_since_last"] != float64(14) {
		t.Errorf("second line %v, want 14 errors held back", second)
	}
}

// TestNew: off without an endpoint; each scheme builds its exporter;
// nothing is dialled before the first export.
func TestNew(t *testing.T) {
	tests := []struct {
		endpoint string
		wantOn   bool
		wantErr  string
	}{
		{"", false, ""},
		{"http://127.0.0.1:1", true, ""},
		{"https://collector.example:4318/otlp/v1/traces", true, ""},
		{"grpc://127.0.0.1:1", true, ""},
		{"grpcs://collector.example:4317", true, ""},
		{"ftp://collector:21", false, `scheme "ftp"`},
	}
	for _, tt := range tests {
		t.Run(tt.endpoint, func(t *testing.T) {
			cfg := config.Default().Tracing
			cfg.OTLPEndpoint = tt.endpoint
			p, err := New(context.Background(), cfg, Options{})
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("err = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if (p != nil) != tt.wantOn {
				t.Fatalf("provider %v, want on=%v", p, tt.wantOn)
			}
			if p != nil {
				ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
				defer cancel()
				_ = p.Shutdown(ctx) // nothing buffered: no export
			}
		})
	}
}

func TestRedacted(t *testing.T) {
	if got := Redacted("https://user:s3cret@collector:4318/v1/traces"); strings.Contains(got, "s3cret") || !strings.Contains(got, "collector:4318") {
		t.Errorf("Redacted = %q", got)
	}
}

// BenchmarkSDK is what the OpenTelemetry SDK costs by itself for a server
// span with one child, each with n attributes, exported with the batch
// exporter over OTLP/HTTP: the floor under the gateway's traced requests
// (BenchmarkServeHTTP/1-upstreams-traced in internal/proxy).
func BenchmarkSDK(b *testing.B) {
	for _, n := range []int{0, 5, 10} {
		b.Run(strconv.Itoa(n)+"-attributes", func(b *testing.B) {
			collector := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
			}))
			defer collector.Close()
			cfg := config.Default().Tracing
			cfg.OTLPEndpoint = collector.URL
			p, err := New(context.Background(), cfg, Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer func() { _ = p.Shutdown(context.Background()) }()
			attrs := make([]attribute.KeyValue, n)
			for i := range attrs {
				attrs[i] = attribute.String("switchyard.k"+strconv.Itoa(i), "value")
			}
			tr := p.Tracer()
			b.ReportAllocs()
			cpu := benchutil.CPUNow()
			for b.Loop() {
				ctx, server := tr.Start(context.Background(), "POST /v1/chat/completions", trace.WithAttributes(attrs...))
				_, attempt := tr.Start(ctx, "chat gpt-4o", trace.WithAttributes(attrs...))
				attempt.End()
				server.End()
			}
			benchutil.ReportCPU(b, cpu)
		})
	}
}
