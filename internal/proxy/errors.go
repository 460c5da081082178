package proxy

import (
	"errors"
	"net/http"
	"strconv"
	"time"

	"switchyard/internal/codec"
)

// Errors the gateway answers itself. Each maps to one status and code in
// apiErrorFor; nothing else in the package chooses a status.
var (
	// ErrInvalidJSON: the request body is not valid JSON (400).
	ErrInvalidJSON = errors.New("request body is not valid JSON")
	// ErrInvalidRequest: a field has the wrong type or value (400).
	ErrInvalidRequest = errors.New("invalid request")
	// ErrMissingModel: the body has no "model" string (400).
	ErrMissingModel = errors.New(`request body has no "model" field`)
	// ErrIncompatible: the request uses something no candidate's protocol
	// can express (400, docs/protocols.md#how-a-request-is-routed-across-families).
	ErrIncompatible = errors.New("request cannot be expressed in any upstream's protocol")
	// ErrUnauthorized: no key, or an unknown key (401).
	ErrUnauthorized = errors.New("invalid API key")
	// ErrModelNotAllowed: the key may not use this model (403).
	ErrModelNotAllowed = errors.New("model not allowed for this key")
	// ErrPreferencesNotAllowed: the key may not send routing preferences
	// (keys[].preferences: false) but the request carries them (403).
	ErrPreferencesNotAllowed = errors.New("routing preferences not allowed for this key")
	// ErrNoPreferredUpstream: the request's routing preferences left no
	// upstream to try (400, docs/routing.md#per-request-preferences).
	ErrNoPreferredUpstream = errors.New("no upstream matches the request's routing preferences")
	// ErrModelNotFound: no upstream serves the model for this key (404).
	ErrModelNotFound = errors.New("model not found")
	// ErrBodyTooLarge: the body exceeds max_body_bytes (413).
	ErrBodyTooLarge = errors.New("request body too large")
	// ErrNoUpstream: every candidate failed (502) or none is available (503).
	ErrNoUpstream = errors.New("no upstream available")
	// ErrKeyRateLimited: the client key's rpm is used up (429).
	ErrKeyRateLimited = errors.New("rate limit exceeded for this key")
	// ErrSpendLimit: the client key's spend_limit is used up (429).
	ErrSpendLimit = errors.New("spend limit exceeded for this key")
	// ErrStateUnavailable: the request refers to a response or conversation
	// that only one upstream holds, and that upstream cannot take it now
	// (503, docs/routing.md#stateful-calls-pinned-not-sticky).
	ErrStateUnavailable = errors.New("the upstream holding the previous response is unavailable")
	// ErrResponseNotKept: the request continues a Responses answer whose
	// conversation the gateway had to keep itself but did not — the client
	// said store: false, or it was too long (400,
	// docs/routing.md#responses-chains-the-gateway-keeps).
	ErrResponseNotKept = errors.New("the previous response was not kept")
	// ErrQueueFull: every candidate is full and its queue too (503).
	ErrQueueFull = errors.New("queue full")
	// ErrQueueTimeout: no slot was free within queue.timeout (503).
	ErrQueueTimeout = errors.New("queue wait timed out")
	// ErrNotFound: an unknown path (404).
	ErrNotFound = errors.New("not found")
	// ErrMethodNotAllowed: a known path with the wrong method (405).
	ErrMethodNotAllowed = errors.New("method not allowed")
	// ErrBodyTimeout: the client did not send its whole body within the
	// server's read timeout (408).
	ErrBodyTimeout = errors.New("request body not received within the read timeout")
)

// apiError is an error with everything needed to answer it.
type apiError struct {
	status     int
	code       string // OpenAI error.code; also the log's error class
	kind       string // OpenAI error.type
	msg        string
	retryAfter time.Duration
	cause      error
}

func (e *apiError) Error() string { return e.msg }
func (e *apiError) Unwrap() error { return e.cause }

// newError wraps sentinel with a message shown to the client.
func newError(sentinel error, msg string) *apiError {
	e := apiErrorFor(sentinel)
	e.cause = sentinel
	if msg != "" {
		e.msg = msg
	}
	return e
}

