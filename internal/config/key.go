package config

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
)

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
