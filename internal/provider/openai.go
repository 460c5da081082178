package provider

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"strings"

	"switchyard/internal/codec"
	"switchyard/internal/outcome"
)

// OpenAI is api.openai.com and any service that requires its key: Bearer
// auth, operations appended to base_url, the model in the body.
type OpenAI struct{}

// OpenAICompatible is an OpenAI-compatible server (vLLM, Ollama, a private
// deployment): as OpenAI, but the key is optional and a stream may end
// without [DONE].
type OpenAICompatible struct{}

var (
	_ Provider   = OpenAI{}
	_ Provider   = OpenAICompatible{}
	_ BasePather = OpenAI{}
	_ BasePather = OpenAICompatible{}
	_ Endpoint   = (*bearerEndpoint)(nil)
)

func (OpenAI) Name() string { return NameOpenAI }

// System is the GenAI semantic conventions' name of the provider.
func (OpenAI) System() string { return "openai" }

// Check requires api_key, and checks organization and project.
func (OpenAI) Check(u Upstream) []Problem { return append(requireKey(NameOpenAI, u), checkScope(u)...) }

func (OpenAI) New(u Upstream) Endpoint { return newBearer(u, false) }

// BasePath is "/v1": https://api.openai.com/v1.
func (OpenAI) BasePath() string { return "/v1" }

func (OpenAICompatible) Name() string { return NameOpenAICompatible }

// System is "_OTHER": the GenAI semantic conventions name no server
// that only speaks OpenAI's protocol.
func (OpenAICompatible) System() string { return "_OTHER" }

// Check checks organization and project, which an OpenAI-compatible server
// in front of OpenAI passes on and others ignore; api_key is optional.
func (OpenAICompatible) Check(u Upstream) []Problem { return checkScope(u) }

func (OpenAICompatible) New(u Upstream) Endpoint { return newBearer(u, true) }

// BasePath is "/v1", where vLLM, Ollama and most OpenAI-compatible
// servers serve OpenAI's paths.
func (OpenAICompatible) BasePath() string { return "/v1" }

// bearerEndpoint is an OpenAI-family upstream with Bearer auth.
type bearerEndpoint struct {
	base    string // base_url without a trailing slash
	auth    string // "Bearer <key>", "" for none
	extra   map[string]string
	scope   scope
	openEnd bool
}

func newBearer(u Upstream, openEnd bool) *bearerEndpoint {
	e := &bearerEndpoint{base: strings.TrimRight(u.BaseURL, "/"), extra: u.Headers, scope: newScope(u), openEnd: openEnd}
	if u.APIKey != "" {
		e.auth = "Bearer " + u.APIKey
	}
	return e
}

func (e *bearerEndpoint) Family(string) codec.Family { return codec.FamilyOpenAI }
func (e *bearerEndpoint) OpenStreamEnd() bool        { return e.openEnd }

// authorize sets the configured headers, organization and project, and the
// bearer key.
func (e *bearerEndpoint) authorize(h http.Header) {
	setExtra(h, e.extra)
	e.scope.set(h)
	if e.auth != "" {
		h["Authorization"] = []string{e.auth}
	}
}

func (e *bearerEndpoint) NewRequest(ctx context.Context, op, _ string, body []byte, h http.Header) (*http.Request, error) {
	req, err := newPost(ctx, e.base+"/"+op, body, h)
	return withAuth(req, err, e.authorize)
}

func (e *bearerEndpoint) ProbeRequest(ctx context.Context, kind, model string) (*http.Request, error) {
	if kind == "chat" {
		return e.NewRequest(ctx, "chat/completions", model, chatProbeBody(model), http.Header{})
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.base+"/models", nil)
	return withAuth(req, err, e.authorize)
}

func (e *bearerEndpoint) Classify(status int, _ http.Header, _ []byte) outcome.Outcome {
	return outcome.Outcome{Class: ClassifyStatus(status), Status: status}
}

// newPost builds a POST of body with headers h (used as the request's own).
func newPost(ctx context.Context, url string, body []byte, h http.Header) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("building upstream request: %w", err)
	}
	if h != nil {
		req.Header = h
	}
	if req.Header.Get("Content-Type") == "" {
		req.Header.Set("Content-Type", "application/json")
	}
	return req, nil
}

// withAuth applies authorize to the headers of a request just built, or
// passes its error on.
func withAuth(req *http.Request, err error, authorize func(http.Header)) (*http.Request, error) {
	if err != nil {
		return nil, err
	}
	authorize(req.Header)
	return req, nil
}

// setExtra sets an upstream's configured extra headers.
func setExtra(h http.Header, extra map[string]string) {
	for k, v := range extra {
		h.Set(k, v)
	}
}

// chatProbeBody is a one-token chat or message request for model.
func chatProbeBody(model string) []byte {
	return fmt.Appendf(nil, `{"model":%q,"max_tokens":1,"messages":[{"role":"user","content":"ping"}]}`, model)
}

// requireKey is the Check of a provider whose api_key is required.
func requireKey(provider string, u Upstream) []Problem {
	if u.APIKey == "" {
		return []Problem{{Field: "api_key", Message: "required for provider " + provider}}
	}
	return nil
}
