package proxy

import (
	"cmp"
	"context"
	"errors"
	"net/http"
	"time"

	"go.opentelemetry.io/otel/propagation"

	"switchyard/internal/clock"
	"switchyard/internal/codec"
	"switchyard/internal/config"
	"switchyard/internal/limits"
	"switchyard/internal/metrics"
	"switchyard/internal/outcome"
	"switchyard/internal/provider"
	"switchyard/internal/state"
	"switchyard/internal/tracing"
)

// attempt is one try of a request on one upstream, from its admission to
// its end (docs/architecture.md#the-attempt): the lease it was admitted
// with, the request it sends in the upstream's protocol, the codec pair
// that reads the answer (the upstream's protocol) and writes it (the
// client's), its start up to the first data event, and — when it wins —
// its commit and relay. It reads its request and writes only itself, so
// the attempts of a hedged race run side by side with nothing mutable
// shared; the exchange records how each one went once it has it back.
//
// Its life: start (on the request's goroutine, or on its own in a race)
// sends the request and waits for the first data event. A start that
// fails leaves the attempt's outcome in o and nothing written: the
// request fails over. One that succeeds is committed or, having lost a
// race, closed. Every attempt ends with end, exactly once, which gives its
// lease back with the outcome.
type attempt struct {
	req   *request
	up    *upstream
	lease state.Lease
	rs    config.RouteSettings
	model string      // the model tried: the request's, or a fallback
	out   *outputEWMA // the route's output tokens, fed by a success
	body  []byte      // the client's body, with model
	i     int         // its place in the request log's list
	hedge bool        // started as a hedge beside a slower attempt
	// cancel ends the attempt's context with a cause: its first-byte or
	// idle timeout, a lost race, or the attempt's end.
	cancel    context.CancelCauseFunc
	firstByte clock.Timer
	started   bool // start reached the first data event
	// askedUsage: the client's stream did not ask for usage, so the
	// request asks for it and the relay drops its chunk
	// (codec.StreamUsage).
	askedUsage bool
	o          outcome.Outcome // how a failed start ended
	answer
	wireState
}

// answer is what a started attempt has read of the upstream's answer: the
// response headers and a stream's first data event, or the whole JSON
// body of any other answer (a success, or the client's own 4xx). Nothing
// of it has reached the client yet.
type answer struct {
	resp      *http.Response
	class     outcome.Class // Success or ClientError
	sent      time.Time     // when the request went out
	firstAt   time.Time     // when the first data event (or whole body) was in
	headers   time.Duration // until the response headers
	body      []byte        // a whole answer
	events    codec.EventStream
	first     *codec.Event // a stream's first data event, valid until events is read again
	respModel string       // the model the answer says served it, when traced
}

// wireState is an attempt's codec pair when the upstream speaks another
// protocol than the client: the upstream's protocol decodes, the client's
// encodes. Its zero value is a passthrough.
type wireState struct {
	// wire is the protocol the request was translated into; nil for a
	// passthrough in the client's own protocol.
	wire codec.Translator
	// usage is a translated whole answer's usage.
	usage *codec.Usage
	// dec follows a translated stream; pending holds the chunks its first
	// event yielded, not yet relayed.
	dec     codec.StreamDecoder
	pending []codec.Chunk
}

// start sends the attempt's request and waits for its first data event
// (docs/architecture.md#the-attempt). ctx is the attempt's own (a.cancel
// ends it). It reports whether the attempt may be committed; when not,
// a.o says why and nothing was written: the request fails over.
func (a *attempt) start(ctx context.Context) bool {
	q, up := a.req, a.up
	upModel := up.upstreamModel(a.model)
	a.wire = q.wire(up, a.model)
	body, err := a.encode(upModel)
	if err != nil { // the request's fault, not the upstream's: no breaker
		a.o = outcome.Outcome{Class: outcome.ClientError, Kind: metrics.ErrorMalformed, Detail: "encoding request: " + err.Error()}
		a.close()
		return false
	}
	a.firstByte = q.s.opts.Clock.AfterFunc(a.rs.FirstByteTimeout, func() { a.cancel(errFirstByteTimeout) })
	if a.o = a.send(ctx, upModel, body); a.o.Class != outcome.Success {
		a.close()
		return false
	}
	a.started, a.firstAt = true, q.s.opts.Clock.Now()
	return true
}

