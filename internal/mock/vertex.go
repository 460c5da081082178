package mock

import (
	"net/http"
	"strings"

	"github.com/tidwall/gjson"
)

// Vertex AI's endpoint names, as counted in Stats.ByEndpoint (its Gemini
// methods and Claude's rawPredict count as "generateContent",
// "streamGenerateContent" and "messages").
const (
	// epClaudeCountTokens is Claude's token count: Anthropic's
	// /v1/messages/count_tokens and Vertex's count-tokens:rawPredict.
	epClaudeCountTokens = "count-tokens"
	// epPublisherModel is GET /v1/publishers/{publisher}/models/{model}.
	epPublisherModel = "publisherModel"
)

// VertexAnthropicVersion is the anthropic_version a Claude request on
// Vertex must carry in its body.
const VertexAnthropicVersion = "vertex-2023-10-16"

// vertexQuotaMessage is Vertex's message for a 429.
const vertexQuotaMessage = "Resource exhausted. Please try again later. Please refer to https://cloud.google.com/vertex-ai/generative-ai/docs/error-code-429 for more details."

// parseVertexRoute maps a Vertex AI path (after /v1 or /v1beta1, the
// version a Vertex base_url ends with) to its endpoint:
//
//	POST /projects/{p}/locations/{l}/publishers/google/models/{m}:{generateContent|streamGenerateContent|countTokens}
//	POST /projects/{p}/locations/{l}/publishers/anthropic/models/{m}:{rawPredict|streamRawPredict}
//	POST /projects/{p}/locations/{l}/publishers/anthropic/models/count-tokens:rawPredict
//	GET  /publishers/{google|anthropic}/models/{m}
//
// It reports false for a path that is not Vertex's; one without the
// version is Vertex's, and unknown.
func parseVertexRoute(r *http.Request) (route, bool) {
	p := strings.TrimSuffix(r.URL.Path, "/")
	rt := route{vertex: true, proto: protoGemini, endpoint: epUnknown, method: http.MethodPost}
	versioned := false
	for _, v := range [...]string{"/v1/", "/v1beta1/"} {
		if rest, ok := strings.CutPrefix(p, v); ok {
			p, versioned = "/"+rest, true
			break
		}
	}
	if !versioned {
		if strings.HasPrefix(p, "/projects/") || strings.HasPrefix(p, "/publishers/") {
			return rt, true
		}
		return route{}, false
	}
	if rest, ok := strings.CutPrefix(p, "/publishers/"); ok {
		pub, model, ok := strings.Cut(rest, "/models/")
		if ok && model != "" && !strings.Contains(model, "/") {
			rt.proto = publisherProto(pub)
			rt.endpoint, rt.method, rt.modelID = epPublisherModel, http.MethodGet, model
			if pub != "google" && pub != "anthropic" {
				rt.endpoint = epUnknown
			}
		}
		return rt, true
	}
	rest, ok := strings.CutPrefix(p, "/projects/")
	if !ok {
		return route{}, false
	}
	// {project}/locations/{location}/publishers/{publisher}/models/{model}:{method}
	parts := strings.Split(rest, "/")
	if len(parts) != 7 || parts[1] != "locations" || parts[3] != "publishers" || parts[5] != "models" {
		return rt, true
	}
	model, method, _ := cutLast(parts[6], ':')
	rt.modelID = model
	switch parts[4] {
	case "google":
		rt.endpoint = geminiEndpoint(method)
	case "anthropic":
		rt.proto = protoAnthropic
		switch {
		case model == "count-tokens" && method == "rawPredict":
			rt.endpoint = epClaudeCountTokens
		case method == "rawPredict":
			rt.endpoint = epMessages
		case method == "streamRawPredict":
			rt.endpoint, rt.vertexStream = epMessages, true
		}
	}
	return rt, true
}

// publisherProto is the protocol of a Vertex publisher's models.
func publisherProto(pub string) protocol {
	if pub == "anthropic" {
		return protoAnthropic
	}
	return protoGemini
}

// cutLast cuts s around the last sep.
func cutLast(s string, sep byte) (before, after string, found bool) {
	if i := strings.LastIndexByte(s, sep); i >= 0 {
		return s[:i], s[i+1:], true
	}
	return s, "", false
}

