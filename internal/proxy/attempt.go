package proxy

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"time"

	"github.com/tidwall/gjson"
	"go.opentelemetry.io/otel/propagation"

	"switchyard/internal/clock"
	"switchyard/internal/codec"
	"switchyard/internal/config"
	"switchyard/internal/metrics"
	"switchyard/internal/outcome"
	"switchyard/internal/provider"
	"switchyard/internal/tracing"
)

// started is an attempt that reached its first byte and may be committed:
// the response headers and first SSE event of a stream, or the whole JSON
// body of any other answer (a success, or the client's own 4xx). Nothing of
// it has reached the client yet.
type started struct {
	up        *upstream
	rs        config.RouteSettings
	resp      *http.Response
	class     outcome.Class // Success or ClientError
	sent      time.Time     // when the request went out
	headers   time.Duration // until the response headers
	body      []byte        // a whole answer
	events    codec.EventStream
	first     *codec.Event // a stream's first event, valid until events is read again
	respModel string       // the model the answer says served it, when tracing
	cancel    context.CancelCauseFunc
	firstByte clock.Timer
	wireState
}

// wireState is what a translated attempt adds: the upstream's protocol and
// the answer's translation so far. Its zero value is a passthrough.
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

// tokensSoFar is the usage an uncommitted stream's first event reported
// or, when it reported no output, the output it carried (as c observes it,
// or a translated one's decoded chunks); 0 for a whole answer, which is
// read but never relayed.
func (st *started) tokensSoFar(c codec.Codec) (in, out int64) {
	var s codec.StreamState
	switch {
	case st.wire != nil:
		for i := range st.pending {
			noteUsage(&s, &st.pending[i])
		}
	case st.first != nil:
		c.Observe(&s, st.first)
	}
	return s.In, s.OutSoFar()
}

// close ends the attempt's context and timer and closes its body.
func (st *started) close() {
	st.firstByte.Stop()
	st.cancel(nil)
	st.resp.Body.Close()
}

// start sends the request to up and waits for its first byte (DESIGN.md
// §1). It returns the started attempt, or nil and the outcome of an attempt
// that failed before it: such an attempt wrote nothing and fails over.
func (x *exchange) start(ctx context.Context, up *upstream, rs config.RouteSettings, model string, body []byte) (*started, outcome.Outcome) {
	upModel := up.upstreamModel(model)
	wire := x.wire(up, model)
	var err error
	if wire == nil {
		body, err = x.codec.Encode(body, modelChange(model, upModel), up.family(model))
	} else {
		body, err = x.encodeFor(wire, rs, upModel)
	}
	if err != nil { // the request's fault, not the upstream's: no breaker
		return nil, outcome.Outcome{Class: outcome.ClientError, Kind: metrics.ErrorMalformed, Detail: "encoding request: " + err.Error()}
	}
	actx, cancel := context.WithCancelCause(ctx)
	st := &started{up: up, rs: rs, cancel: cancel, wireState: wireState{wire: wire}}
	st.firstByte = x.s.opts.Clock.AfterFunc(rs.FirstByteTimeout, func() { cancel(errFirstByteTimeout) })
	o := x.send(actx, st, upModel, body)
	if o.Class != outcome.Success {
		st.firstByte.Stop()
		cancel(nil)
		if st.resp != nil {
			st.resp.Body.Close()
		}
		return nil, o
	}
	return st, o
}

// modelChange is the model value Encode must write: "" when the upstream
// knows the model by the client's name.
func modelChange(model, upModel string) string {
	if upModel == model {
		return ""
	}
	return upModel
}