// encode returns the request body for the upstream, which knows the
// model as upModel: the client's own bytes with the model changed, or the
// request translated into the upstream's protocol.
func (a *attempt) encode(upModel string) ([]byte, error) {
	q := a.req
	if a.wire == nil {
		body, err := q.codec.Encode(a.body, modelChange(a.model, upModel), a.up.family(a.model))
		if su, ok := q.codec.(codec.StreamUsage); ok && err == nil && q.stream {
			body, a.askedUsage, err = su.AskUsage(body)
		}
		return body, err
	}
	req, err := q.tr.canonical(q.body, q.model, q.stream)
	if err != nil {
		return nil, err
	}
	return a.wire.EncodeRequest(req, upModel, codec.EncodeOptions{DefaultMaxTokens: a.rs.DefaultMaxTokens})
}

// modelChange is the model value Encode must write: "" when the upstream
// knows the model by the client's name.
func modelChange(model, upModel string) string {
	if upModel == model {
		return ""
	}
	return upModel
}

// close stops the attempt's timer, ends its context, closes its body and
// gives a stream's read buffer back (releaser). It runs on the goroutine
// that read the stream, after its last read; the first event (a.first)
// stays valid.
func (a *attempt) close() {
	if a.firstByte != nil {
		a.firstByte.Stop()
	}
	a.cancel(nil)
	if a.resp != nil {
		a.resp.Body.Close()
	}
	if r, ok := a.events.(releaser); ok {
		r.Release()
	}
}

// releaser is an event stream holding a buffer it can give back
// (codec.EventReader).
type releaser interface{ Release() }

// send performs the round trip and reads up to the first data event.
// Success means the attempt may be committed (its class says whether it is
// a success or the client's own error); anything else is a failure before
// commit.
func (a *attempt) send(ctx context.Context, upModel string, body []byte) outcome.Outcome {
	q, up := a.req, a.up
	h := make(http.Header, len(q.r.Header)+2)
	copyRequestHeaders(h, q.r.Header, a.wire != nil)
	// The request's id goes upstream, so that the upstream's logs and the
	// gateway's name the same request (docs/protocols.md#headers-sent-upstream).
	h["X-Request-Id"] = q.idValue
	if q.traced {
		tracing.Propagator.Inject(ctx, propagation.HeaderCarrier(h))
	}
	var proto codec.Codec = q.codec
	if a.wire != nil {
		proto = a.wire
	}
	req, err := up.ep.NewRequest(ctx, proto.Op(q.stream), upModel, body, h)
	if err != nil {
		return buildFailure(err)
	}
	a.sent = q.s.opts.Clock.Now()
	resp, err := q.s.upstream.RoundTrip(req)
	if err != nil {
		return a.transportFailure(ctx, err)
	}
	a.resp = resp
	a.headers = q.s.opts.Clock.Now().Sub(a.sent)
	if resp.StatusCode >= 300 {
		q.s.opts.State.Observe(up.cfg.Name, resp.StatusCode, resp.Header)
		return a.answerFailure()
	}
	a.class = outcome.Success
	if q.stream {
		if a.events = eventsOf(up, resp); a.events != nil {
			return a.observeStream(a.firstEvent(ctx))
		}
	}
	q.s.opts.State.Observe(up.cfg.Name, resp.StatusCode, resp.Header)
	// A whole answer's first byte is its headers: from here only the
	// request's own timeout bounds reading it.
	a.firstByte.Stop()
	return a.readWhole(ctx)
}

