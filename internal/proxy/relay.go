package proxy

import (
	"switchyard/internal/codec"
)

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

// relay returns the relay of the attempt's stream: the events as they
// are, or through its codec pair.
func (a *attempt) relay() eventRelay {
	q := a.req
	if a.wire == nil {
		if a.askedUsage {
			return usageRelay{passRelay{q.codec}, q.codec.(codec.StreamUsage)}
		}
		return passRelay{q.codec}
	}
	req, _ := q.tr.canonical(q.body, q.model, q.stream)
	return &translateRelay{q: q, dec: a.dec, enc: q.tr.client.NewStreamEncoder(req), pending: a.pending, primed: true}
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

// usageRelay passes events through but the usage chunk the gateway asked
// for and the client did not (codec.StreamUsage): its usage is counted,
// the client never sees it.
type usageRelay struct {
	passRelay
	su codec.StreamUsage
}

func (u usageRelay) relay(ev *codec.Event, s *codec.StreamState) ([]byte, error) {
	out, err := u.passRelay.relay(ev, s)
	if err == nil && u.su.UsageOnly(ev) {
		return nil, nil
	}
	return out, err
}

// translateRelay decodes the upstream's events into canonical chunks and
// encodes them in the client's protocol.
type translateRelay struct {
	q       *request // the client's request, for an answer that names no id or model
	dec     codec.StreamDecoder
	enc     codec.StreamEncoder
	pending []codec.Chunk // the first event's chunks, decoded before commit
	primed  bool          // pending holds the next event's chunks
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
		if c.Type == codec.ChunkStart {
			t.q.identify(&c.ID, &c.Model)
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
