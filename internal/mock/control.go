package mock

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// Control paths; see the package documentation.
const (
	controlPrefix   = "/_mock/"
	controlBehavior = "/_mock/behavior"
	controlStats    = "/_mock/stats"
	controlReset    = "/_mock/reset"
)

// maxControlBody bounds a behaviour document.
const maxControlBody = 1 << 20

func isControlPath(p string) bool { return strings.HasPrefix(p, controlPrefix) }

// serveControl answers the /_mock/ endpoints. They ignore the Behavior and
// are not counted in Stats.
func (s *Server) serveControl(w http.ResponseWriter, r *http.Request) {
	switch strings.TrimSuffix(r.URL.Path, "/") {
	case controlBehavior:
		switch r.Method {
		case http.MethodGet:
			writeControlJSON(w, http.StatusOK, s.Behavior())
		case http.MethodPut, http.MethodPatch:
			s.updateBehavior(w, r)
		default:
			controlMethodNotAllowed(w, "GET, PUT, PATCH")
		}
	case controlStats:
		if r.Method != http.MethodGet {
			controlMethodNotAllowed(w, "GET")
			return
		}
		writeControlJSON(w, http.StatusOK, s.Stats())
	case controlReset:
		if r.Method != http.MethodPost {
			controlMethodNotAllowed(w, "POST")
			return
		}
		s.ResetStats()
		s.ResetLimits()
		s.ResetCache()
		w.WriteHeader(http.StatusNoContent)
	default:
		writeControlError(w, http.StatusNotFound, "unknown mock control path "+r.URL.Path)
	}
}

// updateBehavior replaces (PUT) or merges into (PATCH) the behaviour. The
// read-modify-write holds the lock so concurrent PATCHes do not lose fields.
func (s *Server) updateBehavior(w http.ResponseWriter, r *http.Request) {
	data, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxControlBody))
	if err != nil {
		writeControlError(w, http.StatusBadRequest, "reading the behavior: "+err.Error())
		return
	}
	s.mu.Lock()
	var b Behavior
	if r.Method == http.MethodPatch {
		b = s.behavior
	}
	err = b.decodeStrict(data)
	if err == nil {
		err = b.Validate()
	}
	if err == nil {
		s.behavior = b
	}
	s.mu.Unlock()
	if err != nil {
		writeControlError(w, http.StatusBadRequest, "decoding the behavior: "+err.Error())
		return
	}
	writeControlJSON(w, http.StatusOK, b)
}

func controlMethodNotAllowed(w http.ResponseWriter, allow string) {
	w.Header().Set("Allow", allow)
	writeControlError(w, http.StatusMethodNotAllowed, "method not allowed; use "+allow)
}

// writeControlError answers in the OpenAI error shape, which every client of
// the control API can read.
func writeControlError(w http.ResponseWriter, status int, msg string) {
	writeControlJSON(w, status, obj{"error": obj{"message": msg, "type": "invalid_request_error", "param": nil, "code": nil}})
}

func writeControlJSON(w http.ResponseWriter, status int, v any) {
	data, err := json.Marshal(v)
	if err != nil {
		http.Error(w, err.Error(), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = w.Write(data)
}
