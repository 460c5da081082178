// Package provider holds the provider adapters
// (docs/architecture.md#the-three-seams, docs/providers.md): one type per
// upstream family that builds the upstream request (URL, auth, where the model
// goes), classifies the answer into an outcome, and says how its streams end. A
// Registry maps the config's `provider` value to its adapter; configuration
// validation, the proxy, the prober and explain all ask the registry, and
// nothing else compares provider names.
package provider

import (
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"time"

	"switchyard/internal/codec"
	"switchyard/internal/outcome"
)

// The names of the built-in providers, the config's `provider` values.
const (
	NameOpenAI           = "openai"
	NameOpenAICompatible = "openai-compatible"
	NameAzureOpenAI      = "azure-openai"
	NameAnthropic        = "anthropic"
	NameGemini           = "gemini"
	NameVertex           = "vertex"
	NameBedrock          = "bedrock"
)

// ErrAuth is wrapped by an Endpoint's NewRequest or ProbeRequest error
// when the upstream's own credentials could not be turned into a request
// (a failed token exchange): an auth error of that upstream
// (docs/reference.md#outcome-classes), not a server error.
var ErrAuth = errors.New("upstream credentials refused")

// Upstream is what an adapter needs of one upstream's configuration.
type Upstream struct {
	// Name is the upstream's name, for error messages.
	Name string
	// BaseURL is the prefix the adapter appends operations to.
	BaseURL string
	// APIKey is the upstream's credential; never logged or echoed.
	APIKey string
	// APIVersion is the configured API version; "" for the adapter's default.
	APIVersion string
	// Headers are extra headers sent with every request.
	Headers map[string]string
	// Organization and Project scope an OpenAI-family upstream's requests
	// to one organization and project its key can reach (the
	// OpenAI-Organization and OpenAI-Project headers); "" sends none.
	// Providers without such a notion refuse them in Check.
	Organization, Project string
	// Bedrock, Vertex and Azure are those providers' own settings; nil for others.
	Bedrock *BedrockSettings
	Vertex  *VertexSettings
	Azure   *AzureSettings
	// Clock tells the time that signs requests (Bedrock's SigV4); nil, as
	// config.Upstream.Adapter leaves it, is the wall clock. A caller that
	// runs on a fake clock sets it, so that signatures carry the time its
	// upstreams (mocks on the same clock) expect.
	Clock func() time.Time
	// Transport carries the adapter's own exchanges besides the upstream
	// request (the token requests of Vertex and Entra ID); nil is http.DefaultTransport. The
	// gateway passes its upstream transport, so that a simulation's
	// virtual upstreams answer those too.
	Transport http.RoundTripper
	// Simulated: the upstream is only simulated (switchyard simulate), so
	// its credentials are never used and Check does not read them (a key
	// file that exists only where the gateway runs in production).
	Simulated bool
}

// Problem is one invalid provider-specific setting.
type Problem struct {
	// Field is the key below the upstream ("api_key", "api_version").
	Field string
	// Message says what is wrong, never echoing a secret.
	Message string
}

// Provider is one kind of upstream: the registry's entry for a `provider`
// value. Implementations are stateless.
type Provider interface {
	// Name is the config's `provider` value.
	Name() string
	// System is the provider's gen_ai.system in the OpenTelemetry GenAI
	// semantic conventions ("openai", "aws.bedrock", …; "_OTHER" for a
	// server the conventions do not name), for trace attributes.
	System() string
	// Check validates the provider-specific settings of u.
	Check(u Upstream) []Problem
	// New returns the endpoint of one configured upstream. u has passed Check.
	New(u Upstream) Endpoint
}

// Endpoint is one configured upstream as its adapter addresses it. It is
// safe for concurrent use; the proxy calls it on the hot path.
type Endpoint interface {
	// Family is the wire family the upstream speaks for model (its own
	// name for it, after model_map): Vertex serves Gemini models in
	// Gemini's protocol and Anthropic's in Anthropic's.
	Family(model string) codec.Family
	// NewRequest builds the request of operation op (codec.Codec.Op) for
	// the upstream's model name with body, whose headers start as h (the
	// client's headers the gateway forwards). It places the model where the
	// provider takes it and sets the credentials.
	NewRequest(ctx context.Context, op, model string, body []byte, h http.Header) (*http.Request, error)
	// ProbeRequest builds an active health probe
	// (docs/reference.md#circuit-breaker-and-probes): kind "models" lists models
	// (free), "chat" asks model for one token.
	ProbeRequest(ctx context.Context, kind, model string) (*http.Request, error)
	// Classify maps an answer's status, headers and (error) body to its
	// outcome class, with the cooldown a throttling answer asks for when
	// the provider says it in the body (headers are read by the limiter).
	Classify(status int, h http.Header, body []byte) outcome.Outcome
	// OpenStreamEnd reports whether a stream that ends without its
	// protocol's terminal event (OpenAI's [DONE]) is complete rather than
	// cut: some OpenAI-compatible servers never send it.
	OpenStreamEnd() bool
}

