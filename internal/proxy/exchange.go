package proxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"switchyard/internal/balancer"
	"switchyard/internal/config"
	"switchyard/internal/health"
	"switchyard/internal/store"
)

// Attempt-ending causes, set on the attempt context.
var (
	errFirstByteTimeout = errors.New("first byte timeout")
	errStreamIdle       = errors.New("stream idle timeout")
	errRequestTimeout   = errors.New("request timeout")
)

// exchange is one client request on its way through the attempt loop.
type exchange struct {
	s        *Server
	w        http.ResponseWriter
	r        *http.Request
	ep       endpoint
	cat      *Catalog
	key      *clientKey
	body     []byte
	model    string
	stream   bool
	start    time.Time
	attempts int
	failures []string      // "upstream: what went wrong", for the final error
	retryIn  time.Duration // shortest Retry-After seen from a 429 or an open breaker
	log      store.RequestLog
}

// serveProxy handles one proxied client request end to end.
func (s *Server) serveProxy(w http.ResponseWriter, r *http.Request, ep endpoint) {
	x := &exchange{s: s, w: w, r: r, ep: ep, cat: s.catalog.Load(), start: s.opts.Clock.Now()}
	x.log = store.RequestLog{ID: requestID(r), Time: x.start}
	w.Header().Set("X-Request-Id", x.log.ID)
	if err := x.run(); err != nil {
		var ae *apiError
		if !errors.As(err, &ae) {
			ae = apiErrorFor(err)
		}
		x.log.Status, x.log.ErrorClass, x.log.Error = ae.status, ae.code, ae.msg
		if x.attempts > 0 {
			w.Header().Set("X-Switchyard-Attempts", strconv.Itoa(x.attempts))
		}
		writeError(w, ep.protocol, ae)
	}
	x.log.Attempts = x.attempts
	x.log.Latency = s.opts.Clock.Now().Sub(x.start)
	if s.opts.Logs != nil {
		s.opts.Logs.Enqueue(x.log)
	}
}

// run authenticates, validates and routes the request; an error return is
// answered by the caller, nil means a response was written.
func (x *exchange) run() error {
	key, err := x.cat.authenticate(x.r)
	if err != nil {
		return err
	}
	x.key, x.log.Key = key, key.cfg.Name
	if x.body, err = readBody(x.w, x.r, x.cat.maxBody); err != nil {
		return err
	}
	if err := x.peek(); err != nil {
		return err
	}
	if !key.allows(x.model) {
		return newError(ErrModelNotAllowed, fmt.Sprintf("model %q is not allowed for this key", x.model))
	}
	rt := x.cat.route(x.model)
	if int64(len(x.body)) > rt.cfg.MaxBodyBytes {
		return newError(ErrBodyTooLarge, bodyTooLargeMsg(rt.cfg.MaxBodyBytes))
	}
	ctx, cancel := context.WithCancelCause(x.r.Context())
	defer cancel(nil)
	deadline := x.s.opts.Clock.AfterFunc(rt.cfg.Timeout, func() { cancel(errRequestTimeout) })
	defer deadline.Stop()

	served := false
	for i, model := range append([]string{x.model}, rt.cfg.FallbackModels...) {
		if i > 0 && !key.allows(model) {
			continue
		}
		done, found, err := x.tryModel(ctx, model, i > 0)
		served = served || found
		if done || err != nil {
			return err
		}
		if ctx.Err() != nil {
			break
		}
	}
	if !served {
		return newError(ErrModelNotFound, fmt.Sprintf("no upstream serves model %q", x.model))
	}
	return x.exhausted()
}

