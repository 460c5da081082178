package proxy

import (
	"bytes"
	"cmp"
	"net/http"
	"strconv"
	"sync"

	"switchyard/internal/balancer"
	"switchyard/internal/codec"
	"switchyard/internal/config"
	"switchyard/internal/metrics"
	"switchyard/internal/outcome"
)

// translation is how one request reaches upstreams of other protocol
// families (DESIGN.md §9). The client's request is decoded into the
// canonical form once, on the first candidate of another family, and
// encoded per attempt into that upstream's protocol.
type translation struct {
	// client is the client's protocol as a Translator; nil when it does not
	// translate (completions, embeddings, count_tokens) or the route says
	// translate: false.
	client codec.Translator
	once   sync.Once // decodes req: the attempts of a hedged request race to it
	req    *codec.Request
	err    error // why the request could not be decoded
	// incompatible is the first feature that filtered every candidate of a
	// plan, for the 400 when nothing else was left.
	incompatible string
}

// canonical decodes the client's request once.
func (t *translation) canonical(body []byte, model string, stream bool) (*codec.Request, error) {
	t.once.Do(func() {
		t.req, t.err = t.client.DecodeRequest(body)
		if t.req != nil {
			if t.req.Model == "" {
				t.req.Model = model
			}
			t.req.Stream = stream
		}
	})
	return t.req, t.err
}

// translates returns c as a Translator when rs lets its requests reach
// upstreams of other families, else nil.
func translates(c codec.Codec, rs config.RouteSettings) codec.Translator {
	if !rs.Translate {
		return nil
	}
	t, _ := c.(codec.Translator)
	return t
}

// wire returns the protocol an attempt on up for model speaks: nil when it
// is the client's own (passthrough), else the protocol the request is
// translated into.
func (x *exchange) wire(up *upstream, model string) codec.Translator {
	f := up.family(model)
	if f == x.codec.Family() {
		return nil
	}
	return codec.ForFamily(f)
}

// markCompatible fills each candidate's Translate and Incompatible fields
// (DESIGN.md §9): a candidate of another family is incompatible when the
// request uses something its protocol cannot express, or cannot be
// translated at all.
func (x *exchange) markCompatible(cands []balancer.Candidate, ups []*upstream, model string) {
	for i, up := range ups {
		target := x.wire(up, model)
		if target == nil {
			if f := up.family(model); f != x.codec.Family() {
				cands[i].Incompatible = "protocol " + f.String()
			}
			continue
		}
		c := &cands[i]
		c.Translate = target.Name()
		req, err := x.tr.canonical(x.body, x.model, x.stream)
		switch {
		case err != nil:
			c.Incompatible = "request cannot be translated"
		default:
			c.Incompatible = req.Unsupported(target.Name())
		}
	}
}

// noteIncompatible records, for a plan that left nothing to try, its
// incompatible candidates among the reasons the client's error lists, and
// the feature that filtered them all when every one was filtered so.
func (x *exchange) noteIncompatible(d *balancer.Decision) {
	feature, all := "", true
	for i := range d.Candidates {
		r := &d.Candidates[i]
		if r.Filter != balancer.FilterIncompatible {
			all = false
			continue
		}
		if feature == "" {
			feature = r.Detail
		}
		if !x.tally.noted(r.Name) {
			x.tally.failures = append(x.tally.failures, failure{upstream: r.Name, detail: r.ReasonText(), class: outcome.Canceled})
		}
	}
	if all {
		x.tr.incompatible = feature
	}
}

// incompatibleError is the 400 for a request no candidate can express.
func (x *exchange) incompatibleError() error {
	msg := "no upstream of model " + strconv.Quote(x.model) + " can serve this request: "
	if x.tr.err != nil && x.tr.incompatible == "request cannot be translated" {
		return newError(ErrInvalidRequest, msg+x.tr.err.Error())
	}
	return newError(ErrIncompatible, msg+"incompatible: "+x.tr.incompatible+" is not supported by their protocols")
}

// encodeFor returns the request body for an attempt on up in protocol
// target, with the model the upstream knows.
func (x *exchange) encodeFor(target codec.Translator, rs config.RouteSettings, upModel string) ([]byte, error) {
	req, err := x.tr.canonical(x.body, x.model, x.stream)
	if err != nil {
		return nil, err
	}
	return target.EncodeRequest(req, upModel, codec.EncodeOptions{DefaultMaxTokens: rs.DefaultMaxTokens})
}

