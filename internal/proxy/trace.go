package proxy

import (
	"cmp"
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"switchyard/internal/balancer"
	"switchyard/internal/outcome"
	"switchyard/internal/store"
	"switchyard/internal/tracing"
)

// The span attributes of docs/tracing.md#attributes: the GenAI and HTTP semantic
// conventions' names, and the gateway's own.
const (
	attrUpstream   = attribute.Key("switchyard.upstream")
	attrAttempt    = attribute.Key("switchyard.attempt")
	attrAttempts   = attribute.Key("switchyard.attempts")
	attrHedge      = attribute.Key("switchyard.hedge")
	attrStrategy   = attribute.Key("switchyard.strategy")
	attrAffinity   = attribute.Key("switchyard.affinity")
	attrTranslated = attribute.Key("switchyard.translated")
	attrOutcome    = attribute.Key("switchyard.outcome")
	attrRequestID  = attribute.Key("switchyard.request_id")
	attrOrder      = attribute.Key("switchyard.order")
	attrWaitable   = attribute.Key("switchyard.waitable")
	attrSkipped    = attribute.Key("switchyard.skipped")
	attrReason     = attribute.Key("switchyard.reason")
	attrProbe      = attribute.Key("switchyard.probe")
	attrSystem     = attribute.Key("gen_ai.system")
	attrOperation  = attribute.Key("gen_ai.operation.name")
	attrReqModel   = attribute.Key("gen_ai.request.model")
	attrRespModel  = attribute.Key("gen_ai.response.model")
	attrInTokens   = attribute.Key("gen_ai.usage.input_tokens")
	attrOutTokens  = attribute.Key("gen_ai.usage.output_tokens")
	attrStatus     = attribute.Key("http.response.status_code")
	attrMethod     = attribute.Key("http.request.method")
	attrRoute      = attribute.Key("http.route")
	attrErrorType  = attribute.Key("error.type")
)

// operations are the GenAI operation names of the client protocols that
// are not a chat.
var operations = map[string]string{
	"openai-completions": "text_completion",
	"openai-embeddings":  "embeddings",
}

// operation is gen_ai.operation.name of the client's protocol.
func (q *request) operation() string {
	if op, ok := operations[q.codec.Name()]; ok {
		return op
	}
	return "chat"
}

// traced is a traced request's spans and what its server span is given
// at its end, gathered on the way. It is allocated only when tracing is
// on, so that an exchange without it stays as small as it was.
type traced struct {
	tracer trace.Tracer
	span   trace.Span // the server span
	// spans are the attempts' spans, by their place in log.Tried, until
	// they end; spanBuf holds the first ones.
	spans   []trace.Span
	spanBuf [2]trace.Span
	// recording: the request is sampled. One that is not still passes a
	// traceparent on (sampled=0) and puts its trace id in the log.
	recording          bool
	strategy, affinity string // of the last plan
	respModel          string // the model the committed answer says served it
}

// startTrace opens the request's server span, continuing the client's
// traceparent, and carries it in the request's context from here on; the
// trace id goes to the request's log.
func startTrace(q *request, route string, log *store.RequestLog) *traced {
	ctx := tracing.Propagator.Extract(q.r.Context(), propagation.HeaderCarrier(q.r.Header))
	t := &traced{tracer: q.s.opts.Tracer}
	ctx, t.span = t.tracer.Start(ctx, q.r.Method+" "+route, trace.WithSpanKind(trace.SpanKindServer),
		trace.WithTimestamp(q.began), trace.WithAttributes(
			attrMethod.String(q.r.Method), attrRoute.String(route), attrRequestID.String(log.ID)))
	q.r, q.traced = q.r.WithContext(ctx), true
	t.recording = t.span.IsRecording()
	if sc := t.span.SpanContext(); sc.IsValid() {
		log.TraceID = sc.TraceID().String()
	}
	return t
}

// spanRoute is the server span's route: the path, with a Gemini path's
// model as a placeholder so that span names stay few.
func spanRoute(path string, cl call) string {
	if cl.model == "" {
		return path
	}
	return strings.Replace(path, "/"+cl.model+":", "/{model}:", 1)
}

// end closes the server span with what the request log says of the
// request and how its last plan was made. The attempts' spans carry the
// upstream side: provider, models, tokens.
func (t *traced) end(l *store.RequestLog, began time.Time) {
	if !t.recording {
		return // sampled out: nothing to record
	}
	attrs := make([]attribute.KeyValue, 0, 8)
	attrs = append(attrs, attrStatus.Int(l.Status), attrReqModel.String(l.Model), attrAttempts.Int(l.Attempts))
	if t.strategy != "" {
		attrs = append(attrs, attrStrategy.String(t.strategy))
	}
	if t.affinity != "" {
		attrs = append(attrs, attrAffinity.String(t.affinity))
	}
	if l.Upstream != "" {
		attrs = append(attrs, attrUpstream.String(l.Upstream), attrTranslated.Bool(l.Translated != ""))
	}
	if l.Status >= 400 || l.ErrorClass != "" {
		attrs = append(attrs, attrErrorType.String(cmp.Or(l.ErrorClass, strconv.Itoa(l.Status))))
		if l.Status >= 500 || l.Status == 499 {
			t.span.SetStatus(codes.Error, l.Error)
		}
	}
	t.span.SetAttributes(attrs...)
	t.span.End(trace.WithTimestamp(began.Add(l.Latency)))
}

