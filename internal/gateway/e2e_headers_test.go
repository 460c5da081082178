package gateway_test

import (
	"context"
	"maps"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"switchyard/internal/config"
	"switchyard/internal/mock"
	"switchyard/internal/provider"
)

// TestClientScopeHeadersNeverReachUpstreams: an OpenAI SDK client that sends
// its own OpenAI-Organization and OpenAI-Project cannot bill another
// organization or project of the operator's key: no upstream ever sees the
// client's values; an upstream with `organization` and `project` configured
// sees the operator's on every request (chat, stream, Responses), one
// without sees none, and neither does an Anthropic upstream the request is
// translated for (docs/protocols.md#headers-sent-upstream).
func TestClientScopeHeadersNeverReachUpstreams(t *testing.T) {
	scopedMock, scopedURL := startMock(t, "mock-scoped", mock.Behavior{})
	plainMock, plainURL := startMock(t, "mock-plain", mock.Behavior{})
	antMock, antURL := startMock(t, "mock-anthropic", mock.Behavior{})
	scoped := upstreamAt("openai-scoped", config.ProviderOpenAI, scopedURL, 0, "gpt-4o")
	scoped.Organization, scoped.Project = "org-operator", "proj_operator"
	e := startGateway(t, spec{upstreams: []config.Upstream{
		scoped,
		upstreamAt("openai-plain", config.ProviderOpenAI, plainURL, 0, "gpt-4o-mini"),
		upstreamAt("anthropic-a", config.ProviderAnthropic, antURL, 0, "claude-3-5-haiku"),
	}})
	oa := openai.NewClient(
		option.WithBaseURL(e.URL+"/v1/"),
		option.WithAPIKey(testKey),
		option.WithMaxRetries(0),
		option.WithHeader("OpenAI-Organization", "org-evil"),
		option.WithHeader("OpenAI-Project", "proj_evil"),
	)
	ctx := context.Background()
	for _, model := range []string{"gpt-4o", "gpt-4o-mini", "claude-3-5-haiku"} {
		params := openai.ChatCompletionNewParams{Model: model, Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("hi")}}
		if _, err := oa.Chat.Completions.New(ctx, params); err != nil {
			t.Fatalf("chat %s: %v", model, err)
		}
		stream := oa.Chat.Completions.NewStreaming(ctx, params)
		for stream.Next() {
		}
		if err := stream.Err(); err != nil {
			t.Fatalf("chat stream %s: %v", model, err)
		}
		if _, err := oa.Responses.New(ctx, responses.ResponseNewParams{Model: model,
			Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")}}); err != nil {
			t.Fatalf("responses %s: %v", model, err)
		}
	}

	tests := []struct {
		m                      *mock.Server
		wantOrgs, wantProjects map[string]int64
	}{
		{scopedMock, map[string]int64{"org-operator": 3}, map[string]int64{"proj_operator": 3}},
		{plainMock, map[string]int64{"": 3}, map[string]int64{"": 3}},
		{antMock, map[string]int64{"": 3}, map[string]int64{"": 3}},
	}
	for _, tc := range tests {
		st := tc.m.Stats()
		if !maps.Equal(st.Organizations, tc.wantOrgs) || !maps.Equal(st.Projects, tc.wantProjects) {
			t.Errorf("%s saw organizations %v and projects %v, want %v and %v",
				tc.m.Name(), st.Organizations, st.Projects, tc.wantOrgs, tc.wantProjects)
		}
	}
	// What else reached an upstream of the client's protocol: the SDK's
	// User-Agent, none of its X-Stainless-* telemetry.
	h := plainMock.Stats().LastHeaders
	if !strings.HasPrefix(h.Get("User-Agent"), "OpenAI/Go ") {
		t.Errorf("User-Agent %q, want the SDK's", h.Get("User-Agent"))
	}
	for name := range h {
		if strings.HasPrefix(name, "X-Stainless-") {
			t.Errorf("%s reached the upstream", name)
		}
	}
}

// TestAnthropicBetaReachesAnthropicUpstreams: the Anthropic SDK's betas
// (the anthropic-beta header) and its anthropic-version — not the
// adapter's default — reach an Anthropic upstream, and stay behind when
// the request is translated for an OpenAI one.
func TestAnthropicBetaReachesAnthropicUpstreams(t *testing.T) {
	antMock, antURL := startMock(t, "mock-anthropic", mock.Behavior{})
	oaMock, oaURL := startMock(t, "mock-openai", mock.Behavior{})
	e := startGateway(t, spec{upstreams: []config.Upstream{
		upstreamAt("anthropic-a", config.ProviderAnthropic, antURL, 0, "claude-3-5-haiku"),
		upstreamAt("openai-a", config.ProviderOpenAI, oaURL, 0, "gpt-4o-mini"),
	}})
	var sent http.Header // what the SDK sent the gateway, last request
	ant := anthropic.NewClient(
		aoption.WithoutEnvironmentDefaults(),
		aoption.WithBaseURL(e.URL),
		aoption.WithAPIKey(testKey),
		aoption.WithMaxRetries(0),
		aoption.WithMiddleware(func(r *http.Request, next aoption.MiddlewareNext) (*http.Response, error) {
			sent = r.Header.Clone()
			return next(r)
		}),
	)
	const beta = anthropic.AnthropicBetaPromptCaching2024_07_31
	tests := []struct {
		model      string
		m          *mock.Server
		translated bool
	}{
		{"claude-3-5-haiku", antMock, false},
		{"gpt-4o-mini", oaMock, true},
	}
	for _, tc := range tests {
		t.Run(tc.model, func(t *testing.T) {
			_, err := ant.Beta.Messages.New(context.Background(), anthropic.BetaMessageNewParams{
				Model:     anthropic.Model(tc.model),
				MaxTokens: 16,
				Messages:  []anthropic.BetaMessageParam{anthropic.NewBetaUserMessage(anthropic.NewBetaTextBlock("hi"))},
				Betas:     []anthropic.AnthropicBeta{beta},
			})
			if err != nil {
				t.Fatal(err)
			}
			if sent.Get("Anthropic-Beta") != string(beta) || sent.Get("Anthropic-Version") == provider.DefaultAnthropicVersion {
				t.Fatalf("the SDK sent anthropic-beta %q, anthropic-version %q: the checks below would prove nothing",
					sent.Get("Anthropic-Beta"), sent.Get("Anthropic-Version"))
			}
			wantBeta, wantVersion := sent.Get("Anthropic-Beta"), sent.Get("Anthropic-Version")
			if tc.translated {
				wantBeta, wantVersion = "", ""
			}
			h := tc.m.Stats().LastHeaders
			if got := h.Get("Anthropic-Beta"); got != wantBeta {
				t.Errorf("%s received anthropic-beta %q, want %q", tc.m.Name(), got, wantBeta)
			}
			if got := h.Get("Anthropic-Version"); got != wantVersion {
				t.Errorf("%s received anthropic-version %q, want %q", tc.m.Name(), got, wantVersion)
			}
		})
	}
}
