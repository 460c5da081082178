package mock

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// sseEvent is one server-sent event: an optional event name and its data
// (JSON, or OpenAI's [DONE] sentinel). For Bedrock it is one AWS
// event-stream frame: name is the :event-type, or with exception set the
// :exception-type.
type sseEvent struct {
	name      string
	data      []byte
	exception bool
}

// jsonEvent builds an event whose data is v as JSON.
func jsonEvent(name string, v any) sseEvent {
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("mock: encoding an event: %v", err)) // a bug: every value is built here
	}
	return sseEvent{name: name, data: data}
}

// Slots mark where an eventTemplate fills in per-token values; they appear as
// JSON strings in the value the template is built from.
const (
	slotPiece = "@@mock-piece@@" // filled with the token text, a JSON string
	slotSeq   = "@@mock-seq@@"   // filled with a sequence number, a JSON number
)

// eventTemplate is a token event encoded once per stream, so that each token
// costs one buffer instead of a map encoding.
type eventTemplate struct {
	name  string
	parts []string // the JSON around the slots; len(parts) == len(slots)+1
	slots []string
}

// newEventTemplate encodes v, in which slotPiece and slotSeq stand for the
// per-token values.
func newEventTemplate(name string, v any) eventTemplate {
	rest := string(jsonEvent(name, v).data)
	t := eventTemplate{name: name}
	for {
		i := strings.Index(rest, `"@@mock-`)
		if i < 0 {
			break
		}
		end := strings.IndexByte(rest[i+1:], '"') + i + 1
		t.parts = append(t.parts, rest[:i])
		t.slots = append(t.slots, rest[i+1:end])
		rest = rest[end+1:]
	}
	t.parts = append(t.parts, rest)
	return t
}

// fill returns the event with piece and seq in their slots.
func (t eventTemplate) fill(piece string, seq int) sseEvent {
	n := len(piece) + 24
	for _, p := range t.parts {
		n += len(p)
	}
	buf := make([]byte, 0, n)
	for i, slot := range t.slots {
		buf = append(buf, t.parts[i]...)
		if slot == slotSeq {
			buf = strconv.AppendInt(buf, int64(seq), 10)
		} else {
			buf = appendJSONString(buf, piece)
		}
	}
	buf = append(buf, t.parts[len(t.parts)-1]...)
	return sseEvent{name: t.name, data: buf}
}

// appendJSONString appends s as a JSON string. It escapes what JSON
// requires; valid UTF-8 passes through.
func appendJSONString(buf []byte, s string) []byte {
	const hex = "0123456789abcdef"
	buf = append(buf, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '"' || c == '\\':
			buf = append(buf, '\\', c)
		case c < 0x20:
			buf = append(buf, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		default:
			buf = append(buf, c)
		}
	}
	return append(buf, '"')
}

// doneEvent is OpenAI's end-of-stream sentinel.
var doneEvent = sseEvent{data: []byte("[DONE]")}

// withDone appends doneEvent to an OpenAI stream's last events, unless
// Behavior.OmitDone.
func (c *call) withDone(out []sseEvent) []sseEvent {
	if c.b.OmitDone {
		return out
	}
	return append(out, doneEvent)
}

// sseWriter writes events, flushing each at once. The response headers go
// out with the first event. After Behavior.DropAfterEvents events it aborts
// the connection. In array mode (Gemini's streamGenerateContent without
// alt=sse) it writes the events' data as the elements of one JSON array
// instead, as Google does; in frame mode (Bedrock's ConverseStream) each
// event is an AWS event-stream frame, and Behavior.StreamException
// replaces event number StreamExceptionAfter with an exception frame that
// ends the stream. Otherwise Behavior.StreamError replaces event number
// StreamErrorAfter with the protocol's error event, which ends the stream,
// and Behavior.MalformedStream writes the first event without its SSE
// fields.
type sseWriter struct {
	c      *call
	rc     *http.ResponseController
	events int
	buf    []byte
	array  bool
	frames *frameEncoder // frame mode; nil otherwise
}

func (c *call) sseWriter() *sseWriter {
	sw := &sseWriter{c: c, rc: http.NewResponseController(c.w)}
	sw.array = c.rt.endpoint == epStreamGenerate && c.r.URL.Query().Get("alt") != "sse"
	if c.rt.proto == protoBedrock {
		sw.frames = newFrameEncoder()
	}
	return sw
}

// send writes e; it returns false when the client has gone away.
func (sw *sseWriter) send(e sseEvent) bool {
	c := sw.c
	if c.r.Context().Err() != nil {
		return false
	}
	sw.buf = sw.buf[:0]
	stop := false
	if sw.frames != nil && c.b.StreamException != "" && sw.events == c.b.StreamExceptionAfter {
		e, stop = bedrockStreamException(c.b.StreamException), true
	}
	if sw.frames == nil && c.b.StreamError != 0 && sw.events == c.b.StreamErrorAfter {
		e, stop = c.streamErrorEvent(c.b.StreamError, sw.events), true
	}
	if sw.events == 0 {
		sw.writeHeader()
		if sw.array {
			sw.buf = append(sw.buf, '[')
		} else if sw.frames == nil && c.b.KeepAliveFirst && !sw.keepAlive() {
			return false
		}
	}
	switch {
	case sw.array:
		if sw.events > 0 {
			sw.buf = append(sw.buf, ",\r\n"...)
		}
		sw.buf = append(sw.buf, e.data...)
	case sw.frames != nil:
		sw.buf = sw.frames.append(sw.buf, e)
	case c.b.MalformedStream && sw.events == 0: // no SSE field: a line of JSON
		sw.buf = append(sw.buf, e.data...)
		sw.buf = append(sw.buf, "\n\n"...)
	default:
		if e.name != "" {
			sw.buf = append(sw.buf, "event: "...)
			sw.buf = append(sw.buf, e.name...)
			sw.buf = append(sw.buf, '\n')
		}
		sw.buf = append(sw.buf, "data: "...)
		sw.buf = append(sw.buf, e.data...)
		sw.buf = append(sw.buf, "\n\n"...)
	}
	if _, err := c.w.Write(sw.buf); err != nil {
		return false
	}
	if err := sw.rc.Flush(); err != nil {
		return false
	}
	sw.events++
	if stop {
		return false
	}
	sw.dropDue()
	return true
}

