package proxy

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"switchyard/internal/affinity"
	"switchyard/internal/balancer"
	"switchyard/internal/config"
	"switchyard/internal/health"
	"switchyard/internal/limits"
	"switchyard/internal/metrics"
	"switchyard/internal/state"
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
	route    string       // the matched route's model pattern, for metrics
	session  string       // the session id, when affinity is on and the request has one
	source   string       // where session was found
	affKey   affinity.Key // the binding key of the model being tried
	affPol   affinity.Policy
	est      int64         // estimated tokens: prompt bytes/4 + max_tokens
	failures []string      // "upstream: what went wrong", for the final error
	retryIn  time.Duration // shortest wait seen: a 429's cooldown, an open breaker, a full limit
	queueErr error         // why waiting for a slot failed, when nothing was attempted
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
	s.opts.Metrics.Request(x.log.Upstream, x.log.Model, x.log.Status, x.stream, x.log.Latency)
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
	x.route = rt.cfg.Model
	if int64(len(x.body)) > rt.cfg.MaxBodyBytes {
		return newError(ErrBodyTooLarge, bodyTooLargeMsg(rt.cfg.MaxBodyBytes))
	}
	if err := x.checkKeyLimits(); err != nil {
		return err
	}
	if rt.affinityOn {
		x.session, x.source = affinity.Extract(affinityProtocol(x.ep.protocol), x.r.Header, x.body)
	}
	x.s.opts.Budget.Request()
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
	// RFC 8259 §8.1: JSON text is UTF-8; gjson does not check strings.
	if !gjson.ValidBytes(x.body) || !utf8.Valid(x.body) {
		return newError(ErrInvalidJSON, "")
	}
	root := gjson.ParseBytes(x.body)
	if !root.IsObject() {
		return newError(ErrInvalidRequest, "request body must be a JSON object")
	}
	// One pass over the top-level keys; the first of a repeated key counts,
	// as gjson's Get would find it.
	var model, stream gjson.Result
	var toks [3]gjson.Result // max_tokens, max_completion_tokens, max_output_tokens
	root.ForEach(func(k, v gjson.Result) bool {
		var slot *gjson.Result
		switch k.Str {
		case "model":
			slot = &model
		case "stream":
			slot = &stream
		case "max_tokens":
			slot = &toks[0]
		case "max_completion_tokens":
			slot = &toks[1]
		case "max_output_tokens":
			slot = &toks[2]
		}
		if slot != nil && !slot.Exists() {
			*slot = v
		}
		return true
	})
	if !model.Exists() || model.Type == gjson.Null {
		return newError(ErrMissingModel, "")
	}
	if model.Type != gjson.String || model.Str == "" {
		return newError(ErrInvalidRequest, `"model" must be a non-empty string`)
	}
	x.model, x.log.Model = model.Str, model.Str
	if stream.Exists() && stream.Type != gjson.Null {
		if stream.Type != gjson.True && stream.Type != gjson.False {
			return newError(ErrInvalidRequest, `"stream" must be a boolean`)
		}
		x.stream = stream.Bool()
	}
	x.log.Stream = x.stream
	x.est = int64(len(x.body)) / 4
	for _, t := range toks {
		x.est = addTokens(x.est, t.Int())
	}
	return nil
}

// addTokens adds a client-supplied token count n ≥ 0 to est, saturating at
// math.MaxInt64; a negative n counts as 0, so that a request cannot shrink
// (or wrap) its own estimate below its prompt size and slip past a TPM limit.
func addTokens(est, n int64) int64 {
	if n <= 0 {
		return est
	}
	if n > math.MaxInt64-est {
		return math.MaxInt64
	}
	return est + n
}

