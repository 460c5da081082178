package admin

import (
	"fmt"
	"net/http"

	"switchyard/internal/config"
)

// The /routes endpoints.

// routeView is r as the API shows it, with "name" equal to its model (lists
// are of objects with a name).
func routeView(r config.Route) (tree, error) {
	v, err := toWire(r)
	if err != nil {
		return nil, err
	}
	v["name"] = r.Model
	return v, nil
}

func (h *handler) listRoutes(w http.ResponseWriter, r *http.Request) {
	writeList(h, w, r, "routes", h.s.Routes, routeView)
}

func (h *handler) getRoute(w http.ResponseWriter, r *http.Request) {
	model := r.PathValue("model")
	routes, err := h.s.Routes(r.Context())
	if err != nil {
		h.writeErr(w, r, "route", err)
		return
	}
	for _, rt := range routes {
		if rt.Model == model {
			h.writeRoute(w, r, rt)
			return
		}
	}
	h.writeErr(w, r, "route", fmt.Errorf("route %q: %w", model, ErrNotFound))
}

func (h *handler) putRoute(w http.ResponseWriter, r *http.Request) {
	model := r.PathValue("model")
	body, err := readObject(w, r)
	if err != nil {
		h.writeErr(w, r, "route", err)
		return
	}
	rt, err := buildRoute(body, model, h.s.RouteDefaults())
	var created bool
	if err == nil {
		created, err = h.s.PutRoute(r.Context(), rt)
	}
	if err != nil {
		h.writeErr(w, r, "route", err)
		return
	}
	h.log.Info("admin: route saved", "model", model, "created", created)
	h.writeRoute(w, r, rt)
}

func (h *handler) deleteRoute(w http.ResponseWriter, r *http.Request) {
	model := r.PathValue("model")
	if err := h.s.DeleteRoute(r.Context(), model); err != nil {
		h.writeErr(w, r, "route", err)
		return
	}
	h.log.Info("admin: route deleted", "model", model)
	w.WriteHeader(http.StatusNoContent)
}

func (h *handler) writeRoute(w http.ResponseWriter, r *http.Request, rt config.Route) {
	v, err := routeView(rt)
	if err != nil {
		h.writeErr(w, r, "route", err)
		return
	}
	writeJSON(w, http.StatusOK, v)
}

// buildRoute makes the route for model that a PUT body asks for: the
// defaults overlaid with the body, decoded and validated. "name", the
// read-only alias of "model" in answers, is accepted when it matches.
func buildRoute(body tree, model string, defaults config.RouteSettings) (config.Route, error) {
	var errs config.Errors
	if n, ok := body["name"]; ok {
		delete(body, "name")
		if n != nil && n != model {
			errs = append(errs, config.FieldError{Path: "name", Msg: fmt.Sprintf("must be %q, the model in the path", model)})
		}
	}
	if _, ok := body["model"]; !ok {
		body["model"] = model
	}
	base, err := toWire(config.Route{Model: model, RouteSettings: defaults})
	if err != nil {
		return config.Route{}, err
	}
	fill, err := toWire(config.Route{Model: model, RouteSettings: defaults})
	if err != nil {
		return config.Route{}, err
	}
	merged := mergePatch(base, body).(tree)
	fillMissing(merged, fill)
	rt, decodeErrs := fromWire[config.Route](merged)
	errs = append(errs, decodeErrs...)
	if len(errs) == 0 {
		errs = rt.Validate()
	}
	if rt.Model != model && !hasPath(errs, "model") {
		errs = append(errs, config.FieldError{Path: "model", Msg: fmt.Sprintf("must be %q, the model in the path", model)})
	}
	if len(errs) > 0 {
		return rt, errs
	}
	return rt, nil
}
