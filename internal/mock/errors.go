package mock

import (
	"fmt"
	"net/http"
	"strconv"
	"time"
)

// apiError is an error answer before it is shaped for a protocol.
type apiError struct {
	status int
	// typ is the error type: OpenAI's error.type ("invalid_request_error",
	// "server_error", "requests") or Anthropic's ("rate_limit_error", …).
	// Gemini bodies have none: their status names the status code.
	typ string
	// code is OpenAI's error.code ("rate_limit_exceeded"); "" writes null.
	// Anthropic bodies have no code.
	code string
	// param is OpenAI's error.param, the offending field; "" writes null.
	param   string
	message string
	// details are Google's error.details (ErrorInfo, RetryInfo, …).
	details []obj
}

// statusError is the error a status answers with when nothing more precise
// is known (ForceStatus, ErrorRate, routing errors).
func statusError(p protocol, status int, message string) apiError {
	e := apiError{status: status, message: message}
	if e.message == "" {
		e.message = fmt.Sprintf("mock upstream answered %d %s", status, http.StatusText(status))
	}
	switch p {
	case protoAnthropic:
		e.typ = anthropicErrorType(status)
	case protoGemini:
		// The status code names it (googleStatus).
	case protoBedrock:
		e.typ = bedrockException(status)
	default:
		switch {
		case status == http.StatusUnauthorized:
			e.typ, e.code = "invalid_request_error", "invalid_api_key"
		case status == http.StatusNotFound:
			e.typ, e.code = "invalid_request_error", "model_not_found"
		case status == http.StatusTooManyRequests:
			e.typ, e.code = "requests", "rate_limit_exceeded"
		case status >= 500:
			e.typ = "server_error"
		default:
			e.typ = "invalid_request_error"
		}
	}
	return e
}

// badRequest is a 400 for a request the real API refuses, with message
// saying what is wrong; param names the field for OpenAI.
func badRequest(p protocol, param, message string) *apiError {
	e := statusError(p, http.StatusBadRequest, message)
	e.param = param
	return &e
}

func anthropicErrorType(status int) string {
	switch status {
	case http.StatusBadRequest:
		return "invalid_request_error"
	case http.StatusUnauthorized:
		return "authentication_error"
	case http.StatusPaymentRequired:
		return "billing_error"
	case http.StatusForbidden:
		return "permission_error"
	case http.StatusNotFound:
		return "not_found_error"
	case http.StatusRequestEntityTooLarge:
		return "request_too_large"
	case http.StatusTooManyRequests:
		return "rate_limit_error"
	case http.StatusGatewayTimeout:
		return "timeout_error"
	case 529:
		return "overloaded_error"
	}
	if status < 500 {
		return "invalid_request_error"
	}
	return "api_error"
}

// googleStatus is the google.rpc.Code name Google's APIs put in
// error.status for an HTTP status.
func googleStatus(status int) string {
	switch status {
	case 400, 411, 413:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 405, 501:
		return "UNIMPLEMENTED"
	case 409:
		return "ABORTED"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case 503, 529:
		return "UNAVAILABLE"
	case 504:
		return "DEADLINE_EXCEEDED"
	}
	if status < 500 {
		return "FAILED_PRECONDITION"
	}
	return "INTERNAL"
}

// body is e in the protocol's error shape: OpenAI
// {"error":{"message","type","param","code"}}, Anthropic
// {"type":"error","error":{"type","message"}}, Google
// {"error":{"code","message","status","details"}}, Bedrock {"message"}.
func (e apiError) body(p protocol) obj {
	switch p {
	case protoAnthropic:
		return obj{"type": "error", "error": obj{"type": e.typ, "message": e.message}}
	case protoGemini:
		m := obj{"code": e.status, "message": e.message, "status": googleStatus(e.status)}
		if len(e.details) > 0 {
			m["details"] = e.details
		}
		return obj{"error": m}
	case protoBedrock:
		return obj{"message": e.message} // the exception's name is a header: see fail
	}
	var code, param any
	if e.code != "" {
		code = e.code
	}
	if e.param != "" {
		param = e.param
	}
	return obj{"error": obj{"message": e.message, "type": e.typ, "param": param, "code": code}}
}

// serverErrorMessage is what each provider says on a 500.
func serverErrorMessage(p protocol) string {
	switch p {
	case protoAnthropic:
		return "Internal server error"
	case protoGemini:
		return "An internal error has occurred. Please retry or report in https://developers.generativeai.google/guide/troubleshooting"
	case protoBedrock:
		return "The system encountered an unexpected error during processing. Try your request again."
	}
	return "The server had an error while processing your request. Sorry about that!"
}