// send performs the round trip and reads up to the first byte. Success
// means st may be committed (its class says whether it is a success or the
// client's own error); anything else is a failure before commit.
func (x *exchange) send(actx context.Context, st *started, upModel string, body []byte) outcome.Outcome {
	up := st.up
	h := make(http.Header, len(x.r.Header)+2)
	copyRequestHeaders(h, x.r.Header, st.wire != nil)
	if x.tracing() {
		tracing.Propagator.Inject(actx, propagation.HeaderCarrier(h))
	}
	var proto codec.Codec = x.codec
	if st.wire != nil {
		proto = st.wire
	}
	req, err := up.ep.NewRequest(actx, proto.Op(x.stream), upModel, body, h)
	if err != nil {
		if errors.Is(err, provider.ErrAuth) { // a failed token exchange: the upstream's credentials
			return outcome.Outcome{Class: outcome.AuthError, Kind: metrics.ErrorAuth, Detail: "authenticating: " + err.Error()}
		}
		return outcome.Outcome{Class: outcome.ServerError, Kind: metrics.ErrorMalformed, Detail: "building request: " + err.Error()}
	}
	st.sent = x.s.opts.Clock.Now()
	resp, err := x.s.upstream.RoundTrip(req)
	if err != nil {
		return x.transportFailure(actx, err)
	}
	st.resp = resp
	st.headers = x.s.opts.Clock.Now().Sub(st.sent)
	if resp.StatusCode >= 300 {
		x.s.opts.State.Observe(up.cfg.Name, resp.StatusCode, resp.Header)
		return x.answerFailure(st)
	}
	st.class = outcome.Success
	if x.stream {
		if st.events = eventsOf(up, resp); st.events != nil {
			return x.observeStream(st, x.firstEvent(actx, st))
		}
	}
	x.s.opts.State.Observe(up.cfg.Name, resp.StatusCode, resp.Header)
	// A whole answer's first byte is its headers: from here only the
	// request's own timeout bounds reading it.
	st.firstByte.Stop()
	return x.readWhole(actx, st)
}

// observeStream reports a 2xx stream's headers to the state once its
// first event has been read (o is what that event made of the attempt):
// only a stream that starts well ends the upstream's run of consecutive
// 429s, so that a stream whose first event is a throttling error (Bedrock's
// throttlingException, Anthropic's rate_limit_error event) backs off as a
// 429 answer does, 1 s, 2 s, 4 s…, not 1 s every time.
func (x *exchange) observeStream(st *started, o outcome.Outcome) outcome.Outcome {
	status := st.resp.StatusCode
	if o.Class != outcome.Success {
		status = cmp.Or(o.Status, http.StatusBadGateway)
	}
	x.s.opts.State.Observe(st.up.cfg.Name, status, st.resp.Header)
	return o
}

// answerFailure classifies a non-2xx answer with the provider's adapter. The
// client's own error is read whole, to be committed as it is; anything else
// fails over.
func (x *exchange) answerFailure(st *started) outcome.Outcome {
	up, resp := st.up, st.resp
	st.firstByte.Stop()
	errBody, _ := readSized(io.LimitReader(resp.Body, x.s.opts.MaxResponseBytes), resp.ContentLength)
	o := up.ep.Classify(resp.StatusCode, resp.Header, errBody)
	switch o.Class {
	case outcome.ClientError:
		st.class, st.body = outcome.ClientError, errBody
		if st.wire != nil {
			x.translateError(st)
		}
		return outcome.Outcome{Class: outcome.Success}
	case outcome.RateLimited:
		cd := x.s.opts.State.RateLimited(up.cfg.Name, resp.Header, errBody, o.Cooldown)
		x.s.opts.Metrics.RateLimited(up.cfg.Name, limitLabel(cd.LimitType))
		o.Detail, o.Cooldown, o.LimitType = "rate limited (429)", cd.Wait, cd.LimitType
	case outcome.AuthError:
		o.Kind = metrics.ErrorAuth
	default:
		o.Class, o.Kind = outcome.ServerError, metrics.ErrorStatus5xx
	}
	if o.Detail == "" {
		o.Detail = fmt.Sprintf("status %d", resp.StatusCode)
	}
	return o
}

// readWhole reads a whole (non-streaming) answer and checks it is JSON.
func (x *exchange) readWhole(actx context.Context, st *started) outcome.Outcome {
	body, err := readSized(io.LimitReader(st.resp.Body, x.s.opts.MaxResponseBytes+1), st.resp.ContentLength)
	if err != nil {
		if x.r.Context().Err() != nil {
			return outcome.Of(outcome.Canceled, "client canceled")
		}
		if hedgeLost(actx) {
			return outcome.Of(outcome.Canceled, "hedge lost")
		}
		if actx.Err() != nil {
			err = context.Cause(actx)
		}
		return outcome.Outcome{Class: outcome.ServerError, Kind: metrics.ErrorConnection, Detail: "reading response: " + err.Error()}
	}
	if int64(len(body)) > x.s.opts.MaxResponseBytes {
		return outcome.Outcome{Class: outcome.ServerError, Kind: metrics.ErrorMalformed, Detail: "response larger than " + itoa(x.s.opts.MaxResponseBytes) + " bytes"}
	}
	// Every endpoint answers JSON: a success that is not (an HTML page from a
	// proxy in between, whatever its Content-Type says) is the upstream's failure.
	if !gjson.ValidBytes(body) {
		return outcome.Outcome{Class: outcome.ServerError, Kind: metrics.ErrorMalformed, Detail: "malformed upstream response (invalid JSON)"}
	}
	st.body = body
	if x.tracing() {
		st.respModel = responseModel(body)
	}
	if st.wire != nil {
		return x.translateWhole(st)
	}
	return outcome.Outcome{Class: outcome.Success}
}

