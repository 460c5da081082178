package proxy

import (
	"net/http"
	"strings"
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