// checkKeyLimits enforces the client key's own limits: its rpm and spend_limit.
func (x *exchange) checkKeyLimits() error {
	k := x.key.cfg
	if ok, wait := x.s.opts.KeyRPM.Allow(k.Name, k.RPM); !ok {
		e := newError(ErrKeyRateLimited, fmt.Sprintf("key %s is limited to %d requests per minute", k.Name, k.RPM))
		e.retryAfter = wait
		return e
	}
	if x.s.opts.Spend.Exceeded(limits.ScopeKey, k.Name, k.SpendLimit) {
		return newError(ErrSpendLimit, fmt.Sprintf("key %s has used its spend limit of $%g per %s", k.Name, k.SpendLimit.USD, k.SpendLimit.Period))
	}
	return nil
}

// tryModel plans and attempts the upstreams of model. done reports that a
// response was written; found that some upstream serves the model. When
// every candidate is cooling down or full, it waits up to the route's
// max_wait for the first to free up.
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
	var waited time.Duration
	for {
		cands, wait := x.s.snapshot(ups, x.est)
		x.noteRetry(wait)
		req := balancer.Request{
			RequestID: x.log.ID, Model: model, Key: x.key.cfg.Name, Stream: x.stream, K: 1 + rt.cfg.Retries,
			BodyLen: int64(len(body)),
		}
		x.pin(&req, rt)
		plan := rt.bal.Plan(req, cands)
		if x.session != "" && rt.affinityOn {
			x.s.opts.Metrics.Affinity(plan.Decision.Affinity.Result)
		}
		if x.s.opts.OnDecision != nil {
			x.s.opts.OnDecision(&plan.Decision)
		}
		if plan.Decision.Chosen != "" {
			x.s.opts.Metrics.Selection(rt.cfg.Model, plan.Decision.Chosen)
		}
		if len(plan.Order)+len(plan.Waitable) > 0 || wait <= 0 || waited+wait > rt.cfg.MaxWait {
			return x.runPlan(ctx, plan, rt.cfg.RouteSettings, model, body), true, nil
		}
		select {
		case <-x.s.opts.Clock.After(wait):
			waited += wait
		case <-ctx.Done():
			return false, true, nil
		}
	}
}

// pin looks up the session's binding on route rt and sets it on req.
func (x *exchange) pin(req *balancer.Request, rt *route) {
	x.affKey = affinity.Key{}
	if x.session == "" || !rt.affinityOn {
		return
	}
	req.Session, req.SessionSource = x.session, x.source
	x.affKey, x.affPol = affinity.Key{APIKey: x.key.cfg.Name, Route: rt.cfg.Model, Session: x.session}, rt.affinity
	if bound, ok := x.s.opts.Affinity.Get(x.affKey, x.affPol); ok {
		req.Pinned = bound
		if up := x.cat.byName[bound]; up != nil {
			req.Migrate = up.migrate
		}
	}
}

// affinityProtocol maps a client protocol to the extractor's.
func affinityProtocol(p Protocol) affinity.Protocol {
	if p == Anthropic {
		return affinity.Anthropic
	}
	return affinity.OpenAI
}

// runPlan attempts the plan's upstreams in order, then waits for a slot on
// its waitable ones. It reports whether a response was written.
func (x *exchange) runPlan(ctx context.Context, plan balancer.Plan, rs config.RouteSettings, model string, body []byte) bool {
	waits := plan.Waitable // grows when an upstream with a queue fills up after planning
	for i := 0; i < len(plan.Order)+len(waits) && ctx.Err() == nil; i++ {
		name, waitable := "", i >= len(plan.Order)
		if waitable {
			name = waits[i-len(plan.Order)]
		} else {
			name = plan.Order[i]
		}
		if x.attempts > 0 {
			if !x.s.opts.Budget.TryRetry() {
				x.failures = append(x.failures, "retry budget exhausted")
				return false
			}
			x.s.opts.Metrics.Retry(x.route)
		}
		up := x.cat.byName[name]
		d, skip := x.dispatch(ctx, up, waitable)
		if d.full && up.cfg.Queue.Enabled {
			// Its last slot went to a concurrent request since planning:
			// queue for it after the rest of the order, as if planned waitable.
			waits = append(waits[:len(waits):len(waits)], name)
			continue
		}
		if skip != "" {
			x.failures = append(x.failures, name+": "+skip)
			continue
		}
		x.s.opts.Stats.Dispatched(name, x.s.opts.Clock.Now())
		res := x.attempt(ctx, up, rs, model, body)
		// A success (re)binds the session.
		bind := res.outcome == health.Success && x.affKey.Session != "" && rebinds(plan.Decision.Affinity, name)
		d.finish(x, res, bind)
		if res.outcome == health.Canceled {
			x.log.Status, x.log.ErrorClass = 499, "client_canceled"
			return true
		}
		if res.written || !res.outcome.Failover() {
			return true
		}
		x.failures = append(x.failures, name+": "+res.detail)
	}
	return false
}

