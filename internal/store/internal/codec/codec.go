// Package codec holds what the store backends share between a Go value and
// its row: the JSON spec column each configuration table keeps, the columns
// kept apart from it (an upstream's API key, a key's hash), and the checks a
// value must pass before any backend stores it. The SQL itself stays with
// each backend.
package codec

import (
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"math"

	"switchyard/internal/config"
	"switchyard/internal/store"
)

// EncodeUpstream checks u and returns its api_key column and its JSON spec,
// which leaves the API key out.
func EncodeUpstream(u config.Upstream) (apiKey string, spec []byte, err error) {
	if u.Name == "" {
		return "", nil, errors.New("upserting upstream: empty name")
	}
	apiKey = u.APIKey
	u.APIKey = ""
	spec, err = json.Marshal(u)
	if err != nil {
		return "", nil, fmt.Errorf("upserting upstream %q: encoding: %w", u.Name, err)
	}
	return apiKey, spec, nil
}

// DecodeUpstream rebuilds an upstream from its name, api_key and spec
// columns.
func DecodeUpstream(name, apiKey string, spec []byte) (config.Upstream, error) {
	var u config.Upstream
	if err := json.Unmarshal(spec, &u); err != nil {
		return config.Upstream{}, fmt.Errorf("decoding %q: %w", name, err)
	}
	u.Name, u.APIKey = name, apiKey
	return u, nil
}

// EncodeKey checks k and returns its JSON spec. It returns
// store.ErrPlaintextKey unless k.Key is empty and k.KeySHA256 is a hex
// SHA-256 (64 hex digits).
func EncodeKey(k config.Key) ([]byte, error) {
	if k.Key != "" {
		return nil, fmt.Errorf("upserting key %q: plaintext secret given: %w", k.Name, store.ErrPlaintextKey)
	}
	if b, err := hex.DecodeString(k.KeySHA256); err != nil || len(b) != 32 {
		return nil, fmt.Errorf("upserting key %q: key_sha256 must be 64 hex digits: %w", k.Name, store.ErrPlaintextKey)
	}
	if k.Name == "" {
		return nil, errors.New("upserting key: empty name")
	}
	spec, err := json.Marshal(k)
	if err != nil {
		return nil, fmt.Errorf("upserting key %q: encoding: %w", k.Name, err)
	}
	return spec, nil
}

// DecodeKey rebuilds a client key from its name, key_sha256 and spec
// columns; the plaintext secret is always empty.
func DecodeKey(name, hash string, spec []byte) (config.Key, error) {
	k := config.DefaultKey() // a setting added after the key was stored takes its default
	if err := json.Unmarshal(spec, &k); err != nil {
		return config.Key{}, fmt.Errorf("decoding %q: %w", name, err)
	}
	k.Name, k.KeySHA256, k.Key = name, hash, ""
	return k, nil
}

// EncodeRoute checks r and returns its JSON spec.
func EncodeRoute(r config.Route) ([]byte, error) {
	if r.Model == "" {
		return nil, errors.New("upserting route: empty model")
	}
	spec, err := json.Marshal(r)
	if err != nil {
		return nil, fmt.Errorf("upserting route %q: encoding: %w", r.Model, err)
	}
	return spec, nil
}

// DecodeRoute rebuilds a route from its model and spec columns. A setting
// missing from the spec (one added after the route was stored) takes its
// default.
func DecodeRoute(model string, spec []byte) (config.Route, error) {
	r := config.Route{RouteSettings: config.Default().Defaults}
	if err := json.Unmarshal(spec, &r); err != nil {
		return config.Route{}, fmt.Errorf("decoding %q: %w", model, err)
	}
	r.Model = model
	return r, nil
}

// CheckSpend checks a batch of spend deltas before any is added: each needs
// a scope, a name, a period start and a finite amount.
func CheckSpend(deltas []store.SpendDelta) error {
	for i, d := range deltas {
		switch {
		case d.Scope == "" || d.Name == "":
			return fmt.Errorf("adding spend: delta %d: empty scope or name", i)
		case d.PeriodStart.IsZero():
			return fmt.Errorf("adding spend for %s %q: zero period start", d.Scope, d.Name)
		case math.IsNaN(d.USD) || math.IsInf(d.USD, 0):
			return fmt.Errorf("adding spend for %s %q: usd %v is not a finite number", d.Scope, d.Name, d.USD)
		}
	}
	return nil
}
