package config

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

// Key is a client API key.
type Key struct {
	// Name identifies the key in logs and the admin API. Required, unique,
	// without whitespace, '/', '?', '#' or '%'.
	Name string `yaml:"name" json:"name"`
	// Key is the plaintext secret clients send. Never stored; only its hash
	// (HashKey) is. Exactly one of Key and KeySHA256 is set; unique across keys.
	Key string `yaml:"key" json:"-"`
	// KeySHA256 is the hex SHA-256 of the secret (64 hex digits), as an
	// alternative to Key. Parse lowercases it to match HashKey.
	KeySHA256 string `yaml:"key_sha256" json:"key_sha256"`
	// AllowedModels are globs (see Glob) of client model names; empty allows all.
	AllowedModels []string `yaml:"allowed_models" json:"allowed_models"`
	// AllowedUpstreams, when non-empty, restricts the key to these upstreams
	// (names of configured upstreams).
	AllowedUpstreams []string `yaml:"allowed_upstreams" json:"allowed_upstreams"`
	// RPM is the per-key request limit per minute, ≥ 0; 0 (default) means none.
	RPM int `yaml:"rpm" json:"rpm"`
	// SpendLimit caps the key's spend.
	SpendLimit SpendLimit `yaml:"spend_limit" json:"spend_limit"`
	// Preferences lets the key send routing preferences (a request's
	// "provider" object or X-Switchyard-Provider header,
	// docs/routing.md#per-request-preferences). Default true; a key with
	// false that sends them gets 403 preferences_not_allowed.
	Preferences bool `yaml:"preferences" json:"preferences"`
	// Team is the name of the team (teams[].name) whose limits the key's
	// requests also count against; "" (default) means none.
	Team string `yaml:"team" json:"team"`
	// Class is the key's priority class in upstream queues: interactive
	// (default), batch or critical (docs/routing.md#tenants-classes-and-fair-queueing).
	Class string `yaml:"class" json:"class"`
	// Weight is the key's share of queue slots within its class, relative
	// to the other keys waiting; default 1, 1..100.
	Weight int `yaml:"weight" json:"weight"`
	// MaxConcurrency bounds the key's requests in flight at once, ≥ 0; 0
	// (default) means none.
	MaxConcurrency int `yaml:"max_concurrency" json:"max_concurrency"`
	// TPM is the key's token limit per minute (estimated tokens of its
	// requests), ≥ 0; 0 (default) means none.
	TPM int `yaml:"tpm" json:"tpm"`
	// Tags label the key for routes' rules (a rule's `when.tags` holds when
	// the key has one of them, docs/routing.md#rules). Default none.
	Tags []string `yaml:"tags" json:"tags"`
	// Debug lets the key ask for its requests' routing decision with the
	// X-Switchyard-Debug: 1 header (docs/reference.md#request-level-debug).
	// Default false: the header is ignored.
	Debug bool `yaml:"debug" json:"debug"`
}

// Team is a group of keys with limits of its own, counted over all its
// keys' requests (docs/routing.md#tenants-classes-and-fair-queueing).
type Team struct {
	// Name identifies the team; keys[].team names it. Required, unique.
	Name string `yaml:"name" json:"name"`
	// RPM is the team's request limit per minute, ≥ 0; 0 (default) means none.
	RPM int `yaml:"rpm" json:"rpm"`
	// TPM is the team's token limit per minute (estimated tokens), ≥ 0; 0
	// (default) means none.
	TPM int `yaml:"tpm" json:"tpm"`
	// MaxConcurrency bounds the team's requests in flight, ≥ 0; 0 (default) means none.
	MaxConcurrency int `yaml:"max_concurrency" json:"max_concurrency"`
	// SpendLimit caps the team's spend over its keys.
	SpendLimit SpendLimit `yaml:"spend_limit" json:"spend_limit"`
	// Weight is the team's share of queue slots within a class, against
	// the other teams and the keys of no team waiting; its waiting keys
	// split it by their weights
	// (docs/routing.md#tenants-classes-and-fair-queueing). Default 1, 1..100.
	Weight int `yaml:"weight" json:"weight"`
}

// DefaultTeam returns a Team holding the per-team defaults.
func DefaultTeam() Team {
	return Team{SpendLimit: SpendLimit{Period: "month"}, Weight: 1}
}

// Key classes (keys[].class).
const (
	ClassInteractive = "interactive"
	ClassBatch       = "batch"
	ClassCritical    = "critical"
)

// DefaultKey returns a Key holding the per-key defaults.
func DefaultKey() Key {
	return Key{SpendLimit: SpendLimit{Period: "month"}, Preferences: true, Class: ClassInteractive, Weight: 1}
}

// HashKey returns the lowercase hex SHA-256 of a client key's secret. Client
// keys are stored and compared only in this form: a key configured with
// `key` is hashed at load, one configured with `key_sha256` already is, and
// the secret a client sends is hashed before the lookup.
func HashKey(secret string) string {
	sum := sha256.Sum256([]byte(secret))
	return hex.EncodeToString(sum[:])
}

// SecretHash returns the key's stored form: HashKey(Key) when the plaintext
// is set, else KeySHA256 in lowercase.
func (k *Key) SecretHash() string {
	if k.Key != "" {
		return HashKey(k.Key)
	}
	return strings.ToLower(k.KeySHA256)
}