// errorProto is the shape of an error of status: Vertex answers its own
// errors (auth, an unknown model or path, quota, unavailability) in
// Google's shape whatever the publisher, and Claude's in Anthropic's.
func (c *call) errorProto(status int) protocol {
	if c.rt.vertex {
		switch status {
		case http.StatusUnauthorized, http.StatusForbidden, http.StatusNotFound, http.StatusMethodNotAllowed,
			http.StatusTooManyRequests, http.StatusServiceUnavailable:
			return protoGemini
		}
	}
	return c.rt.proto
}

// googleQuotaMessage is the 429 message of Google's API: Vertex's or
// Gemini's.
func (c *call) googleQuotaMessage() string {
	if c.rt.vertex {
		return vertexQuotaMessage
	}
	return geminiQuotaMessage
}

// parseVertex checks a Vertex request body as Vertex does: the model is
// the URL's; Gemini contents each name their role; a Claude request
// carries anthropic_version vertex-2023-10-16, no model, and "stream":
// true exactly when it calls streamRawPredict; count-tokens names its
// model in the body.
func (c *call) parseVertex() bool {
	c.model = c.rt.modelID
	switch c.rt.endpoint {
	case epClaudeCountTokens:
		m := gjson.GetBytes(c.body, "model")
		if m.Type != gjson.String || m.Str == "" {
			c.fail(statusError(protoAnthropic, http.StatusBadRequest, "model: Field required"))
			return false
		}
		c.model = m.Str
		return c.checkAnthropicVersion(false)
	case epMessages:
		if gjson.GetBytes(c.body, "model").Exists() {
			c.fail(statusError(protoAnthropic, http.StatusBadRequest, "model: Extra inputs are not permitted"))
			return false
		}
		if !c.checkAnthropicVersion(true) {
			return false
		}
		c.stream = gjson.GetBytes(c.body, "stream").Bool()
		if c.stream != c.rt.vertexStream {
			msg := `rawPredict does not stream: remove "stream": true or call streamRawPredict`
			if c.rt.vertexStream {
				msg = `streamRawPredict requires "stream": true`
			}
			c.fail(statusError(protoAnthropic, http.StatusBadRequest, msg))
			return false
		}
		return true
	}
	c.stream = c.rt.endpoint == epStreamGenerate
	for _, content := range gjson.GetBytes(c.body, "contents").Array() {
		if content.Get("role").String() == "" {
			c.fail(*geminiInvalid("Please use a valid role: user, model."))
			return false
		}
	}
	return true
}

// checkAnthropicVersion answers 400 unless the body's anthropic_version
// is VertexAnthropicVersion (or, when not required, absent).
func (c *call) checkAnthropicVersion(required bool) bool {
	v := gjson.GetBytes(c.body, "anthropic_version")
	switch {
	case !v.Exists() && !required:
		return true
	case !v.Exists():
		c.fail(statusError(protoAnthropic, http.StatusBadRequest, "anthropic_version: Field required"))
	case v.String() != VertexAnthropicVersion:
		c.fail(statusError(protoAnthropic, http.StatusBadRequest, "anthropic_version: Input should be '"+VertexAnthropicVersion+"'"))
	default:
		return true
	}
	return false
}

// claudeCountTokens answers count-tokens:rawPredict with the prompt
// estimate, {"input_tokens": n}.
func (c *call) claudeCountTokens() {
	if len(gjson.GetBytes(c.body, "messages").Array()) == 0 {
		c.fail(statusError(protoAnthropic, http.StatusBadRequest, "messages: Field required"))
		return
	}
	c.writeJSON(http.StatusOK, obj{"input_tokens": c.promptTokens()})
}

// publisherModel answers GET /publishers/{publisher}/models/{model} with
// the PublisherModel resource: a model the mock lists, or one whose name
// is its publisher's (claude… for anthropic, gemini… for google); else
// 404 NOT_FOUND.
func (c *call) publisherModel() {
	id := c.rt.modelID
	pub := "google"
	if c.rt.proto == protoAnthropic {
		pub = "anthropic"
	}
	claude := strings.HasPrefix(id, "claude")
	known := claude || strings.HasPrefix(id, "gemini")
	for _, m := range c.s.models {
		known = known || m == id
	}
	known = known && claude == (pub == "anthropic")
	name := "publishers/" + pub + "/models/" + id
	if !known {
		c.fail(statusError(protoGemini, http.StatusNotFound, "Publisher Model `"+name+"` not found."))
		return
	}
	c.writeJSON(http.StatusOK, obj{
		"name": name, "versionId": "001", "openSourceCategory": "PROPRIETARY", "launchStage": "GA",
		"publisherModelTemplate": "projects/{project}/locations/{location}/" + name,
	})
}
