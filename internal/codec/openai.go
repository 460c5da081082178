package codec

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/tidwall/gjson"
)

// The OpenAI protocols. Chat, Completions and Embeddings report usage as
// prompt/completion tokens and end a stream with [DONE]; Responses reports
// input/output tokens and ends with response.completed (or .incomplete,
// .failed, error).
var (
	OpenAIChat        Codec = openAIChat{openAI{name: "openai-chat", op: "chat/completions"}}
	OpenAICompletions Codec = openAI{name: "openai-completions", op: "completions"}
	OpenAIEmbeddings  Codec = openAI{name: "openai-embeddings", op: "embeddings"}
	OpenAIResponses   Codec = openAIResponses{}
)

var (
	_ Codec = openAI{}
	_ Codec = openAIChat{}
	_ Codec = openAIResponses{}
)

// openAIChat is Chat Completions: the OpenAI protocol that translated
// requests take (see openai_chat.go).
type openAIChat struct{ openAI }

// openAI is a protocol of the OpenAI family with chat-style usage.
type openAI struct{ name, op string }

func (c openAI) Name() string                  { return c.name }
func (c openAI) Family() Family                { return FamilyOpenAI }
func (c openAI) Op(bool) string                { return c.op }
func (c openAI) ErrorBody(e Error) []byte      { return openAIErrorBody(e) }
func (c openAI) StreamError(msg string) []byte { return openAIStreamError(msg) }

func (c openAI) Encode(body []byte, model string, f Family) ([]byte, error) {
	return passthrough(FamilyOpenAI, body, model, f)
}

// Usage reads prompt_tokens (the cached ones among them,
// prompt_tokens_details.cached_tokens) and completion_tokens.
func (c openAI) Usage(body []byte) Usage { return chatUsage(peekJSON(body, "usage")) }

// Observe reads the final chunk's usage (stream_options.include_usage) and
// [DONE], and counts the chunks that carry a piece of the answer.
func (c openAI) Observe(s *StreamState, ev *Event) {
	if bytes.Equal(bytes.TrimSpace(ev.Data), []byte("[DONE]")) {
		s.Finished = true
		return
	}
	if openAIDelta(ev.Data) {
		s.Deltas++
	}
	if bytes.Contains(ev.Data, []byte(`"usage"`)) {
		if u := peekJSON(ev.Data, "usage"); u.Exists() {
			if u.IsObject() {
				us := chatUsage(u)
				s.SetInput(&us)
				s.Out = us.Output
			}
		}
	}
}

// openAIDelta reports whether a Chat Completions or Completions chunk
// carries a piece of the answer: content, reasoning, a refusal, a tool
// call's arguments, or a completion's text.
func openAIDelta(data []byte) bool {
	if !bytes.Contains(data, []byte(`"choices"`)) {
		return false
	}
	// One pass over the first choice and one over its delta: every
	// streamed event comes here (docs/benchmarks.md#long-streams).
	found := false
	peekJSON(data, "choices.0").ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "text":
			found = nonEmptyString(v)
		case "delta":
			v.ForEach(func(k, v gjson.Result) bool {
				switch k.Str {
				case "content", "reasoning_content", "refusal":
					found = nonEmptyString(v)
				case "tool_calls":
					found = nonEmptyString(v.Get("0.function.arguments"))
				}
				return !found
			})
		}
		return !found
	})
	return found
}

// openAIResponses is the OpenAI Responses API.
type openAIResponses struct{}

func (openAIResponses) Name() string                  { return "openai-responses" }
func (openAIResponses) Family() Family                { return FamilyOpenAI }
func (openAIResponses) Op(bool) string                { return "responses" }
func (openAIResponses) ErrorBody(e Error) []byte      { return openAIErrorBody(e) }
func (openAIResponses) StreamError(msg string) []byte { return openAIStreamError(msg) }

func (openAIResponses) Encode(body []byte, model string, f Family) ([]byte, error) {
	return passthrough(FamilyOpenAI, body, model, f)
}

// Usage reads input_tokens (the cached ones among them,
// input_tokens_details.cached_tokens) and output_tokens.
func (openAIResponses) Usage(body []byte) Usage {
	return responsesUsage(gjson.GetBytes(body, "usage"))
}

// Observe reads the usage of the terminal response.* event and counts the
// response.*.delta events (text, reasoning, a tool call's arguments).
func (openAIResponses) Observe(s *StreamState, ev *Event) {
	typ := string(ev.Name)
	if typ == "" {
		typ = peekJSON(ev.Data, "type").Str
	}
	if strings.HasSuffix(typ, ".delta") {
		s.Deltas++
		return
	}
	switch typ {
	case "response.completed", "response.incomplete", "response.failed", "error":
		s.Finished = true
		if u := peekJSON(ev.Data, "response.usage"); u.IsObject() {
			us := responsesUsage(u)
			s.SetInput(&us)
			s.Out = us.Output
		}
	}
}

// openAIErrorBody renders {"error":{"message","type","code","param"}}.
func openAIErrorBody(e Error) []byte {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": e.Message, "type": e.Type, "code": e.Code, "param": nil}})
	return b
}

// openAIStreamError is `data: {"error":{…,"code":"stream_interrupted"}}`, with no [DONE] after it.
func openAIStreamError(msg string) []byte {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "upstream_error", "code": "stream_interrupted"}})
	return append(append([]byte("data: "), b...), "\n\n"...)
}
