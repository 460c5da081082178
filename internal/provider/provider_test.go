package provider

import (
	"context"
	"net/http"
	"slices"
	"testing"

	"switchyard/internal/codec"
	"switchyard/internal/outcome"
)

func TestBuiltinRequests(t *testing.T) {
	tests := []struct {
		provider   string
		u          Upstream
		op, model  string
		clientHdr  http.Header
		wantURL    string
		wantHeader map[string]string // "" = absent
		family     codec.Family
		openEnd    bool
	}{
		{NameOpenAI, Upstream{BaseURL: "https://api.openai.com/v1/", APIKey: "sk-o"}, "chat/completions", "gpt-4o", nil,
			"https://api.openai.com/v1/chat/completions", map[string]string{"Authorization": "Bearer sk-o", "Content-Type": "application/json"}, codec.FamilyOpenAI, false},
		{NameOpenAICompatible, Upstream{BaseURL: "http://10.0.0.5:8000/v1"}, "embeddings", "bge", nil,
			"http://10.0.0.5:8000/v1/embeddings", map[string]string{"Authorization": ""}, codec.FamilyOpenAI, true},
		{NameAzureOpenAI, Upstream{BaseURL: "https://r.openai.azure.com", APIKey: "az"}, "chat/completions", "my deploy", nil,
			"https://r.openai.azure.com/openai/deployments/my%20deploy/chat/completions?api-version=2024-10-21",
			map[string]string{"Api-Key": "az", "Authorization": ""}, codec.FamilyOpenAI, false},
		{NameAzureOpenAI, Upstream{BaseURL: "https://r.openai.azure.com", APIKey: "az", APIVersion: "2025-01-01-preview"}, "responses", "x", nil,
			"https://r.openai.azure.com/openai/responses?api-version=2025-01-01-preview", map[string]string{"Api-Key": "az"}, codec.FamilyOpenAI, false},
		{NameAnthropic, Upstream{BaseURL: "https://api.anthropic.com/v1", APIKey: "sk-a", Headers: map[string]string{"Anthropic-Beta": "x"}}, "messages", "claude", nil,
			"https://api.anthropic.com/v1/messages", map[string]string{"X-Api-Key": "sk-a", "Anthropic-Version": DefaultAnthropicVersion, "Anthropic-Beta": "x"}, codec.FamilyAnthropic, false},
		{NameAnthropic, Upstream{BaseURL: "https://api.anthropic.com/v1", APIKey: "sk-a"}, "messages", "claude", http.Header{"Anthropic-Version": {"2024-01-01"}},
			"https://api.anthropic.com/v1/messages", map[string]string{"Anthropic-Version": "2024-01-01"}, codec.FamilyAnthropic, false},
	}
	for _, tc := range tests {
		t.Run(tc.provider+" "+tc.op, func(t *testing.T) {
			p, ok := Builtin().Lookup(tc.provider)
			if !ok {
				t.Fatalf("no provider %q", tc.provider)
			}
			ep := p.New(tc.u)
			h := tc.clientHdr.Clone()
			if h == nil {
				h = http.Header{}
			}
			req, err := ep.NewRequest(context.Background(), tc.op, tc.model, []byte(`{}`), h)
			if err != nil {
				t.Fatal(err)
			}
			if req.Method != http.MethodPost || req.URL.String() != tc.wantURL {
				t.Errorf("%s %s, want POST %s", req.Method, req.URL, tc.wantURL)
			}
			for k, v := range tc.wantHeader {
				if got := req.Header.Get(k); got != v {
					t.Errorf("header %s = %q, want %q", k, got, v)
				}
			}
			if ep.Family("") != tc.family || ep.OpenStreamEnd() != tc.openEnd {
				t.Errorf("family %v open end %v", ep.Family(""), ep.OpenStreamEnd())
			}
			probe, err := ep.ProbeRequest(context.Background(), "models", tc.model)
			if err != nil || probe.Method != http.MethodGet {
				t.Fatalf("models probe: %v %v", probe, err)
			}
			chat, err := ep.ProbeRequest(context.Background(), "chat", tc.model)
			if err != nil || chat.Method != http.MethodPost {
				t.Fatalf("chat probe: %v %v", chat, err)
			}
		})
	}
}

