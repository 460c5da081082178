package provider

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"switchyard/internal/codec"
	"switchyard/internal/outcome"
)

// Vertex is Google Vertex AI
// (docs/providers.md#google-vertex-ai-provider-vertex). It serves Gemini models
// in Gemini's protocol and Anthropic's Claude models (an upstream model name
// that starts with "claude", such as claude-sonnet-4@20250514) in Anthropic's,
// both with the model in the URL:
//
//	{base_url}/projects/{project}/locations/{location}/publishers/google/models/{model}:generateContent
//	                                                                           :streamGenerateContent?alt=sse
//	{base_url}/projects/{project}/locations/{location}/publishers/anthropic/models/{model}:rawPredict
//	                                                                              :streamRawPredict
//	{base_url}/projects/{project}/locations/{location}/publishers/anthropic/models/count-tokens:rawPredict
//
// A Claude request loses its "model" field (count-tokens keeps it) and
// gains "anthropic_version": "vertex-2023-10-16". Every request carries
// Authorization: Bearer with an OAuth2 access token that the upstream's
// service account obtains from its token_uri (the JWT bearer grant), or
// Application Default Credentials give, refreshed before it expires; a failed exchange is an auth
// error of the upstream (ErrAuth). Throttling is a 429 RESOURCE_EXHAUSTED
// whose RetryInfo, when it has one, names the cooldown; Claude's 529
// overloaded_error is a server error like any 5xx.
type Vertex struct{}

// Vertex constants.
const (
	// VertexAnthropicVersion is the anthropic_version a Claude request on
	// Vertex carries in its body.
	VertexAnthropicVersion = "vertex-2023-10-16"
	// VertexScope is the OAuth2 scope of the access tokens.
	VertexScope = "https://www.googleapis.com/auth/cloud-platform"
)

var (
	_ Provider         = Vertex{}
	_ BaseURLDefaulter = Vertex{}
	_ BasePather       = Vertex{}
	_ Endpoint         = (*vertexEndpoint)(nil)
)

// Name is "vertex".
func (Vertex) Name() string { return NameVertex }

// System is the GenAI semantic conventions' name of the provider.
func (Vertex) System() string { return "gcp.vertex_ai" }

// BasePath is "/v1", the version DefaultBaseURL ends with.
func (Vertex) BasePath() string { return "/v1" }

// DefaultBaseURL is https://{location}-aiplatform.googleapis.com/v1; the
// global location is https://aiplatform.googleapis.com/v1 and the us and
// eu multi-regions https://aiplatform.{us|eu}.rep.googleapis.com/v1. It is
// "" while u has no location.
func (Vertex) DefaultBaseURL(u Upstream) string {
	if u.Vertex == nil {
		return ""
	}
	switch loc := u.Vertex.Location; loc {
	case "":
		return ""
	case "global":
		return "https://aiplatform.googleapis.com/v1"
	case "us", "eu":
		return "https://aiplatform." + loc + ".rep.googleapis.com/v1"
	default:
		return "https://" + loc + "-aiplatform.googleapis.com/v1"
	}
}

// Check requires the vertex block: project, a location that can name a
// host, and at most one of credentials_file (a readable file) and
// credentials_json (with neither, Application Default Credentials apply),
// holding a service-account key (type
// "service_account", client_email, an RSA private_key in PEM and an
// http(s) token_uri). api_key, api_version, organization and project are
// refused: Vertex uses none of them. No problem echoes the key.
func (Vertex) Check(u Upstream) []Problem {
	ps := refuseScope(NameVertex, u, "Vertex bills the Google Cloud project of vertex.project, or the quota project of headers: {X-Goog-User-Project: …}; set one of those")
	if u.APIKey != "" {
		ps = append(ps, Problem{Field: "api_key", Message: "not used by provider vertex: it authenticates with the service account of vertex.credentials_file or vertex.credentials_json"})
	}
	if u.APIVersion != "" {
		ps = append(ps, Problem{Field: "api_version", Message: "not used by provider vertex (Claude requests carry anthropic_version " + VertexAnthropicVersion + ")"})
	}
	v := u.Vertex
	if v == nil {
		return append(ps, Problem{Field: "vertex", Message: "required for provider vertex: project and location (and credentials_file or credentials_json, else Application Default Credentials apply)"})
	}
	if msg := checkVertexID(v.Project); msg != "" {
		ps = append(ps, Problem{Field: "vertex.project", Message: msg})
	}
	if msg := checkVertexLocation(v.Location); msg != "" {
		ps = append(ps, Problem{Field: "vertex.location", Message: msg})
	}
	if u.Simulated || v.CredentialsFile == "" && v.CredentialsJSON == "" {
		return ps
	}
	if _, field, err := serviceAccountJSON(*v); err != nil {
		ps = append(ps, Problem{Field: field, Message: err.Error()})
	}
	return ps
}

// checkVertexID returns "" for a project id that can be a path segment.
func checkVertexID(s string) string {
	switch {
	case s == "":
		return "required: the Google Cloud project id"
	case strings.ContainsAny(s, "/?#% \t\r\n"):
		return fmt.Sprintf("must be a Google Cloud project id without '/', '?', '#', '%%' or whitespace, got %q", s)
	}
	return ""
}

// checkVertexLocation returns "" for a location that can name a host: a
// lowercase region such as us-east5, or global.
func checkVertexLocation(s string) string {
	if s == "" {
		return "required: a region such as us-east5 or europe-west1, or global"
	}
	for _, r := range s {
		if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '-') {
			return fmt.Sprintf("must be a region such as us-east5 or europe-west1, or global (lowercase letters, digits and '-'), got %q", s)
		}
	}
	return ""
}

// New returns the endpoint of u, on DefaultBaseURL when u sets no
// base_url. Its token source is built here and shared by every request of
// the endpoint; credentials that cannot be loaded make every request fail
// with ErrAuth.
func (p Vertex) New(u Upstream) Endpoint {
	e := &vertexEndpoint{extra: u.Headers}
	if u.Vertex == nil {
		e.tokens = &tokenSource{err: fmt.Errorf("%w: upstream %s has no vertex settings", ErrAuth, u.Name)}
		return e
	}
	base := u.BaseURL
	if base == "" {
		base = p.DefaultBaseURL(u)
	}
	base = strings.TrimRight(base, "/")
	e.models = base + "/projects/" + url.PathEscape(u.Vertex.Project) + "/locations/" + url.PathEscape(u.Vertex.Location) + "/publishers/"
	e.publishers = base + "/publishers/"
	e.tokens = newTokenSource(*u.Vertex, u.Transport)
	return e
}

// vertexEndpoint is one Vertex upstream.
type vertexEndpoint struct {
	models     string // {base}/projects/{p}/locations/{l}/publishers/
	publishers string // {base}/publishers/, for the model probe
	extra      map[string]string
	tokens     *tokenSource
}

// Family is Anthropic's for a model whose name starts with "claude",
// Gemini's for any other.
func (e *vertexEndpoint) Family(model string) codec.Family {
	if isClaude(model) {
		return codec.FamilyAnthropic
	}
	return codec.FamilyGemini
}

// isClaude reports whether model is one of Anthropic's on Vertex.
func isClaude(model string) bool { return strings.HasPrefix(model, "claude") }

// OpenStreamEnd is false: Gemini streams end with a finishReason, Claude's
// with message_stop.
func (e *vertexEndpoint) OpenStreamEnd() bool { return false }

// authorize sets the configured headers and the bearer token. Keys of
// other Google APIs and an anthropic-version header (Vertex reads the
// version from the body) do not go.
func (e *vertexEndpoint) authorize(h http.Header, bearer []string) {
	setExtra(h, e.extra)
	h.Del("X-Goog-Api-Key")
	h.Del("Anthropic-Version")
	h["Authorization"] = bearer
}

// NewRequest posts body to the model's method: op is the Gemini codec's
// (generateContent, streamGenerateContent?alt=sse, countTokens) or Anthropic's
// ("messages", mapped to rawPredict or, for a body with "stream": true,
// streamRawPredict; "messages/count_tokens" to count-tokens:rawPredict).
// It fails with ErrAuth when no access token can be had.
func (e *vertexEndpoint) NewRequest(ctx context.Context, op, model string, body []byte, h http.Header) (*http.Request, error) {
	target, body, err := e.target(op, model, body)
	if err != nil {
		return nil, err
	}
	bearer, err := e.tokens.header()
	if err != nil {
		return nil, err
	}
	req, err := newPost(ctx, target, body, h)
	if err != nil {
		return nil, err
	}
	e.authorize(req.Header, bearer)
	return req, nil
}

// target is the URL and body of operation op for model.
func (e *vertexEndpoint) target(op, model string, body []byte) (string, []byte, error) {
	switch op {
	case codec.Gemini.Op(false), codec.Gemini.Op(true), codec.GeminiCountTokens.Op(false):
		return e.models + "google/models/" + url.PathEscape(model) + ":" + op, body, nil
	case codec.Anthropic.Op(false):
		method := ":rawPredict"
		if gjson.GetBytes(body, "stream").Bool() {
			method = ":streamRawPredict"
		}
		body, err := vertexClaudeBody(body, true)
		return e.models + "anthropic/models/" + url.PathEscape(model) + method, body, err
	case codec.AnthropicCountTokens.Op(false):
		body, err := vertexClaudeBody(body, false)
		return e.models + "anthropic/models/count-tokens:rawPredict", body, err
	}
	return "", nil, fmt.Errorf("building upstream request: provider vertex has no operation %q", op)
}

// versionField is the member a Claude body gains.
const versionField = `"anthropic_version":"` + VertexAnthropicVersion + `"`

// errNotObject: a Claude request body that is not a JSON object.
var errNotObject = errors.New("building upstream request: the body is not a JSON object")

// vertexClaudeBody returns body without its model (when dropModel) and
// with anthropic_version first unless it has one. body is never modified:
// the proxy reuses it for other attempts.
func vertexClaudeBody(body []byte, dropModel bool) ([]byte, error) {
	for dropModel && gjson.GetBytes(body, "model").Exists() { // every one of duplicate keys
		var err error
		if body, err = sjson.DeleteBytes(body, "model"); err != nil {
			return nil, fmt.Errorf("building upstream request: removing model: %w", err)
		}
	}
	if gjson.GetBytes(body, "anthropic_version").Exists() {
		return body, nil
	}
	i := bytes.IndexByte(body, '{')
	if i < 0 || len(bytes.TrimSpace(body[:i])) > 0 {
		return nil, errNotObject
	}
	rest := body[i+1:]
	out := make([]byte, 0, len(body)+len(versionField)+1)
	out = append(out, body[:i+1]...)
	out = append(out, versionField...)
	if r := bytes.TrimLeft(rest, " \t\r\n"); len(r) > 0 && r[0] != '}' {
		out = append(out, ',')
	}
	return append(out, rest...), nil
}

// ProbeRequest gets the publisher's model resource ("models", free), or
// asks the model for one token without thinking ("chat").
func (e *vertexEndpoint) ProbeRequest(ctx context.Context, kind, model string) (*http.Request, error) {
	if kind == "chat" {
		if isClaude(model) {
			return e.NewRequest(ctx, codec.Anthropic.Op(false), model, claudeProbeBody, http.Header{})
		}
		return e.NewRequest(ctx, codec.Gemini.Op(false), model, vertexGeminiProbeBody(model), http.Header{})
	}
	bearer, err := e.tokens.header()
	if err != nil {
		return nil, err
	}
	publisher := "google/models/"
	if isClaude(model) {
		publisher = "anthropic/models/"
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.publishers+publisher+url.PathEscape(model), nil)
	if err != nil {
		return nil, fmt.Errorf("building probe request: %w", err)
	}
	e.authorize(req.Header, bearer)
	return req, nil
}

// claudeProbeBody asks a Claude model for one token, without thinking.
var claudeProbeBody = []byte(`{"max_tokens":1,"messages":[{"role":"user","content":"ping"}]}`)

// vertexGeminiProbeBody asks model for one token. Gemini 2.5 Flash models
// think unless their thinkingBudget is 0; the Pro models (and Gemini 3)
// refuse a budget of 0, and the token limit cuts their thinking instead.
func vertexGeminiProbeBody(model string) []byte {
	if strings.HasPrefix(model, "gemini-2.5-flash") {
		return geminiNoThinkingProbeBody
	}
	return geminiProbeBody
}

var geminiNoThinkingProbeBody = []byte(`{"contents":[{"role":"user","parts":[{"text":"ping"}]}],"generationConfig":{"maxOutputTokens":1,"thinkingConfig":{"thinkingBudget":0}}}`)

// Classify is ClassifyStatus (401/403 auth errors, 400/404 the client's,
// 429 throttling, 5xx and 529 server errors); a 429 asks for the cooldown
// its RetryInfo names, else its Retry-After, else none. An auth error's
// detail names Google's status (UNAUTHENTICATED, PERMISSION_DENIED).
func (e *vertexEndpoint) Classify(status int, h http.Header, body []byte) outcome.Outcome {
	o := outcome.Outcome{Class: ClassifyStatus(status), Status: status}
	switch o.Class {
	case outcome.RateLimited:
		o.Cooldown = googleCooldown(h, body)
	case outcome.AuthError:
		if s := gjson.GetBytes(body, "error.status").String(); isGoogleStatus(s) {
			o.Detail = fmt.Sprintf("status %d %s", status, s)
		}
	}
	return o
}

// isGoogleStatus reports whether s looks like a google.rpc.Code name
// (PERMISSION_DENIED): upper-case letters and '_', so that nothing else of
// a body reaches a log.
func isGoogleStatus(s string) bool {
	if s == "" || len(s) > 40 {
		return false
	}
	for _, r := range s {
		if !(r >= 'A' && r <= 'Z' || r == '_') {
			return false
		}
	}
	return true
}
