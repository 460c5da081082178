// Package tracing exports the gateway's OpenTelemetry traces
// (docs/tracing.md): it builds the tracer provider and its OTLP exporter from
// `tracing.*`, and holds what the request path and the log share: the W3C
// trace-context propagator and the log handler that puts trace_id on every
// line written within a span.
package tracing

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"switchyard/internal/clock"
	"switchyard/internal/config"
)

// Propagator reads and writes W3C traceparent/tracestate headers.
var Propagator propagation.TextMapPropagator = propagation.TraceContext{}

// Provider is a running trace pipeline: a tracer and the batch exporter
// behind it.
type Provider struct {
	tp     *sdktrace.TracerProvider
	tracer trace.Tracer
}

// Options tunes New beyond the configuration.
type Options struct {
	// Version is the service.version resource attribute.
	Version string
	// Logger receives export failures, at most one line a minute.
	Logger *slog.Logger
	// Clock paces those lines. Default: the wall clock.
	Clock clock.Clock
	// BatchTimeout is how long the batch processor waits to fill a batch;
	// 0 is the SDK's default (5 s). Tests shorten it.
	BatchTimeout time.Duration
}

// New starts the exporter cfg names. It returns nil and no error when
// tracing is off. The exporter connects lazily: a collector that is down
// costs dropped spans, never a failed start.
func New(ctx context.Context, cfg config.Tracing, opts Options) (*Provider, error) {
	if !cfg.On() {
		return nil, nil
	}
	exp, err := exporter(ctx, cfg)
	if err != nil {
		return nil, err
	}
	res, err := resource.New(ctx, resource.WithAttributes(
		attribute.String("service.name", cfg.ServiceName),
		attribute.String("service.version", opts.Version),
	))
	if err != nil {
		return nil, fmt.Errorf("tracing: resource: %w", err)
	}
	var batch []sdktrace.BatchSpanProcessorOption
	if opts.BatchTimeout > 0 {
		batch = append(batch, sdktrace.WithBatchTimeout(opts.BatchTimeout))
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithBatcher(exp, batch...),
		sdktrace.WithResource(res),
		sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(cfg.SampleRatio))),
	)
	if opts.Logger != nil {
		if opts.Clock == nil {
			opts.Clock = clock.Real{}
		}
		otel.SetErrorHandler(&errorLog{log: opts.Logger, clock: opts.Clock, interval: time.Minute})
	}
	return &Provider{tp: tp, tracer: tp.Tracer("switchyard")}, nil
}

// exporter builds the OTLP exporter of cfg.OTLPEndpoint's scheme.
func exporter(ctx context.Context, cfg config.Tracing) (sdktrace.SpanExporter, error) {
	u, err := url.Parse(cfg.OTLPEndpoint)
	if err != nil {
		return nil, fmt.Errorf("tracing.otlp_endpoint: %w", err)
	}
	switch u.Scheme {
	case "grpc", "grpcs":
		opts := []otlptracegrpc.Option{otlptracegrpc.WithEndpoint(u.Host), otlptracegrpc.WithHeaders(cfg.Headers)}
		if u.Scheme == "grpc" {
			opts = append(opts, otlptracegrpc.WithInsecure())
		}
		return otlptracegrpc.New(ctx, opts...)
	case "http", "https":
		path := u.Path
		if strings.Trim(path, "/") == "" {
			path = "/v1/traces"
		}
		opts := []otlptracehttp.Option{otlptracehttp.WithEndpoint(u.Host), otlptracehttp.WithURLPath(path),
			otlptracehttp.WithHeaders(cfg.Headers)}
		if u.Scheme == "http" {
			opts = append(opts, otlptracehttp.WithInsecure())
		}
		return otlptracehttp.New(ctx, opts...)
	}
	return nil, fmt.Errorf("tracing.otlp_endpoint: scheme %q: use http, https, grpc or grpcs", u.Scheme)
}

// Redacted is endpoint as it may be logged: scheme, host and path, without
// any user or password.
func Redacted(endpoint string) string {
	u, err := url.Parse(endpoint)
	if err != nil {
		return "(invalid URL)"
	}
	u.User = nil
	return u.String()
}

// Tracer returns the gateway's tracer.
func (p *Provider) Tracer() trace.Tracer { return p.tracer }

// Shutdown exports the spans still buffered and stops the exporter.
func (p *Provider) Shutdown(ctx context.Context) error { return p.tp.Shutdown(ctx) }

// ForceFlush exports the spans buffered so far.
func (p *Provider) ForceFlush(ctx context.Context) error { return p.tp.ForceFlush(ctx) }

// errorLog logs the SDK's errors (a collector that refuses or cannot be
// reached) at most once per interval, with how many it held back, so that
// a collector outage is one line a minute rather than one per batch.
type errorLog struct {
	log      *slog.Logger
	clock    clock.Clock
	interval time.Duration

	mu         sync.Mutex
	last       time.Time
	suppressed int
}

func (e *errorLog) Handle(err error) {
	e.mu.Lock()
	now := e.clock.Now()
	if !e.last.IsZero() && now.Sub(e.last) < e.interval {
		e.suppressed++
		e.mu.Unlock()
		return
	}
	n := e.suppressed
	e.last, e.suppressed = now, 0
	e.mu.Unlock()
	e.log.Warn("trace export failed; spans are being dropped", "err", err, "similar_errors_since_last", n)
}

// LogHandler wraps h so that a record logged with a context inside a span
// carries trace_id and span_id, linking the log line to its trace.
func LogHandler(h slog.Handler) slog.Handler { return traceHandler{h} }

type traceHandler struct{ slog.Handler }

func (t traceHandler) Handle(ctx context.Context, r slog.Record) error {
	if sc := trace.SpanContextFromContext(ctx); sc.IsValid() {
		r.AddAttrs(slog.String("trace_id", sc.TraceID().String()), slog.String("span_id", sc.SpanID().String()))
	}
	return t.Handler.Handle(ctx, r)
}

func (t traceHandler) WithAttrs(as []slog.Attr) slog.Handler {
	return traceHandler{t.Handler.WithAttrs(as)}
}

func (t traceHandler) WithGroup(name string) slog.Handler {
	return traceHandler{t.Handler.WithGroup(name)}
}
