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
	"Authorization", "X-Api-Key", "Api-Key", "X-Goog-Api-Key", "Cookie", "Host", "Content-Length", "Accept-Encoding",
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

// isProtocolHeader reports headers that belong to one family's protocol.
func isProtocolHeader(name string) bool {
	return hasPrefixFold(name, "anthropic-") || hasPrefixFold(name, "openai-") || hasPrefixFold(name, "x-goog-")
}

// hasPrefixFold is strings.HasPrefix ignoring ASCII case, without allocating.
func hasPrefixFold(s, prefix string) bool {
	return len(s) >= len(prefix) && strings.EqualFold(s[:len(prefix)], prefix)
}

// notToUpstream and notToClient are the canonical names a copy skips:
// hopHeaders and clientOnlyHeaders, and hopHeaders and upstreamOnlyHeaders.
var (
	notToUpstream = headerSet(hopHeaders, clientOnlyHeaders)
	notToClient   = headerSet(hopHeaders, upstreamOnlyHeaders)
)

func headerSet(lists ...[]string) map[string]bool {
	m := map[string]bool{}
	for _, l := range lists {
		for _, h := range l {
			m[http.CanonicalHeaderKey(h)] = true
		}
	}
	return m
}

// skipped reports whether header k is in set. Parsed headers are
// canonical already; a key that is not (set by code, or with characters
// canonicalisation leaves alone) is canonicalised first.
func skipped(set map[string]bool, k string) bool {
	if set[k] {
		return true
	}
	return k != "" && k[0] >= 'a' && k[0] <= 'z' && set[http.CanonicalHeaderKey(k)]
}

// copyRequestHeaders copies the client's headers that may go upstream. A
// translated request leaves the client protocol's own headers behind
// (anthropic-*, openai-*, x-goog-*): they would mean nothing, or something
// else, to an upstream of another family.
func copyRequestHeaders(dst, src http.Header, translated bool) {
	for k, vs := range src {
		if skipped(notToUpstream, k) || isUpstreamAccountHeader(k) || translated && isProtocolHeader(k) {
			continue
		}
		dst[k] = vs // shared, never appended to: Set and Del replace whole entries
	}
	removeConnectionTokens(dst, src)
}

// copyResponseHeaders copies the upstream's headers that may reach the client.
func copyResponseHeaders(dst, src http.Header) {
	for k, vs := range src {
		if skipped(notToClient, k) || isUpstreamAccountHeader(k) {
			continue
		}
		if k == "X-Request-Id" {
			dst["X-Upstream-Request-Id"] = vs
			continue
		}
		dst[k] = vs
	}
	removeConnectionTokens(dst, src)
}

// removeConnectionTokens drops headers named in src's Connection header.
func removeConnectionTokens(dst, src http.Header) {
	for _, v := range src["Connection"] {
		for _, tok := range strings.Split(v, ",") {
			if tok = strings.TrimSpace(tok); tok != "" {
				dst.Del(tok)
			}
		}
	}
}
