package config

import (
	"slices"
	"testing"

	"switchyard/internal/provider"
)

// TestValidateOrganizationAndProject: upstreams[].organization and
// .project are accepted on the providers that send them (openai,
// openai-compatible) and refused, with the path and what to do instead,
// on every other; a value that cannot be a header, or a second copy in
// headers, is an error.
func TestValidateOrganizationAndProject(t *testing.T) {
	scoped := func(name string) func(c *Config) {
		return func(c *Config) {
			u := DefaultUpstream()
			u.Name, u.Provider, u.BaseURL, u.APIKey, u.Models = "extra", name, "https://gw.example/v1", "sk-extra", []string{"m"}
			u.Organization, u.Project = "org-op", "proj_op"
			switch name {
			case ProviderBedrock:
				bedrockUpstream(&u)
			case ProviderVertex:
				u.APIKey = ""
				u.Vertex = &provider.VertexSettings{Project: "p1", Location: "us-east5", CredentialsFile: "/etc/sa.json"}
			}
			c.Upstreams = append(c.Upstreams, u)
		}
	}
	refused := func(name, instead string) Errors {
		return Errors{
			{"upstreams[3].organization", "not used by provider " + name + ": " + instead},
			{"upstreams[3].project", "not used by provider " + name + ": " + instead},
		}
	}
	tests := []struct {
		name   string
		mutate func(c *Config)
		want   Errors
	}{
		{"openai", func(c *Config) {
			c.Upstreams[0].Headers = nil
			c.Upstreams[0].Organization, c.Upstreams[0].Project = "org-op", "proj_op"
		}, nil},
		{"openai-compatible", scoped(ProviderOpenAICompatible), nil},
		{"openai, organization also in headers", func(c *Config) { c.Upstreams[0].Organization = "org-op" },
			Errors{{"upstreams[0].headers.OpenAI-Organization", "duplicates organization, which sets this header: keep organization"}}},
		{"openai, project with a trailing newline", func(c *Config) { c.Upstreams[0].Project = "proj_op\n" },
			Errors{{"upstreams[0].project", "must be an id without whitespace or control characters (check for a trailing newline)"}}},
		{"anthropic", scoped(ProviderAnthropic), refused("anthropic",
			"an Anthropic API key belongs to one workspace, which it bills; for another workspace add an upstream with that workspace's key")},
		{"azure-openai", scoped(ProviderAzureOpenAI), refused("azure-openai",
			"Azure bills the resource of base_url and api_key; for another resource or subscription add an upstream with its own base_url and api_key")},
		{"gemini", scoped(ProviderGemini), refused("gemini",
			"a Gemini API key belongs to one Google Cloud project, which it bills; for another project add an upstream with that project's key")},
		{"vertex", scoped(ProviderVertex), refused("vertex", "Vertex bills the Google Cloud project of vertex.project, or the quota project of headers: {X-Goog-User-Project: …}; set one of those")},
		{"bedrock", scoped(ProviderBedrock), refused("bedrock",
			"Bedrock bills the AWS account of the upstream's credentials; for another account add an upstream with its credentials")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			tt.mutate(&c)
			if got := c.validate(true); !slices.Equal(got, tt.want) {
				t.Fatalf("Validate() =\n%q\nwant\n%q", got, tt.want)
			}
		})
	}
}

// TestParseOrganizationAndProject: the keys are read from a file, and
// check-config's message for a provider without them names the path.
func TestParseOrganizationAndProject(t *testing.T) {
	file := func(anthropicExtra string) []byte {
		return []byte(`
keys: [{name: k, key: sk-client}]
upstreams:
  - {name: oa, provider: openai, base_url: "https://api.openai.com/v1", api_key: sk-1, models: [gpt-4o],
     organization: org-op, project: proj_op}
  - {name: an, provider: anthropic, base_url: "https://api.anthropic.com/v1", api_key: sk-2, models: [claude-*]` + anthropicExtra + `}
`)
	}
	noEnv := func(string) (string, bool) { return "", false }
	c, err := Parse(file(""), noEnv)
	if err != nil {
		t.Fatal(err)
	}
	if u := c.Upstreams[0].Adapter(); u.Organization != "org-op" || u.Project != "proj_op" {
		t.Errorf("upstreams[0] organization %q project %q, want org-op and proj_op", u.Organization, u.Project)
	}
	_, err = Parse(file(", project: proj_op"), noEnv)
	want := "upstreams[1].project: not used by provider anthropic: an Anthropic API key belongs to one workspace, which it bills; " +
		"for another workspace add an upstream with that workspace's key"
	if err == nil || err.Error() != want {
		t.Fatalf("Parse error = %v, want %s", err, want)
	}
}
