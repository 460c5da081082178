package proxy

import (
	"net/http"
	"strings"

	"switchyard/internal/codec"
)

// endpoints are the proxied client operations of DESIGN.md §3, by path,
// each with the codec of its wire protocol.
var endpoints = map[string]codec.Codec{
	"/v1/chat/completions": codec.OpenAIChat,
	"/v1/completions":      codec.OpenAICompletions,
	"/v1/embeddings":       codec.OpenAIEmbeddings,
	"/v1/responses":        codec.OpenAIResponses,
	"/v1/messages":         codec.Anthropic,
}

// clientCodec guesses the caller's protocol for endpoints shared by every
// protocol (GET /v1/models, unknown paths): Anthropic's when the request
// carries anthropic-version or asks below /v1/messages, else OpenAI's.
func clientCodec(r *http.Request) codec.Codec {
	if r.Header.Get("Anthropic-Version") != "" || strings.HasPrefix(r.URL.Path, "/v1/messages") {
		return codec.Anthropic
	}
	return codec.OpenAIChat
}
