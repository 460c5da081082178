package admin

import (
	"fmt"
	"net/http"
	"strings"

	"switchyard/internal/config"
	"switchyard/internal/provider"
)

// The /upstreams endpoints.

// upstreamView is u as the API shows it: the api_key and the provider
// settings' secrets (provider.SecretPaths) replaced by their hints.
func upstreamView(u config.Upstream) (tree, error) {
	u.APIKey = redactSecret(u.APIKey)
	t, err := toWire(u)
	if err != nil {
		return nil, err
	}
	for _, p := range provider.SecretPaths {
		if v, ok := getPath(t, p).(string); ok {
			setPath(t, p, redactSecret(v))
		}
	}
	return t, nil
}

// getPath returns the value at a dotted path of t, nil when absent.
func getPath(t tree, path string) any {
	var v any = t
	for _, k := range strings.Split(path, ".") {
		m, ok := v.(tree)
		if !ok {
			return nil
		}
		v = m[k]
	}
	return v
}

// setPath sets the value at a dotted path of t whose parent exists.
func setPath(t tree, path string, v any) {
	keys := strings.Split(path, ".")
	m := t
	for _, k := range keys[:len(keys)-1] {
		next, ok := m[k].(tree)
		if !ok {
			return
		}
		m = next
	}
	m[keys[len(keys)-1]] = v
}

// upstreamsAPI serves /admin/api/upstreams.
type upstreamsAPI struct{ *handler }

func (h upstreamsAPI) listUpstreams(w http.ResponseWriter, r *http.Request) {
	writeList(h.handler, w, r, "upstreams", h.s.Upstreams, upstreamView)
}

func (h upstreamsAPI) getUpstream(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	ups, err := h.s.Upstreams(r.Context())
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

func (h upstreamsAPI) createUpstream(w http.ResponseWriter, r *http.Request) {
	body, err := readObject(w, r)
	if err != nil {
		h.writeErr(w, r, "upstream", err)
		return
	}
	u, err := buildUpstream(nil, body, nil)
	if err == nil {
		err = h.s.CreateUpstream(r.Context(), u)
	}
	if err != nil {
		h.writeErr(w, r, "upstream", err)
		return
	}
	h.log.Info("admin: upstream created", "upstream", u.Name)
	h.writeUpstream(w, r, http.StatusCreated, u)
}

func (h upstreamsAPI) replaceUpstream(w http.ResponseWriter, r *http.Request) {
	h.updateUpstream(w, r, false)
}

func (h upstreamsAPI) patchUpstream(w http.ResponseWriter, r *http.Request) {
	h.updateUpstream(w, r, true)
}

// updateUpstream answers PUT (merge false) and PATCH (merge true).
func (h upstreamsAPI) updateUpstream(w http.ResponseWriter, r *http.Request, merge bool) {
	name := r.PathValue("name")
	body, err := readObject(w, r)
	if err != nil {
		h.writeErr(w, r, "upstream", err)
		return
	}
	if _, ok := body["name"]; !ok && !merge {
		body["name"] = name
	}
	u, err := h.s.UpdateUpstream(r.Context(), name, func(cur config.Upstream) (config.Upstream, error) {
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

func (h upstreamsAPI) deleteUpstream(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := h.s.DeleteUpstream(r.Context(), name); err != nil {
		h.writeErr(w, r, "upstream", err)
		return
	}
	h.log.Info("admin: upstream deleted", "upstream", name)
	w.WriteHeader(http.StatusNoContent)
}

// keepSecrets restores, in merged, each provider secret of stored that the
// request left out or sent back as its hint.
func keepSecrets(merged, body tree, stored *config.Upstream) {
	st, err := toWire(*stored)
	if err != nil {
		return
	}
	for _, p := range provider.SecretPaths {
		old, ok := getPath(st, p).(string)
		if !ok || old == "" {
			continue
		}
		if given := getPath(body, p); given == nil || given == redactSecret(old) {
			setPath(merged, p, old)
		}
	}
}

func (h upstreamsAPI) writeUpstream(w http.ResponseWriter, r *http.Request, status int, u config.Upstream) {
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
		keepSecrets(merged, body, stored)
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
