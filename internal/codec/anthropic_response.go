package codec

import (
	"encoding/json"
	"errors"
	"net/http"
	"strings"

	"github.com/tidwall/gjson"
)

// DecodeResponse reads an Anthropic Messages answer. Text, tool_use,
// thinking and redacted_thinking blocks become parts; blocks of Anthropic's
// server tools (server_tool_use, web_search_tool_result, …) are dropped,
// since no other protocol can show them. Usage.Input adds the cache's
// tokens to input_tokens (see Usage).
func (anthropic) DecodeResponse(body []byte) (*Response, error) {
	if !gjson.ValidBytes(body) {
		return nil, errors.New("decoding anthropic answer: invalid JSON")
	}
	root := gjson.ParseBytes(body)
	resp := &Response{}
	var content gjson.Result
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "id":
			resp.ID = v.Str
		case "model":
			resp.Model = v.Str
		case "stop_reason":
			resp.StopReason = anthropicStop(v.Str)
		case "stop_sequence":
			resp.StopSequence = v.Str
		case "usage":
			resp.Usage = anthropicUsage(v)
		case "content":
			content = v
		}
		return true
	})
	if !content.IsArray() {
		return nil, errors.New("decoding anthropic answer: no content array")
	}
	content.ForEach(func(_, b gjson.Result) bool {
		if p, ok := anthropicAnswerPart(b); ok {
			resp.Parts = append(resp.Parts, p)
		}
		return true
	})
	return resp, nil
}

// anthropicAnswerPart reads one content block of an answer.
func anthropicAnswerPart(v gjson.Result) (Part, bool) {
	var b anthropicBlock
	b.read(v)
	switch b.typ.Str {
	case "text":
		return Part{Kind: PartText, Text: b.text.Str}, true
	case "tool_use":
		p := Part{Kind: PartToolCall, ID: b.id.Str, Name: b.name.Str, Arguments: json.RawMessage("{}")}
		if b.input.IsObject() {
			p.Arguments = json.RawMessage(b.input.Raw)
		}
		return p, true
	case "thinking":
		return Part{Kind: PartThinking, Text: b.thinking.Str, Signature: b.signature.Str}, true
	case "redacted_thinking":
		return Part{Kind: PartRedactedThinking, Data: b.data.Str}, true
	}
	return Part{}, false
}

// anthropicUsage reads a usage object: Input is input_tokens plus the
// cache's reads and writes.
func anthropicUsage(u gjson.Result) Usage {
	return excludedCacheUsage{"input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens", "output_tokens"}.read(u)
}

// excludedCacheUsage names the fields of a usage object whose input count
// leaves the prompt cache's tokens out (Anthropic, Bedrock): read adds
// them back, so that Usage.Input counts every prompt token (canon.go).
type excludedCacheUsage struct{ input, cacheRead, cacheWrite, output string }

func (n excludedCacheUsage) read(u gjson.Result) Usage {
	var us Usage
	u.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case n.input:
			us.Input += v.Int()
		case n.cacheRead:
			us.CacheRead = v.Int()
			us.Input += us.CacheRead
		case n.cacheWrite:
			us.CacheWrite = v.Int()
			us.Input += us.CacheWrite
		case n.output:
			us.Output = v.Int()
		}
		return true
	})
	return us
}

// anthropicStop maps stop_reason to the canonical StopReason; a reason not
// known is a natural end.
func anthropicStop(s string) StopReason {
	switch s {
	case "max_tokens", "model_context_window_exceeded":
		return StopMaxTokens
	case "stop_sequence":
		return StopSequence
	case "tool_use":
		return StopToolUse
	case "refusal":
		return StopRefusal
	case "pause_turn":
		return StopPause
	}
	return StopEnd
}

// anthropicStopName is the stop_reason of s; a content filter is a refusal.
func anthropicStopName(s StopReason) string {
	switch s {
	case StopMaxTokens:
		return "max_tokens"
	case StopSequence:
		return "stop_sequence"
	case StopToolUse:
		return "tool_use"
	case StopContentFilter, StopRefusal:
		return "refusal"
	case StopPause:
		return "pause_turn"
	}
	return "end_turn"
}

// anthropicMessageID is id with Anthropic's "msg_" prefix.
func anthropicMessageID(id string) string {
	if strings.HasPrefix(id, "msg_") {
		return id
	}
	return "msg_" + id
}

// EncodeResponse writes r as an Anthropic Messages answer. Images in an
// answer have no Anthropic block and are left out.
func (anthropic) EncodeResponse(r *Response) []byte {
	b := make([]byte, 0, 320+responseBytesHint(r))
	b = append(b, `{"id":`...)
	b = wireString(b, anthropicMessageID(r.ID))
	b = append(b, `,"type":"message","role":"assistant","model":`...)
	b = wireString(b, r.Model)
	b = append(b, `,"content":[`...)
	comma := false
	for i := range r.Parts {
		p := &r.Parts[i]
		if p.Kind == PartImage || p.Kind == PartToolResult {
			continue
		}
		if comma {
			b = append(b, ',')
		}
		comma = true
		b = appendAnthropicAnswerPart(b, p)
	}
	b = append(b, `],"stop_reason":`...)
	b = wireString(b, anthropicStopName(r.StopReason))
	b = append(b, `,"stop_sequence":`...)
	b = wireStringOrNull(b, r.StopSequence)
	b = append(b, `,"usage":`...)
	b = appendAnthropicUsage(b, r.Usage)
	return append(b, '}')
}