// rebinds reports whether a success on upstream name (re)binds the session
// whose affinity record is a (DESIGN.md §5). It does, except when the
// session has a live binding to another upstream that is only unavailable
// for now: a fall-through (breaker open, rate limited, full, …) or a hit whose
// attempt failed over. That binding is kept, not replaced by the stand-in,
// so the session returns to its upstream, and its prompt cache, when it
// recovers within the TTL (seed 000: a fall-through does not delete the
// binding). A binding to an upstream that is no longer a candidate is
// replaced, and a migration rebinds to the upstream it moved to.
func rebinds(a balancer.AffinityRecord, name string) bool {
	switch a.Result {
	case balancer.AffinityHit:
		return name == a.Bound
	case balancer.AffinityFallthrough:
		return name == a.Bound || a.Reason == balancer.ReasonNotACandidate
	}
	return true
}

// dispatched holds what one attempt took and must give back.
type dispatched struct {
	up      *upstream
	release func()
	resv    *limits.Reservation
	ticket  *state.Ticket // the shared admission (state.driver: redis)
	full    bool          // not dispatched: every slot was taken (without queueing)
}

// dispatch claims the breaker's permission, an RPM/TPM reservation and a
// concurrency slot (waiting in the queue for a waitable upstream). With
// shared state it then asks Redis for the same three across instances, in
// one round trip; the local breaker and slot limits apply only while Redis
// is down. On failure it gives back what it took and says why in skip.
func (x *exchange) dispatch(ctx context.Context, up *upstream, waitable bool) (d dispatched, skip string) {
	name, o := up.cfg.Name, &x.s.opts
	shared := o.Shared != nil && o.Shared.Up()
	local := !shared // whether the local breaker was asked, and must be told
	if local {
		if ok, _ := o.Breakers.Acquire(name); !ok {
			return d, "breaker open"
		}
	}
	resv, ok := o.Limiter.Reserve(name, x.est)
	if !ok {
		if local {
			o.Breakers.Record(name, health.Canceled, "not sent: rate limit")
		}
		return d, "rate limit reached"
	}
	limit := up.cfg.MaxConcurrency
	if shared {
		limit = 0 // count only: the shared leases enforce it
	}
	var release func()
	var err error
	if waitable && !shared {
		release, err = o.Slots.Acquire(ctx, name, limit, up.cfg.Queue)
	} else if release, ok = o.Slots.TryAcquire(name, limit); !ok {
		err = limits.ErrConcurrencyFull
	}
	if err == nil && o.Shared != nil {
		t, den := o.Shared.Admit(ctx, state.Admission{
			Upstream: name, Tokens: x.est, RPM: up.cfg.RateLimit.RPM, TPM: up.cfg.RateLimit.TPM,
			MaxConcurrency: up.cfg.MaxConcurrency, Queue: up.cfg.Queue, Wait: waitable,
		})
		if den != nil {
			release()
			resv.Cancel()
			return d, x.sharedDenial(den, waitable, &d)
		}
		d.ticket = &t
	}
	if err != nil {
		resv.Cancel()
		if local {
			o.Breakers.Record(name, health.Canceled, "not sent: "+err.Error())
		}
		if errors.Is(err, limits.ErrQueueFull) || errors.Is(err, limits.ErrQueueTimeout) {
			x.queueErr = err
		}
		d.full = !waitable
		return d, "concurrency full (" + err.Error() + ")"
	}
	d.up, d.release, d.resv = up, release, resv
	return d, ""
}

