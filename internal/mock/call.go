package mock

import (
	"errors"
	"fmt"
	"net/http"
	"time"

	"github.com/tidwall/gjson"
)

// call is one API request being answered.
type call struct {
	s    *Server
	w    http.ResponseWriter
	r    *http.Request
	rt   route
	b    Behavior  // snapshot taken when the request arrived
	now  time.Time // when the request arrived, by the server's clock
	body []byte

	model   string // the request's model (or Azure deployment, or Gemini's URL model)
	stream  bool
	limits  limitState
	limited bool // limits holds the state to report
	prompt  int  // promptTokens, once computed

	// For the endpoints that generate (route.generates): what the request
	// asks, and the answer planned for it.
	cv  *convo
	rep reply
}

func (c *call) serve(readErr error) {
	ctx := c.r.Context()
	if c.rt.endpoint == epUnknown {
		e := statusError(c.rt.proto, http.StatusNotFound, fmt.Sprintf("Invalid URL (%s %s)", c.r.Method, c.r.URL.Path))
		e.code = "" // OpenAI's code is null: no model is at fault
		c.fail(e)
		return
	}
	if c.r.Method != c.rt.method {
		c.w.Header().Set("Allow", c.rt.method)
		c.fail(statusError(c.rt.proto, http.StatusMethodNotAllowed,
			fmt.Sprintf("Method %s is not allowed for %s; use %s", c.r.Method, c.r.URL.Path, c.rt.method)))
		return
	}
	if readErr != nil {
		if _, ok := errors.AsType[*http.MaxBytesError](readErr); ok {
			c.fail(statusError(c.rt.proto, http.StatusRequestEntityTooLarge, "request body too large"))
		}
		return // the client went away while sending
	}
	if c.b.Hang {
		if c.s.hangHook != nil {
			c.s.hangHook()
		}
		<-ctx.Done()
		return
	}
	if !c.sleep(c.b.Latency) {
		return
	}
	c.now = c.s.clock.Now()
	if c.b.ForceStatus != 0 {
		c.fail(c.forcedError(c.b.ForceStatus))
		return
	}
	if !c.authenticate() {
		return
	}
	if c.rt.inference() && !c.parseRequest() {
		return
	}
	if c.rt.generates() && !c.inspect() {
		return
	}
	if c.b.ErrorRate > 0 && c.s.drawError(c.b.ErrorRate) {
		c.fail(statusError(c.rt.proto, http.StatusInternalServerError, serverErrorMessage(c.rt.proto)))
		return
	}
	completion, truncated := c.completionLength()
	if c.rt.inference() && !c.admit(completion) {
		return
	}
	if c.b.InvalidBody {
		c.invalidBody()
		return
	}
	if c.b.EmptyBody {
		c.emptyBody()
		return
	}
	if c.b.StallAfterHeaders {
		c.stallAfterHeaders()
		return
	}
	switch c.rt.endpoint {
	case epChat:
		c.chatCompletion()
	case epCompletions:
		c.textCompletion(completion, truncated)
	case epEmbeddings:
		c.embeddings()
	case epResponses:
		c.response()
	case epMessages:
		c.message()
	case epModels:
		c.listModels()
	case epPublisherModel:
		c.publisherModel()
	case epClaudeCountTokens:
		c.claudeCountTokens()
	case epGenerate, epStreamGenerate:
		c.generateContent()
	case epCountTokens:
		c.countTokens()
	case epEmbedContent, epBatchEmbed:
		c.embedContent()
	case epConverse, epConverseStream:
		c.converse()
	}
}

// inspect validates a generation request as its family's API does and
// plans the answer; it answers 400 and returns false when the request is
// refused.
func (c *call) inspect() bool {
	var (
		cv     *convo
		err    *apiError
		prefix string
	)
	switch c.rt.endpoint {
	case epChat:
		cv, err = c.inspectChat()
		prefix = "call_"
	case epResponses:
		cv, err = c.inspectResponses()
		prefix = "call_"
	case epMessages:
		cv, err = c.inspectMessages()
		prefix = "toolu_"
	case epConverse, epConverseStream:
		cv, err = c.inspectBedrock()
		prefix = "tooluse_"
	default:
		cv, err = c.inspectGemini()
		prefix = "call_"
	}
	if err != nil {
		c.fail(*err)
		return false
	}
	c.cv, c.rep = cv, c.plan(cv, prefix)
	return true
}

