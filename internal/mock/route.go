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

// parseRoute maps a request to an endpoint: Vertex AI's paths
// (parseVertexRoute), or else it accepts the OpenAI paths with
// and without /v1 (a base_url may or may not include it), Azure's
// /openai/deployments/{d}/... and /openai/v1/..., Anthropic's /v1/messages,
// and Gemini's /v1beta/models/{model}:{method} (also under /v1 or without a
// prefix). GET /models answers in Anthropic's format when the request
// carries anthropic-version, and in Gemini's under /v1beta or with a Google
// API key (x-goog-api-key or ?key=). Bedrock's /model/{modelId}/converse
// and /converse-stream take the model id path-escaped (an inference
// profile ARN holds slashes).
func parseRoute(r *http.Request) route {
	if rest, ok := strings.CutPrefix(r.URL.EscapedPath(), "/model/"); ok {
		return bedrockRoute(rest)
	}
	if rt, ok := parseVertexRoute(r); ok {
		return rt
	}
	p := strings.TrimSuffix(r.URL.Path, "/")
	var rt route
	google := hasGoogleKey(r)
	if rest, ok := strings.CutPrefix(p, "/v1beta/"); ok {
		p, google = "/"+rest, true
	} else if rest, ok := strings.CutPrefix(p, "/openai/deployments/"); ok {
		d, sub, _ := strings.Cut(rest, "/")
		rt.deployment = d
		p = "/" + sub
	} else if rest, ok := strings.CutPrefix(p, "/openai/"); ok {
		p = "/" + rest
	}
	if rest, ok := strings.CutPrefix(p, "/v1/"); ok {
		p = "/" + rest
	}
	rt.proto = protoOpenAI
	switch {
	case google:
		rt.proto = protoGemini
	case r.Header.Get("anthropic-version") != "":
		rt.proto = protoAnthropic
	}
	switch {
	case p == "/chat/completions":
		rt.endpoint, rt.method, rt.proto = epChat, http.MethodPost, protoOpenAI
	case p == "/completions":
		rt.endpoint, rt.method, rt.proto = epCompletions, http.MethodPost, protoOpenAI
	case p == "/embeddings":
		rt.endpoint, rt.method, rt.proto = epEmbeddings, http.MethodPost, protoOpenAI
	case p == "/responses":
		rt.endpoint, rt.method, rt.proto = epResponses, http.MethodPost, protoOpenAI
	case p == "/messages":
		rt.endpoint, rt.method, rt.proto = epMessages, http.MethodPost, protoAnthropic
	case p == "/messages/count_tokens":
		rt.endpoint, rt.method, rt.proto = epClaudeCountTokens, http.MethodPost, protoAnthropic
	case p == "/models":
		rt.endpoint, rt.method = epModels, http.MethodGet
	case strings.HasPrefix(p, "/models/") && len(p) > len("/models/"):
		model := strings.TrimPrefix(p, "/models/")
		if i := strings.LastIndexByte(model, ':'); i >= 0 {
			rt.modelID, rt.proto, rt.method = model[:i], protoGemini, http.MethodPost
			rt.endpoint = geminiEndpoint(model[i+1:])
			break
		}
		rt.endpoint, rt.method = epModels, http.MethodGet
		rt.modelID = model
	default:
		rt.endpoint = epUnknown
	}
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
