package codec

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/tidwall/gjson"
)

// DecodeResponse reads a Gemini generateContent answer: the first
// candidate's parts (consecutive text parts, and consecutive thought parts,
// joined into one part; a thoughtSignature kept on the part it rides;
// inline data and code execution parts dropped), its finishReason, and
// usageMetadata. A function call without an id gets "call_<n>", n counting
// the answer's calls from 1. An answer blocked for its prompt
// (promptFeedback.blockReason, no candidate) is a content filter stop with
// no parts.
func (gemini) DecodeResponse(body []byte) (*Response, error) {
	if !gjson.ValidBytes(body) {
		return nil, errors.New("decoding gemini answer: invalid JSON")
	}
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		return nil, errors.New("decoding gemini answer: not a JSON object")
	}
	var c geminiChunk
	c.read(root)
	if c.err.Exists() {
		return nil, fmt.Errorf("decoding gemini answer: it is an error: %s", c.err.Get("message").Str)
	}
	resp := &Response{ID: c.id.Str, Model: c.model.Str, Usage: geminiUsage(c.usage)}
	if !c.candidate {
		if c.feedback.Get("blockReason").Str != "" {
			resp.StopReason = StopContentFilter
		}
		return resp, nil
	}
	calls := 0
	c.parts.ForEach(func(_, pv gjson.Result) bool {
		p, ok := geminiAnswerPart(pv, &calls)
		if !ok {
			return true
		}
		if n := len(resp.Parts); n > 0 && (p.Kind == PartText || p.Kind == PartThinking) && resp.Parts[n-1].Kind == p.Kind {
			last := &resp.Parts[n-1]
			last.Text += p.Text
			if last.Signature == "" {
				last.Signature = p.Signature
			}
			return true
		}
		resp.Parts = append(resp.Parts, p)
		return true
	})
	resp.StopReason = geminiStop(c.finish.Str, calls > 0)
	return resp, nil
}

// geminiAnswerPart reads one part of an answer; *calls counts the
// function calls so far.
func geminiAnswerPart(v gjson.Result, calls *int) (Part, bool) {
	sig := v.Get("thoughtSignature").Str
	if fc := v.Get("functionCall"); fc.Exists() {
		*calls++
		p := Part{Kind: PartToolCall, ID: fc.Get("id").Str, Name: fc.Get("name").Str, Signature: sig, Arguments: json.RawMessage("{}")}
		if args := fc.Get("args"); args.IsObject() {
			p.Arguments = json.RawMessage(args.Raw)
		}
		if p.ID == "" {
			p.ID = fmt.Sprintf("call_%d", *calls)
		}
		return p, true
	}
	text := v.Get("text")
	if text.Type != gjson.String || text.Str == "" {
		return Part{}, false
	}
	if v.Get("thought").Bool() {
		return Part{Kind: PartThinking, Text: text.Str, Signature: sig}, true
	}
	return Part{Kind: PartText, Text: text.Str, Signature: sig}, true
}

// geminiUsage reads usageMetadata: promptTokenCount (which counts the
// cached tokens) is Input, candidatesTokenCount plus thoughtsTokenCount
// is Output.
func geminiUsage(u gjson.Result) Usage {
	var us Usage
	u.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "promptTokenCount":
			us.Input = v.Int()
		case "cachedContentTokenCount":
			us.CacheRead = v.Int()
		case "candidatesTokenCount":
			us.Output += v.Int()
		case "thoughtsTokenCount":
			us.Reasoning = v.Int()
			us.Output += us.Reasoning
		}
		return true
	})
	return us
}

// geminiStop maps finishReason; STOP after function calls is a tool use.
func geminiStop(reason string, calls bool) StopReason {
	switch reason {
	case "MAX_TOKENS":
		return StopMaxTokens
	case "SAFETY", "RECITATION", "BLOCKLIST", "PROHIBITED_CONTENT", "SPII", "IMAGE_SAFETY", "IMAGE_PROHIBITED_CONTENT":
		return StopContentFilter
	}
	if calls {
		return StopToolUse
	}
	return StopEnd
}

// geminiFinishName is the finishReason of s: a refusal is SAFETY, and every
// other end STOP.
func geminiFinishName(s StopReason) string {
	switch s {
	case StopMaxTokens:
		return "MAX_TOKENS"
	case StopContentFilter, StopRefusal:
		return "SAFETY"
	}
	return "STOP"
}

