package admin

import (
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"switchyard/internal/config"
)

// authenticate lets a request through only with the admin token as its
// Bearer credential; anything else answers 401. Every API answer, a refusal
// included, is marked no-store (it may hold configuration a proxy or browser
// must not keep) and nosniff (it is JSON, never to be rendered as HTML).
func (h *handler) authenticate(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		if !h.authorized(r) {
			w.Header().Set("WWW-Authenticate", `Bearer realm="switchyard-admin"`)
			writeError(w, http.StatusUnauthorized, "missing or invalid admin token", nil)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// authorized reports whether r carries the admin token as a Bearer
// credential. Timing: the presented token and the configured one are both
// hashed with SHA-256 and the digests compared with
// subtle.ConstantTimeCompare, which takes the same time whatever the bytes;
// hashing first makes the compared lengths equal, so the token's length does
// not leak either. The compare runs before the scheme and enabled checks are
// looked at, so a request without a Bearer header costs the same as one with
// a wrong token. Only the Authorization header counts: a token in the query
// string, a cookie or Basic credentials is refused.
func (h *handler) authorized(r *http.Request) bool {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	sum := sha256.Sum256([]byte(strings.TrimSpace(token)))
	match := subtle.ConstantTimeCompare(sum[:], h.tokenSum[:]) == 1
	return ok && h.enabled && strings.EqualFold(scheme, "Bearer") && match
}

// errorJSON is the body of every error answer.
type errorJSON struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Message string      `json:"message"`
	Fields  []fieldJSON `json:"fields,omitempty"`
}

type fieldJSON struct {
	Path    string `json:"path"`
	Message string `json:"message"`
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func writeError(w http.ResponseWriter, status int, msg string, fields config.Errors) {
	body := errorJSON{Error: errorDetail{Message: msg}}
	for _, f := range fields {
		body.Error.Fields = append(body.Error.Fields, fieldJSON{Path: f.Path, Message: f.Msg})
	}
	writeJSON(w, status, body)
}

// writeErr answers err, the failure of an operation on what (e.g. "upstream"):
// the one place that maps errors to statuses. Validation errors answer 400
// with their field paths; unexpected errors answer 500 and are logged.
func (h *handler) writeErr(w http.ResponseWriter, r *http.Request, what string, err error) {
	var fields config.Errors
	switch {
	case errors.As(err, &fields):
		writeError(w, http.StatusBadRequest, "invalid "+what, fields)
	case errors.Is(err, ErrInvalid):
		writeError(w, http.StatusBadRequest, err.Error(), nil)
	case errors.Is(err, ErrNotFound):
		writeError(w, http.StatusNotFound, err.Error(), nil)
	case errors.Is(err, ErrConflict):
		writeError(w, http.StatusConflict, err.Error(), nil)
	default:
		h.log.Error("admin request failed", "method", r.Method, "path", r.URL.Path, "err", err)
		writeError(w, http.StatusInternalServerError, "internal error: "+what+" not processed (see the gateway log)", nil)
	}
}

// readObject reads a JSON object body of at most maxBodyBytes.
func readObject(w http.ResponseWriter, r *http.Request) (tree, error) {
	var t tree
	err := decodeJSON(http.MaxBytesReader(w, r.Body, maxBodyBytes), &t)
	var tooLarge *http.MaxBytesError
	switch {
	case errors.As(err, &tooLarge):
		return nil, fmt.Errorf("%w: request body exceeds 1 MiB", ErrInvalid)
	case errors.Is(err, io.EOF):
		return nil, fmt.Errorf("%w: request body is empty; send a JSON object", ErrInvalid)
	case err != nil:
		return nil, fmt.Errorf("%w: request body is not a JSON object: %v", ErrInvalid, err)
	case t == nil:
		return nil, fmt.Errorf("%w: request body must be a JSON object, not null", ErrInvalid)
	}
	return t, nil
}
