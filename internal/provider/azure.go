package provider

import (
	"context"
	"net/http"
	"net/url"
	"strings"

	"switchyard/internal/codec"
	"switchyard/internal/outcome"
)

// AzureOpenAI is Azure OpenAI: the `api-key` header, or with azure.auth
// entra a Microsoft Entra ID token as Authorization: Bearer, and a deployment in
// the URL — {base_url}/openai/deployments/{model}/{op}?api-version=V — where
// the model is the upstream's name for it (its model_map entry).
type AzureOpenAI struct{}

// DefaultAzureAPIVersion is used when an azure-openai upstream sets no api_version.
const DefaultAzureAPIVersion = "2024-10-21"

var (
	_ Provider = AzureOpenAI{}
	_ Endpoint = (*azureEndpoint)(nil)
)

func (AzureOpenAI) Name() string { return NameAzureOpenAI }

// System is the GenAI semantic conventions' name of the provider.
func (AzureOpenAI) System() string { return "azure.ai.openai" }

// Check requires api_key, or with azure.auth entra the Entra ID
// application (checkAzure); api_version must be a date.
func (AzureOpenAI) Check(u Upstream) []Problem {
	ps := append(checkAzure(u), checkDatedVersion(u)...)
	return append(ps, refuseScope(NameAzureOpenAI, u,
		"Azure bills the resource of base_url and api_key; for another resource or subscription add an upstream with its own base_url and api_key")...)
}

func (AzureOpenAI) New(u Upstream) Endpoint {
	v := u.APIVersion
	if v == "" {
		v = DefaultAzureAPIVersion
	}
	e := &azureEndpoint{base: strings.TrimRight(u.BaseURL, "/"), key: []string{u.APIKey}, extra: u.Headers,
		query: url.Values{"api-version": {v}}.Encode()}
	if u.Azure != nil && u.Azure.Auth == AzureAuthEntra {
		e.tokens = newEntraTokenSource(*u.Azure, u.Transport)
	}
	return e
}

type azureEndpoint struct {
	base   string
	key    []string
	tokens *tokenSource // Entra ID; nil sends key as api-key
	extra  map[string]string
	query  string // api-version=V
}

func (e *azureEndpoint) Family(string) codec.Family { return codec.FamilyOpenAI }
func (e *azureEndpoint) OpenStreamEnd() bool        { return false }

// url addresses op: a deployment's operation, or the resource-level
// responses and models.
func (e *azureEndpoint) url(op, model string) string {
	if op == "responses" || op == "models" {
		return e.base + "/openai/" + op + "?" + e.query
	}
	return e.base + "/openai/deployments/" + url.PathEscape(model) + "/" + op + "?" + e.query
}

// authorized sets the configured headers and the api-key, or the Entra
// ID token as Authorization: Bearer; its error wraps ErrAuth.
func (e *azureEndpoint) authorized(req *http.Request, err error) (*http.Request, error) {
	if err != nil {
		return nil, err
	}
	setExtra(req.Header, e.extra)
	if e.tokens == nil {
		req.Header["Api-Key"] = e.key
		return req, nil
	}
	bearer, err := e.tokens.header()
	if err != nil {
		return nil, err
	}
	req.Header.Del("Api-Key")
	req.Header["Authorization"] = bearer
	return req, nil
}

func (e *azureEndpoint) NewRequest(ctx context.Context, op, model string, body []byte, h http.Header) (*http.Request, error) {
	return e.authorized(newPost(ctx, e.url(op, model), body, h))
}

func (e *azureEndpoint) ProbeRequest(ctx context.Context, kind, model string) (*http.Request, error) {
	if kind == "chat" {
		return e.NewRequest(ctx, "chat/completions", model, chatProbeBody(model), http.Header{})
	}
	return e.authorized(http.NewRequestWithContext(ctx, http.MethodGet, e.url("models", ""), nil))
}

func (e *azureEndpoint) Classify(status int, _ http.Header, _ []byte) outcome.Outcome {
	return outcome.Outcome{Class: ClassifyStatus(status), Status: status}
}
