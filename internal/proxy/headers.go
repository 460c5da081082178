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

// upstreamOnlyHeaders describe the upstream account; they never reach the client.
var upstreamOnlyHeaders = []string{
	"Content-Length", "Set-Cookie", "Openai-Organization", "Openai-Project",
}

// forward says how a client header that may go upstream travels.
type forward uint8

const (
	// always: any upstream, translated or not.
	always forward = iota + 1
	// sameFamily: only when the request is not translated: the header
	// belongs to the client protocol's family and would mean nothing, or
	// something else, to an upstream of another.
	sameFamily
)

// toUpstream is the allowlist of the client headers an upstream receives,
// by canonical name (docs/protocols.md#headers-sent-upstream). Every other
// header stays at the gateway: the client's credentials, cookies, identity
// and billing headers (OpenAI-Organization, OpenAI-Project,
// x-goog-user-project: an upstream's organization and project are the
// operator's, `upstreams[].organization` and `.project`), the gateway's own
// X-Switchyard-*, session ids the gateway routes by, hop-by-hop headers,
// and SDK telemetry that describes the client's exchange with the gateway
// rather than the gateway's with the upstream (X-Stainless-Retry-Count,
// X-Stainless-Timeout, x-server-timeout: the gateway retries, fails over
// and times out on its own).
var toUpstream = map[string]forward{
	// Content negotiation and the caller's software.
	"Accept":       always,
	"Content-Type": always,
	"User-Agent":   always,
	// W3C trace context and baggage: the gateway's own traceparent replaces
	// the client's when tracing is on (docs/tracing.md).
	"Traceparent": always,
	"Tracestate":  always,
	"Baggage":     always,
	// The client's name for one operation: failover and hedging send that
	// same operation, each attempt to a different account.
	"Idempotency-Key": always,
	// Protocol features: Anthropic's API version and betas, OpenAI's betas
	// and support request id, the Google client library's telemetry.
	"Anthropic-Version":   sameFamily,
	"Anthropic-Beta":      sameFamily,
	"Openai-Beta":         sameFamily,
	"X-Client-Request-Id": sameFamily,
	"X-Goog-Api-Client":   sameFamily,
}

// forwarded reports how header k may go upstream (0: never), and its
// canonical name. Parsed headers are canonical already; a key set by code
// in lower case ("traceparent") is canonicalised first, which allocates
// only then. Any other spelling is not on the list: it stays behind.
func forwarded(k string) (string, forward) {
	if f, ok := toUpstream[k]; ok {
		return k, f
	}
	if k == "" || k[0] < 'a' || k[0] > 'z' {
		return k, 0
	}
	c := http.CanonicalHeaderKey(k)
	return c, toUpstream[c]
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

// notToClient are the canonical names a response copy skips: hopHeaders
// and upstreamOnlyHeaders.
var notToClient = headerSet(hopHeaders, upstreamOnlyHeaders)

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

// copyRequestHeaders copies the client's headers that may go upstream: those
// of the allowlist toUpstream. A translated request leaves the client
// protocol's own headers behind (anthropic-*, openai-*, x-goog-*). The
// upstream's credentials, organization and project are the adapter's to set
// (internal/provider).
func copyRequestHeaders(dst, src http.Header, translated bool) {
	for k, vs := range src {
		name, f := forwarded(k)
		if f == 0 || f == sameFamily && translated {
			continue
		}
		dst[name] = vs // shared, never appended to: Set and Del replace whole entries
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
