package proxy

import (
	"maps"
	"net/http"
	"slices"
	"testing"
)

// TestRequestHeaderAllowlist: each client header either reaches the
// upstream or stays at the gateway, for a request that passes through and
// for one translated to another family (docs/protocols.md#headers-sent-upstream).
func TestRequestHeaderAllowlist(t *testing.T) {
	const (
		dropped  = iota // never sent
		sent            // sent, translated or not
		passthru        // sent only when not translated
	)
	tests := []struct {
		name, value string
		want        int
	}{
		// The client's credentials and cookies.
		{"Authorization", "Bearer sk-client", dropped},
		{"X-Api-Key", "sk-client", dropped},
		{"Api-Key", "sk-client", dropped},
		{"X-Goog-Api-Key", "sk-client", dropped},
		{"Cookie", "session=1", dropped},
		{"Proxy-Authorization", "Basic eDp5", dropped},
		{"X-Amz-Security-Token", "token", dropped},
		// Identity and billing: the operator's to set (upstreams[].organization, .project).
		{"OpenAI-Organization", "org-evil", dropped},
		{"OpenAI-Project", "proj_evil", dropped},
		{"X-Goog-User-Project", "evil-project", dropped},
		{"Anthropic-Dangerous-Direct-Browser-Access", "true", dropped},
		// The gateway's own headers, and what it routes by.
		{"X-Switchyard-Provider", `{"only":["u"]}`, dropped},
		{"X-Switchyard-Debug", "1", dropped},
		{"Session_id", "s-1", dropped},
		{"X-Session-Id", "s-1", dropped},
		{"X-Ratelimit-Remaining-Requests", "1", dropped},
		{"X-Forwarded-For", "10.1.2.3", dropped},
		{"X-Request-Id", "client-id", dropped},
		// The client's exchange with the gateway: not the gateway's with the upstream.
		{"X-Stainless-Retry-Count", "2", dropped},
		{"X-Stainless-Timeout", "600", dropped},
		{"X-Stainless-Lang", "go", dropped},
		{"X-Stainless-Package-Version", "3.0.0", dropped},
		{"X-Server-Timeout", "30", dropped},
		// Hop-by-hop and framing.
		{"Connection", "keep-alive", dropped},
		{"Keep-Alive", "timeout=5", dropped},
		{"Te", "trailers", dropped},
		{"Upgrade", "h2c", dropped},
		{"Transfer-Encoding", "chunked", dropped},
		{"Content-Length", "42", dropped},
		{"Accept-Encoding", "gzip", dropped},
		{"X-Custom", "anything", dropped},
		// Any upstream.
		{"Accept", "text/event-stream", sent},
		{"Content-Type", "application/json", sent},
		{"User-Agent", "OpenAI/Go 3.0.0", sent},
		{"Traceparent", "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01", sent},
		{"Tracestate", "vendor=1", sent},
		{"Baggage", "team=research", sent},
		{"Idempotency-Key", "op-1", sent},
		// The client protocol's own features.
		{"Anthropic-Version", "2023-06-01", passthru},
		{"Anthropic-Beta", "prompt-caching-2024-07-31", passthru},
		{"OpenAI-Beta", "assistants=v2", passthru},
		{"X-Client-Request-Id", "support-1", passthru},
		{"X-Goog-Api-Client", "google-genai-sdk/1.0 gl-go/1.25", passthru},
	}
	for _, tc := range tests {
		for _, translated := range []bool{false, true} {
			mode := "passthrough"
			if translated {
				mode = "translated"
			}
			t.Run(tc.name+"/"+mode, func(t *testing.T) {
				want := tc.want == sent || tc.want == passthru && !translated
				src := http.Header{}
				src.Set(tc.name, tc.value)
				dst := http.Header{}
				copyRequestHeaders(dst, src, translated)
				got := dst.Get(tc.name)
				switch {
				case want && got != tc.value:
					t.Errorf("%s = %q upstream, want %q", tc.name, got, tc.value)
				case !want && len(dst) != 0:
					t.Errorf("%s reached the upstream: %v", tc.name, dst)
				}
			})
		}
	}
}

// TestRequestHeaderAllowlistEdges: a key set by code in lower case is
// matched and forwarded under its canonical name, every value of a
// repeated header goes, and a header the client's Connection names is
// hop-by-hop even when allowed.
func TestRequestHeaderAllowlistEdges(t *testing.T) {
	src := http.Header{
		"anthropic-beta":      {"a-1", "b-2"},
		"openai-organization": {"org-evil"},
		"Idempotency-Key":     {"op-1"},
		"Baggage":             {"team=x"},
		"Connection":          {"Baggage, keep-alive"},
	}
	dst := http.Header{}
	copyRequestHeaders(dst, src, false)
	want := http.Header{"Anthropic-Beta": {"a-1", "b-2"}, "Idempotency-Key": {"op-1"}}
	if len(dst) != len(want) {
		t.Fatalf("upstream headers %v, want %v", dst, want)
	}
	for k, vs := range want {
		if !slices.Equal(dst[k], vs) {
			t.Errorf("%s = %q, want %q", k, dst[k], vs)
		}
	}
}

// sdkHeaders is what the official OpenAI Go SDK sends with a chat
// completion (internal/requestconfig: platform, retry and timeout
// headers), with an organization and a project from the environment.
func sdkHeaders() http.Header {
	return http.Header{
		"Accept":                      {"application/json"},
		"Authorization":               {"Bearer sk-client"},
		"Content-Type":                {"application/json"},
		"Openai-Organization":         {"org-evil"},
		"Openai-Project":              {"proj_evil"},
		"User-Agent":                  {"OpenAI/Go 3.99.0"},
		"X-Stainless-Arch":            {"x64"},
		"X-Stainless-Lang":            {"go"},
		"X-Stainless-Os":              {"Linux"},
		"X-Stainless-Package-Version": {"3.99.0"},
		"X-Stainless-Retry-Count":     {"0"},
		"X-Stainless-Runtime":         {"go"},
		"X-Stainless-Runtime-Version": {"go1.25.0"},
		"Traceparent":                 {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"},
	}
}

// TestCopyRequestHeadersAllocatesNothing: the copy is on every attempt's
// path; it shares the client's value slices and allocates nothing but the
// destination map the caller sized.
func TestCopyRequestHeadersAllocatesNothing(t *testing.T) {
	src := sdkHeaders()
	dst := make(http.Header, len(src)+2)
	copyRequestHeaders(dst, src, false)
	if want := []string{"Accept", "Content-Type", "Traceparent", "User-Agent"}; !slices.Equal(slices.Sorted(maps.Keys(dst)), want) {
		t.Fatalf("upstream headers %v, want only %v", dst, want)
	}
	if n := testing.AllocsPerRun(100, func() {
		clear(dst)
		copyRequestHeaders(dst, src, false)
	}); n != 0 {
		t.Errorf("copyRequestHeaders allocated %v times per call, want 0", n)
	}
}

// BenchmarkCopyRequestHeaders copies the headers of an official SDK's
// request, passed through and translated.
func BenchmarkCopyRequestHeaders(b *testing.B) {
	src := sdkHeaders()
	for _, translated := range []bool{false, true} {
		name := "passthrough"
		if translated {
			name = "translated"
		}
		b.Run(name, func(b *testing.B) {
			dst := make(http.Header, len(src)+2)
			b.ReportAllocs()
			for b.Loop() {
				clear(dst)
				copyRequestHeaders(dst, src, translated)
			}
		})
	}
}