// plan records a plan on the server span: an event with the order and
// every candidate left out with the reason ("name: filter (detail)").
func (t *traced) plan(d *balancer.Decision) {
	if !t.recording {
		return
	}
	attrs := make([]attribute.KeyValue, 1, 4)
	attrs[0] = attrOrder.StringSlice(d.Order)
	var skipped []string
	for i := range d.Candidates {
		if c := &d.Candidates[i]; c.Filter != "" {
			s := c.Name + ": " + c.Filter
			if c.Detail != "" {
				s += " (" + c.Detail + ")"
			}
			skipped = append(skipped, s)
		}
	}
	if skipped != nil {
		attrs = append(attrs, attrSkipped.StringSlice(skipped))
	}
	if len(d.Waitable) > 0 {
		attrs = append(attrs, attrWaitable.StringSlice(d.Waitable))
	}
	if d.Affinity.Result != "" {
		attrs = append(attrs, attrAffinity.String(d.Affinity.Result))
	}
	t.span.AddEvent("switchyard.plan", trace.WithTimestamp(d.At), trace.WithAttributes(attrs...))
	t.strategy, t.affinity = d.Strategy, d.Affinity.Result
}

// skip records on the server span a candidate of the plan that was
// passed over when its turn came (full, cooling down since planning, …).
func (t *traced) skip(now time.Time, name, reason string) {
	if !t.recording {
		return
	}
	t.span.AddEvent("switchyard.skip", trace.WithTimestamp(now),
		trace.WithAttributes(attrUpstream.String(name), attrReason.String(reason)))
}

// attempt opens attempt i's span, a child of the server span, starting
// at, and returns ctx carrying it: its traceparent goes upstream.
func (t *traced) attempt(ctx context.Context, q *request, i int, at time.Time, up *upstream, model string, hedge bool) context.Context {
	var span trace.Span
	if !t.recording { // a span all the same: its id goes upstream
		ctx, span = t.tracer.Start(ctx, "")
	} else {
		upModel := up.upstreamModel(model)
		op := q.operation()
		ctx, span = t.tracer.Start(ctx, op+" "+upModel, trace.WithSpanKind(trace.SpanKindClient),
			trace.WithTimestamp(at), trace.WithAttributes(
				attrUpstream.String(up.cfg.Name), attrAttempt.Int(i+1), attrHedge.Bool(hedge),
				attrSystem.String(up.system), attrOperation.String(op), attrReqModel.String(upModel),
			))
	}
	if i < len(t.spanBuf) && t.spans == nil {
		t.spans = t.spanBuf[:0]
	}
	for len(t.spans) <= i {
		t.spans = append(t.spans, nil)
	}
	t.spans[i] = span
	return ctx
}

// attemptEnd closes attempt i's span with how it ended (tr, its entry in
// the request log); began is when the request began.
func (t *traced) attemptEnd(i int, tr *store.Attempt, began time.Time, o outcome.Outcome, won bool) {
	if i >= len(t.spans) || t.spans[i] == nil {
		return
	}
	span := t.spans[i]
	t.spans[i] = nil
	if !t.recording {
		return
	}
	attrs := make([]attribute.KeyValue, 0, 6)
	attrs = append(attrs, attrOutcome.String(tr.Outcome))
	if tr.Status != 0 {
		attrs = append(attrs, attrStatus.Int(tr.Status))
	}
	if tr.InputTokens > 0 || tr.OutputTokens > 0 || won {
		attrs = append(attrs, attrInTokens.Int64(tr.InputTokens), attrOutTokens.Int64(tr.OutputTokens))
	}
	if won && t.respModel != "" {
		attrs = append(attrs, attrRespModel.String(t.respModel))
	}
	if o.Class != outcome.Success {
		attrs = append(attrs, attrErrorType.String(errorType(o)))
		if o.Class != outcome.Canceled {
			span.SetStatus(codes.Error, tr.Detail)
		}
	}
	span.SetAttributes(attrs...)
	span.End(trace.WithTimestamp(began.Add(tr.Start + tr.End)))
}

// errorType is an attempt's error.type: the failure's kind (status_5xx,
// connection, first_byte_timeout, …) or, without one, its class.
func errorType(o outcome.Outcome) string {
	if o.Kind != "" {
		return o.Kind
	}
	return o.Class.String()
}

// responseModel is the model an upstream's answer (a whole body, or a
// stream's first event) says served it, in any protocol: OpenAI's and
// Anthropic's "model", Anthropic's message_start "message.model",
// Responses' "response.model", Gemini's "modelVersion"; "" when none.
func responseModel(data []byte) string {
	for _, r := range gjson.GetManyBytes(data, "model", "message.model", "response.model", "modelVersion") {
		if r.Type == gjson.String && r.Str != "" {
			return r.Str
		}
	}
	return ""
}