// parseRequest checks the body the way the real APIs do at the edge: a JSON
// object with a model. Azure deployments imply the model.
func (c *call) parseRequest() bool {
	if !gjson.ValidBytes(c.body) || !gjson.ParseBytes(c.body).IsObject() {
		msg := "We could not parse the JSON body of your request. (HINT: This likely means you aren't using your HTTP library correctly. The OpenAI API expects a JSON payload, but what was sent was not valid JSON.)"
		switch c.rt.proto {
		case protoAnthropic:
			msg = "There was an issue with your request body: it must be a JSON object"
		case protoGemini:
			msg = "Invalid JSON payload received. Expected a JSON object."
		case protoBedrock:
			msg = "Malformed input request, please reformat your input and try again."
		}
		c.fail(statusError(c.rt.proto, http.StatusBadRequest, msg))
		return false
	}
	if c.rt.vertex {
		return c.parseVertex()
	}
	if c.rt.proto == protoGemini || c.rt.proto == protoBedrock {
		c.model = c.rt.modelID
		c.stream = c.rt.endpoint == epStreamGenerate || c.rt.endpoint == epConverseStream
		return true
	}
	m := gjson.GetBytes(c.body, "model")
	c.model = m.String()
	if m.Type != gjson.String {
		c.model = ""
	}
	if c.model == "" {
		c.model = c.rt.deployment
	}
	if c.model == "" {
		msg := "you must provide a model parameter"
		if c.rt.proto == protoAnthropic {
			msg = "model: Field required"
		}
		c.fail(statusError(c.rt.proto, http.StatusBadRequest, msg))
		return false
	}
	c.stream = c.rt.streams() && gjson.GetBytes(c.body, "stream").Bool()
	return true
}

// completionLength is how many tokens the answer has: the planned reply's
// for the endpoints that generate; else CompletionTokens, cut to the
// request's max_tokens (max_completion_tokens, max_output_tokens) when that
// is smaller, which truncated reports.
func (c *call) completionLength() (n int, truncated bool) {
	if c.cv != nil {
		return c.rep.usage.completion(), c.rep.truncated
	}
	switch c.rt.endpoint {
	case epEmbeddings, epCountTokens, epEmbedContent, epBatchEmbed, epClaudeCountTokens:
		return 0, false
	}
	if !c.rt.inference() {
		return 0, false
	}
	n = c.b.completionTokens()
	if limit := c.maxTokens(); limit > 0 && limit < n {
		n, truncated = limit, true
	}
	return n, truncated
}

// maxTokens is the request's output limit: the smallest positive
// max_tokens, max_completion_tokens, max_output_tokens, Gemini's
// generationConfig.maxOutputTokens or Bedrock's inferenceConfig.maxTokens;
// 0 when none is set.
func (c *call) maxTokens() int {
	limit := 0
	for _, field := range [...]string{"max_tokens", "max_completion_tokens", "max_output_tokens", "generationConfig.maxOutputTokens", "inferenceConfig.maxTokens"} {
		if v := gjson.GetBytes(c.body, field); v.Type == gjson.Number && v.Int() > 0 && (limit == 0 || int(v.Int()) < limit) {
			limit = int(v.Int())
		}
	}
	return limit
}

// admit applies RPM/TPM; it answers 429 and returns false when the request
// does not fit.
func (c *call) admit(completion int) bool {
	tokens := c.promptTokens() + completion
	st, rej := c.s.limiter.admit(c.now, c.b.RPM, c.b.TPM, tokens, true)
	c.limits, c.limited = st, true
	if rej == nil {
		return true
	}
	e := apiError{status: http.StatusTooManyRequests, typ: rej.kind, code: "rate_limit_exceeded"}
	switch {
	case c.errorProto(http.StatusTooManyRequests) == protoGemini:
		e.message = c.googleQuotaMessage()
	case c.rt.proto == protoBedrock:
		e.typ, e.message = bedrockThrottling, bedrockThrottleMessage(rej.kind)
	case rej.kind == "requests":
		e.message = fmt.Sprintf("Rate limit reached for requests on mock %s: Limit %d, Used %d, Requested 1. Please try again in %s.",
			c.s.name, c.b.RPM, st.reqUsed, formatReset(rej.retry))
	default:
		e.message = fmt.Sprintf("Rate limit reached for tokens on mock %s: Limit %d, Used %d, Requested %d. Please try again in %s.",
			c.s.name, c.b.TPM, st.tokUsed, tokens, formatReset(rej.retry))
	}
	if c.rt.proto == protoAnthropic {
		e.typ = "rate_limit_error"
	}
	c.retryAfter(&e, rej.retry, rej.kind)
	c.fail(e)
	return false
}
