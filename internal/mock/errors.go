package mock

import (
	"fmt"
	"net/http"
)

// apiError is an error answer before it is shaped for a protocol.
type apiError struct {
	status int
	// typ is the error type: OpenAI's error.type ("invalid_request_error",
	// "server_error", "requests") or Anthropic's ("rate_limit_error", …).
	typ string
	// code is OpenAI's error.code ("rate_limit_exceeded"); "" writes null.
	// Anthropic bodies have no code.
	code    string
	message string
}

// statusError is the error a status answers with when nothing more precise
// is known (ForceStatus, ErrorRate, routing errors).
func statusError(p protocol, status int, message string) apiError {
	e := apiError{status: status, message: message}
	if e.message == "" {
		e.message = fmt.Sprintf("mock upstream answered %d %s", status, http.StatusText(status))
	}
	if p == protoAnthropic {
		switch status {
		case http.StatusBadRequest:
			e.typ = "invalid_request_error"
		case http.StatusUnauthorized:
			e.typ = "authentication_error"
		case http.StatusPaymentRequired:
			e.typ = "billing_error"
		case http.StatusForbidden:
			e.typ = "permission_error"
		case http.StatusNotFound:
			e.typ = "not_found_error"
		case http.StatusRequestEntityTooLarge:
			e.typ = "request_too_large"
		case http.StatusTooManyRequests:
			e.typ = "rate_limit_error"
		case http.StatusGatewayTimeout:
			e.typ = "timeout_error"
		case 529:
			e.typ = "overloaded_error"
		default:
			if status < 500 {
				e.typ = "invalid_request_error"
			} else {
				e.typ = "api_error"
			}
		}
		return e
	}
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
	return e
}

// body is e in the protocol's error shape: OpenAI
// {"error":{"message","type","param","code"}}, Anthropic
// {"type":"error","error":{"type","message"}}.
func (e apiError) body(p protocol) obj {
	if p == protoAnthropic {
		return obj{"type": "error", "error": obj{"type": e.typ, "message": e.message}}
	}
	var code any
	if e.code != "" {
		code = e.code
	}
	return obj{"error": obj{"message": e.message, "type": e.typ, "param": nil, "code": code}}
}