// peek reads model and stream from the body without decoding it whole.
func (x *exchange) peek() error {
	if !gjson.ValidBytes(x.body) {
		return newError(ErrInvalidJSON, "")
	}
	root := gjson.ParseBytes(x.body)
	if !root.IsObject() {
		return newError(ErrInvalidRequest, "request body must be a JSON object")
	}
	m := root.Get("model")
	if !m.Exists() || m.Type == gjson.Null {
		return newError(ErrMissingModel, "")
	}
	if m.Type != gjson.String || m.Str == "" {
		return newError(ErrInvalidRequest, `"model" must be a non-empty string`)
	}
	x.model, x.log.Model = m.Str, m.Str
	if st := root.Get("stream"); st.Exists() && st.Type != gjson.Null {
		if st.Type != gjson.True && st.Type != gjson.False {
			return newError(ErrInvalidRequest, `"stream" must be a boolean`)
		}
		x.stream = st.Bool()
	}
	x.log.Stream = x.stream
	return nil
}

// tryModel plans and attempts the upstreams of model. done reports that a
// response was written; found that some upstream serves the model.
func (x *exchange) tryModel(ctx context.Context, model string, fallback bool) (done, found bool, err error) {
	ups := x.cat.candidates(model, x.key, x.ep.protocol)
	if len(ups) == 0 {
		return false, false, nil
	}
	rt := x.cat.route(model)
	body := x.body
	if fallback {
		if body, err = sjson.SetBytes(x.body, "model", model); err != nil {
			return false, true, fmt.Errorf("rewriting model for fallback: %w", err)
		}
	}
	cands := make([]balancer.Candidate, len(ups))
	now := x.s.opts.Clock.Now()
	for i, u := range ups {
		v := x.s.opts.Breakers.View(u.cfg.Name)
		cands[i] = balancer.Candidate{
			Name: u.cfg.Name, Priority: u.cfg.Priority, Weight: u.cfg.Weight, Active: u.cfg.Active,
			InFlight: x.s.opts.Slots.InFlight(u.cfg.Name), MaxConcurrency: u.cfg.MaxConcurrency,
			QueueEnabled: u.cfg.Queue.Enabled, BreakerOpen: v.Open, BreakerReason: v.Reason,
		}
		if v.Open {
			x.noteRetry(v.Until.Sub(now))
		}
	}
	plan := rt.bal.Plan(balancer.Request{
		RequestID: x.log.ID, Model: model, Key: x.key.cfg.Name, Stream: x.stream, K: 1 + rt.cfg.Retries,
	}, cands)
	if x.s.opts.OnDecision != nil {
		x.s.opts.OnDecision(&plan.Decision)
	}
	for _, name := range plan.Order {
		up := x.cat.byName[name]
		release, ok := x.s.opts.Slots.TryAcquire(name, up.cfg.MaxConcurrency)
		if !ok {
			x.failures = append(x.failures, name+": concurrency full")
			continue
		}
		res := x.attempt(ctx, up, rt.cfg.RouteSettings, model, body)
		release()
		if res.outcome == health.Canceled {
			x.log.Status, x.log.ErrorClass = 499, "client_canceled"
			return true, true, nil
		}
		x.s.opts.Breakers.Record(name, res.outcome, res.detail)
		if res.written || !res.outcome.Failover() {
			return true, true, nil
		}
		x.failures = append(x.failures, name+": "+res.detail)
		if ctx.Err() != nil {
			break
		}
	}
	return false, true, nil
}

// noteRetry keeps the shortest positive wait seen.
func (x *exchange) noteRetry(d time.Duration) {
	if d > 0 && (x.retryIn == 0 || d < x.retryIn) {
		x.retryIn = d
	}
}

// exhausted is the error when every candidate failed or none was available.
func (x *exchange) exhausted() error {
	if x.r.Context().Err() != nil {
		x.log.Status, x.log.ErrorClass = 499, "client_canceled"
		return nil
	}
	if x.attempts == 0 || x.allRateLimited() {
		e := newError(ErrNoUpstream, "no upstream is available for model "+strconv.Quote(x.model)+x.failureSummary())
		e.status = http.StatusServiceUnavailable
		e.retryAfter = max(x.retryIn, time.Second)
		return e
	}
	return newError(ErrNoUpstream, fmt.Sprintf("all %d upstream attempts failed%s", x.attempts, x.failureSummary()))
}