// firstEvent waits for a stream's first event and checks that it can start
// the client's stream.
func (x *exchange) firstEvent(actx context.Context, st *started) outcome.Outcome {
	ev, err := st.events.Next()
	if err != nil {
		return x.streamFailure(actx, err, "stream ended before its first event")
	}
	if x.tracing() {
		st.respModel = responseModel(ev.Data)
	}
	if !codec.WellFormedFirst(ev) {
		// Nothing is written yet: fail over like an invalid JSON body.
		return outcome.Outcome{Class: outcome.ServerError, Kind: metrics.ErrorMalformed,
			Detail: "malformed upstream stream (first event is not SSE with JSON data)"}
	}
	if st.wire != nil {
		if o := x.translateFirst(st, ev); o.Class != outcome.Success {
			return o
		}
	} else if e := x.firstErrorEvent(ev); e != nil {
		return x.firstEventError(st, e)
	}
	st.firstByte.Stop()
	st.first = ev
	return outcome.Outcome{Class: outcome.Success}
}

// transportFailure classifies a failed round trip.
func (x *exchange) transportFailure(actx context.Context, err error) outcome.Outcome {
	if x.r.Context().Err() != nil {
		return outcome.Of(outcome.Canceled, "client canceled")
	}
	switch cause := context.Cause(actx); {
	case errors.Is(cause, errHedgeLost):
		return outcome.Of(outcome.Canceled, "hedge lost")
	case errors.Is(cause, errFirstByteTimeout):
		return outcome.Outcome{Class: outcome.ServerError, Kind: metrics.ErrorFirstByteTimeout, Detail: "first byte timeout"}
	case errors.Is(cause, errRequestTimeout):
		return outcome.Outcome{Class: outcome.ServerError, Kind: metrics.ErrorTimeout, Detail: "request timeout"}
	}
	return outcome.Outcome{Class: outcome.ServerError, Kind: metrics.ErrorConnection, Detail: "connection error: " + unwrapURLError(err).Error()}
}

// streamFailure classifies a read error on an upstream stream.
func (x *exchange) streamFailure(actx context.Context, err error, what string) outcome.Outcome {
	if x.r.Context().Err() != nil {
		return outcome.Of(outcome.Canceled, "client canceled")
	}
	if hedgeLost(actx) {
		return outcome.Of(outcome.Canceled, "hedge lost")
	}
	if actx.Err() != nil {
		err = context.Cause(actx) // first-byte or idle timeout, or the request deadline
	}
	kind := metrics.ErrorConnection
	switch {
	case errors.Is(err, errFirstByteTimeout):
		kind = metrics.ErrorFirstByteTimeout
	case errors.Is(err, errRequestTimeout) || errors.Is(err, errStreamIdle):
		kind = metrics.ErrorTimeout
	case errors.Is(err, codec.ErrEventTooLarge):
		kind = metrics.ErrorMalformed
	}
	return outcome.Outcome{Class: outcome.ServerError, Kind: kind, Detail: fmt.Sprintf("%s: %v", what, err)}
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

// limitLabel is the metrics label of a 429's limit type.
func limitLabel(t string) string {
	if t == "" {
		return metrics.LimitUnknown
	}
	return t
}

// eventsOf returns the events of a streamed answer: in the framing of up's
// provider when it has its own (provider.Framer), else SSE; nil when resp
// is not a stream.
func eventsOf(up *upstream, resp *http.Response) codec.EventStream {
	if f, ok := up.ep.(provider.Framer); ok {
		if es := f.Events(resp.Header, resp.Body); es != nil {
			return es
		}
	}
	if isEventStream(resp.Header) {
		return codec.NewEventReader(resp.Body)
	}
	return nil
}

func isEventStream(h http.Header) bool {
	return strings.HasPrefix(strings.ToLower(h.Get("Content-Type")), "text/event-stream")
}