func TestClassifyStatus(t *testing.T) {
	for status, want := range map[int]outcome.Class{
		200: outcome.Success, 204: outcome.Success, 301: outcome.ClientError, 400: outcome.ClientError,
		401: outcome.AuthError, 402: outcome.AuthError, 403: outcome.AuthError, 404: outcome.ClientError,
		408: outcome.ServerError, 413: outcome.ClientError, 422: outcome.ClientError, 429: outcome.RateLimited,
		500: outcome.ServerError, 503: outcome.ServerError, 529: outcome.ServerError,
	} {
		if got := ClassifyStatus(status); got != want {
			t.Errorf("ClassifyStatus(%d) = %v, want %v", status, got, want)
		}
	}
}

func TestChecksAndRegistry(t *testing.T) {
	if got := Builtin().Names(); !slices.Equal(got, []string{NameOpenAI, NameAnthropic, NameAzureOpenAI, NameOpenAICompatible, NameGemini, NameVertex, NameBedrock}) {
		t.Fatalf("Names() = %v", got)
	}
	tests := []struct {
		provider string
		u        Upstream
		want     []Problem
	}{
		{NameOpenAI, Upstream{}, []Problem{{"api_key", "required for provider openai"}}},
		{NameOpenAICompatible, Upstream{}, nil},
		{NameAnthropic, Upstream{APIKey: "k", APIVersion: "latest"}, []Problem{{"api_version", `must be a dated version such as 2024-10-21 or 2025-01-01-preview, got "latest"`}}},
		{NameAzureOpenAI, Upstream{APIKey: "k", APIVersion: "2025-01-01-preview"}, nil},
		{NameAzureOpenAI, Upstream{APIVersion: "2025-13-01"}, []Problem{{"api_key", "required for provider azure-openai"},
			{"api_version", `must be a dated version such as 2024-10-21 or 2025-01-01-preview, got "2025-13-01"`}}},
	}
	for _, tc := range tests {
		p, _ := Builtin().Lookup(tc.provider)
		if got := p.Check(tc.u); !slices.Equal(got, tc.want) {
			t.Errorf("%s.Check(%+v) = %v, want %v", tc.provider, tc.u, got, tc.want)
		}
	}
	r := Builtin().With(replacement{})
	if p, _ := r.Lookup(NameOpenAI); p.Name() != NameOpenAI || p.Check(Upstream{}) != nil {
		t.Fatal("With did not replace openai")
	}
	if len(r.Names()) != 7 {
		t.Fatalf("With changed the names: %v", r.Names())
	}
}

// replacement is an openai provider that requires nothing.
type replacement struct{ OpenAICompatible }

func (replacement) Name() string { return NameOpenAI }

func TestBaseURLAt(t *testing.T) {
	const root = "http://127.0.0.1:9001"
	tests := []struct{ provider, want string }{
		{NameOpenAI, root + "/v1"},
		{NameOpenAICompatible, root + "/v1"},
		{NameAnthropic, root + "/v1"},
		{NameAzureOpenAI, root},
		{NameGemini, root + "/v1beta"},
		{NameVertex, root + "/v1"},
		{NameBedrock, root},
		{"unknown", root},
	}
	for _, tt := range tests {
		t.Run(tt.provider, func(t *testing.T) {
			if got := Builtin().BaseURLAt(tt.provider, root); got != tt.want {
				t.Errorf("BaseURLAt(%q) = %q, want %q", tt.provider, got, tt.want)
			}
		})
	}
	// The public base_urls end with the version path.
	if got := Builtin().BaseURLAt(NameGemini, "https://generativelanguage.googleapis.com"); got != DefaultGeminiBaseURL {
		t.Errorf("Gemini at Google = %q, want %q", got, DefaultGeminiBaseURL)
	}
	vu := Upstream{Vertex: &VertexSettings{Location: "us-east5"}}
	if got, want := Builtin().BaseURLAt(NameVertex, "https://us-east5-aiplatform.googleapis.com"), (Vertex{}).DefaultBaseURL(vu); got != want {
		t.Errorf("Vertex at Google = %q, want %q", got, want)
	}
}