// translateWhole turns a translated attempt's whole success answer into the
// client's protocol.
func (x *exchange) translateWhole(st *started) outcome.Outcome {
	resp, err := st.wire.DecodeResponse(st.body)
	if err != nil {
		return outcome.Outcome{Class: outcome.ServerError, Kind: metrics.ErrorMalformed,
			Detail: "malformed upstream response (" + st.wire.Name() + "): " + err.Error()}
	}
	if resp.Model == "" { // Bedrock's Converse names none
		resp.Model = x.model
	}
	st.body = x.tr.client.EncodeResponse(resp)
	st.usage = &resp.Usage
	return outcome.Outcome{Class: outcome.Success}
}

// translateError turns a translated attempt's client-error answer into the
// client's protocol's error shape.
func (x *exchange) translateError(st *started) {
	e := st.wire.DecodeError(st.resp.StatusCode, st.body)
	if e.Status == 0 {
		e.Status = st.resp.StatusCode
	}
	st.body = x.codec.ErrorBody(e)
}

// translateFirst decodes a translated stream's first event. An error event
// first, or an event that is not of the upstream's protocol, fails over:
// nothing has reached the client yet.
func (x *exchange) translateFirst(st *started, ev *codec.Event) outcome.Outcome {
	st.dec = st.wire.NewStreamDecoder()
	chunks, err := st.dec.Decode(ev, nil)
	if err != nil {
		return outcome.Outcome{Class: outcome.ServerError, Kind: metrics.ErrorMalformed,
			Detail: "malformed upstream stream (" + st.wire.Name() + "): " + err.Error()}
	}
	for i := range chunks {
		if c := &chunks[i]; c.Type == codec.ChunkError {
			return x.firstEventError(st, c.Err)
		}
	}
	st.pending = chunks
	return outcome.Outcome{Class: outcome.Success}
}

// firstErrorEvent returns the error of a passed-through stream whose first
// event is its protocol's error event (Anthropic's overloaded_error, an
// OpenAI {"error":…} data line); nil for any other event.
func (x *exchange) firstErrorEvent(ev *codec.Event) *codec.Error { return errorEventOf(x.codec, ev) }

// errorEventOf returns the error ev carries when it is protocol c's error
// event, read by c's own stream decoder; nil for any other event. Only an
// event that looks like one (named error or response.failed, or data that
// starts with an error object) is decoded.
func errorEventOf(c codec.Codec, ev *codec.Event) *codec.Error {
	t, ok := c.(codec.Translator)
	if !ok || !looksLikeError(ev) {
		return nil
	}
	chunks, err := t.NewStreamDecoder().Decode(ev, nil)
	if err != nil {
		return nil
	}
	for i := range chunks {
		if chunks[i].Type == codec.ChunkError {
			return cmp.Or(chunks[i].Err, &codec.Error{Message: "error event"})
		}
	}
	return nil
}

// looksLikeError reports whether ev may be an error event of some protocol.
func looksLikeError(ev *codec.Event) bool {
	switch string(ev.Name) {
	case "error", "response.failed":
		return true
	}
	d := bytes.TrimSpace(ev.Data)
	return bytes.HasPrefix(d, []byte(`{"error"`)) || bytes.HasPrefix(d, []byte(`{"type":"error"`))
}

// firstEventError classifies a stream whose first event is an error: a
// throttling error (429) cools the upstream down like a 429 answer, any
// other fails over as a server error.
func (x *exchange) firstEventError(st *started, e *codec.Error) outcome.Outcome {
	detail := "stream began with an error: " + errorText(e)
	if e == nil || e.Status != http.StatusTooManyRequests {
		return outcome.Outcome{Class: outcome.ServerError, Kind: metrics.ErrorStatus5xx, Detail: detail}
	}
	name := st.up.cfg.Name
	cd := x.s.opts.State.RateLimited(name, st.resp.Header, nil, 0)
	x.s.opts.Metrics.RateLimited(name, limitLabel(cd.LimitType))
	return outcome.Outcome{Class: outcome.RateLimited, Status: http.StatusTooManyRequests, Detail: detail,
		Cooldown: cd.Wait, LimitType: cd.LimitType}
}

// errorText is a chunk error's message.
func errorText(e *codec.Error) string {
	if e == nil {
		return "error event"
	}
	if e.Type != "" {
		return e.Type + ": " + e.Message
	}
	return e.Message
}

