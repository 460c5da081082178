package mock

import (
	"net/http"
	"strings"
)

// protocol is the API family whose wire format a request gets.
type protocol int

const (
	protoOpenAI protocol = iota
	protoAnthropic
)

// endpoint names, as counted in Stats.ByEndpoint.
const (
	epChat        = "chat/completions"
	epCompletions = "completions"
	epEmbeddings  = "embeddings"
	epResponses   = "responses"
	epMessages    = "messages"
	epModels      = "models"
	epUnknown     = "unknown"
)

// route is what a request's method and path resolve to.
type route struct {
	endpoint   string
	proto      protocol
	method     string // the method the endpoint accepts
	modelID    string // GET /models/{id}
	deployment string // Azure /openai/deployments/{deployment}/...
}

// parseRoute maps a request to an endpoint. It accepts the OpenAI paths with
// and without /v1 (a base_url may or may not include it), Azure's
// /openai/deployments/{d}/... and /openai/v1/..., and Anthropic's
// /v1/messages. GET /models answers in Anthropic's format when the request
// carries anthropic-version.
func parseRoute(r *http.Request) route {
	p := strings.TrimSuffix(r.URL.Path, "/")
	var rt route
	if rest, ok := strings.CutPrefix(p, "/openai/deployments/"); ok {
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
	if r.Header.Get("anthropic-version") != "" {
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
	case p == "/models":
		rt.endpoint, rt.method = epModels, http.MethodGet
	case strings.HasPrefix(p, "/models/") && len(p) > len("/models/"):
		rt.endpoint, rt.method = epModels, http.MethodGet
		rt.modelID = strings.TrimPrefix(p, "/models/")
	default:
		rt.endpoint = epUnknown
	}
	return rt
}

// streams reports whether the endpoint can answer with server-sent events.
func (rt route) streams() bool {
	switch rt.endpoint {
	case epChat, epCompletions, epResponses, epMessages:
		return true
	}
	return false
}

// inference reports whether the endpoint generates tokens and so counts
// against RPM/TPM.
func (rt route) inference() bool {
	return rt.method == http.MethodPost
}
