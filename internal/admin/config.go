package admin

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"switchyard/internal/config"
)

// The configuration endpoints: /upstreams, /keys and /routes.
//
// A POST builds the object from its type's defaults overlaid with the body;
// a PUT does the same for an existing name; a PATCH merges the body into the
// stored object (RFC 7386: objects merge, null resets a field to its
// default). The result is decoded field by field and validated
// (config's Validate) before the Backend stores it, so a bad value answers
// 400 with its path and changes nothing.

// newKeyPrefix starts every client key secret the API generates.
const newKeyPrefix = "sk-sy-"

// ---- upstreams ----

// upstreamView is u as the API shows it: the api_key replaced by its hint.
func upstreamView(u config.Upstream) (tree, error) {
	u.APIKey = redactSecret(u.APIKey)
	return toWire(u)
}

func (h *handler) listUpstreams(w http.ResponseWriter, r *http.Request) {
	ups, err := h.b.Upstreams(r.Context())
	if err != nil {
		h.writeErr(w, r, "upstreams", err)
		return
	}
	out := make([]tree, 0, len(ups))
	for _, u := range ups {
		v, err := upstreamView(u)
		if err != nil {
			h.writeErr(w, r, "upstreams", err)
			return
		}
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *handler) getUpstream(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	ups, err := h.b.Upstreams(r.Context())
	if err != nil {
		h.writeErr(w, r, "upstream", err)
		return
	}
	for _, u := range ups {
		if u.Name == name {
			h.writeUpstream(w, r, http.StatusOK, u)
			return
		}
	}
	h.writeErr(w, r, "upstream", fmt.Errorf("upstream %q: %w", name, ErrNotFound))
}

func (h *handler) createUpstream(w http.ResponseWriter, r *http.Request) {
	body, err := readObject(w, r)
	if err != nil {
		h.writeErr(w, r, "upstream", err)
		return
	}
	u, err := buildUpstream(nil, body, nil)
	if err == nil {
		err = h.b.CreateUpstream(r.Context(), u)
	}
	if err != nil {
		h.writeErr(w, r, "upstream", err)
		return
	}
	h.log.Info("admin: upstream created", "upstream", u.Name)
	h.writeUpstream(w, r, http.StatusCreated, u)
}

func (h *handler) replaceUpstream(w http.ResponseWriter, r *http.Request) {
	h.updateUpstream(w, r, false)
}

func (h *handler) patchUpstream(w http.ResponseWriter, r *http.Request) {
	h.updateUpstream(w, r, true)
}

// updateUpstream answers PUT (merge false) and PATCH (merge true).
func (h *handler) updateUpstream(w http.ResponseWriter, r *http.Request, merge bool) {
	name := r.PathValue("name")
	body, err := readObject(w, r)
	if err != nil {
		h.writeErr(w, r, "upstream", err)
		return
	}
	if _, ok := body["name"]; !ok && !merge {
		body["name"] = name
	}
	u, err := h.b.UpdateUpstream(r.Context(), name, func(cur config.Upstream) (config.Upstream, error) {
		var base tree
		if merge {
			var err error
			if base, err = toWire(cur); err != nil {
				return cur, err
			}
		}
		return buildUpstream(base, body, &cur)
	})
	if err != nil {
		h.writeErr(w, r, "upstream", err)
		return
	}
	h.log.Info("admin: upstream updated", "upstream", name, "fields", fieldList(body))
	h.writeUpstream(w, r, http.StatusOK, u)
}

func (h *handler) deleteUpstream(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := h.b.DeleteUpstream(r.Context(), name); err != nil {
		h.writeErr(w, r, "upstream", err)
		return
	}
	h.log.Info("admin: upstream deleted", "upstream", name)
	w.WriteHeader(http.StatusNoContent)
}

func (h *handler) writeUpstream(w http.ResponseWriter, r *http.Request, status int, u config.Upstream) {
	v, err := upstreamView(u)
	if err != nil {
		h.writeErr(w, r, "upstream", err)
		return
	}
	writeJSON(w, status, v)
}

// buildUpstream makes the upstream a request asks for: body merged into base
// (the stored upstream's tree for a PATCH; nil, meaning the defaults, for a
// POST or PUT), missing fields from the defaults, then decoded and
// validated. With stored (PUT, PATCH), an api_key that is absent or equal
// to the stored key's hint keeps the stored key, so a client may send back
// what it read.
func buildUpstream(base, body tree, stored *config.Upstream) (config.Upstream, error) {
	defaults, err := toWire(config.DefaultUpstream())
	if err != nil {
		return config.Upstream{}, err
	}
	if base == nil {
		if base, err = toWire(config.DefaultUpstream()); err != nil {
			return config.Upstream{}, err
		}
	}
	merged := mergePatch(base, body).(tree)
	fillMissing(merged, defaults)
	if stored != nil {
		given, ok := body["api_key"]
		if hint := redactSecret(stored.APIKey); !ok || (hint != "" && given == hint) {
			merged["api_key"] = stored.APIKey
		}
	}
	u, errs := fromWire[config.Upstream](merged)
	if len(errs) == 0 {
		errs = u.Validate()
	}
	if stored != nil && u.Name != stored.Name && !hasPath(errs, "name") {
		errs = append(errs, config.FieldError{Path: "name", Msg: fmt.Sprintf("must be %q, the name in the path (an upstream cannot be renamed)", stored.Name)})
	}
	if len(errs) > 0 {
		return u, errs
	}
	return u, nil
}

// ---- keys ----

// keyView is k as the API shows it: its name, hash and settings; the
// plaintext is never stored, so never shown.
func keyView(k config.Key) (tree, error) {
	k.Key = ""
	return toWire(k)
}

func (h *handler) listKeys(w http.ResponseWriter, r *http.Request) {
	keys, err := h.b.Keys(r.Context())
	if err != nil {
		h.writeErr(w, r, "keys", err)
		return
	}
	out := make([]tree, 0, len(keys))
	for _, k := range keys {
		v, err := keyView(k)
		if err != nil {
			h.writeErr(w, r, "keys", err)
			return
		}
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *handler) getKey(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	keys, err := h.b.Keys(r.Context())
	if err != nil {
		h.writeErr(w, r, "key", err)
		return
	}
	for _, k := range keys {
		if k.Name == name {
			h.writeKey(w, r, http.StatusOK, k, "")
			return
		}
	}
	h.writeErr(w, r, "key", fmt.Errorf("key %q: %w", name, ErrNotFound))
}

func (h *handler) createKey(w http.ResponseWriter, r *http.Request) {
	body, err := readObject(w, r)
	if err != nil {
		h.writeErr(w, r, "key", err)
		return
	}
	_, plaintext := body["key"]
	k, secret, err := buildKey(nil, body, nil)
	if err != nil {
		h.writeErr(w, r, "key", err)
		return
	}
	if err := h.b.CreateKey(r.Context(), k); err != nil {
		h.writeErr(w, r, "key", secretPath(err, plaintext))
		return
	}
	h.log.Info("admin: key created", "key", k.Name, "generated_secret", secret != "")
	h.writeKey(w, r, http.StatusCreated, k, secret)
}

func (h *handler) replaceKey(w http.ResponseWriter, r *http.Request) { h.updateKey(w, r, false) }

func (h *handler) patchKey(w http.ResponseWriter, r *http.Request) { h.updateKey(w, r, true) }

// updateKey answers PUT (merge false) and PATCH (merge true) of a key.
func (h *handler) updateKey(w http.ResponseWriter, r *http.Request, merge bool) {
	name := r.PathValue("name")
	body, err := readObject(w, r)
	if err != nil {
		h.writeErr(w, r, "key", err)
		return
	}
	if _, ok := body["name"]; !ok && !merge {
		body["name"] = name
	}
	fields := fieldList(body)
	_, plaintext := body["key"]
	var buildErr error // the request's own problem, as opposed to the Backend's
	k, err := h.b.UpdateKey(r.Context(), name, func(cur config.Key) (config.Key, error) {
		var base tree
		if merge {
			var err error
			if base, err = keyView(cur); err != nil {
				return cur, err
			}
		}
		k, _, err := buildKey(base, cloneTree(body), &cur)
		buildErr = err
		return k, err
	})
	switch {
	case buildErr != nil:
		h.writeErr(w, r, "key", buildErr)
		return
	case err != nil:
		h.writeErr(w, r, "key", secretPath(err, plaintext))
		return
	}
	h.log.Info("admin: key updated", "key", name, "fields", fields)
	h.writeKey(w, r, http.StatusOK, k, "")
}

func (h *handler) deleteKey(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := h.b.DeleteKey(r.Context(), name); err != nil {
		h.writeErr(w, r, "key", err)
		return
	}
	h.log.Info("admin: key deleted", "key", name)
	w.WriteHeader(http.StatusNoContent)
}

// writeKey answers with k's view and, when the API generated it, the secret
// (shown this once).
func (h *handler) writeKey(w http.ResponseWriter, r *http.Request, status int, k config.Key, secret string) {
	v, err := keyView(k)
	if err != nil {
		h.writeErr(w, r, "key", err)
		return
	}
	if secret != "" {
		v["key"] = secret
	}
	writeJSON(w, status, v)
}

// buildKey makes the key a request asks for, like buildUpstream. The body
// may carry the secret as "key" (hashed here, never stored or echoed) or
// its hash as "key_sha256"; a new key (stored nil) with neither gets a
// generated secret, returned as generated. A PUT with neither keeps the
// stored hash.
func buildKey(base, body tree, stored *config.Key) (k config.Key, generated string, err error) {
	var errs config.Errors
	secret := ""
	if raw, ok := body["key"]; ok {
		delete(body, "key")
		switch s := raw.(type) {
		case nil:
		case string:
			secret = s
			if s == "" {
				errs = append(errs, config.FieldError{Path: "key", Msg: "must not be empty"})
			}
		default:
			errs = append(errs, config.FieldError{Path: "key", Msg: "must be a string, got " + describe(raw)})
		}
	}
	_, hashGiven := body["key_sha256"]
	hashGiven = hashGiven && body["key_sha256"] != nil
	if secret != "" && hashGiven {
		errs = append(errs, config.FieldError{Path: "key_sha256", Msg: "set only one of key and key_sha256"})
	}
	defaults, err := toWire(config.DefaultKey())
	if err != nil {
		return k, "", err
	}
	if base == nil {
		if base, err = toWire(config.DefaultKey()); err != nil {
			return k, "", err
		}
	}
	merged := mergePatch(base, body).(tree)
	fillMissing(merged, defaults)
	if stored != nil && !hashGiven && secret == "" {
		merged["key_sha256"] = stored.KeySHA256
	}
	if stored == nil && !hashGiven && secret == "" && len(errs) == 0 {
		secret = newKeyPrefix + rand.Text()
		generated = secret
	}
	k, decodeErrs := fromWire[config.Key](merged)
	errs = append(errs, decodeErrs...)
	if len(errs) == 0 {
		if secret != "" {
			k.Key, k.KeySHA256 = secret, ""
		}
		errs = k.Validate()
	}
	if stored != nil && k.Name != stored.Name && !hasPath(errs, "name") {
		errs = append(errs, config.FieldError{Path: "name", Msg: fmt.Sprintf("must be %q, the name in the path (a key cannot be renamed)", stored.Name)})
	}
	if len(errs) > 0 {
		return config.Key{}, "", errs
	}
	k.KeySHA256, k.Key = k.SecretHash(), ""
	return k, generated, nil
}

// secretPath reports a Backend's complaint about key_sha256 under "key"
// when the client sent the plaintext (the Backend sees only its hash).
func secretPath(err error, plaintext bool) error {
	var fields config.Errors
	if !plaintext || !errors.As(err, &fields) {
		return err
	}
	out := make(config.Errors, len(fields))
	for i, f := range fields {
		if f.Path == "key_sha256" {
			f.Path = "key"
		}
		out[i] = f
	}
	return out
}

// ---- routes ----

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
	routes, err := h.b.Routes(r.Context())
	if err != nil {
		h.writeErr(w, r, "routes", err)
		return
	}
	out := make([]tree, 0, len(routes))
	for _, rt := range routes {
		v, err := routeView(rt)
		if err != nil {
			h.writeErr(w, r, "routes", err)
			return
		}
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, out)
}

func (h *handler) getRoute(w http.ResponseWriter, r *http.Request) {
	model := r.PathValue("model")
	routes, err := h.b.Routes(r.Context())
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
	rt, err := buildRoute(body, model, h.b.RouteDefaults())
	var created bool
	if err == nil {
		created, err = h.b.PutRoute(r.Context(), rt)
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
	if err := h.b.DeleteRoute(r.Context(), model); err != nil {
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

// ---- helpers ----

// fieldList names the top-level fields of a body, for the change log (the
// values may hold secrets and are never logged).
func fieldList(body tree) string {
	return strings.Join(sortedKeys(body), ",")
}

// cloneTree copies t deeply enough for buildKey to delete from it.
func cloneTree(t tree) tree {
	c := make(tree, len(t))
	for k, v := range t {
		c[k] = v
	}
	return c
}

// hasPath reports whether errs has an error at path.
func hasPath(errs config.Errors, path string) bool {
	for _, e := range errs {
		if e.Path == path {
			return true
		}
	}
	return false
}