// translatedName is the X-Switchyard-Translated value: client->upstream.
func (x *exchange) translatedName(st *started) string {
	return x.codec.Name() + "->" + st.wire.Name()
}

// noteUsage keeps the latest usage a chunk carries and counts the deltas
// (but a thinking block's signature), as a codec's Observe does.
func noteUsage(s *codec.StreamState, c *codec.Chunk) {
	switch c.Type {
	case codec.ChunkDelta:
		if c.Text != "" && !c.Signature {
			s.Deltas++
		}
	case codec.ChunkStart, codec.ChunkUsage, codec.ChunkEnd:
		if c.Usage.Input > 0 {
			s.In = c.Usage.Input
		}
		if c.Usage.Output > 0 {
			s.Out = c.Usage.Output
		}
	}
}

// eventRelay turns one upstream stream event into what the client gets.
type eventRelay interface {
	// relay returns the bytes to write for ev and updates s (usage, the
	// terminal event). An error means ev broke the stream: out is still
	// written, then the client's error event.
	relay(ev *codec.Event, s *codec.StreamState) (out []byte, err error)
	// end returns the client's terminal event for an upstream stream that
	// ended without its own (a provider whose streams may, OpenStreamEnd).
	end(s *codec.StreamState) []byte
}

// relayFor returns the relay of st's stream.
func (x *exchange) relayFor(st *started) eventRelay {
	if st.wire == nil {
		return passRelay{x.codec}
	}
	req, _ := x.tr.canonical(x.body, x.model, x.stream)
	return &translateRelay{dec: st.dec, enc: x.tr.client.NewStreamEncoder(req), pending: st.pending, primed: true, model: x.model}
}

// passRelay passes events through as they are.
type passRelay struct{ c codec.Codec }

// relay passes ev on; the upstream's own error event breaks the stream
// (after it reaches the client, which then needs no second one), even
// where the protocol's terminal-event scan counts it as the end.
func (p passRelay) relay(ev *codec.Event, s *codec.StreamState) ([]byte, error) {
	p.c.Observe(s, ev)
	if e := errorEventOf(p.c, ev); e != nil {
		s.Finished = false
		return ev.Raw, &errorEvent{msg: errorText(e)}
	}
	return ev.Raw, nil
}

func (passRelay) end(*codec.StreamState) []byte { return nil }

// translateRelay decodes the upstream's events into canonical chunks and
// encodes them in the client's protocol.
type translateRelay struct {
	dec     codec.StreamDecoder
	enc     codec.StreamEncoder
	pending []codec.Chunk // the first event's chunks, decoded before commit
	primed  bool          // pending holds the next event's chunks
	model   string        // the client's model, for an answer that names none
	chunks  []codec.Chunk
	out     []byte
}

func (t *translateRelay) relay(ev *codec.Event, s *codec.StreamState) ([]byte, error) {
	var err error
	if t.primed {
		t.chunks, t.pending, t.primed = t.pending, nil, false
	} else {
		t.chunks, err = t.dec.Decode(ev, t.chunks[:0])
	}
	t.out = t.out[:0]
	for i := range t.chunks {
		c := &t.chunks[i]
		if c.Type == codec.ChunkStart && c.Model == "" {
			c.Model = t.model
		}
		noteUsage(s, c)
		t.out = t.enc.Encode(c, t.out)
		if c.Type == codec.ChunkError && err == nil {
			// The encoder wrote the client's error event: the stream is
			// broken, not finished, and needs no second error event.
			err = &errorEvent{msg: errorText(c.Err)}
		}
	}
	s.Finished = t.dec.Done() && err == nil
	return t.out, err
}

// errorEvent is an upstream stream's error event after commit, already
// relayed to the client in its protocol.
type errorEvent struct{ msg string }

func (e *errorEvent) Error() string { return "upstream error event: " + e.msg }

// end encodes the chunks with which the decoder closes a stream that ended
// without its terminal event: the stop reason and usage the upstream gave.
func (t *translateRelay) end(s *codec.StreamState) []byte {
	t.out = t.out[:0]
	t.chunks = t.dec.End(t.chunks[:0])
	for i := range t.chunks {
		noteUsage(s, &t.chunks[i])
		t.out = t.enc.Encode(&t.chunks[i], t.out)
	}
	return t.out
}