// EncodeResponse writes r as a Gemini generateContent answer with one
// candidate. A thinking signature that is not base64 (Gemini's
// thoughtSignature is bytes) is left out.
func (gemini) EncodeResponse(r *Response) []byte {
	b := make([]byte, 0, 320+responseBytesHint(r))
	b = append(b, `{"candidates":[{"content":{"role":"model","parts":[`...)
	comma := false
	for i := range r.Parts {
		p := r.Parts[i]
		switch p.Kind {
		case PartText, PartThinking, PartToolCall:
		default:
			continue
		}
		if !looksBase64(p.Signature) {
			p.Signature = ""
		}
		if comma {
			b = append(b, ',')
		}
		comma = true
		b = appendGeminiPart(b, &p)
	}
	b = append(b, `]},"finishReason":"`...)
	b = append(b, geminiFinishName(r.StopReason)...)
	b = append(b, `","index":0}],"usageMetadata":`...)
	b = appendGeminiUsage(b, r.Usage)
	return appendGeminiIdentity(b, r.ID, r.Model)
}

// appendGeminiUsage writes usageMetadata.
func appendGeminiUsage(b []byte, u Usage) []byte {
	b = append(b, `{"promptTokenCount":`...)
	b = wireInt(b, u.Input)
	b = append(b, `,"candidatesTokenCount":`...)
	b = wireInt(b, max(u.Output-u.Reasoning, 0))
	b = append(b, `,"totalTokenCount":`...)
	b = wireInt(b, u.Input+u.Output)
	if u.CacheRead > 0 {
		b = append(b, `,"cachedContentTokenCount":`...)
		b = wireInt(b, u.CacheRead)
	}
	if u.Reasoning > 0 {
		b = append(b, `,"thoughtsTokenCount":`...)
		b = wireInt(b, u.Reasoning)
	}
	return append(b, '}')
}

// appendGeminiIdentity writes modelVersion and responseId and closes the
// answer.
func appendGeminiIdentity(b []byte, id, model string) []byte {
	if model != "" {
		b = append(b, `,"modelVersion":`...)
		b = wireString(b, model)
	}
	if id != "" {
		b = append(b, `,"responseId":`...)
		b = wireString(b, id)
	}
	return append(b, '}')
}

// looksBase64 reports whether s is standard or URL-safe base64 (empty is).
func looksBase64(s string) bool {
	if len(s)%4 != 0 {
		return false
	}
	s = strings.TrimSuffix(strings.TrimSuffix(s, "="), "=")
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := c >= 'A' && c <= 'Z' || c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '+' || c == '/' || c == '-' || c == '_'
		if !ok {
			return false
		}
	}
	return true
}

// DecodeError reads Google's {"error":{"code","message","status"}} (or
// the one-element array streamGenerateContent answers without alt=sse).
// Type is OpenAI's error type for the status string, Code the status
// string itself; with no HTTP status (an error event in a stream) the
// status is error.code. A body of another shape becomes the message.
func (gemini) DecodeError(status int, body []byte) Error {
	prefix := "error."
	if t := gjson.GetBytes(body, "0.error"); t.Exists() {
		prefix = "0.error."
	}
	r := gjson.GetManyBytes(body, prefix+"code", prefix+"message", prefix+"status")
	code, msg, st := r[0].Int(), r[1].Str, r[2].Str
	if !r[0].Exists() && msg == "" && st == "" {
		msg = untypedErrorMessage(body)
	}
	if status == 0 {
		status = int(code)
	}
	if status == 0 {
		status = googleStatusCode(st)
	}
	if st == "" {
		st = GoogleStatus(status)
	}
	e := Error{Status: status, Code: st, Message: msg}
	switch st {
	case "INVALID_ARGUMENT", "FAILED_PRECONDITION", "OUT_OF_RANGE":
		e.Type = "invalid_request_error"
	case "RESOURCE_EXHAUSTED":
		e.Type = "rate_limit_error"
	case "UNAUTHENTICATED":
		e.Type = "authentication_error"
	case "PERMISSION_DENIED":
		e.Type = "permission_error"
	case "NOT_FOUND":
		e.Type = "not_found_error"
	default:
		e.Type = "server_error"
	}
	return e
}

// googleStatusCode is the HTTP status of a google.rpc.Code name.
func googleStatusCode(st string) int {
	switch st {
	case "INVALID_ARGUMENT", "FAILED_PRECONDITION", "OUT_OF_RANGE":
		return http.StatusBadRequest
	case "UNAUTHENTICATED":
		return http.StatusUnauthorized
	case "PERMISSION_DENIED":
		return http.StatusForbidden
	case "NOT_FOUND":
		return http.StatusNotFound
	case "ALREADY_EXISTS", "ABORTED":
		return http.StatusConflict
	case "RESOURCE_EXHAUSTED":
		return http.StatusTooManyRequests
	case "CANCELLED":
		return 499
	case "UNIMPLEMENTED":
		return http.StatusNotImplemented
	case "UNAVAILABLE":
		return http.StatusServiceUnavailable
	case "DEADLINE_EXCEEDED":
		return http.StatusGatewayTimeout
	}
	return http.StatusInternalServerError
}
