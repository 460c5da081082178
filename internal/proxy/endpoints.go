package proxy

import (
	"net/http"
	"strings"

	"switchyard/internal/codec"
)

// endpoints are the proxied client operations of docs/reference.md#client-api whose path is
// fixed, each with the codec of its wire protocol.
var endpoints = map[string]codec.Codec{
	"/v1/chat/completions":      codec.OpenAIChat,
	"/v1/completions":           codec.OpenAICompletions,
	"/v1/embeddings":            codec.OpenAIEmbeddings,
	"/v1/responses":             codec.OpenAIResponses,
	"/v1/messages":              codec.Anthropic,
	"/v1/messages/count_tokens": codec.AnthropicCountTokens,
}

// call is what a proxied request's path says: its protocol, and for a
// protocol that names the model and streaming in the URL (Gemini), those.
type call struct {
	codec codec.Codec
	// model is the model named by the path, "" when the body names it.
	model string
	// stream is set when the path asks for a stream.
	stream bool
}

// geminiCall parses Gemini's /v1beta/models/{model}:{method} (also under
// /v1) for a method the gateway serves: generateContent,
// streamGenerateContent or countTokens (codec.GeminiMethod).
func geminiCall(path string) (call, bool) {
	rest, ok := strings.CutPrefix(path, "/v1beta/models/")
	if !ok {
		if rest, ok = strings.CutPrefix(path, "/v1/models/"); !ok {
			return call{}, false
		}
	}
	model, method, ok := strings.Cut(rest, ":")
	if !ok || model == "" {
		return call{}, false
	}
	c, stream, ok := codec.GeminiMethod(method)
	if !ok {
		return call{}, false
	}
	return call{codec: c, model: model, stream: stream}, true
}

// clientCodec guesses the caller's protocol for endpoints shared by every
// protocol (GET /v1/models, unknown paths): Anthropic's when the request
// carries anthropic-version or asks below /v1/messages, Gemini's below
// /v1beta or with x-goog-api-key, else OpenAI's.
func clientCodec(r *http.Request) codec.Codec {
	switch {
	case r.Header.Get("Anthropic-Version") != "" || strings.HasPrefix(r.URL.Path, "/v1/messages"):
		return codec.Anthropic
	case r.Header.Get("X-Goog-Api-Key") != "" || strings.HasPrefix(r.URL.Path, "/v1beta/"):
		return codec.Gemini
	}
	return codec.OpenAIChat
}