// appendAnthropicAnswerPart writes one block of an answer: unlike a
// request's, a thinking block is written even without a signature, and
// ids are kept as they are so that a tool result can name its call.
func appendAnthropicAnswerPart(b []byte, p *Part) []byte {
	switch p.Kind {
	case PartText:
		b = append(b, `{"type":"text","text":`...)
		b = wireString(b, p.Text)
	case PartToolCall:
		b = append(b, `{"type":"tool_use","id":`...)
		b = wireString(b, p.ID)
		b = append(b, `,"name":`...)
		b = wireString(b, p.Name)
		b = append(b, `,"input":`...)
		b = wireArgs(b, p.Arguments)
	case PartThinking:
		b = append(b, `{"type":"thinking","thinking":`...)
		b = wireString(b, p.Text)
		b = append(b, `,"signature":`...)
		b = wireString(b, p.Signature)
	case PartRedactedThinking:
		b = append(b, `{"type":"redacted_thinking","data":`...)
		b = wireString(b, p.Data)
	}
	return append(b, '}')
}

// appendAnthropicUsage writes a usage object: input_tokens without the
// cache's tokens (never negative), the cache's reads and writes, and
// output_tokens.
func appendAnthropicUsage(b []byte, u Usage) []byte {
	b = append(b, `{"input_tokens":`...)
	b = wireInt(b, max(u.Input-u.CacheRead-u.CacheWrite, 0))
	b = append(b, `,"cache_creation_input_tokens":`...)
	b = wireInt(b, u.CacheWrite)
	b = append(b, `,"cache_read_input_tokens":`...)
	b = wireInt(b, u.CacheRead)
	b = append(b, `,"output_tokens":`...)
	b = wireInt(b, u.Output)
	return append(b, '}')
}

// responseBytesHint guesses the encoded size of r's parts.
func responseBytesHint(r *Response) int {
	n := 0
	for i := range r.Parts {
		p := &r.Parts[i]
		n += len(p.Text) + len(p.Arguments) + len(p.Signature) + len(p.Data) + 64
	}
	return n
}

// DecodeError reads Anthropic's {"type":"error","error":{"type","message"}}.
// Type becomes OpenAI's error type (overloaded_error and api_error are
// server_error) and Code keeps Anthropic's; with no status (an error event
// in a stream) the status comes from the type (overloaded_error 529). A
// body of another shape becomes the message, cut to 512 bytes.
func (anthropic) DecodeError(status int, body []byte) Error {
	r := gjson.GetManyBytes(body, "error.type", "error.message")
	typ, msg := r[0].Str, r[1].Str
	if typ == "" && msg == "" {
		msg = untypedErrorMessage(body)
	}
	if status == 0 {
		status = anthropicErrorStatus(typ)
	}
	e := Error{Status: status, Code: typ, Message: msg}
	switch typ {
	case "invalid_request_error", "request_too_large":
		e.Type = "invalid_request_error"
	case "authentication_error", "permission_error", "not_found_error", "rate_limit_error":
		e.Type = typ
	case "billing_error":
		e.Type = "insufficient_quota"
	case "":
		e.Type = statusErrorType(status)
	default: // api_error, overloaded_error, timeout_error, …
		e.Type = "server_error"
	}
	return e
}

// anthropicErrorStatus is the HTTP status Anthropic answers an error type with.
func anthropicErrorStatus(typ string) int {
	switch typ {
	case "invalid_request_error":
		return http.StatusBadRequest
	case "authentication_error":
		return http.StatusUnauthorized
	case "billing_error":
		return http.StatusPaymentRequired
	case "permission_error":
		return http.StatusForbidden
	case "not_found_error":
		return http.StatusNotFound
	case "request_too_large":
		return http.StatusRequestEntityTooLarge
	case "rate_limit_error":
		return http.StatusTooManyRequests
	case "timeout_error":
		return http.StatusGatewayTimeout
	case "overloaded_error":
		return 529
	}
	return http.StatusInternalServerError
}

// statusErrorType is OpenAI's error type for an HTTP status, for error
// bodies that do not name one.
func statusErrorType(status int) string {
	switch {
	case status == http.StatusUnauthorized:
		return "authentication_error"
	case status == http.StatusForbidden:
		return "permission_error"
	case status == http.StatusNotFound:
		return "not_found_error"
	case status == http.StatusTooManyRequests:
		return "rate_limit_error"
	case status >= 400 && status < 500:
		return "invalid_request_error"
	}
	return "server_error"
}

// untypedErrorMessage is an error body of no known shape as a message: its text,
// cut to 512 bytes at a UTF-8 boundary.
func untypedErrorMessage(body []byte) string {
	const limit = 512
	s := strings.TrimSpace(string(body))
	if len(s) <= limit {
		return s
	}
	cut := limit
	for cut > 0 && s[cut]&0xC0 == 0x80 {
		cut--
	}
	return s[:cut]
}
