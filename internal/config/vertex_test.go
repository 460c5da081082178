package config

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"switchyard/internal/mock"
	"switchyard/internal/provider"
)

// TestValidateProviderDefaults: base_url is optional for a provider that
// knows its endpoint (gemini, vertex), and a provider's settings block on
// another provider's upstream is refused, naming the field.
func TestValidateProviderDefaults(t *testing.T) {
	sa, err := mock.NewServiceAccount("gw@p1.iam.gserviceaccount.com")
	if err != nil {
		t.Fatal(err)
	}
	vertex := func() Upstream {
		u := DefaultUpstream()
		u.Name, u.Provider, u.Models = "vertex-east", ProviderVertex, []string{"claude-sonnet-4", "gemini-2.5-flash"}
		u.Vertex = &provider.VertexSettings{Project: "p1", Location: "us-east5",
			CredentialsJSON: string(sa.JSON("p1", "https://oauth2.googleapis.com/token"))}
		return u
	}
	tests := []struct {
		name   string
		mutate func(c *Config)
		want   Errors
	}{
		{"vertex without base_url", func(c *Config) { c.Upstreams = append(c.Upstreams, vertex()) }, nil},
		{"vertex with a private base_url", func(c *Config) {
			u := vertex()
			u.BaseURL = "http://10.0.0.9:8080/v1"
			c.Upstreams = append(c.Upstreams, u)
		}, nil},
		{"vertex with a bad base_url", func(c *Config) {
			u := vertex()
			u.BaseURL = "aiplatform.googleapis.com/v1"
			c.Upstreams = append(c.Upstreams, u)
		}, Errors{{"upstreams[3].base_url", `must be an absolute http(s) URL with a host, such as https://api.openai.com/v1, got "aiplatform.googleapis.com/v1"`}}},
		{"vertex without its block", func(c *Config) {
			u := vertex()
			u.Vertex = nil
			c.Upstreams = append(c.Upstreams, u)
		}, Errors{{"upstreams[3].vertex", "required for provider vertex: project and location (and credentials_file or credentials_json, else Application Default Credentials apply)"}}},
		{"vertex without a project", func(c *Config) {
			u := vertex()
			u.Vertex.Project = ""
			c.Upstreams = append(c.Upstreams, u)
		}, Errors{{"upstreams[3].vertex.project", "required: the Google Cloud project id"}}},
		{"gemini without base_url", func(c *Config) {
			u := DefaultUpstream()
			u.Name, u.Provider, u.APIKey, u.Models = "gemini", ProviderGemini, "g-key", []string{"gemini-*"}
			c.Upstreams = append(c.Upstreams, u)
		}, nil},
		{"openai still needs base_url", func(c *Config) { c.Upstreams[0].BaseURL = "" }, Errors{{"upstreams[0].base_url", "required"}}},
		{"a vertex block on an anthropic upstream", func(c *Config) { c.Upstreams[1].Vertex = vertex().Vertex },
			Errors{{"upstreams[1].vertex", "only provider vertex reads a vertex block, not anthropic"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			tt.mutate(&c)
			if got := c.Validate(); !slices.Equal(got, tt.want) {
				t.Fatalf("Validate() =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

// TestLoadForSimulation: a simulation never reads upstream credentials, so
// a Vertex key file that exists only where the gateway runs is no error
// there, while serve's Load still requires it; the rest is checked alike.
func TestLoadForSimulation(t *testing.T) {
	const file = `upstreams:
  - name: claude-vertex
    provider: vertex
    vertex: {project: p1, location: us-east5, credentials_file: /nonexistent/switchyard-sa.json}
    models: [claude-sonnet-4]
`
	tests := []struct {
		name      string
		extra     string
		simulated bool
		want      string // an error's start; "" for none
	}{
		{"serve needs the key file", "", false, "upstreams[0].vertex.credentials_file: reading the service-account key"},
		{"a simulation does not", "", true, ""},
		{"a simulation checks the rest", "    weight: 0\n", true, "upstreams[0].weight: "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "switchyard.yaml")
			if err := os.WriteFile(path, []byte(file+tt.extra), 0o600); err != nil {
				t.Fatal(err)
			}
			load := Load
			if tt.simulated {
				load = LoadForSimulation
			}
			_, err := load(path)
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("error %v, want none", err)
			case tt.want != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.want)):
				t.Fatalf("error %v, want one starting %q", err, tt.want)
			}
		})
	}
}
