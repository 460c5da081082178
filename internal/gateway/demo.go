package gateway

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"switchyard/internal/config"
	"switchyard/internal/mock"
	"switchyard/internal/provider"
)

// Demo values printed for a new user.
const (
	// DemoKey is the client key of the demo configuration.
	DemoKey = "sk-switchyard-demo"
	// DemoOpenAIModel and DemoAnthropicModel are the demo's models.
	DemoOpenAIModel    = "gpt-4o-mini"
	DemoAnthropicModel = "claude-3-5-haiku"
	// DemoMixedModel is served by a pool that mixes families: an Anthropic
	// upstream and an OpenAI-compatible one, which gets Anthropic clients'
	// requests translated (and OpenAI clients' the other way).
	DemoMixedModel = "claude-sonnet-4"
	// (claude-sonnet-4 is also served by a Bedrock and a Vertex upstream:
	// one model, four accounts, three wire families.)
	// DemoGeminiModel is served by a Gemini upstream and, translated, an
	// OpenAI one.
	DemoGeminiModel = "gemini-2.5-flash"
	// DemoEmbeddingModel is served by DemoOpenAIModel's upstreams on
	// /v1/embeddings.
	DemoEmbeddingModel = "text-embedding-3-small"
)

// The demo's AWS credentials, which its Bedrock mock verifies signatures
// with. They open nothing outside the demo.
const (
	demoAWSKeyID  = "AKIASWITCHYARDDEMO01"
	demoAWSSecret = "switchyard-demo-secret-not-a-real-aws-key"
)

// DemoOptions configure StartDemo.
type DemoOptions struct {
	// Listen is the client API address.
	Listen string
	// StateDir is where the admin token is kept between starts (see
	// DefaultDemoStateDir); "" keeps nothing: a new token at every start.
	StateDir string
	// AdminToken, when not "", is the admin token, over the stored one
	// (which it does not replace).
	AdminToken string
}

// Demo is a ready-to-serve configuration backed by three in-process mock
// upstreams with different latency and limits.
type Demo struct {
	// Config is the generated configuration (listen address from the caller).
	Config *config.Config
	// Mocks are the running mock upstreams, by name.
	Mocks map[string]*mock.Server
	// TokenFile is the file the admin token was read from or stored in; ""
	// when it was not (DemoOptions.AdminToken, no StateDir, or storing it
	// failed: see Config.Warnings).
	TokenFile string
	dir       string
}

// The demo's limits. Its gpt-4o-mini pool is sized for a new user's load
// loop (16 clients, each sending its next request when an answer comes) to
// show limits at work without failing requests:
//   - openai-fast and openai-steady (tier 0) take 6 and 4 requests at a
//     time and queue the rest; their mocks' RPM stays above what that many
//     slots can send (about 3,300 and 850 a minute).
//   - What finds tier 0 full goes to openai-backup (tier 1, 6 at a time),
//     whose mock has a small token quota: demoBackupTPM, about 30 of its
//     demoBackupTokens-long answers a minute.
//   - The gateway reserves prompt bytes/4 tokens for a request without
//     max_tokens and learns an answer's size when it ends, so the requests
//     in flight when that quota runs out overshoot it: mock-backup answers
//     them 429, each fails over to tier 0, and openai-backup cools down
//     until mock-backup's 60 s window frees, about once a minute under the
//     loop.
const (
	demoFastSlots, demoSteadySlots, demoBackupSlots = 6, 4, 6
	demoBackupTPM                                   = 5400
	demoBackupTokens                                = 160
	// demoMaxWait is how long a request waits when every upstream is
	// cooling down or spent, before 503.
	demoMaxWait = 3 * time.Second
)

