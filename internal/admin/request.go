package admin

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/http"

	"switchyard/internal/balancer"
	"switchyard/internal/store"
)

// The /requests/{id} endpoint: one request's view.

// RequestView is what GET /requests/{id} answers: the request log of the
// request and the routing decisions the gateway still keeps for it.
type RequestView struct {
	// ID is the request id looked up.
	ID string `json:"id"`
	// TraceID is the request's OpenTelemetry trace id (docs/tracing.md),
	// from its log or its decisions; "" when tracing is off.
	TraceID string `json:"trace_id"`
	// Log is the request log: status, tokens, translation and every
	// attempt with its timing (Tried). nil while the log is still queued
	// for the store (logs are written asynchronously, in batches).
	Log *store.RequestLog `json:"log"`
	// Decisions are the routing decisions kept for the request, oldest
	// first: usually one, one per plan when a fallback model was planned
	// too, none once they left the ring of recent decisions.
	Decisions []*balancer.Decision `json:"decisions"`
}

// Request returns the view of request id. It wraps ErrNotFound when neither
// a request log nor a decision has that id.
func (s *Service) Request(ctx context.Context, id string) (RequestView, error) {
	v := RequestView{ID: id, Decisions: s.gw.RequestDecisions(id)}
	if v.Decisions == nil {
		v.Decisions = []*balancer.Decision{}
	}
	l, err := s.st.RequestLog(ctx, id)
	switch {
	case err == nil:
		v.Log = &l
	case !errors.Is(err, store.ErrNotFound):
		return RequestView{}, fmt.Errorf("loading request %q: %w", id, err)
	case len(v.Decisions) == 0:
		return RequestView{}, fmt.Errorf("request %q: %w (neither logged nor among the recent decisions)", id, ErrNotFound)
	}
	if v.Log != nil {
		v.TraceID = v.Log.TraceID
	}
	for _, d := range v.Decisions {
		v.TraceID = cmp.Or(v.TraceID, d.TraceID)
	}
	return v, nil
}

func (h *handler) request(w http.ResponseWriter, r *http.Request) {
	v, err := h.s.Request(r.Context(), r.PathValue("id"))
	if err != nil {
		h.writeErr(w, r, "request", err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}
