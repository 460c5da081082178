package gateway_test

import (
	"context"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
	"google.golang.org/genai"

	"switchyard/internal/config"
	"switchyard/internal/mock"
	"switchyard/internal/provider"
)

// TestGeminiCountTokens: Gemini's countTokens, through the Gemini SDK, is
// forwarded to the Gemini-family upstream of the model (the gemini
// provider, or Vertex's publishers/google) and answered with its count; for a
// model only OpenAI upstreams serve the gateway estimates and says so with
// X-Switchyard-Estimated: true (docs/protocols.md#how-a-request-is-routed-across-families).
func TestGeminiCountTokens(t *testing.T) {
	const (
		geminiModel = "gemini-2.0-flash"
		prompt      = "How many tokens are in this?"
	)
	gm, gURL := startMock(t, "gemini", mock.Behavior{})
	vm, vURL := startVertexMock(t, "vertex", mock.Options{})
	om, oURL := startMock(t, "openai", mock.Behavior{})
	e := startVertexGateway(t, spec{upstreams: []config.Upstream{
		upstreamAt("gemini", provider.NameGemini, gURL, 0, geminiModel),
		vertexUpstream("vertex", vURL, 0),
		upstreamAt("openai", config.ProviderOpenAI, oURL, 0, "gpt-4o"),
	}})
	c := e.geminiClient(t, testKey)
	tests := []struct {
		name, model string
		upstream    *mock.Server // nil: estimated
		path        string       // the upstream path's suffix
	}{
		{"forwarded to the gemini provider", geminiModel, gm, "/models/" + geminiModel + ":countTokens"},
		{"forwarded to Vertex", vertexGemini, vm, "/publishers/google/models/" + vertexGemini + ":countTokens"},
		{"estimated for a model only OpenAI serves", "gpt-4o", nil, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			r, err := c.Models.CountTokens(context.Background(), tc.model, genai.Text(prompt), nil)
			if err != nil {
				t.Fatalf("countTokens: %v", err)
			}
			h := r.SDKHTTPResponse.Headers
			if tc.upstream == nil {
				// The text (the prompt and its role, "user") at four bytes a
				// token, plus 4 for the one message.
				want := (int32(len(prompt)+len("user"))+3)/4 + 4
				if r.TotalTokens != want || h.Get("X-Switchyard-Estimated") != "true" || h.Get("X-Switchyard-Upstream") != "" {
					t.Errorf("%d tokens, headers %v; want the estimate %d marked X-Switchyard-Estimated: true", r.TotalTokens, h, want)
				}
				if n := om.Stats().Requests; n != 0 {
					t.Errorf("the OpenAI upstream was sent %d requests", n)
				}
				return
			}
			st := tc.upstream.Stats()
			if want := int32(max(len(st.LastBody)/4, 1)); r.TotalTokens != want || h.Get("X-Switchyard-Estimated") != "" {
				t.Errorf("%d tokens, headers %v; want the upstream's %d, not estimated", r.TotalTokens, h, want)
			}
			if !strings.HasSuffix(st.LastPath, tc.path) || gjson.Get(st.LastBody, "contents.0.parts.0.text").Str != prompt {
				t.Errorf("the upstream was asked at %s with %s; want %s", st.LastPath, st.LastBody, tc.path)
			}
			if up := h.Get("X-Switchyard-Upstream"); up != tc.upstream.Name() {
				t.Errorf("served by %q, want %s", up, tc.upstream.Name())
			}
		})
	}

	// A model lists the methods the gateway serves, and no other: each
	// answers (none is 404 unknown endpoint).
	r := rawRequest(t, http.MethodGet, e.URL+"/v1beta/models/"+geminiModel, nil, "X-Goog-Api-Key", testKey)
	var methods []string
	for _, m := range gjson.GetBytes(r.body, "supportedGenerationMethods").Array() {
		methods = append(methods, m.Str)
	}
	if want := []string{"generateContent", "streamGenerateContent", "countTokens"}; !slices.Equal(methods, want) {
		t.Errorf("supportedGenerationMethods %v, want %v", methods, want)
	}
	body := `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`
	for _, m := range methods {
		r := rawRequest(t, http.MethodPost, e.URL+"/v1beta/models/"+geminiModel+":"+m, strings.NewReader(body), "X-Goog-Api-Key", testKey)
		if r.status != http.StatusOK {
			t.Errorf("%s: status %d: %s", m, r.status, r.body)
		}
	}
}