// keepAlive writes and flushes an SSE comment, counted as an event
// (Behavior.KeepAliveFirst); false when the client has gone.
func (sw *sseWriter) keepAlive() bool {
	if _, err := sw.c.w.Write([]byte(": keep-alive\n\n")); err != nil {
		return false
	}
	if err := sw.rc.Flush(); err != nil {
		return false
	}
	sw.events++
	sw.dropDue()
	return true
}

// dropDue cuts the connection once Behavior.DropAfterEvents events are
// out, without ending the chunked body: the client reads an unexpected
// EOF. net/http does not log this sentinel.
func (sw *sseWriter) dropDue() {
	if n := sw.c.b.DropAfterEvents; n > 0 && sw.events >= n {
		panic(http.ErrAbortHandler)
	}
}

// writeHeader sends the stream's 200 headers, with the Content-Type of its
// mode.
func (sw *sseWriter) writeHeader() {
	c := sw.c
	c.setCommonHeaders()
	h := c.w.Header()
	switch {
	case sw.array:
		h.Set("Content-Type", "application/json; charset=UTF-8")
	case sw.frames != nil:
		h.Set("Content-Type", bedrockStreamContentType)
	default:
		h.Set("Content-Type", "text/event-stream; charset=utf-8")
		h.Set("Cache-Control", "no-cache")
	}
	c.w.WriteHeader(http.StatusOK)
}

// end closes the JSON array of array mode.
func (sw *sseWriter) end() {
	if sw.array && sw.events > 0 {
		_, _ = sw.c.w.Write([]byte("]"))
	}
}

// segment is a run of a stream: pre events sent as they are, then n token
// events (token(0), …, token(n-1)) paced at Behavior.TPS.
type segment struct {
	pre   []sseEvent
	n     int
	token func(i int) sseEvent
}

// streamAnswer streams an answer of one segment; see streamSegments.
func (c *call) streamAnswer(pre []sseEvent, n int, token func(i int) sseEvent, post func() []sseEvent) {
	c.streamSegments([]segment{{pre: pre, n: n, token: token}}, post)
}

// streamSegments streams an answer: after TTFT the headers, the first
// segment's pre events and its first token event go out together; each
// further token, counted across segments, waits for its slot at TPS tokens
// per second (a segment's pre events go out with its first token, or at
// once when it has none); then
// the post events. It stops as soon as the client goes away.
func (c *call) streamSegments(segs []segment, post func() []sseEvent) {
	if !c.sleep(c.b.TTFT) {
		return
	}
	sw := c.sseWriter()
	var interval time.Duration
	if c.b.TPS > 0 {
		interval = time.Duration(float64(time.Second) / c.b.TPS)
	}
	first := c.s.clock.Now()
	k := 0 // tokens sent so far
	for _, seg := range segs {
		if k > 0 && interval > 0 && seg.n > 0 {
			due := first.Add(time.Duration(k) * interval)
			if !c.sleep(due.Sub(c.s.clock.Now())) {
				return
			}
		}
		for _, e := range seg.pre {
			if !sw.send(e) {
				return
			}
		}
		for i := range seg.n {
			if i > 0 && interval > 0 {
				due := first.Add(time.Duration(k) * interval)
				if !c.sleep(due.Sub(c.s.clock.Now())) {
					return
				}
			}
			if !sw.send(seg.token(i)) {
				return
			}
			k++
		}
	}
	for _, e := range post() {
		if !sw.send(e) {
			return
		}
	}
	sw.end()
}

// invalidBody answers 200 with a body a client cannot parse: truncated JSON,
// or for a stream an event whose data is truncated JSON, with no end marker.
func (c *call) invalidBody() {
	if !c.stream {
		c.setCommonHeaders()
		c.w.Header().Set("Content-Type", "application/json")
		c.w.WriteHeader(http.StatusOK)
		_, _ = c.w.Write([]byte(`{"id":"mock-invalid-body","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"this body is cut short`))
		return
	}
	sw := c.sseWriter()
	switch c.rt.endpoint {
	case epMessages:
		sw.send(sseEvent{name: "message_start", data: []byte(`{"type":"message_start","message":{"id":"msg_broken","content":[`)})
	case epResponses:
		sw.send(sseEvent{name: "response.created", data: []byte(`{"type":"response.created","response":{"id":"resp_broken",`)})
	case epStreamGenerate:
		sw.send(sseEvent{data: []byte(`{"candidates":[{"content":{"parts":[{"text":"cut`)})
	case epConverseStream:
		sw.send(sseEvent{name: "messageStart", data: []byte(`{"role":"assist`)})
	default:
		sw.send(sseEvent{data: []byte(`{"id":"chatcmpl-broken","object":"chat.completion.chunk","choices":[{"delta":{"content":"cut`)})
	}
}