func (x *exchange) allRateLimited() bool {
	for _, f := range x.failures {
		if !strings.HasSuffix(f, "rate limited (429)") {
			return false
		}
	}
	return len(x.failures) > 0
}

func (x *exchange) failureSummary() string {
	if len(x.failures) == 0 {
		return ""
	}
	return ": " + strings.Join(x.failures, "; ")
}

// attemptResult is how one upstream attempt ended.
type attemptResult struct {
	outcome health.Outcome
	detail  string // what went wrong, safe to show the client (no secrets)
	written bool   // the response was committed to the client: no failover
}

// attempt sends the request to one upstream. It writes to the client only
// when the outcome is final (success, or the client's own error).
func (x *exchange) attempt(ctx context.Context, up *upstream, rs config.RouteSettings, model string, body []byte) attemptResult {
	x.attempts++
	upModel := up.upstreamModel(model)
	if upModel != model {
		var err error
		if body, err = sjson.SetBytes(body, "model", upModel); err != nil {
			return attemptResult{outcome: health.ServerError, detail: "rewriting model: " + err.Error()}
		}
	}
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	firstByte := x.s.opts.Clock.AfterFunc(rs.FirstByteTimeout, func() { cancel(errFirstByteTimeout) })
	defer firstByte.Stop()

	req, err := http.NewRequestWithContext(actx, http.MethodPost, upstreamURL(up, x.ep.op, upModel), bytes.NewReader(body))
	if err != nil {
		return attemptResult{outcome: health.ServerError, detail: "building request: " + err.Error()}
	}
	x.setUpstreamHeaders(req, up)
	sent := x.s.opts.Clock.Now()
	resp, err := x.s.client.Do(req)
	if err != nil {
		return x.transportFailure(actx, err)
	}
	defer resp.Body.Close()

	outcome := classify(resp.StatusCode)
	if outcome.Failover() {
		detail := fmt.Sprintf("status %d", resp.StatusCode)
		if outcome == health.RateLimited {
			detail = "rate limited (429)"
			x.noteRetry(retryAfter(resp.Header, x.s.opts.Clock.Now()))
		}
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
		return attemptResult{outcome: outcome, detail: detail}
	}
	x.log.Upstream = up.cfg.Name
	if outcome == health.Success && x.stream && isEventStream(resp.Header) {
		return x.relayStream(actx, cancel, firstByte, resp, up, rs, sent)
	}
	firstByte.Stop()
	return x.relayBody(actx, resp, up, outcome, sent)
}

// setUpstreamHeaders copies the client's headers and adds the upstream's auth.
func (x *exchange) setUpstreamHeaders(req *http.Request, up *upstream) {
	copyRequestHeaders(req.Header, x.r.Header)
	for k, v := range up.cfg.Headers {
		req.Header.Set(k, v)
	}
	if req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	switch up.cfg.Provider {
	case config.ProviderAnthropic:
		req.Header.Set("X-Api-Key", up.cfg.APIKey)
		if req.Header.Get("Anthropic-Version") == "" {
			req.Header.Set("Anthropic-Version", up.apiVersion)
		}
	case config.ProviderAzureOpenAI:
		req.Header.Set("Api-Key", up.cfg.APIKey)
	default:
		if up.cfg.APIKey != "" {
			req.Header.Set("Authorization", "Bearer "+up.cfg.APIKey)
		}
	}
}

