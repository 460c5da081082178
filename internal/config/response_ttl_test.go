package config

import (
	"strings"
	"testing"
	"time"
)

// TestResponseTTL: affinity.response_ttl defaults to 24h, is read as a Go
// duration, and must be > 0 (reported under its field path).
func TestResponseTTL(t *testing.T) {
	const base = "keys: [{name: k, key: sk-k}]\n" +
		"upstreams: [{name: u, provider: openai, base_url: 'https://api.openai.com/v1', api_key: sk-u, models: [gpt-4o]}]\n"
	tests := []struct {
		name    string
		yaml    string
		want    time.Duration // when valid
		wantErr string        // the error Parse reports, "" for none
	}{
		{"default", base, 24 * time.Hour, ""},
		{"set", base + "affinity: {response_ttl: 90m}\n", 90 * time.Minute, ""},
		{"days in hours", base + "affinity: {response_ttl: 720h}\n", 720 * time.Hour, ""},
		{"zero", base + "affinity: {response_ttl: 0s}\n", 0, "affinity.response_ttl: must be > 0, got 0s"},
		{"negative", base + "affinity: {response_ttl: -1m}\n", -time.Minute, "affinity.response_ttl: must be > 0, got -1m0s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg, err := Parse([]byte(tt.yaml), env(nil))
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("Parse error = %v, want %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse: %v", err)
			}
			if cfg.Affinity.ResponseTTL != tt.want {
				t.Errorf("response_ttl = %s, want %s", cfg.Affinity.ResponseTTL, tt.want)
			}
		})
	}
}
