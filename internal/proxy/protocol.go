package proxy

import (
	"net/http"
	"net/url"
	"strings"

	"switchyard/internal/config"
)

// Protocol is the API dialect of a client endpoint or an upstream.
type Protocol int

// Protocols. Requests are passed through to upstreams of the same protocol.
const (
	// OpenAI is the OpenAI REST API (also openai-compatible and azure-openai upstreams).
	OpenAI Protocol = iota
	// Anthropic is the Anthropic Messages API.
	Anthropic
)

func (p Protocol) String() string {
	if p == Anthropic {
		return "anthropic"
	}
	return "openai"
}

// protocolOf returns the protocol an upstream provider speaks.
func protocolOf(provider string) Protocol {
	if provider == config.ProviderAnthropic {
		return Anthropic
	}
	return OpenAI
}

// endpoint is one client API operation.
type endpoint struct {
	protocol Protocol
	op       string // path after the version prefix: "chat/completions", "messages", …
	// usageStream says how to find usage in this endpoint's SSE stream.
	usage usageFormat
}

// endpoints are the proxied client operations of DESIGN.md §3, by path.
var endpoints = map[string]endpoint{
	"/v1/chat/completions": {protocol: OpenAI, op: "chat/completions", usage: usageOpenAI},
	"/v1/completions":      {protocol: OpenAI, op: "completions", usage: usageOpenAI},
	"/v1/embeddings":       {protocol: OpenAI, op: "embeddings", usage: usageOpenAI},
	"/v1/responses":        {protocol: OpenAI, op: "responses", usage: usageResponses},
	"/v1/messages":         {protocol: Anthropic, op: "messages", usage: usageAnthropic},
}

// upstreamURL builds the URL of op on upstream u for the (mapped) model.
//
// openai, openai-compatible and anthropic append op to base_url, which
// includes the version path. azure-openai addresses a deployment:
// {base_url}/openai/deployments/{model}/{op}?api-version=V.
func upstreamURL(u *upstream, op, model string) string {
	if u.cfg.Provider != config.ProviderAzureOpenAI {
		return u.base + "/" + op
	}
	q := url.Values{"api-version": {u.apiVersion}}
	if op == "responses" || op == "models" {
		return u.base + "/openai/" + op + "?" + q.Encode()
	}
	return u.base + "/openai/deployments/" + url.PathEscape(model) + "/" + op + "?" + q.Encode()
}

// Default API versions, used when an upstream sets no api_version.
const (
	defaultAzureAPIVersion     = "2024-10-21"
	defaultAnthropicAPIVersion = "2023-06-01"
)

// hopHeaders are never forwarded in either direction (RFC 9110 §7.6.1).
var hopHeaders = []string{
	"Connection", "Proxy-Connection", "Keep-Alive", "Proxy-Authenticate", "Proxy-Authorization",
	"Te", "Trailer", "Transfer-Encoding", "Upgrade",
}

// clientOnlyHeaders carry the client's credentials or describe the client
// connection; they never reach an upstream.
var clientOnlyHeaders = []string{
	"Authorization", "X-Api-Key", "Api-Key", "Cookie", "Host", "Content-Length", "Accept-Encoding",
}

// upstreamOnlyHeaders describe the upstream account; they never reach the client.
var upstreamOnlyHeaders = []string{
	"Content-Length", "Set-Cookie", "Openai-Organization", "Openai-Project",
}

// isUpstreamAccountHeader reports rate-limit headers of the upstream account,
// which say nothing true about the pool the client is using.
func isUpstreamAccountHeader(name string) bool {
	return hasPrefixFold(name, "x-ratelimit-") || hasPrefixFold(name, "anthropic-ratelimit-") ||
		hasPrefixFold(name, "x-switchyard-")
}

// hasPrefixFold is strings.HasPrefix ignoring ASCII case, without allocating.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// copyRequestHeaders copies the client's headers that may go upstream.
func copyRequestHeaders(dst, src http.Header) {
	for k, vs := range src {
		if isUpstreamAccountHeader(k) {
			continue
		}
		dst[k] = vs // shared, never appended to: Set and Del replace whole entries
	}
	for _, h := range hopHeaders {
		dst.Del(h)
	}
	for _, h := range clientOnlyHeaders {
		dst.Del(h)
	}
	removeConnectionTokens(dst, src)
}

// copyResponseHeaders copies the upstream's headers that may reach the client.
func copyResponseHeaders(dst, src http.Header) {
	for k, vs := range src {
		if isUpstreamAccountHeader(k) {
			continue
		}
		if k == "X-Request-Id" {
			dst["X-Upstream-Request-Id"] = vs
			continue
		}
		dst[k] = vs
	}
	for _, h := range hopHeaders {
		dst.Del(h)
	}
	for _, h := range upstreamOnlyHeaders {
		dst.Del(h)
	}
	removeConnectionTokens(dst, src)
}

// removeConnectionTokens drops headers named in src's Connection header.
func removeConnectionTokens(dst, src http.Header) {
	for _, v := range src.Values("Connection") {
		for _, tok := range strings.Split(v, ",") {
			if tok = strings.TrimSpace(tok); tok != "" {
				dst.Del(tok)
			}
		}
	}
}
