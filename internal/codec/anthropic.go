package codec

import (
	"bytes"
	"encoding/json"

	"github.com/tidwall/gjson"
)

// Anthropic is the Anthropic Messages API: message_start carries the input
// tokens, message_delta the output count, message_stop ends a stream. It is
// a Translator too (anthropic_translate.go, anthropic_stream.go).
var Anthropic Codec = anthropic{}

var _ Codec = anthropic{}

type anthropic struct{}

func (anthropic) Name() string   { return "anthropic" }
func (anthropic) Family() Family { return FamilyAnthropic }
func (anthropic) Op(bool) string { return "messages" }

func (anthropic) Encode(body []byte, model string, f Family) ([]byte, error) {
	return passthrough(FamilyAnthropic, body, model, f)
}

// Usage reads the tokens of a whole answer. Input is
// canonical (Usage.Input): input_tokens plus the tokens read from and
// written to the prompt cache, which Anthropic's input_tokens leaves out,
// so that a passthrough answer is counted as a translated one is.
func (anthropic) Usage(body []byte) Usage { return anthropicUsage(gjson.GetBytes(body, "usage")) }

// Observe reads usage as Usage does: message_start carries the input (and
// the cache's) tokens, message_delta the output count and, from newer
// APIs, the input again; each content_block_delta but a thinking block's
// signature is a delta.
func (anthropic) Observe(s *StreamState, ev *Event) {
	switch string(ev.Name) {
	case "content_block_delta":
		if !bytes.Contains(ev.Data, []byte(`"signature_delta"`)) {
			s.Deltas++
		}
	case "message_start":
		u := anthropicUsage(peekJSON(ev.Data, "message.usage"))
		s.SetInput(&u)
		s.Out = u.Output
	case "message_delta":
		r := peekJSON(ev.Data, "usage")
		u := anthropicUsage(r)
		if u.Input > 0 {
			s.SetInput(&u)
		}
		if r.Get("output_tokens").Exists() {
			s.Out = u.Output
		}
	case "message_stop", "error":
		s.Finished = true
	}
}

// ErrorBody renders {"type":"error","error":{"type","message"}}.
func (anthropic) ErrorBody(e Error) []byte {
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": AnthropicErrorType(e.Status), "message": e.Message}})
	return b
}

// StreamError is `event: error` with an api_error.
func (anthropic) StreamError(msg string) []byte {
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": "api_error", "message": msg}})
	return append(append([]byte("event: error\ndata: "), b...), "\n\n"...)
}

// AnthropicErrorType maps an HTTP status to Anthropic's error type.
func AnthropicErrorType(status int) string {
	switch status {
	case 400, 405, 408:
		return "invalid_request_error"
	case 413:
		return "request_too_large"
	case 401:
		return "authentication_error"
	case 403:
		return "permission_error"
	case 404:
		return "not_found_error"
	case 429:
		return "rate_limit_error"
	case 503, 529:
		return "overloaded_error"
	}
	return "api_error"
}