// Refused reports whether a request that ended with status and error
// class (a request log's) was refused by the gateway itself: an error it
// answered, not an upstream's own 4xx it passed on, nor a client that left.
func Refused(status int, errorClass string) bool {
	return status >= 400 && status != 499 && errorClass != "upstream_client_error"
}

// apiErrorFor maps a sentinel to its status, type and code — the one place
// that does (docs/reference.md#errors).
func apiErrorFor(err error) *apiError {
	switch {
	case errors.Is(err, ErrInvalidJSON):
		return &apiError{status: 400, kind: "invalid_request_error", code: "invalid_json", msg: err.Error()}
	case errors.Is(err, ErrMissingModel):
		return &apiError{status: 400, kind: "invalid_request_error", code: "missing_model", msg: err.Error()}
	case errors.Is(err, ErrInvalidRequest):
		return &apiError{status: 400, kind: "invalid_request_error", code: "invalid_request", msg: err.Error()}
	case errors.Is(err, ErrIncompatible):
		return &apiError{status: 400, kind: "invalid_request_error", code: "incompatible_request", msg: err.Error()}
	case errors.Is(err, ErrUnauthorized):
		return &apiError{status: 401, kind: "authentication_error", code: "invalid_api_key", msg: err.Error()}
	case errors.Is(err, ErrModelNotAllowed):
		return &apiError{status: 403, kind: "permission_error", code: "model_not_allowed", msg: err.Error()}
	case errors.Is(err, ErrPreferencesNotAllowed):
		return &apiError{status: 403, kind: "permission_error", code: "preferences_not_allowed", msg: err.Error()}
	case errors.Is(err, ErrNoPreferredUpstream):
		return &apiError{status: 400, kind: "invalid_request_error", code: "no_upstream_matches_preferences", msg: err.Error()}
	case errors.Is(err, ErrModelNotFound):
		return &apiError{status: 404, kind: "invalid_request_error", code: "model_not_found", msg: err.Error()}
	case errors.Is(err, ErrBodyTooLarge):
		return &apiError{status: 413, kind: "invalid_request_error", code: "request_too_large", msg: err.Error()}
	case errors.Is(err, ErrNoUpstream):
		return &apiError{status: 502, kind: "upstream_error", code: "no_upstream_available", msg: err.Error()}
	case errors.Is(err, ErrKeyRateLimited):
		return &apiError{status: 429, kind: "rate_limit_error", code: "rate_limit_exceeded", msg: err.Error()}
	case errors.Is(err, ErrSpendLimit):
		return &apiError{status: 429, kind: "rate_limit_error", code: "spend_limit_exceeded", msg: err.Error()}
	case errors.Is(err, ErrStateUnavailable):
		return &apiError{status: 503, kind: "upstream_error", code: "previous_response_unavailable", msg: err.Error()}
	case errors.Is(err, ErrResponseNotKept):
		return &apiError{status: 400, kind: "invalid_request_error", code: "previous_response_not_kept", msg: err.Error()}
	case errors.Is(err, ErrQueueFull):
		return &apiError{status: 503, kind: "upstream_error", code: "queue_full", msg: err.Error()}
	case errors.Is(err, ErrQueueTimeout):
		return &apiError{status: 503, kind: "upstream_error", code: "queue_timeout", msg: err.Error()}
	case errors.Is(err, ErrNotFound):
		return &apiError{status: 404, kind: "invalid_request_error", code: "not_found", msg: err.Error()}
	case errors.Is(err, ErrMethodNotAllowed):
		return &apiError{status: 405, kind: "invalid_request_error", code: "method_not_allowed", msg: err.Error()}
	case errors.Is(err, ErrBodyTimeout):
		return &apiError{status: 408, kind: "invalid_request_error", code: "request_timeout", msg: err.Error()}
	}
	return &apiError{status: 500, kind: "internal_error", code: "internal_error", msg: "internal error"}
}

// writeError answers e in the caller's protocol shape.
func writeError(w http.ResponseWriter, c codec.Codec, e *apiError) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	if e.retryAfter > 0 {
		h.Set("Retry-After", strconv.Itoa(int((e.retryAfter+time.Second-1)/time.Second)))
	}
	w.WriteHeader(e.status)
	_, _ = w.Write(c.ErrorBody(codec.Error{Status: e.status, Type: e.kind, Code: e.code, Message: e.msg}))
}
