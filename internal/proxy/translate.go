package proxy

import (
	"bytes"
	"cmp"
	"net/http"
	"strconv"
	"strings"
	"sync"

	"switchyard/internal/balancer"
	"switchyard/internal/codec"
	"switchyard/internal/config"
	"switchyard/internal/metrics"
	"switchyard/internal/outcome"
)

// translation is how one request reaches upstreams of other protocol
// families (docs/protocols.md). The client's request is decoded into the
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
func (q *request) wire(up *upstream, model string) codec.Translator {
	f := up.family(model)
	if f == q.codec.Family() {
		return nil
	}
	return codec.ForFamily(f)
}

// markCompatible fills each candidate's Translate and Incompatible fields
// (docs/protocols.md): a candidate of another family is incompatible when the
// request uses something its protocol cannot express, or cannot be
// translated at all.
func (q *request) markCompatible(cands []balancer.Candidate, ups []*upstream, model string) {
	for i, up := range ups {
		target := q.wire(up, model)
		if target == nil {
			if f := up.family(model); f != q.codec.Family() {
				cands[i].Incompatible = "protocol " + f.String()
			}
			continue
		}
		c := &cands[i]
		c.Translate = target.Name()
		req, err := q.tr.canonical(q.body, q.model, q.stream)
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
func (t *tally) noteIncompatible(d *balancer.Decision) {
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
		if !t.noted(r.Name) {
			t.failures = append(t.failures, failure{upstream: r.Name, detail: r.ReasonText(), class: outcome.Canceled})
		}
	}
	if all {
		t.incompatible = feature
	}
}

// incompatibleError is the 400 for a request no candidate of model can
// express; decodeErr is why the request could not be decoded for
// translation, if it could not.
func (t *tally) incompatibleError(model string, decodeErr error) error {
	msg := "no upstream of model " + strconv.Quote(model) + " can serve this request: "
	if decodeErr != nil { // the request itself does not decode: the client's error
		return newError(ErrInvalidRequest, msg+decodeErr.Error())
	}
	return newError(ErrIncompatible, msg+"incompatible: "+t.incompatible+" is not supported by their protocols")
}

// translateWhole turns a translated attempt's whole success answer into the
// client's protocol.
func (a *attempt) translateWhole() outcome.Outcome {
	resp, err := a.wire.DecodeResponse(a.body)
	if err != nil {
		return outcome.Outcome{Class: outcome.ServerError, Kind: metrics.ErrorMalformed,
			Detail: "malformed upstream response (" + a.wire.Name() + "): " + err.Error()}
	}
	a.req.identify(&resp.ID, &resp.Model)
	a.body = a.req.tr.client.EncodeResponse(resp)
	a.usage = &resp.Usage
	return outcome.Outcome{Class: outcome.Success}
}

// identify fills in the id and model of a translated answer that names
// none (Bedrock's Converse names neither): the client's model, and an id
// made from the request's (docs/protocols.md#answer-ids), which the client's
// encoder prefixes as its protocol does (msg_, chatcmpl-, resp_).
func (q *request) identify(id, model *string) {
	if *model == "" {
		*model = q.model
	}
	if *id == "" {
		*id = answerID(q.id)
	}
}

// answerID is the stem of the answer ids of request id reqID: the id
// without the gateway's "req_" prefix, any byte but a letter, digit, '-'
// or '_' (a client's X-Request-Id may have them) made '_'. Request ids are
// unique per request, so are the answers'.
func answerID(reqID string) string {
	b := []byte(strings.TrimPrefix(reqID, "req_"))
	for i, c := range b {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_') {
			b[i] = '_'
		}
	}
	return string(b)
}

// translateError turns a translated attempt's client-error answer into the
// client's protocol's error shape.
func (a *attempt) translateError() {
	e := a.wire.DecodeError(a.resp.StatusCode, a.body)
	if e.Status == 0 {
		e.Status = a.resp.StatusCode
	}
	a.body = a.req.codec.ErrorBody(e)
}

// translateFirst decodes a translated stream's first event. An error event
// first, or an event that is not of the upstream's protocol, fails over:
// nothing has reached the client yet.
func (a *attempt) translateFirst(ev *codec.Event) outcome.Outcome {
	a.dec = a.wire.NewStreamDecoder()
	chunks, err := a.dec.Decode(ev, nil)
	if err != nil {
		return outcome.Outcome{Class: outcome.ServerError, Kind: metrics.ErrorMalformed,
			Detail: "malformed upstream stream (" + a.wire.Name() + "): " + err.Error()}
	}
	for i := range chunks {
		if c := &chunks[i]; c.Type == codec.ChunkError {
			return a.firstEventError(c.Err)
		}
	}
	a.pending = chunks
	return outcome.Outcome{Class: outcome.Success}
}

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
func (a *attempt) firstEventError(e *codec.Error) outcome.Outcome {
	detail := "stream began with an error: " + errorText(e)
	if e == nil || e.Status != http.StatusTooManyRequests {
		return outcome.Outcome{Class: outcome.ServerError, Kind: metrics.ErrorStatus5xx, Detail: detail}
	}
	name, o := a.up.cfg.Name, &a.req.s.opts
	cd := o.State.RateLimited(name, a.resp.Header, nil, 0)
	o.Metrics.RateLimited(name, limitLabel(cd.LimitType))
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
			s.SetInput(&c.Usage)
		}
		if c.Usage.Output > 0 {
			s.Out = c.Usage.Output
		}
	}
}
