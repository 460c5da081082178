package provider

import (
	"context"
	"net/http"
	"strings"
	"time"

	"switchyard/internal/codec"
	"switchyard/internal/outcome"
)

// Anthropic is the Anthropic Messages API: `x-api-key` and
// `anthropic-version` (the client's own value wins), the model in the body.
// Its 529 overloaded_error is a server error like any 5xx.
type Anthropic struct{}

// DefaultAnthropicVersion is sent when neither the upstream's api_version
// nor the client sets anthropic-version.
const DefaultAnthropicVersion = "2023-06-01"

var (
	_ Provider   = Anthropic{}
	_ BasePather = Anthropic{}
	_ Endpoint   = (*anthropicEndpoint)(nil)
)

func (Anthropic) Name() string { return NameAnthropic }

// System is the GenAI semantic conventions' name of the provider.
func (Anthropic) System() string { return "anthropic" }

func (Anthropic) Check(u Upstream) []Problem {
	ps := append(requireKey(NameAnthropic, u), checkDatedVersion(u)...)
	return append(ps, refuseScope(NameAnthropic, u,
		"an Anthropic API key belongs to one workspace, which it bills; for another workspace add an upstream with that workspace's key")...)
}

// BasePath is "/v1": https://api.anthropic.com/v1.
func (Anthropic) BasePath() string { return "/v1" }

func (Anthropic) New(u Upstream) Endpoint {
	v := u.APIVersion
	if v == "" {
		v = DefaultAnthropicVersion
	}
	return &anthropicEndpoint{base: strings.TrimRight(u.BaseURL, "/"), key: []string{u.APIKey}, version: []string{v}, extra: u.Headers}
}

type anthropicEndpoint struct {
	base    string
	key     []string
	version []string
	extra   map[string]string
}

func (e *anthropicEndpoint) Family(string) codec.Family { return codec.FamilyAnthropic }
func (e *anthropicEndpoint) OpenStreamEnd() bool        { return false }

func (e *anthropicEndpoint) authorize(h http.Header) {
	setExtra(h, e.extra)
	h["X-Api-Key"] = e.key
	if h.Get("Anthropic-Version") == "" {
		h["Anthropic-Version"] = e.version
	}
}

func (e *anthropicEndpoint) NewRequest(ctx context.Context, op, _ string, body []byte, h http.Header) (*http.Request, error) {
	req, err := newPost(ctx, e.base+"/"+op, body, h)
	return withAuth(req, err, e.authorize)
}

func (e *anthropicEndpoint) ProbeRequest(ctx context.Context, kind, model string) (*http.Request, error) {
	if kind == "chat" {
		return e.NewRequest(ctx, "messages", model, chatProbeBody(model), http.Header{})
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.base+"/models", nil)
	return withAuth(req, err, e.authorize)
}

func (e *anthropicEndpoint) Classify(status int, _ http.Header, _ []byte) outcome.Outcome {
	return outcome.Outcome{Class: ClassifyStatus(status), Status: status}
}

// datedVersion accepts dated versions: 2024-10-21, 2025-01-01-preview.
func datedVersion(s string) bool {
	date, suffix, _ := strings.Cut(s, "-preview")
	if suffix != "" {
		return false
	}
	_, err := time.Parse("2006-01-02", date)
	return err == nil
}

// checkDatedVersion requires a dated api_version when one is set.
func checkDatedVersion(u Upstream) []Problem {
	if u.APIVersion == "" || datedVersion(u.APIVersion) {
		return nil
	}
	return []Problem{{Field: "api_version", Message: "must be a dated version such as 2024-10-21 or 2025-01-01-preview, got \"" + u.APIVersion + "\""}}
}
