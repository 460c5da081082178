package proxy

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"

	"switchyard/internal/affinity"
	"switchyard/internal/balancer"
	"switchyard/internal/codec"
	"switchyard/internal/limits"
	"switchyard/internal/store"
)

// Attempt-ending causes, set on the attempt context.
var (
	errFirstByteTimeout = errors.New("first byte timeout")
	errStreamIdle       = errors.New("stream idle timeout")
	errRequestTimeout   = errors.New("request timeout")
)

// request is one client request as its attempts see it: set while the
// exchange authenticates and reads it, and read-only from its first
// attempt on. The attempts of a hedged race share it and nothing else
// of the exchange, so that a race is safe by type, not by convention.
type request struct {
	s      *Server
	r      *http.Request // the client's request: its headers and context
	codec  codec.Codec   // the client's wire protocol
	key    *clientKey
	body   []byte
	model  string
	stream bool
	began  time.Time
	id     string // the request's id (X-Request-Id, the request log's ID)
	// idValue is id as the X-Request-Id header value sent upstream.
	idValue []string
	est     int64 // estimated tokens: prompt bytes/4 + max_tokens
	// maxTokens is the body's max_tokens (or max_completion_tokens,
	// max_output_tokens), 0 when not given.
	maxTokens int64
	// prefsRaw is the body's "provider" field, as found by peek ("" when
	// absent or not a body that may carry it); prefs are the routing
	// preferences read from it or the X-Switchyard-Provider header, nil
	// for none (docs/routing.md#per-request-preferences).
	prefsRaw string
	prefs    *balancer.Preferences
	traced   bool // the request is traced: attempts carry spans
	// facts and userID are what rules read from the body, found when a
	// rule first asks (learn).
	facts  facts
	userID string
	// tokens, when > 0, is the input-token estimate rules test instead of
	// the body's size / 4 (an explain has no body).
	tokens int64
	// debug: the key may ask for, and asked for, the routing decision in
	// the response headers (docs/reference.md#request-level-debug).
	debug bool
	// tr decodes the request into the canonical form once, for the
	// attempts on upstreams of other families (its sync.Once guards it).
	tr translation
	// prompt is the canonical prompt's raw parts, for prefix affinity.
	prompt affinity.Prompt
}

// exchange is one client request on its way through the attempt loop:
// the request, and what the loop learns and writes. Only the request's own
// goroutine touches it; the attempts it runs are attempt values.
type exchange struct {
	request
	w       http.ResponseWriter
	cat     *Catalog
	session sessionRef
	pinned  statePin
	tally   tally
	log     store.RequestLog
	raced   int // attempts raced for the answer, when hedged (X-Switchyard-Hedged)
	// tried holds the first attempts of log.Tried, so that most requests
	// list theirs without an allocation.
	tried [2]store.Attempt
	// trace is the request's tracing, nil when tracing is off.
	trace *traced
	// ruled is the route whose rules were matched for the request's model
	// and rule the one that applied (nil for none); rerouted is the rule
	// that re-routed the request to another model, nil when none did.
	ruled    *route
	rule     *rule
	rerouted *rule
	// costs holds the candidates' estimated costs of the last plan, kept
	// for the debug decision only.
	costs costList
}

