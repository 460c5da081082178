package proxy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"switchyard/internal/health"
	"switchyard/internal/outcome"
	"switchyard/internal/provider"
	"switchyard/internal/tracing"
)

// Probe checks upstream name the way `health.probe` says: "models" lists
// its models, "chat" asks the first concrete model it serves for one token;
// the provider's adapter builds the request. It returns nil when the
// upstream answered 2xx, and a *health.OutcomeError that classifies anything
// else. Probe is the health.CheckFunc of the gateway's prober.
func (s *Server) Probe(ctx context.Context, name, kind string) (err error) {
	up := s.catalog.Load().byName[name]
	if up == nil {
		return fmt.Errorf("probing %s: no such upstream", name)
	}
	var span trace.Span
	if s.opts.Tracer != nil {
		ctx, span = s.opts.Tracer.Start(ctx, "probe "+name, trace.WithNewRoot(), trace.WithSpanKind(trace.SpanKindClient),
			trace.WithAttributes(attrUpstream.String(name), attrProbe.String(kind), attrSystem.String(up.system)))
		defer func() { endProbeSpan(span, err) }()
	}
	req, err := up.ep.ProbeRequest(ctx, kind, probeModel(up))
	if errors.Is(err, provider.ErrAuth) { // the credentials exchange failed (Vertex)
		return &health.OutcomeError{Outcome: outcome.AuthError, Err: fmt.Errorf("probing %s: %w", name, err)}
	}
	if err != nil {
		return fmt.Errorf("probing %s: %w", name, err)
	}
	if span != nil {
		tracing.Propagator.Inject(ctx, propagation.HeaderCarrier(req.Header))
	}
	resp, err := s.upstream.RoundTrip(req)
	if err != nil {
		return &health.OutcomeError{Outcome: outcome.ServerError, Err: fmt.Errorf("probing %s: %w", name, unwrapURLError(err))}
	}
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
	resp.Body.Close()
	if span != nil {
		span.SetAttributes(attrStatus.Int(resp.StatusCode))
	}
	if o := up.ep.Classify(resp.StatusCode, resp.Header, body); o.Class != outcome.Success {
		return &health.OutcomeError{Outcome: o.Class, Err: fmt.Errorf("probing %s: status %d", name, resp.StatusCode)}
	}
	return nil
}

// endProbeSpan ends a probe's span with its result.
func endProbeSpan(span trace.Span, err error) {
	if err != nil {
		class := outcome.ServerError
		var oe *health.OutcomeError
		if errors.As(err, &oe) {
			class = oe.Outcome
		}
		span.SetAttributes(attrErrorType.String(class.String()))
		span.SetStatus(codes.Error, err.Error())
	}
	span.End()
}

// probeModel is the upstream's first model without glob characters, as
// mapped for it.
func probeModel(up *upstream) string {
	for _, m := range up.cfg.Models {
		if !strings.ContainsAny(m, "*?[") {
			return up.upstreamModel(m)
		}
	}
	return up.upstreamModel(strings.Trim(up.cfg.Models[0], "*?[]"))
}

// ActiveUpstreams returns the names of the active upstreams in force, sorted
// (the targets of the active prober).
func (s *Server) ActiveUpstreams() []string {
	cat := s.catalog.Load()
	names := make([]string, 0, len(cat.upstreams))
	for _, u := range cat.upstreams {
		if u.cfg.Active {
			names = append(names, u.cfg.Name)
		}
	}
	return names
}
