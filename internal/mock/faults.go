package mock

import "net/http"

// The failures of an answer that has begun with 200 (Behavior.EmptyBody,
// StallAfterHeaders, StreamError): what a gateway must tell from a success
// before it commits to an upstream.

// emptyBody answers 200 with no body, with the Content-Type of the answer
// the request asked for.
func (c *call) emptyBody() {
	if c.stream {
		sw := c.sseWriter()
		c.w.Header().Set("Content-Length", "0")
		sw.writeHeader()
		return
	}
	c.setCommonHeaders()
	c.w.Header().Set("Content-Type", "application/json")
	c.w.Header().Set("Content-Length", "0")
	c.w.WriteHeader(http.StatusOK)
}

// stallAfterHeaders sends the 200 headers of the answer the request asked
// for and then nothing until the client goes away.
func (c *call) stallAfterHeaders() {
	if c.stream {
		c.sseWriter().writeHeader()
	} else {
		c.setCommonHeaders()
		c.w.Header().Set("Content-Type", "application/json")
		c.w.WriteHeader(http.StatusOK)
	}
	_ = http.NewResponseController(c.w).Flush()
	if c.s.hangHook != nil {
		c.s.hangHook()
	}
	<-c.r.Context().Done()
}

// streamErrorEvent is the protocol's error event for status, as a provider
// sends it into a stream it has begun (Behavior.StreamError); seq is its
// place in the stream, the Responses API's sequence_number.
func (c *call) streamErrorEvent(status, seq int) sseEvent {
	switch c.rt.endpoint {
	case epResponses:
		e := statusError(protoOpenAI, status, "")
		code := e.code
		if code == "" {
			code = e.typ
		}
		return jsonEvent("error", obj{"type": "error", "code": code, "message": e.message, "param": nil, "sequence_number": seq})
	case epMessages: // Anthropic's, and Claude's on Vertex
		e := statusError(protoAnthropic, status, "")
		if status == statusOverloaded {
			e.message = "Overloaded"
		}
		return jsonEvent("error", e.body(protoAnthropic))
	}
	p := c.errorProto(status)
	return jsonEvent("", statusError(p, status, "").body(p))
}

// statusOverloaded is Anthropic's 529, overloaded_error.
const statusOverloaded = 529
