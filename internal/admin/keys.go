package admin

import (
	"crypto/rand"
	"errors"
	"fmt"
	"net/http"

	"switchyard/internal/config"
)

// The /keys endpoints.

// newKeyPrefix starts every client key secret the API generates.
const newKeyPrefix = "sk-sy-"

// keyView is k as the API shows it: its name, hash and settings; the
// plaintext is never stored, so never shown.
func keyView(k config.Key) (tree, error) {
	k.Key = ""
	return toWire(k)
}

// keysAPI serves /admin/api/keys: the client keys, stored hashed.
type keysAPI struct{ *handler }

func (h keysAPI) listKeys(w http.ResponseWriter, r *http.Request) {
	writeList(h.handler, w, r, "keys", h.s.Keys, keyView)
}

func (h keysAPI) getKey(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	keys, err := h.s.Keys(r.Context())
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

func (h keysAPI) createKey(w http.ResponseWriter, r *http.Request) {
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
	if err := h.s.CreateKey(r.Context(), k); err != nil {
		h.writeErr(w, r, "key", secretPath(err, plaintext))
		return
	}
	h.log.Info("admin: key created", "key", k.Name, "generated_secret", secret != "")
	h.writeKey(w, r, http.StatusCreated, k, secret)
}

func (h keysAPI) replaceKey(w http.ResponseWriter, r *http.Request) { h.updateKey(w, r, false) }

func (h keysAPI) patchKey(w http.ResponseWriter, r *http.Request) { h.updateKey(w, r, true) }

// updateKey answers PUT (merge false) and PATCH (merge true) of a key.
func (h keysAPI) updateKey(w http.ResponseWriter, r *http.Request, merge bool) {
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
	var buildErr error // the request's own problem, as opposed to the Service's
	k, err := h.s.UpdateKey(r.Context(), name, func(cur config.Key) (config.Key, error) {
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

func (h keysAPI) deleteKey(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	if err := h.s.DeleteKey(r.Context(), name); err != nil {
		h.writeErr(w, r, "key", err)
		return
	}
	h.log.Info("admin: key deleted", "key", name)
	w.WriteHeader(http.StatusNoContent)
}

// writeKey answers with k's view and, when the API generated it, the secret
// (shown this once).
func (h keysAPI) writeKey(w http.ResponseWriter, r *http.Request, status int, k config.Key, secret string) {
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

// secretPath reports the Service's complaint about key_sha256 under "key"
// when the client sent the plaintext (the Service sees only its hash).
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
