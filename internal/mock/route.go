package mock

import (
	"net/http"
	"net/url"
	"strings"
)

// protocol is the API family whose wire format a request gets.
type protocol int

const (
	protoOpenAI protocol = iota
	protoAnthropic
	protoGemini
	protoBedrock
)

// endpoint names, as counted in Stats.ByEndpoint.
const (
	epChat        = "chat/completions"
	epCompletions = "completions"
	epEmbeddings  = "embeddings"
	epResponses   = "responses"
	epMessages    = "messages"
	epModels      = "models"
	// Gemini's methods, after the model in the URL.
	epGenerate       = "generateContent"
	epStreamGenerate = "streamGenerateContent"
	epCountTokens    = "countTokens"
	epEmbedContent   = "embedContent"
	epBatchEmbed     = "batchEmbedContents"
	// Bedrock's operations, after /model/{modelId}/.
	epConverse       = "converse"
	epConverseStream = "converse-stream"
	epUnknown        = "unknown"
)

// route is what a request's method and path resolve to.
type route struct {
	endpoint   string
	proto      protocol
	method     string // the method the endpoint accepts
	modelID    string // GET /models/{id}, and Gemini's and Bedrock's model in the URL
	deployment string // Azure /openai/deployments/{deployment}/...
	// vertex: a Vertex AI path (vertex.go): OAuth2 tokens instead of keys,
	// the model in the URL, Google's shape for the platform's errors.
	vertex bool
	// vertexStream: Claude's streamRawPredict.
	vertexStream bool
}

// parseRoute maps a request to an endpoint, accepting exactly the paths the
// real services serve, so that a base_url that would fail in production
// fails against the mock too (docs/providers.md lists each provider's
// base_url):
//
//   - OpenAI and Anthropic under /v1 ({base_url} https://api.openai.com/v1,
//     https://api.anthropic.com/v1): chat/completions, completions,
//     embeddings, responses, messages, messages/count_tokens, models[/{id}];
//     GET /v1/models answers in Anthropic's format when the request carries
//     anthropic-version;
//   - Azure's /openai/deployments/{d}/{op}, /openai/responses and
//     /openai/models, each with ?api-version=, and its /openai/v1/{op};
//   - Gemini's /v1beta/models[/{model}[:{method}]];
//   - Vertex AI's (parseVertexRoute) and Bedrock's /model/{modelId}/converse
//     and /converse-stream, the model id path-escaped (an inference profile
//     ARN holds slashes).
//
// Any other path is epUnknown, refused with 404 in the shape of the family
// the request's headers name (a Google API key: Gemini; anthropic-version:
// Anthropic; else OpenAI).
func parseRoute(r *http.Request) route {
	if rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/model/"); ok {
		return bedrockRoute(rest)
	}
	if rt, ok := parseVertexRoute(r); ok {
		return rt
	}
	p := strings.TrimSuffix(r.URL.Path, "/")
	if rest, ok := strings.CutPrefix(p, "/v1beta/"); ok {
		return geminiRoute(rest)
	}
	if rest, ok := strings.CutPrefix(p, "/openai/"); ok {
		return azureRoute(rest, r.URL.Query().Has("api-version"))
	}
	rt := route{proto: protoOpenAI, endpoint: epUnknown}
	switch {
	case hasGoogleKey(r):
		rt.proto = protoGemini
		return rt // Gemini's paths are under /v1beta only
	case r.Header.Get("anthropic-version") != "":
		rt.proto = protoAnthropic
	}
	if rest, ok := strings.CutPrefix(p, "/v1/"); ok {
		return openAIRoute(rt, rest)
	}
	return rt
}

// openAIRoute resolves the path after OpenAI's and Anthropic's /v1/ (or
// Azure's /openai/v1/); rt holds the family the headers name.
func openAIRoute(rt route, p string) route {
	switch p {
	case epChat, epCompletions, epEmbeddings, epResponses:
		rt.endpoint, rt.method, rt.proto = p, http.MethodPost, protoOpenAI
	case epMessages:
		rt.endpoint, rt.method, rt.proto = epMessages, http.MethodPost, protoAnthropic
	case "messages/count_tokens":
		rt.endpoint, rt.method, rt.proto = epClaudeCountTokens, http.MethodPost, protoAnthropic
	case epModels:
		rt.endpoint, rt.method = epModels, http.MethodGet
	default:
		// A model id may hold colons (ft:gpt-4o:org::id) but no slash.
		if id, ok := strings.CutPrefix(p, "models/"); ok && id != "" && !strings.Contains(id, "/") {
			rt.endpoint, rt.method, rt.modelID = epModels, http.MethodGet, id
		}
	}
	return rt
}

