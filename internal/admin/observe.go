package admin

import (
	"fmt"
	"net/http"
	"strconv"
	"time"

	"switchyard/internal/affinity"
	"switchyard/internal/balancer"
	"switchyard/internal/config"
)

// The live endpoints: /state, /explain, /decisions, /affinity and /usage.

func (h *handler) state(w http.ResponseWriter, r *http.Request) {
	var q StateQuery
	if s := r.URL.Query().Get("history"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d < time.Second || d > MaxHistoryStep || d%time.Second != 0 {
			h.writeErr(w, r, "state query", config.Errors{{Path: "history",
				Msg: fmt.Sprintf("must be a whole number of seconds from 1s to %s, such as \"2s\", got %q", MaxHistoryStep, s)}})
			return
		}
		q.History = d
	}
	st, err := h.s.State(r.Context(), q)
	if err != nil {
		h.writeErr(w, r, "state", err)
		return
	}
	writeJSON(w, http.StatusOK, st)
}

func (h *handler) explain(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var errs config.Errors
	eq := ExplainQuery{Model: q.Get("model"), Session: q.Get("session"), Key: q.Get("key"), Provider: q.Get("provider")}
	for _, n := range []struct {
		name string
		dst  *int64
	}{{"input_tokens", &eq.InputTokens}, {"max_tokens", &eq.MaxTokens}} {
		if s := q.Get(n.name); s != "" {
			v, err := strconv.ParseInt(s, 10, 64)
			if err != nil || v < 0 {
				errs = append(errs, config.FieldError{Path: n.name, Msg: fmt.Sprintf("must be a whole number ≥ 0, got %q", s)})
			}
			*n.dst = v
		}
	}
	if eq.Model == "" {
		errs = append(errs, config.FieldError{Path: "model", Msg: "required"})
	}
	if s := q.Get("stream"); s != "" {
		b, err := strconv.ParseBool(s)
		if err != nil {
			errs = append(errs, config.FieldError{Path: "stream", Msg: fmt.Sprintf("must be true or false, got %q", s)})
		}
		eq.Stream = b
	}
	if len(errs) > 0 {
		h.writeErr(w, r, "explain query", errs)
		return
	}
	d, err := h.s.Explain(eq)
	if err != nil {
		h.writeErr(w, r, "explain query", err)
		return
	}
	writeJSON(w, http.StatusOK, d)
}

func (h *handler) decisions(w http.ResponseWriter, r *http.Request) {
	limit := DefaultDecisions
	if s := r.URL.Query().Get("limit"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil || n < 1 {
			h.writeErr(w, r, "decisions query", config.Errors{{Path: "limit", Msg: fmt.Sprintf("must be an integer from 1 to %d, got %q", MaxDecisions, s)}})
			return
		}
		limit = min(n, MaxDecisions)
	}
	ds := h.s.Decisions(limit)
	if ds == nil {
		ds = []*balancer.Decision{}
	}
	writeJSON(w, http.StatusOK, ds)
}

func (h *handler) affinity(w http.ResponseWriter, r *http.Request) {
	session, ok := h.session(w, r)
	if !ok {
		return
	}
	bindings := h.s.Affinity(session)
	if bindings == nil {
		bindings = []affinity.Binding{}
	}
	writeJSON(w, http.StatusOK, bindings)
}

func (h *handler) deleteAffinity(w http.ResponseWriter, r *http.Request) {
	session, ok := h.session(w, r)
	if !ok {
		return
	}
	n := h.s.DeleteAffinity(session)
	h.log.Info("admin: affinity deleted", "session", session, "bindings", n)
	writeJSON(w, http.StatusOK, map[string]int{"deleted": n})
}

// session reads the required ?session=, answering 400 without it.
func (h *handler) session(w http.ResponseWriter, r *http.Request) (string, bool) {
	s := r.URL.Query().Get("session")
	if s == "" {
		h.writeErr(w, r, "affinity query", config.Errors{{Path: "session", Msg: "required"}})
		return "", false
	}
	return s, true
}

func (h *handler) usage(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	var errs config.Errors
	uq := UsageQuery{By: q.Get("by"), Ago: DefaultUsageSince}
	switch uq.By {
	case "":
		uq.By = "upstream"
	case "upstream", "key", "model", "day":
	default:
		errs = append(errs, config.FieldError{Path: "by", Msg: fmt.Sprintf("must be upstream, key, model or day, got %q", uq.By)})
	}
	if s := q.Get("since"); s != "" {
		if t, err := time.Parse(time.RFC3339, s); err == nil {
			uq.Since, uq.Ago = t, 0
		} else if d, err := time.ParseDuration(s); err == nil && d > 0 {
			uq.Ago = d
		} else {
			errs = append(errs, config.FieldError{Path: "since", Msg: fmt.Sprintf("must be an RFC 3339 time or a positive duration such as \"24h\", got %q", s)})
		}
	}
	if len(errs) > 0 {
		h.writeErr(w, r, "usage query", errs)
		return
	}
	rows, err := h.s.Usage(r.Context(), uq)
	if err != nil {
		h.writeErr(w, r, "usage query", err)
		return
	}
	if rows == nil {
		rows = []UsageRow{}
	}
	writeJSON(w, http.StatusOK, rows)
}
