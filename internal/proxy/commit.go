package proxy

import (
	"errors"
	"io"
	"net/http"
	"strconv"

	"switchyard/internal/codec"
	"switchyard/internal/metrics"
	"switchyard/internal/outcome"
	"switchyard/internal/store"
)

// reply is the client's side of a committed attempt: where it writes and
// what it records. Only the request's goroutine has one, and only the
// attempt it commits writes to it.
type reply struct {
	w        http.ResponseWriter
	log      *store.RequestLog
	pin      *statePin
	attempts int // attempts made, for X-Switchyard-Attempts
	raced    int // attempts raced for the answer, for X-Switchyard-Hedged
}

// commit relays a started attempt to the client: from here on the request
// stays on this upstream. It returns how the attempt ended.
func (a *attempt) commit(rp *reply) outcome.Outcome {
	defer a.close()
	rp.pin.answer(a)
	rp.log.Upstream = a.up.cfg.Name
	rp.log.Status = a.resp.StatusCode
	if a.wire != nil {
		rp.log.Translated = a.req.codec.Name() + "->" + a.wire.Name()
	}
	if a.first != nil {
		o := a.relayStream(rp)
		a.noteCost(rp.log, &o)
		return o
	}
	return a.relayBody(rp)
}

// relayBody writes a whole answer.
func (a *attempt) relayBody(rp *reply) outcome.Outcome {
	log := rp.log
	log.TTFT = a.firstAt.Sub(a.sent)
	o := outcome.Outcome{Class: a.class, Status: a.resp.StatusCode, Headers: a.headers}
	if a.class == outcome.Success {
		o.Latency = log.TTFT
		if a.usage != nil {
			o = withUsage(o, *a.usage)
		} else {
			o = withUsage(o, a.req.codec.Usage(a.body))
		}
		log.InputTokens, log.OutputTokens = o.InputTokens, o.OutputTokens
	} else {
		log.ErrorClass = "upstream_client_error"
	}
	h := rp.w.Header()
	copyResponseHeaders(h, a.resp.Header)
	a.setGatewayHeaders(rp)
	if usd, priced := a.noteCost(log, &o); priced && a.class == outcome.Success {
		h["X-Switchyard-Cost"] = []string{formatCost(usd)}
	}
	if a.wire != nil {
		h.Set("Content-Type", "application/json")
	}
	h.Set("Content-Length", strconv.Itoa(len(a.body)))
	rp.w.WriteHeader(a.resp.StatusCode)
	if _, err := rp.w.Write(a.body); err != nil {
		log.ErrorClass = "client_canceled"
	}
	return o
}

// relayStream passes an SSE answer to the client event by event, flushing
// each at once: as it is, or translated into the client's protocol. A break
// after the first event ends the client's stream with its protocol's error
// event. However the upstream's stream ends, its decoder says how: the
// stop reason the upstream gave reaches the client.
func (a *attempt) relayStream(rp *reply) outcome.Outcome {
	clk, w, log := a.req.s.opts.Clock, rp.w, rp.log
	log.TTFT = a.firstAt.Sub(a.sent)
	h := w.Header()
	copyResponseHeaders(h, a.resp.Header)
	a.setGatewayHeaders(rp)
	if a.wire != nil { // the upstream's framing may not be SSE (Bedrock)
		h.Set("Content-Type", "text/event-stream; charset=utf-8")
	}
	w.WriteHeader(a.resp.StatusCode)
	rc := http.NewResponseController(w)
	idle := clk.AfterFunc(a.rs.StreamIdleTimeout, func() { a.cancel(errStreamIdle) })
	defer idle.Stop()

	var scan codecState
	rel := a.relay()
	ev := a.first
	for {
		if rp.pin.pending {
			rp.pin.event(a.req.r.Context(), a.up.cfg.Name, ev)
		}
		out, rerr := rel.relay(ev, &scan.StreamState)
		if rp.pin.chain.pending {
			rp.pin.chain.relayed(a.req.r.Context(), out)
		}
		log.InputTokens, log.OutputTokens = scan.In, scan.OutSoFar()
		if len(out) > 0 {
			if _, err := w.Write(out); err != nil {
				return scan.outcome(outcome.Of(outcome.Canceled, "client canceled"))
			}
			_ = rc.Flush()
		}
		var err error
		if rerr == nil {
			ev, err = a.events.Next()
		}
		if err == io.EOF && (scan.Finished || a.up.ep.OpenStreamEnd()) {
			if !scan.Finished {
				out := rel.end(&scan.StreamState)
				if rp.pin.chain.pending {
					rp.pin.chain.relayed(a.req.r.Context(), out)
				}
				_, _ = w.Write(out)
			}
			o := scan.outcome(outcome.Outcome{Class: outcome.Success, Status: a.resp.StatusCode, TTFT: log.TTFT})
			if d := clk.Now().Sub(a.firstAt); d > 0 && scan.Out > 0 {
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
			o := scan.outcome(a.readFailure(a.resp.Request.Context(), err, "stream interrupted"))
			if o.Class != outcome.Canceled {
				o.Kind = metrics.ErrorStreamInterrupted
				log.ErrorClass, log.Error = "stream_interrupted", o.Detail
				var relayed *errorEvent
				if !errors.As(err, &relayed) {
					_, _ = w.Write(a.req.codec.StreamError("upstream " + a.up.cfg.Name + ": " + o.Detail))
				}
				_ = rc.Flush()
			}
			return o
		}
		idle.Reset(a.rs.StreamIdleTimeout)
	}
}

// setGatewayHeaders adds the X-Switchyard-* headers (docs/reference.md#headers-the-gateway-sets).
// X-Request-Id is set when the request arrives.
func (a *attempt) setGatewayHeaders(rp *reply) {
	h := rp.w.Header()
	h["X-Switchyard-Upstream"] = a.up.nameValue
	h["X-Switchyard-Attempts"] = attemptsValue(rp.attempts)
	if a.wire != nil {
		h.Set("X-Switchyard-Translated", rp.log.Translated)
	}
	if rp.raced > 1 {
		h["X-Switchyard-Hedged"] = attemptsValue(rp.raced)
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
	return withUsage(o, s.SoFar())
}