// serveProxy handles one proxied client request end to end.
func (s *Server) serveProxy(w http.ResponseWriter, r *http.Request, cl call, path string) {
	c := cl.codec
	x := &exchange{request: request{s: s, r: r, codec: c, began: s.opts.Clock.Now(), model: cl.model, stream: cl.stream},
		w: w, cat: s.catalog.Load()}
	x.id = requestID(r)
	x.idValue = []string{x.id}
	x.log = store.RequestLog{ID: x.id, Time: x.began}
	x.log.Tried = x.tried[:0]
	if s.opts.Tracer != nil {
		x.trace = startTrace(&x.request, spanRoute(path, cl), &x.log)
	}
	w.Header().Set("X-Request-Id", x.log.ID)
	if err := x.run(); err != nil {
		if x.debug {
			x.debugView().headers(w.Header(), "")
		}
		var ae *apiError
		if !errors.As(err, &ae) {
			ae = apiErrorFor(err)
		}
		x.log.Status, x.log.ErrorClass, x.log.Error = ae.status, ae.code, ae.msg
		if x.tally.attempts > 0 {
			w.Header().Set("X-Switchyard-Attempts", strconv.Itoa(x.tally.attempts))
		}
		writeError(w, c, ae)
	}
	x.log.Attempts = x.tally.attempts
	x.log.Latency = s.opts.Clock.Now().Sub(x.began)
	s.opts.Metrics.Request(x.log.Upstream, x.log.Model, x.log.Status, x.stream, x.log.Latency)
	if x.trace != nil {
		x.trace.end(&x.log, x.began)
	}
	if x.debug {
		s.opts.Logger.Info("routing decision", "request_id", x.log.ID, "key", x.key.cfg.Name,
			"decision", json.RawMessage(x.debugView().json("")))
	}
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
	x.debug = key.cfg.Debug && x.r.Header.Get(headerDebug) == "1"
	if x.body, err = readBody(x.w, x.r, x.cat.maxBody); err != nil {
		return err
	}
	if err := x.peek(); err != nil {
		return err
	}
	if err := x.preferences(); err != nil {
		return err
	}
	x.log.Model, x.log.Stream = x.model, x.stream
	if !key.allows(x.model) {
		return newError(ErrModelNotAllowed, fmt.Sprintf("model %q is not allowed for this key", x.model))
	}
	rt := x.cat.route(x.model)
	if len(rt.rules) > 0 {
		if rt, err = x.applyRules(rt); err != nil {
			return err
		}
	}
	x.tr.client = translates(x.codec, rt.cfg.RouteSettings)
	if int64(len(x.body)) > rt.cfg.MaxBodyBytes {
		return newError(ErrBodyTooLarge, bodyTooLargeMsg(rt.cfg.MaxBodyBytes))
	}
	if err := x.checkKeyLimits(); err != nil {
		return err
	}
	release, err := x.checkTenantLimits()
	if err != nil {
		return err
	}
	defer release()
	if rt.affinityOn {
		x.session.id, x.session.source = affinity.Extract(x.codec.Family(), x.r.Header, x.body)
		if x.session.id == "" {
			if id := x.prefixID(rt); id != "" {
				x.session.id, x.session.source = id, affinity.PrefixSource
			}
		}
	}
	rt.budget.Request()
	if rt.hedge.on() {
		rt.hedges.Request()
	}
	ctx, cancel := context.WithCancelCause(x.r.Context())
	defer cancel(nil)
	deadline := x.s.opts.Clock.AfterFunc(rt.cfg.Timeout, func() { cancel(errRequestTimeout) })
	defer deadline.Stop()
	if err := x.expandChain(ctx); err != nil {
		return err
	}
	x.pinned.find(ctx, x.s.opts.State, x.codec, x.body)
	return x.pinnedError(x.loop(ctx, rt))
}

// peek reads model and stream from the body without decoding it whole;
// a model and stream the path gave (Gemini) stand. In the same pass it
// notes where the canonical prompt's parts are, for prefix affinity.
func (q *request) peek() error {
	// RFC 8259 §8.1: JSON text is UTF-8; gjson does not check strings.
	if !gjson.ValidBytes(q.body) || !utf8.Valid(q.body) {
		return newError(ErrInvalidJSON, "")
	}
	root := gjson.ParseBytes(q.body)
	if !root.IsObject() {
		return newError(ErrInvalidRequest, "request body must be a JSON object")
	}
	// One pass over the top-level keys; the first of a repeated key counts,
	// as gjson's Get would find it.
	var model, stream, prefs gjson.Result
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
		case prefsField:
			slot = &prefs
		default:
			q.prompt.Set(affinity.PromptField(k.Str), v.Raw, v.Index)
		}
		if slot != nil && !slot.Exists() {
			*slot = v
		}
		return true
	})
	if q.model == "" {
		if !model.Exists() || model.Type == gjson.Null {
			return newError(ErrMissingModel, "")
		}
		if model.Type != gjson.String || model.Str == "" {
			return newError(ErrInvalidRequest, `"model" must be a non-empty string`)
		}
		q.model = model.Str
	}
	if stream.Exists() && stream.Type != gjson.Null && !q.stream {
		if stream.Type != gjson.True && stream.Type != gjson.False {
			return newError(ErrInvalidRequest, `"stream" must be a boolean`)
		}
		q.stream = stream.Bool()
	}
	q.est = int64(len(q.body)) / 4
	for _, t := range toks {
		q.est = addTokens(q.est, t.Int())
		if n := t.Int(); n > 0 && q.maxTokens == 0 {
			q.maxTokens = n
		}
	}
	if prefs.Exists() && q.codec != nil && bodyPrefs(q.codec) {
		q.prefsRaw = prefs.Raw
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
func (q *request) checkKeyLimits() error {
	k := q.key.cfg
	if ok, wait := q.s.opts.State.AllowKey(q.r.Context(), k.Name, k.RPM); !ok {
		e := newError(ErrKeyRateLimited, fmt.Sprintf("key %s is limited to %d requests per minute", k.Name, k.RPM))
		e.retryAfter = wait
		return e
	}
	if q.s.opts.Spend.Exceeded(limits.ScopeKey, k.Name, k.SpendLimit) {
		return newError(ErrSpendLimit, fmt.Sprintf("key %s has used its spend limit of $%g per %s", k.Name, k.SpendLimit.USD, k.SpendLimit.Period))
	}
	return nil
}