// buildFailure classifies an error building the upstream request: a
// failed token exchange is the upstream's credentials, anything else the
// adapter's.
func buildFailure(err error) outcome.Outcome {
	if errors.Is(err, provider.ErrAuth) {
		return outcome.Outcome{Class: outcome.AuthError, Kind: metrics.ErrorAuth, Detail: "authenticating: " + err.Error()}
	}
	return outcome.Outcome{Class: outcome.ServerError, Kind: metrics.ErrorMalformed, Detail: "building request: " + err.Error()}
}

// end gives the attempt's lease back with its outcome, exactly once: the
// driver gives back the slot, settles the reservation and feeds the
// breaker and the statistics (with shared state, in one round trip that
// also binds the session and charges the spend); the metrics and the local
// spend are recorded here. It may run on the attempt's own goroutine: it
// reads only the request and the attempt.
func (a *attempt) end(res outcome.Outcome, e state.Ending) {
	q, name := a.req, a.up.cfg.Name
	o := &q.s.opts
	o.Metrics.Attempt(name, res.Class.String())
	if res.Kind != "" {
		o.Metrics.UpstreamError(name, res.Kind)
	}
	if res.Class == outcome.Success {
		a.out.observe(res.OutputTokens)
		if ttft := cmp.Or(res.TTFT, res.Headers); ttft > 0 {
			o.Metrics.TTFT(name, ttft)
		}
	}
	// Tokens are billed whenever the upstream reported them: a success, a
	// stream its client left, a hedge that lost after its first event.
	if in, out := res.InputTokens, res.OutputTokens; in > 0 || out > 0 {
		o.Metrics.Tokens(name, q.model, in, out, res.CacheReadTokens, res.CacheWriteTokens)
		if cost, _ := a.cost(&res); cost > 0 {
			key := q.key.cfg.Name
			o.Spend.Add(limits.ScopeUpstream, name, cost)
			o.Spend.Add(limits.ScopeKey, key, cost)
			tm := q.key.cfg.Team
			if tm != "" {
				o.Spend.Add(limits.ScopeTeam, tm, cost)
			}
			o.Metrics.Spend(name, key, cost)
			o.Metrics.Cost(name, q.model, key, cost)
			e.Spend, e.SpendKey, e.SpendTeam = cost, key, tm
		}
	}
	// Last, before the handler returns: a non-streaming answer waits in the
	// server's buffer until then, so the client has it only once its
	// session binding is in Redis for every instance.
	a.lease.Done(res, e)
}

// lose ends an attempt of a race that is over without it, and returns how
// it ended: a started one is closed and ends cancelled with the tokens its
// first event reported; one that failed on its own keeps its outcome, so
// its breaker hears of it. It runs on the attempt's own goroutine when the
// attempt was still running as the race ended.
func (a *attempt) lose(route string) outcome.Outcome {
	o := a.o
	if a.started {
		u := a.tokensSoFar()
		a.close()
		o = withUsage(outcome.Outcome{Class: outcome.Canceled, Detail: "hedge lost"}, u)
	}
	if a.hedge {
		a.req.s.opts.Metrics.Hedge(route, metrics.HedgeLost)
	}
	o.Hedge = a.hedge
	a.end(o, state.Ending{})
	return o
}

// tokensSoFar is the usage an uncommitted stream's first event reported
// or, when it reported no output, the output it carried (as the client's
// codec observes it, or a translated one's decoded chunks); 0 for a whole
// answer, which is read but never relayed.
func (a *attempt) tokensSoFar() codec.Usage {
	var s codec.StreamState
	switch {
	case a.wire != nil:
		for i := range a.pending {
			noteUsage(&s, &a.pending[i])
		}
	case a.first != nil:
		a.req.codec.Observe(&s, a.first)
	}
	return s.SoFar()
}