// transportFailure classifies a failed round trip.
func (x *exchange) transportFailure(actx context.Context, err error) attemptResult {
	if x.r.Context().Err() != nil {
		return attemptResult{outcome: health.Canceled, detail: "client canceled"}
	}
	if errors.Is(context.Cause(actx), errFirstByteTimeout) {
		return attemptResult{outcome: health.ServerError, detail: "first byte timeout"}
	}
	if errors.Is(context.Cause(actx), errRequestTimeout) {
		return attemptResult{outcome: health.ServerError, detail: "request timeout"}
	}
	// *url.Error repeats the URL; the inner error says what happened.
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return attemptResult{outcome: health.ServerError, detail: "connection error: " + err.Error()}
}

// classify maps an upstream status to its outcome class (DESIGN.md §6).
func classify(status int) health.Outcome {
	switch {
	case status < 300:
		return health.Success
	case status == 401 || status == 402 || status == 403:
		return health.AuthError
	case status == 429:
		return health.RateLimited
	case status == 408 || status >= 500:
		return health.ServerError
	}
	return health.ClientError
}

// relayBody reads a whole (non-streaming) upstream answer, checks it and
// writes it to the client.
func (x *exchange) relayBody(ctx context.Context, resp *http.Response, up *upstream, outcome health.Outcome, sent time.Time) attemptResult {
	body, err := io.ReadAll(io.LimitReader(resp.Body, x.s.opts.MaxResponseBytes+1))
	if err != nil {
		if x.r.Context().Err() != nil {
			return attemptResult{outcome: health.Canceled, detail: "client canceled"}
		}
		if ctx.Err() != nil {
			err = context.Cause(ctx)
		}
		return attemptResult{outcome: health.ServerError, detail: "reading response: " + err.Error()}
	}
	if int64(len(body)) > x.s.opts.MaxResponseBytes {
		return attemptResult{outcome: health.ServerError, detail: "response larger than " + itoa(x.s.opts.MaxResponseBytes) + " bytes"}
	}
	if outcome == health.Success && isJSON(resp.Header) && !gjson.ValidBytes(body) {
		return attemptResult{outcome: health.ServerError, detail: "malformed upstream response (invalid JSON)"}
	}
	if outcome == health.Success {
		x.log.InputTokens, x.log.OutputTokens = bodyUsage(x.ep.usage, body)
	}
	x.log.TTFT = x.s.opts.Clock.Now().Sub(sent)
	x.log.Status = resp.StatusCode
	if outcome == health.ClientError {
		x.log.ErrorClass = "upstream_client_error"
	}
	h := x.w.Header()
	copyResponseHeaders(h, resp.Header)
	x.setGatewayHeaders(up)
	h.Set("Content-Length", strconv.Itoa(len(body)))
	x.w.WriteHeader(resp.StatusCode)
	if _, err := x.w.Write(body); err != nil {
		x.log.ErrorClass = "client_canceled"
	}
	return attemptResult{outcome: outcome, written: true}
}

// setGatewayHeaders adds the X-Switchyard-* headers of DESIGN.md §3.
func (x *exchange) setGatewayHeaders(up *upstream) {
	h := x.w.Header()
	h.Set("X-Switchyard-Upstream", up.cfg.Name)
	h.Set("X-Switchyard-Attempts", strconv.Itoa(x.attempts))
	h.Set("X-Request-Id", x.log.ID)
}

func isJSON(h http.Header) bool {
	return strings.Contains(strings.ToLower(h.Get("Content-Type")), "json")
}

func isEventStream(h http.Header) bool {
	return strings.HasPrefix(strings.ToLower(h.Get("Content-Type")), "text/event-stream")
}

// retryAfter reads a Retry-After header (seconds or an HTTP date).
func retryAfter(h http.Header, now time.Time) time.Duration {
	v := strings.TrimSpace(h.Get("Retry-After"))
	if v == "" {
		return 0
	}
	if secs, err := strconv.ParseFloat(v, 64); err == nil && secs >= 0 {
		return time.Duration(secs * float64(time.Second))
	}
	if t, err := http.ParseTime(v); err == nil {
		return t.Sub(now)
	}
	return 0
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
