package codec

import (
	"strconv"

	"github.com/tidwall/gjson"
)

// TokenCounter is a protocol's token-count operation: it passes through to
// upstreams of its family only (it embeds the Codec, not the Translator) and
// costs no tokens. When only upstreams of other families serve the model,
// none can count in the family's tokenizer and the gateway answers with
// Estimate (docs/protocols.md#how-a-request-is-routed-across-families).
type TokenCounter interface {
	Codec
	// Estimate estimates the input tokens of a count request: its text
	// (system prompt, messages, tool definitions) at four bytes a token,
	// plus 4 a message and 16 a tool for the framing; at least 1.
	Estimate(body []byte) int64
	// CountBody renders n input tokens as the operation's answer.
	CountBody(n int64) []byte
}

// Token-count operations.
var (
	// AnthropicCountTokens is Anthropic's POST /v1/messages/count_tokens:
	// the Messages protocol's request, answered with {"input_tokens": n}.
	AnthropicCountTokens Codec = countTokens{Codec: Anthropic, op: "messages/count_tokens", answer: "input_tokens",
		system: "system", messages: "messages", tools: "tools"}
	// GeminiCountTokens is Gemini's POST /v1beta/models/{model}:countTokens:
	// contents (or a whole generateContentRequest), answered with
	// {"totalTokens": n}.
	GeminiCountTokens Codec = countTokens{Codec: Gemini, op: "countTokens", answer: "totalTokens",
		wrapper: "generateContentRequest", system: "systemInstruction", messages: "contents",
		tools: "tools.#.functionDeclarations|@flatten"}
)

var _ TokenCounter = countTokens{}

// countTokens is a token-count operation of a protocol: where its request
// keeps the text Estimate counts, and how its answer names the count.
type countTokens struct {
	Codec
	op     string // the operation's path (Codec.Op)
	answer string // the answer's one member
	// wrapper is the member that may hold the whole request ("" for none);
	// system, messages and tools are gjson paths into the request.
	wrapper, system, messages, tools string
}

func (c countTokens) Op(bool) string   { return c.op }
func (countTokens) Usage([]byte) Usage { return Usage{} }

func (c countTokens) Estimate(body []byte) int64 {
	req := gjson.ParseBytes(body)
	if w := req.Get(c.wrapper); c.wrapper != "" && w.IsObject() {
		req = w
	}
	var bytes int64
	var walk func(v gjson.Result)
	walk = func(v gjson.Result) {
		switch {
		case v.Type == gjson.String:
			bytes += int64(len(v.Str))
		case v.IsObject() || v.IsArray():
			v.ForEach(func(_, c gjson.Result) bool { walk(c); return true })
		}
	}
	system, messages, tools := req.Get(c.system), req.Get(c.messages), req.Get(c.tools)
	walk(system)
	walk(messages)
	walk(tools)
	n := (bytes+3)/4 + 4*int64(len(messages.Array())) + 16*int64(len(tools.Array()))
	return max(n, 1)
}

func (c countTokens) CountBody(n int64) []byte {
	return []byte(`{"` + c.answer + `":` + strconv.FormatInt(n, 10) + `}`)
}
