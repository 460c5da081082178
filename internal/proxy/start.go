package proxy

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/tidwall/gjson"

	"switchyard/internal/codec"
	"switchyard/internal/metrics"
	"switchyard/internal/outcome"
	"switchyard/internal/provider"
)

// observeStream reports a 2xx stream's headers to the state once its
// first event has been read (o is what that event made of the attempt):
// only a stream that starts well ends the upstream's run of consecutive
// 429s, so that a stream whose first event is a throttling error (Bedrock's
// throttlingException, Anthropic's rate_limit_error event) backs off as a
// 429 answer does, 1 s, 2 s, 4 s…, not 1 s every time.
func (a *attempt) observeStream(o outcome.Outcome) outcome.Outcome {
	status := a.resp.StatusCode
	if o.Class != outcome.Success {
		status = cmp.Or(o.Status, http.StatusBadGateway)
	}
	a.req.s.opts.State.Observe(a.up.cfg.Name, status, a.resp.Header)
	return o
}

// answerFailure classifies a non-2xx answer with the provider's adapter. The
// client's own error is read whole, to be committed as it is; anything else
// fails over.
func (a *attempt) answerFailure() outcome.Outcome {
	s, up, resp := a.req.s, a.up, a.resp
	a.firstByte.Stop()
	errBody, _ := readSized(io.LimitReader(resp.Body, s.opts.MaxResponseBytes), resp.ContentLength)
	o := up.ep.Classify(resp.StatusCode, resp.Header, errBody)
	switch o.Class {
	case outcome.ClientError:
		a.class, a.body = outcome.ClientError, errBody
		if a.wire != nil {
			a.translateError()
		}
		return outcome.Outcome{Class: outcome.Success}
	case outcome.RateLimited:
		cd := s.opts.State.RateLimited(up.cfg.Name, resp.Header, errBody, o.Cooldown)
		s.opts.Metrics.RateLimited(up.cfg.Name, limitLabel(cd.LimitType))
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
func (a *attempt) readWhole(ctx context.Context) outcome.Outcome {
	limit := a.req.s.opts.MaxResponseBytes
	body, err := readSized(io.LimitReader(a.resp.Body, limit+1), a.resp.ContentLength)
	if err != nil {
		return a.readFailure(ctx, err, "reading response")
	}
	if int64(len(body)) > limit {
		return outcome.Outcome{Class: outcome.ServerError, Kind: metrics.ErrorMalformed, Detail: "response larger than " + itoa(limit) + " bytes"}
	}
	// Every endpoint answers JSON: a success that is not (an HTML page from a
	// proxy in between, whatever its Content-Type says) is the upstream's failure.
	if !gjson.ValidBytes(body) {
		return outcome.Outcome{Class: outcome.ServerError, Kind: metrics.ErrorMalformed, Detail: "malformed upstream response (invalid JSON)"}
	}
	a.body = body
	if a.req.traced {
		a.respModel = responseModel(body)
	}
	if a.wire != nil {
		return a.translateWhole()
	}
	return outcome.Outcome{Class: outcome.Success}
}

// firstEvent waits for a stream's first data event and checks that it can
// start the client's stream. SSE comments before it (": keep-alive") are
// not a first byte: an upstream that sends one and then fails still fails
// over, and a comment does not win a hedged race.
func (a *attempt) firstEvent(ctx context.Context) outcome.Outcome {
	var ev *codec.Event
	for {
		var err error
		if ev, err = a.events.Next(); err != nil {
			return a.readFailure(ctx, err, "stream ended before its first event")
		}
		if !commentOnly(ev) {
			break // a line that is no SSE field (an HTML page) is malformed, below
		}
	}
	if a.req.traced {
		a.respModel = responseModel(ev.Data)
	}
	if !codec.WellFormedFirst(ev) {
		// Nothing is written yet: fail over like an invalid JSON body.
		return outcome.Outcome{Class: outcome.ServerError, Kind: metrics.ErrorMalformed,
			Detail: "malformed upstream stream (first event is not SSE with JSON data)"}
	}
	if a.wire != nil {
		if o := a.translateFirst(ev); o.Class != outcome.Success {
			return o
		}
	} else if e := errorEventOf(a.req.codec, ev); e != nil {
		return a.firstEventError(e)
	}
	a.firstByte.Stop()
	a.first = ev
	return outcome.Outcome{Class: outcome.Success}
}

// commentOnly reports whether ev is nothing but SSE comments: every line
// starts with ':' (a line of anything else — data, or a field SSE does not
// know — makes it an event, which WellFormedFirst then judges).
func commentOnly(ev *codec.Event) bool {
	if len(ev.Data) > 0 || len(ev.Name) > 0 || ev.Exception {
		return false
	}
	for line := range bytes.Lines(bytes.TrimPrefix(ev.Raw, []byte("\uFEFF"))) {
		if line = bytes.TrimRight(line, "\r\n"); len(line) > 0 && line[0] != ':' {
			return false
		}
	}
	return true
}

// transportFailure classifies a failed round trip.
func (a *attempt) transportFailure(ctx context.Context, err error) outcome.Outcome {
	if a.req.r.Context().Err() != nil {
		return outcome.Of(outcome.Canceled, "client canceled")
	}
	switch cause := context.Cause(ctx); {
	case errors.Is(cause, errHedgeLost):
		return outcome.Of(outcome.Canceled, "hedge lost")
	case errors.Is(cause, errFirstByteTimeout):
		return outcome.Outcome{Class: outcome.ServerError, Kind: metrics.ErrorFirstByteTimeout, Detail: "first byte timeout"}
	case errors.Is(cause, errRequestTimeout):
		return outcome.Outcome{Class: outcome.ServerError, Kind: metrics.ErrorTimeout, Detail: "request timeout"}
	}
	return outcome.Outcome{Class: outcome.ServerError, Kind: metrics.ErrorConnection, Detail: "connection error: " + unwrapURLError(err).Error()}
}

// readFailure classifies a read error on an upstream's answer (what says
// what was being read): the client leaving and a lost race are
// cancellations, a timeout or a broken connection the upstream's failure.
func (a *attempt) readFailure(ctx context.Context, err error, what string) outcome.Outcome {
	if a.req.r.Context().Err() != nil {
		return outcome.Of(outcome.Canceled, "client canceled")
	}
	if hedgeLost(ctx) {
		return outcome.Of(outcome.Canceled, "hedge lost")
	}
	if ctx.Err() != nil {
		err = context.Cause(ctx) // first-byte or idle timeout, or the request deadline
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