// azureRoute resolves the path after Azure's /openai/: a deployment's
// operation or the resource-level responses and models, which need an
// api-version (Azure answers 404 without one), or the v1 API's operations.
func azureRoute(p string, versioned bool) route {
	rt := route{proto: protoOpenAI, endpoint: epUnknown}
	if rest, ok := strings.CutPrefix(p, "v1/"); ok {
		if rt = openAIRoute(rt, rest); rt.proto != protoOpenAI {
			rt = route{proto: protoOpenAI, endpoint: epUnknown}
		}
		return rt
	}
	if !versioned {
		return rt
	}
	switch p {
	case epResponses:
		rt.endpoint, rt.method = epResponses, http.MethodPost
		return rt
	case epModels:
		rt.endpoint, rt.method = epModels, http.MethodGet
		return rt
	}
	d, op, ok := strings.Cut(strings.TrimPrefix(p, "deployments/"), "/")
	if !ok || d == "" || !strings.HasPrefix(p, "deployments/") {
		return rt
	}
	switch op {
	case epChat, epCompletions, epEmbeddings:
		rt.endpoint, rt.method, rt.deployment = op, http.MethodPost, d
	}
	return rt
}

// geminiRoute resolves the path after Gemini's /v1beta/: the model list,
// a model, or a model's method.
func geminiRoute(p string) route {
	rt := route{proto: protoGemini, endpoint: epUnknown}
	if p == epModels {
		rt.endpoint, rt.method = epModels, http.MethodGet
		return rt
	}
	model, ok := strings.CutPrefix(p, "models/")
	if !ok || model == "" || strings.Contains(model, "/") {
		return rt
	}
	if m, method, ok := cutLast(model, ':'); ok {
		rt.modelID, rt.method, rt.endpoint = m, http.MethodPost, geminiEndpoint(method)
		return rt
	}
	rt.endpoint, rt.method, rt.modelID = epModels, http.MethodGet, model
	return rt
}

// geminiEndpoint names a Gemini method, or epUnknown.
func geminiEndpoint(method string) string {
	switch method {
	case epGenerate, epStreamGenerate, epCountTokens, epEmbedContent, epBatchEmbed:
		return method
	}
	return epUnknown
}

// bedrockRoute resolves the path after /model/: {modelId}/{operation}.
func bedrockRoute(rest string) route {
	rt := route{proto: protoBedrock, method: http.MethodPost, endpoint: epUnknown}
	i := strings.LastIndexByte(rest, '/')
	if i <= 0 {
		return rt
	}
	id, err := url.PathUnescape(rest[:i])
	if err != nil {
		return rt
	}
	rt.modelID = id
	switch op := rest[i+1:]; op {
	case epConverse, epConverseStream:
		rt.endpoint = op
	}
	return rt
}

// hasGoogleKey reports whether r carries a Google API key.
func hasGoogleKey(r *http.Request) bool {
	return r.Header.Get("x-goog-api-key") != "" || (r.URL.RawQuery != "" && r.URL.Query().Has("key"))
}

// streams reports whether the endpoint can answer with server-sent events.
func (rt route) streams() bool {
	switch rt.endpoint {
	case epChat, epCompletions, epResponses, epMessages, epStreamGenerate, epConverseStream:
		return true
	}
	return false
}

// generates reports whether the endpoint answers with generated tokens
// shaped by a convo (tools, images, reasoning, cache usage).
func (rt route) generates() bool {
	switch rt.endpoint {
	case epChat, epResponses, epMessages, epGenerate, epStreamGenerate, epConverse, epConverseStream:
		return true
	}
	return false
}

// inference reports whether the endpoint generates tokens and so counts
// against RPM/TPM.
func (rt route) inference() bool {
	return rt.method == http.MethodPost
}
