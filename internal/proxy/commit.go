package proxy

import (
	"errors"
	"io"
	"net/http"
	"strconv"

	"switchyard/internal/codec"
	"switchyard/internal/metrics"
	"switchyard/internal/outcome"
)

// commit relays a started attempt to the client: from here on the request
// stays on this upstream. It returns how the attempt ended.
func (x *exchange) commit(st *started) outcome.Outcome {
	defer st.close()
	x.pinAnswer(st)
	x.log.Upstream = st.up.cfg.Name
	if x.tracing() {
		x.trace.respModel = st.respModel
	}
	x.log.Status = st.resp.StatusCode
	if st.wire != nil {
		x.log.Translated = x.translatedName(st)
	}
	if st.first != nil {
		return x.relayStream(st)
	}
	return x.relayBody(st)
}

// relayBody writes a whole answer.
func (x *exchange) relayBody(st *started) outcome.Outcome {
	now := x.s.opts.Clock.Now()
	x.log.TTFT = now.Sub(st.sent)
	o := outcome.Outcome{Class: st.class, Status: st.resp.StatusCode, Headers: st.headers}
	if st.class == outcome.Success {
		o.Latency = x.log.TTFT
		if st.usage != nil {
			o.InputTokens, o.OutputTokens = st.usage.Input, st.usage.Output
		} else {
			o.InputTokens, o.OutputTokens = x.codec.Usage(st.body)
		}
		x.log.InputTokens, x.log.OutputTokens = o.InputTokens, o.OutputTokens
	} else {
		x.log.ErrorClass = "upstream_client_error"
	}
	h := x.w.Header()
	copyResponseHeaders(h, st.resp.Header)
	x.setGatewayHeaders(st)
	if st.wire != nil {
		h.Set("Content-Type", "application/json")
	}
	h.Set("Content-Length", strconv.Itoa(len(st.body)))
	x.w.WriteHeader(st.resp.StatusCode)
	if _, err := x.w.Write(st.body); err != nil {
		x.log.ErrorClass = "client_canceled"
	}
	return o
}

// relayStream passes an SSE answer to the client event by event, flushing
// each at once: as it is, or translated into the client's protocol. A break
// after the first event ends the client's stream with its protocol's error
// event.
func (x *exchange) relayStream(st *started) outcome.Outcome {
	firstAt := x.s.opts.Clock.Now()
	x.log.TTFT = firstAt.Sub(st.sent)
	h := x.w.Header()
	copyResponseHeaders(h, st.resp.Header)
	x.setGatewayHeaders(st)
	if st.wire != nil { // the upstream's framing may not be SSE (Bedrock)
		h.Set("Content-Type", "text/event-stream; charset=utf-8")
	}
	x.w.WriteHeader(st.resp.StatusCode)
	rc := http.NewResponseController(x.w)
	idle := x.s.opts.Clock.AfterFunc(st.rs.StreamIdleTimeout, func() { st.cancel(errStreamIdle) })
	defer idle.Stop()

	var scan codecState
	rel := x.relayFor(st)
	ev := st.first
	for {
		if x.pinned.pending {
			x.pinEvent(st, ev)
		}
		out, rerr := rel.relay(ev, &scan.StreamState)
		x.log.InputTokens, x.log.OutputTokens = scan.In, scan.OutSoFar()
		if len(out) > 0 {
			if _, err := x.w.Write(out); err != nil {
				return scan.outcome(outcome.Of(outcome.Canceled, "client canceled"))
			}
			_ = rc.Flush()
		}
		var err error
		if rerr == nil {
			ev, err = st.events.Next()
		}
		if err == io.EOF && (scan.Finished || st.up.ep.OpenStreamEnd()) {
			if !scan.Finished {
				_, _ = x.w.Write(rel.end(&scan.StreamState))
			}
			o := scan.outcome(outcome.Outcome{Class: outcome.Success, Status: st.resp.StatusCode, TTFT: x.log.TTFT})
			if d := x.s.opts.Clock.Now().Sub(firstAt); d > 0 && scan.Out > 0 {
				o.TPS = float64(scan.Out) / d.Seconds()
			}
			return o
		}
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		if err == nil && rerr != nil {
			err = rerr
		}
		if err != nil {
			o := scan.outcome(x.streamFailure(st.resp.Request.Context(), err, "stream interrupted"))
			if o.Class != outcome.Canceled {
				o.Kind = metrics.ErrorStreamInterrupted
				x.log.ErrorClass, x.log.Error = "stream_interrupted", o.Detail
				var relayed *errorEvent
				if !errors.As(err, &relayed) {
					_, _ = x.w.Write(x.codec.StreamError("upstream " + st.up.cfg.Name + ": " + o.Detail))
				}
				_ = rc.Flush()
			}
			return o
		}
		idle.Reset(st.rs.StreamIdleTimeout)
	}
}

// setGatewayHeaders adds the X-Switchyard-* headers of DESIGN.md §3.
// X-Request-Id is set when the request arrives.
func (x *exchange) setGatewayHeaders(st *started) {
	h := x.w.Header()
	h["X-Switchyard-Upstream"] = st.up.nameValue
	h["X-Switchyard-Attempts"] = attemptsValue(x.tally.attempts)
	if st.wire != nil {
		h.Set("X-Switchyard-Translated", x.log.Translated)
	}
	if x.raced > 1 {
		h["X-Switchyard-Hedged"] = attemptsValue(x.raced)
	}
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

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// codecState follows a relayed stream for usage and its terminal event.
type codecState struct{ codec.StreamState }

// outcome returns o with the usage seen so far (a cut stream's output
// estimated, codec.StreamState.OutSoFar).
func (s *codecState) outcome(o outcome.Outcome) outcome.Outcome {
	o.InputTokens, o.OutputTokens = s.In, s.OutSoFar()
	return o
}