// forcedError is the answer Behavior.ForceStatus makes: the status's
// error in the protocol's shape, with the words each provider uses for
// throttling and overload.
func (c *call) forcedError(status int) apiError {
	e := statusError(c.rt.proto, status, "")
	if c.errorProto(status) == protoGemini {
		switch status {
		case http.StatusTooManyRequests:
			e.message = c.googleQuotaMessage()
		case http.StatusServiceUnavailable:
			e.message = "The model is overloaded. Please try again later."
		case http.StatusInternalServerError:
			e.message = serverErrorMessage(protoGemini)
		}
	}
	if c.rt.proto == protoBedrock {
		switch status {
		case http.StatusTooManyRequests:
			e.message = bedrockThrottleMessage("requests")
		case http.StatusServiceUnavailable:
			e.message = "Bedrock is unable to process your request."
		case http.StatusInternalServerError:
			e.message = serverErrorMessage(protoBedrock)
		}
	}
	if status == http.StatusTooManyRequests {
		c.retryAfter(&e, time.Second, "requests")
	}
	return e
}

// retryAfter says when a 429 may be retried as the provider does:
// Retry-After in whole seconds (OpenAI, Anthropic), or for Gemini and Vertex a
// QuotaFailure naming the exhausted quota (kind "requests" or "tokens"),
// a Help link and a RetryInfo with retryDelay "Ns", without the header.
// Bedrock says nothing of when, nor does anyone with Behavior.NoRetryAfter
// (a Google error then keeps its QuotaFailure and Help).
func (c *call) retryAfter(e *apiError, d time.Duration, kind string) {
	secs := retryAfterSeconds(d)
	if c.rt.proto == protoBedrock {
		return
	}
	if c.errorProto(http.StatusTooManyRequests) != protoGemini {
		if !c.b.NoRetryAfter {
			c.w.Header().Set("Retry-After", secs)
		}
		return
	}
	quota := "GenerateRequestsPerMinutePerProjectPerModel"
	metric := "generativelanguage.googleapis.com/generate_requests_per_model"
	help := obj{"description": "Learn more about Gemini API quotas", "url": "https://ai.google.dev/gemini-api/docs/rate-limits"}
	switch {
	case c.rt.vertex && kind == "tokens":
		quota = "GenerateContentInputTokensPerMinutePerBaseModel"
		metric = "aiplatform.googleapis.com/generate_content_input_tokens_per_minute_per_base_model"
	case c.rt.vertex:
		quota = "GenerateContentRequestsPerMinutePerProjectPerBaseModel"
		metric = "aiplatform.googleapis.com/generate_content_requests_per_minute_per_project_per_base_model"
	case kind == "tokens":
		quota = "GenerateContentInputTokensPerModelPerMinute"
		metric = "generativelanguage.googleapis.com/generate_content_input_token_count"
	}
	if c.rt.vertex {
		help = obj{"description": "Learn more about Vertex AI quotas", "url": "https://cloud.google.com/vertex-ai/generative-ai/docs/error-code-429"}
	}
	e.details = []obj{
		{"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": []obj{{
			"quotaMetric": metric, "quotaId": quota,
			"quotaDimensions": obj{"location": "global", "model": c.model},
		}}},
		{"@type": "type.googleapis.com/google.rpc.Help", "links": []obj{help}},
	}
	if !c.b.NoRetryAfter {
		e.details = append(e.details, obj{"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": secs + "s"})
	}
}

// geminiQuotaMessage is Google's message for a 429.
const geminiQuotaMessage = "You exceeded your current quota, please check your plan and billing details. For more information on this error, head to: https://ai.google.dev/gemini-api/docs/rate-limits."

// geminiKeyInvalid is Google's answer to a wrong API key: 400
// INVALID_ARGUMENT with an ErrorInfo of reason API_KEY_INVALID.
func geminiKeyInvalid() apiError {
	const msg = "API key not valid. Please pass a valid API key."
	return apiError{status: http.StatusBadRequest, message: msg, details: []obj{
		{"@type": "type.googleapis.com/google.rpc.ErrorInfo", "reason": "API_KEY_INVALID", "domain": "googleapis.com",
			"metadata": obj{"service": "generativelanguage.googleapis.com"}},
		{"@type": "type.googleapis.com/google.rpc.LocalizedMessage", "locale": "en-US", "message": msg},
	}}
}

// itoa is strconv.Itoa, short for error messages that name an index.
func itoa(i int) string { return strconv.Itoa(i) }