// sharedDenial notes why Redis refused an attempt and returns the skip reason.
func (x *exchange) sharedDenial(den *state.Denial, waitable bool, d *dispatched) string {
	x.noteRetry(den.Wait)
	switch den.Reason {
	case "breaker":
		return "breaker open"
	case "full":
		d.full = !waitable
		return "concurrency full (" + limits.ErrConcurrencyFull.Error() + ")"
	case "queue_full":
		x.queueErr = limits.ErrQueueFull
		return "concurrency full (" + limits.ErrQueueFull.Error() + ")"
	case "queue_timeout":
		x.queueErr = limits.ErrQueueTimeout
		return "concurrency full (" + limits.ErrQueueTimeout.Error() + ")"
	case "cooldown":
		return "rate limited (cooling down)"
	}
	return "rate limit reached"
}

// finish gives back the slot, settles the reservation with the real usage
// and feeds the outcome to the breaker, the statistics and the spend, and
// binds the session when bind is set. With shared state all of that also
// goes to Redis in one round trip.
func (d dispatched) finish(x *exchange, res attemptResult, bind bool) {
	o, name := &x.s.opts, d.up.cfg.Name
	d.release()
	now := o.Clock.Now()
	sample := res.sample()
	o.Stats.Observe(name, sample, now)
	o.Breakers.Record(name, res.outcome, res.detail)
	o.Metrics.Attempt(name, res.outcome.String())
	if res.class != "" {
		o.Metrics.UpstreamError(name, res.class)
	}
	settle := state.Settlement{Outcome: sharedOutcome(res.outcome), Detail: res.detail, Result: sample,
		Cooldown: res.cooldown, CooldownType: res.limitType}
	if bind {
		if d.ticket != nil {
			settle.Bind = &state.Bind{Key: x.affKey, Upstream: name, Policy: x.affPol}
		} else {
			o.Affinity.Bind(x.affKey, name, x.affPol)
		}
	}
	defer func() {
		if d.ticket != nil {
			// Before the handler returns: a non-streaming answer waits in
			// the server's buffer until then, so the client has it only
			// once its session binding is in Redis for every instance.
			o.Shared.Settle(*d.ticket, settle)
		}
	}()
	if res.outcome != health.Success {
		d.resv.Commit(0) // the request counted; its tokens did not
		return
	}
	if ttft := cmp.Or(res.ttft, res.headers); ttft > 0 {
		o.Metrics.TTFT(name, ttft)
	}
	in, out := x.log.InputTokens, x.log.OutputTokens
	d.resv.Commit(in + out)
	settle.Tokens = in + out
	o.Metrics.Tokens(name, x.model, in, out)
	if cost := limits.Cost(in, out, d.up.cfg.Price); cost > 0 {
		o.Spend.Add(limits.ScopeUpstream, name, cost)
		o.Spend.Add(limits.ScopeKey, x.key.cfg.Name, cost)
		o.Metrics.Spend(name, x.key.cfg.Name, cost)
		settle.Spend, settle.SpendKey = cost, x.key.cfg.Name
	}
}

// sharedOutcome maps an outcome class to the shared breaker's.
func sharedOutcome(o health.Outcome) byte {
	switch o {
	case health.Success:
		return state.Success
	case health.ServerError:
		return state.Failure
	case health.AuthError:
		return state.AuthFailure
	}
	return state.Neutral
}