// StartDemo starts the mock upstreams (they stop when ctx ends) and returns
// a configuration that routes to them, with an embedded SQLite store in a
// temporary directory that Cleanup removes, and the admin token kept in
// opts.StateDir.
func StartDemo(ctx context.Context, opts DemoOptions) (*Demo, error) {
	dir, err := os.MkdirTemp("", "switchyard-demo-")
	if err != nil {
		return nil, fmt.Errorf("creating demo directory: %w", err)
	}
	d := &Demo{Mocks: map[string]*mock.Server{}, dir: dir}
	// The Vertex and Bedrock mocks check credentials as the real services
	// do: a service account whose key signs the OAuth2 assertions, and the
	// AWS keys that sign each request.
	sa, err := mock.NewServiceAccount("switchyard-demo@demo-project.iam.gserviceaccount.com")
	if err != nil {
		d.Cleanup()
		return nil, fmt.Errorf("creating the demo's service account: %w", err)
	}
	specs := []struct {
		name     string
		behavior mock.Behavior
	}{
		{"mock-fast", mock.Behavior{Latency: 40 * time.Millisecond, TTFT: 60 * time.Millisecond, TPS: 200, RPM: 6000}},
		{"mock-steady", mock.Behavior{Latency: 120 * time.Millisecond, TTFT: 150 * time.Millisecond, TPS: 80, RPM: 1200}},
		{"mock-backup", mock.Behavior{Latency: 250 * time.Millisecond, TTFT: 300 * time.Millisecond, TPS: 320,
			RPM: 600, TPM: demoBackupTPM, CompletionTokens: demoBackupTokens}},
	}
	urls := map[string]string{}
	for i, s := range specs {
		srv, url, err := mock.Start(ctx, "127.0.0.1:0", mock.Options{Name: s.name, Behavior: s.behavior, Seed: int64(i + 1),
			ServiceAccount: sa, AWSAccessKeyID: demoAWSKeyID, AWSSecretAccessKey: demoAWSSecret})
		if err != nil {
			d.Cleanup()
			return nil, fmt.Errorf("starting demo upstream %s: %w", s.name, err)
		}
		d.Mocks[s.name] = srv
		urls[s.name] = url
	}
	saFile := filepath.Join(dir, "vertex-service-account.json")
	if err := os.WriteFile(saFile, sa.JSON("demo-project", mock.TokenURI(urls["mock-steady"])), 0o600); err != nil {
		d.Cleanup()
		return nil, fmt.Errorf("writing the demo's service account: %w", err)
	}
	cfg := config.Default()
	cfg.Listen = opts.Listen
	cfg.Store.DSN = filepath.Join(dir, "switchyard.db")
	cfg.Health.Interval = 0 // the mocks are in-process; nothing to probe
	cfg.Defaults.MaxWait = demoMaxWait
	demo := config.DefaultKey()
	demo.Name, demo.Key = "demo", DemoKey
	cfg.Keys = []config.Key{demo}
	d.setAdminToken(&cfg, opts)
	// up is an upstream at a mock, on the base_url its provider needs there
	// (the mocks answer only the real services' paths).
	up := func(name, prov, mockName string, models []string, weight, priority int) config.Upstream {
		u := config.DefaultUpstream()
		u.Name, u.Provider, u.APIKey = name, prov, "sk-demo-"+name
		u.BaseURL = provider.Builtin().BaseURLAt(prov, urls[mockName])
		u.Models, u.Weight, u.Priority = models, weight, priority
		return u
	}
	// slots caps u's concurrent requests and queues the rest.
	slots := func(u config.Upstream, n int) config.Upstream {
		u.MaxConcurrency, u.Queue.Enabled = n, true
		return u
	}
	openAIModels := []string{DemoOpenAIModel, DemoEmbeddingModel}
	cfg.Upstreams = []config.Upstream{
		slots(up("openai-fast", config.ProviderOpenAI, "mock-fast", openAIModels, 3, 0), demoFastSlots),
		slots(up("openai-steady", config.ProviderOpenAI, "mock-steady", openAIModels, 2, 0), demoSteadySlots),
		slots(up("openai-backup", config.ProviderOpenAICompatible, "mock-backup", openAIModels, 1, 1), demoBackupSlots),
		up("anthropic-fast", config.ProviderAnthropic, "mock-fast", []string{DemoAnthropicModel}, 1, 0),
		up("anthropic-backup", config.ProviderAnthropic, "mock-backup", []string{DemoAnthropicModel}, 1, 1),
		up("claude-anthropic", config.ProviderAnthropic, "mock-fast", []string{DemoMixedModel}, 1, 0),
		up("claude-openai-compatible", config.ProviderOpenAICompatible, "mock-steady", []string{DemoMixedModel}, 1, 0),
		up("gemini-openai", config.ProviderOpenAI, "mock-steady", []string{DemoGeminiModel}, 1, 0),
	}
	gemini := up("gemini-google", config.ProviderGemini, "mock-fast", []string{DemoGeminiModel}, 2, 0)
	// One model, three providers' quotas: Claude on Bedrock and on Vertex,
	// Gemini on Vertex too.
	bedrock := up("claude-bedrock", config.ProviderBedrock, "mock-steady", []string{DemoMixedModel}, 1, 0)
	bedrock.APIKey = ""
	bedrock.Bedrock = &provider.BedrockSettings{Region: "us-east-1", AccessKeyID: demoAWSKeyID, SecretAccessKey: demoAWSSecret}
	bedrock.ModelMap = map[string]string{DemoMixedModel: "us.anthropic.claude-sonnet-4-20250514-v1:0"}
	// Not on mock-backup: an agent CLI's prompt alone can be larger than
	// its token quota.
	vertex := up("vertex", config.ProviderVertex, "mock-steady", []string{DemoMixedModel, DemoGeminiModel}, 1, 0)
	vertex.APIKey = ""
	vertex.Vertex = &provider.VertexSettings{Project: "demo-project", Location: "us-east5", CredentialsFile: saFile}
	vertex.ModelMap = map[string]string{DemoMixedModel: "claude-sonnet-4@20250514"}
	cfg.Upstreams = append(cfg.Upstreams, gemini, bedrock, vertex)
	if errs := cfg.Validate(); len(errs) > 0 {
		d.Cleanup()
		return nil, fmt.Errorf("demo configuration is invalid: %w", errs)
	}
	d.Config = &cfg
	return d, nil
}

// Cleanup removes the demo's temporary directory.
func (d *Demo) Cleanup() { _ = os.RemoveAll(d.dir) }
