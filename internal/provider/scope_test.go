package provider

import (
	"context"
	"net/http"
	"testing"
)

// TestScopeHeaders: an OpenAI-family upstream with an organization and a
// project sends them on every request and probe, replacing any value
// already in the headers; one without sends neither.
func TestScopeHeaders(t *testing.T) {
	tests := []struct {
		name              string
		provider          string
		org, project      string
		wantOrg, wantProj string
	}{
		{"openai scoped", NameOpenAI, "org-op", "proj_op", "org-op", "proj_op"},
		{"openai organization only", NameOpenAI, "org-op", "", "org-op", ""},
		{"openai unscoped", NameOpenAI, "", "", "", ""},
		{"openai-compatible scoped", NameOpenAICompatible, "org-op", "proj_op", "org-op", "proj_op"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p, _ := Builtin().Lookup(tc.provider)
			ep := p.New(Upstream{BaseURL: "https://api.openai.com/v1", APIKey: "sk-o", Organization: tc.org, Project: tc.project})
			check := func(what string, h http.Header) {
				t.Helper()
				if got := h.Get("OpenAI-Organization"); got != tc.wantOrg {
					t.Errorf("%s: OpenAI-Organization = %q, want %q", what, got, tc.wantOrg)
				}
				if got := h.Get("OpenAI-Project"); got != tc.wantProj {
					t.Errorf("%s: OpenAI-Project = %q, want %q", what, got, tc.wantProj)
				}
			}
			h := http.Header{}
			if tc.org != "" {
				h.Set("OpenAI-Organization", "org-evil")
			}
			req, err := ep.NewRequest(context.Background(), "chat/completions", "gpt-4o", []byte(`{}`), h)
			if err != nil {
				t.Fatal(err)
			}
			check("request", req.Header)
			for _, kind := range []string{"models", "chat"} {
				probe, err := ep.ProbeRequest(context.Background(), kind, "gpt-4o")
				if err != nil {
					t.Fatal(err)
				}
				check(kind+" probe", probe.Header)
			}
		})
	}
}