// limitLabel is the metrics label of a 429's limit type.
func limitLabel(t string) string {
	if t == "" {
		return metrics.LimitUnknown
	}
	return t
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
	if x.attempts == 0 && x.queueErr != nil {
		sentinel := ErrQueueFull
		if errors.Is(x.queueErr, limits.ErrQueueTimeout) {
			sentinel = ErrQueueTimeout
		}
		e := newError(sentinel, "no upstream slot for model "+strconv.Quote(x.model)+x.failureSummary())
		e.retryAfter = time.Second
		return e
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
	class   string // the metrics error class of a failure ("" for none)
	written bool   // the response was committed to the client: no failover
	// measured on success, for the live statistics
	latency time.Duration // a whole non-streaming answer
	ttft    time.Duration // a stream's first event
	tps     float64       // a stream's output tokens per second after the first event
	headers time.Duration // a non-streaming answer's response headers: its TTFT for metrics only
	// a 429's cooldown, for the shared state
	cooldown  time.Duration
	limitType string
}

// sample is what the attempt tells the live statistics.
func (r attemptResult) sample() state.Result {
	return state.Result{
		Failed:  r.outcome == health.ServerError || r.outcome == health.AuthError,
		Neutral: r.outcome != health.Success && r.outcome != health.ServerError && r.outcome != health.AuthError,
		Latency: r.latency, TTFT: r.ttft, TPS: r.tps,
	}
}

// attempt sends the request to one upstream. It writes to the client only
// when the outcome is final (success, or the client's own error).
func (x *exchange) attempt(ctx context.Context, up *upstream, rs config.RouteSettings, model string, body []byte) attemptResult {
	x.attempts++
	upModel := up.upstreamModel(model)
	if upModel != model {
		var err error
		if body, err = sjson.SetBytes(body, "model", upModel); err != nil {
			return attemptResult{outcome: health.ServerError, class: metrics.ErrorMalformed, detail: "rewriting model: " + err.Error()}
		}
	}
	actx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	firstByte := x.s.opts.Clock.AfterFunc(rs.FirstByteTimeout, func() { cancel(errFirstByteTimeout) })
	defer firstByte.Stop()

	req, err := http.NewRequestWithContext(actx, http.MethodPost, upstreamURL(up, x.ep.op, upModel), bytes.NewReader(body))
	if err != nil {
		return attemptResult{outcome: health.ServerError, class: metrics.ErrorMalformed, detail: "building request: " + err.Error()}
	}
	x.setUpstreamHeaders(req, up)
	sent := x.s.opts.Clock.Now()
	resp, err := x.s.upstream.RoundTrip(req)
	if err != nil {
		return x.transportFailure(actx, err)
	}
	defer resp.Body.Close()
	headers := x.s.opts.Clock.Now().Sub(sent)

	x.s.opts.Limiter.ObserveHeaders(up.cfg.Name, resp.Header)
	outcome := classify(resp.StatusCode)
	if outcome.Failover() {
		detail := fmt.Sprintf("status %d", resp.StatusCode)
		errBody, _ := io.ReadAll(io.LimitReader(resp.Body, 64<<10))
		class := metrics.ErrorStatus5xx
		switch outcome {
		case health.RateLimited:
			cd := x.s.opts.Limiter.RateLimited(up.cfg.Name, resp.Header, errBody)
			x.noteRetry(cd.Wait)
			x.s.opts.Metrics.RateLimited(up.cfg.Name, limitLabel(cd.LimitType))
			return attemptResult{outcome: outcome, detail: "rate limited (429)", cooldown: cd.Wait, limitType: cd.LimitType}
		case health.AuthError:
			class = metrics.ErrorAuth
		}
		return attemptResult{outcome: outcome, class: class, detail: detail}
	}
	if outcome == health.Success {
		x.s.opts.Limiter.Succeeded(up.cfg.Name)
	}
	x.log.Upstream = up.cfg.Name
	if outcome == health.Success && x.stream && isEventStream(resp.Header) {
		return x.relayStream(actx, cancel, firstByte, resp, up, rs, sent)
	}
	firstByte.Stop()
	res := x.relayBody(actx, resp, up, outcome, sent)
	res.headers = headers
	return res
}

// setUpstreamHeaders copies the client's headers and adds the upstream's auth.
func (x *exchange) setUpstreamHeaders(req *http.Request, up *upstream) {
	copyRequestHeaders(req.Header, x.r.Header)
	if req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	setUpstreamAuth(req.Header, up)
}

// transportFailure classifies a failed round trip.
func (x *exchange) transportFailure(actx context.Context, err error) attemptResult {
	if x.r.Context().Err() != nil {
		return attemptResult{outcome: health.Canceled, detail: "client canceled"}
	}
	if errors.Is(context.Cause(actx), errFirstByteTimeout) {
		return attemptResult{outcome: health.ServerError, class: metrics.ErrorFirstByteTimeout, detail: "first byte timeout"}
	}
	if errors.Is(context.Cause(actx), errRequestTimeout) {
		return attemptResult{outcome: health.ServerError, class: metrics.ErrorTimeout, detail: "request timeout"}
	}
	return attemptResult{outcome: health.ServerError, class: metrics.ErrorConnection, detail: "connection error: " + unwrapURLError(err).Error()}
}

// unwrapURLError drops the *url.Error wrapper, which repeats the URL; the
// inner error says what happened.
func unwrapURLError(err error) error {
	var ue *url.Error
	if errors.As(err, &ue) {
		return ue.Err
	}
	return err
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
	body, err := readSized(io.LimitReader(resp.Body, x.s.opts.MaxResponseBytes+1), resp.ContentLength)
	if err != nil {
		if x.r.Context().Err() != nil {
			return attemptResult{outcome: health.Canceled, detail: "client canceled"}
		}
		if ctx.Err() != nil {
			err = context.Cause(ctx)
		}
		return attemptResult{outcome: health.ServerError, class: metrics.ErrorConnection, detail: "reading response: " + err.Error()}
	}
	if int64(len(body)) > x.s.opts.MaxResponseBytes {
		return attemptResult{outcome: health.ServerError, class: metrics.ErrorMalformed, detail: "response larger than " + itoa(x.s.opts.MaxResponseBytes) + " bytes"}
	}
	// Every endpoint answers JSON: a success that is not (an HTML page from a
	// proxy in between, whatever its Content-Type says) is the upstream's failure.
	if outcome == health.Success && !gjson.ValidBytes(body) {
		return attemptResult{outcome: health.ServerError, class: metrics.ErrorMalformed, detail: "malformed upstream response (invalid JSON)"}
	}
	if outcome == health.Success {
		x.log.InputTokens, x.log.OutputTokens = bodyUsage(x.ep.usage, body)
	}
	x.log.TTFT = x.s.opts.Clock.Now().Sub(sent)
	x.log.Status = resp.StatusCode
	res := attemptResult{outcome: outcome, written: true}
	if outcome == health.Success {
		res.latency = x.log.TTFT
	}
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
	return res
}

// setGatewayHeaders adds the X-Switchyard-* headers of DESIGN.md §3.
// X-Request-Id is set when the request arrives.
func (x *exchange) setGatewayHeaders(up *upstream) {
	h := x.w.Header()
	h["X-Switchyard-Upstream"] = up.nameValue
	h["X-Switchyard-Attempts"] = attemptsValue(x.attempts)
}

// attemptsValues are the X-Switchyard-Attempts values of the usual attempt
// counts, shared by every response: a header value is never changed in
// place (Set and Del replace it, the server copies the map it writes).
var attemptsValues = func() (v [9][]string) {
	for i := range v {
		v[i] = []string{strconv.Itoa(i)}
	}
	return v
}()

// attemptsValue returns the header value of n attempts.
func attemptsValue(n int) []string {
	if n >= 0 && n < len(attemptsValues) {
		return attemptsValues[n]
	}
	return []string{strconv.Itoa(n)}
}

func isEventStream(h http.Header) bool {
	return strings.HasPrefix(strings.ToLower(h.Get("Content-Type")), "text/event-stream")
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }
