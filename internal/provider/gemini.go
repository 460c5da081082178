package provider

import (
	"context"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	"github.com/tidwall/gjson"

	"switchyard/internal/codec"
	"switchyard/internal/outcome"
)

// Gemini is Google's Gemini API (AI Studio): the `x-goog-api-key` header,
// and the model in the URL — {base_url}/models/{model}:{op}, op being the
// codec's (generateContent, streamGenerateContent?alt=sse). Its throttling
// is a 429 RESOURCE_EXHAUSTED whose google.rpc.RetryInfo names the wait,
// usually without Retry-After; a wrong key is a 400 INVALID_ARGUMENT with
// reason API_KEY_INVALID, which is an auth error, not the client's.
type Gemini struct{}

// DefaultGeminiBaseURL is used when a gemini upstream sets no base_url.
const DefaultGeminiBaseURL = "https://generativelanguage.googleapis.com/v1beta"

var (
	_ Provider         = Gemini{}
	_ BaseURLDefaulter = Gemini{}
	_ BasePather       = Gemini{}
	_ Endpoint         = (*geminiEndpoint)(nil)
)

// Name is "gemini".
func (Gemini) Name() string { return NameGemini }

// System is the GenAI semantic conventions' name of the provider.
func (Gemini) System() string { return "gcp.gemini" }

// BasePath is "/v1beta", the version DefaultGeminiBaseURL ends with.
func (Gemini) BasePath() string { return "/v1beta" }

// DefaultBaseURL is DefaultGeminiBaseURL.
func (Gemini) DefaultBaseURL(Upstream) string { return DefaultGeminiBaseURL }

// Check requires api_key, and a base_url that is an absolute http(s) URL
// without query or fragment when one is set; organization and project are
// refused.
func (Gemini) Check(u Upstream) []Problem {
	ps := append(requireKey(NameGemini, u), refuseScope(NameGemini, u,
		"a Gemini API key belongs to one Google Cloud project, which it bills; for another project add an upstream with that project's key")...)
	if u.BaseURL != "" {
		if msg := checkPrefixURL(u.BaseURL); msg != "" {
			ps = append(ps, Problem{Field: "base_url", Message: msg})
		}
	}
	return ps
}

// New returns the endpoint of u, on DefaultGeminiBaseURL when u sets no
// base_url.
func (Gemini) New(u Upstream) Endpoint {
	base := u.BaseURL
	if base == "" {
		base = DefaultGeminiBaseURL
	}
	return &geminiEndpoint{base: strings.TrimRight(base, "/") + "/models/", key: []string{u.APIKey}, extra: u.Headers}
}

type geminiEndpoint struct {
	base  string // base_url + "/models/"
	key   []string
	extra map[string]string
}

func (e *geminiEndpoint) Family(string) codec.Family { return codec.FamilyGemini }

// OpenStreamEnd is false: a Gemini stream is complete once a chunk carried
// a finishReason (the codec watches for it), cut otherwise.
func (e *geminiEndpoint) OpenStreamEnd() bool { return false }

// authorize sets the configured headers and the key; a bearer token that
// reached the headers would make Google try it as OAuth, so it goes.
func (e *geminiEndpoint) authorize(h http.Header) {
	setExtra(h, e.extra)
	h.Del("Authorization")
	h["X-Goog-Api-Key"] = e.key
}

// NewRequest posts body to {base}/models/{model}:{op}, the model
// path-escaped.
func (e *geminiEndpoint) NewRequest(ctx context.Context, op, model string, body []byte, h http.Header) (*http.Request, error) {
	req, err := newPost(ctx, e.base+url.PathEscape(model)+":"+op, body, h)
	return withAuth(req, err, e.authorize)
}

// ProbeRequest gets the model ("models", free), or asks it for one token
// ("chat").
func (e *geminiEndpoint) ProbeRequest(ctx context.Context, kind, model string) (*http.Request, error) {
	if kind == "chat" {
		return e.NewRequest(ctx, codec.Gemini.Op(false), model, geminiProbeBody, http.Header{})
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, strings.TrimSuffix(e.base+url.PathEscape(model), "/"), nil)
	return withAuth(req, err, e.authorize)
}

// geminiProbeBody asks for one token.
var geminiProbeBody = []byte(`{"contents":[{"role":"user","parts":[{"text":"ping"}]}],"generationConfig":{"maxOutputTokens":1}}`)

// Classify is ClassifyStatus, but a 400 whose ErrorInfo reason is
// API_KEY_INVALID is an auth error, and a 429 asks for the cooldown its
// RetryInfo.retryDelay names ("30s", "1.5s"), else its Retry-After
// seconds, else none (the limiter's backoff applies).
func (e *geminiEndpoint) Classify(status int, h http.Header, body []byte) outcome.Outcome {
	o := outcome.Outcome{Class: ClassifyStatus(status), Status: status}
	switch status {
	case http.StatusBadRequest:
		if gjson.GetBytes(body, `error.details.#(reason=="API_KEY_INVALID")`).Exists() {
			o.Class, o.Detail = outcome.AuthError, "API key not valid (API_KEY_INVALID)"
		}
	case http.StatusTooManyRequests:
		o.Cooldown = googleCooldown(h, body)
	}
	return o
}

// googleCooldown is the cooldown a Google 429 (RESOURCE_EXHAUSTED) asks
// for: its RetryInfo.retryDelay, else its Retry-After seconds, else none
// (the limiter's backoff applies). Gemini and Vertex share it.
func googleCooldown(h http.Header, body []byte) time.Duration {
	if d := retryDelay(body); d > 0 {
		return d
	}
	return retryAfterSeconds(h)
}

// retryDelay reads the retryDelay of a google.rpc.RetryInfo among a Google
// error's details: a protobuf Duration in JSON, decimal seconds with an
// "s" ("30s", "1.5s"); 0 when there is none or it is not positive.
func retryDelay(body []byte) time.Duration {
	v := gjson.GetBytes(body, `error.details.#(@type=="type.googleapis.com/google.rpc.RetryInfo").retryDelay`).String()
	secs, ok := strings.CutSuffix(v, "s")
	if !ok {
		return 0
	}
	f, err := strconv.ParseFloat(secs, 64)
	if err != nil || !(f > 0) || f > maxRetryDelay.Seconds() {
		return 0
	}
	return time.Duration(f * float64(time.Second))
}

// maxRetryDelay bounds a retryDelay that is read, so that a huge value
// cannot overflow (the limiter caps the cooldown lower still).
const maxRetryDelay = 24 * time.Hour

// retryAfterSeconds reads a Retry-After of delta seconds; 0 when absent
// or not a positive integer.
func retryAfterSeconds(h http.Header) time.Duration {
	n, err := strconv.Atoi(strings.TrimSpace(h.Get("Retry-After")))
	if err != nil || n <= 0 {
		return 0
	}
	return time.Duration(n) * time.Second
}

// checkPrefixURL returns "" when s is an absolute http(s) URL with a host
// and without query or fragment (operations are appended to it), else the
// problem.
func checkPrefixURL(s string) string {
	u, err := url.Parse(s)
	switch {
	case err != nil || u.Host == "":
		return "must be an absolute http(s) URL with a host, such as " + DefaultGeminiBaseURL + ", got \"" + s + "\""
	case u.Scheme != "http" && u.Scheme != "https":
		return "scheme must be http or https, got \"" + u.Scheme + "\""
	case u.RawQuery != "" || u.ForceQuery || u.Fragment != "":
		return "must not have a query or fragment (the gateway appends paths to it), got \"" + s + "\""
	}
	return ""
}