// Registry maps provider names to providers. A Registry is immutable.
type Registry struct {
	byName map[string]Provider
	names  []string
}

// NewRegistry returns a registry of ps, in that order; a later one of the
// same name replaces an earlier one.
func NewRegistry(ps ...Provider) *Registry {
	r := &Registry{byName: make(map[string]Provider, len(ps))}
	for _, p := range ps {
		if _, dup := r.byName[p.Name()]; !dup {
			r.names = append(r.names, p.Name())
		}
		r.byName[p.Name()] = p
	}
	return r
}

// With returns a registry of r's providers and ps.
func (r *Registry) With(ps ...Provider) *Registry {
	all := make([]Provider, 0, len(r.byName)+len(ps))
	for _, n := range r.names {
		all = append(all, r.byName[n])
	}
	return NewRegistry(append(all, ps...)...)
}

// Lookup returns the provider called name.
func (r *Registry) Lookup(name string) (Provider, bool) {
	p, ok := r.byName[name]
	return p, ok
}

// Names returns the registered provider names in registration order.
func (r *Registry) Names() []string { return slices.Clone(r.names) }

// builtin is the registry of the providers Switchyard ships.
var builtin = NewRegistry(OpenAI{}, Anthropic{}, AzureOpenAI{}, OpenAICompatible{}, Gemini{}, Vertex{}, Bedrock{})

// Builtin returns the registry of the providers Switchyard ships.
func Builtin() *Registry { return builtin }

// ClassifyStatus maps an HTTP status to its outcome class
// (docs/reference.md#outcome-classes): 2xx success; 401, 402 and 403 auth
// errors; 429 rate limited; 408 and 5xx server errors; any other 4xx the
// client's own error.
func ClassifyStatus(status int) outcome.Class {
	switch {
	case status < 300:
		return outcome.Success
	case status == 401 || status == 402 || status == 403:
		return outcome.AuthError
	case status == 429:
		return outcome.RateLimited
	case status == 408 || status >= 500:
		return outcome.ServerError
	}
	return outcome.ClientError
}

// Framer is an Endpoint whose streams are not server-sent events (Bedrock's
// binary AWS event-stream). The proxy reads a streamed answer through
// Events when it returns non-nil, else as SSE.
type Framer interface {
	// Events returns the events of a streamed answer whose headers are h,
	// or nil when h does not announce the provider's stream framing. Each
	// Event carries the frame's event type as Name and its payload as Data
	// (Raw may be empty: such events are only ever translated).
	Events(h http.Header, body io.Reader) codec.EventStream
}

// CredentialSourcer is a Provider whose credentials may come from
// somewhere else than the config file (the platform, the environment):
// check-config prints where each upstream's will come from.
type CredentialSourcer interface {
	// CredentialSource says where u's credentials come from, as far as
	// the settings and the environment tell without fetching anything;
	// never a secret. u has passed Check.
	CredentialSource(u Upstream) string
}

// BaseURLDefaulter is a Provider that knows its public endpoint: its
// upstreams may leave base_url unset (configuration validation asks).
type BaseURLDefaulter interface {
	// DefaultBaseURL is the base_url of u when it sets none; u has passed
	// Check.
	DefaultBaseURL(u Upstream) string
}

// BasePather is a Provider whose base_url ends with a version path after
// the host: its operations are appended to that path
// (https://api.openai.com/v1 + /chat/completions). A provider whose
// base_url is the bare host (Bedrock, an Azure resource) has none.
type BasePather interface {
	// BasePath is the path a base_url of the provider ends with, such as
	// "/v1".
	BasePath() string
}

// BaseURLAt is the base_url an upstream of provider name needs to reach a
// server of that provider's paths at root (a scheme and host, such as a
// mock's http://127.0.0.1:9001): root followed by the provider's
// BasePath, or root for a provider without one or unknown.
func (r *Registry) BaseURLAt(name, root string) string {
	if p, ok := r.byName[name].(BasePather); ok {
		return root + p.BasePath()
	}
	return root
}
