package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	"switchyard/internal/config"
	"switchyard/internal/provider"
	"switchyard/internal/store"
)

// Upstream returns an upstream named name with every field set to a
// non-zero value, so that a round trip through a Store tests every field.
func Upstream(name string) config.Upstream {
	return config.Upstream{
		Name:              name,
		Provider:          "azure-openai",
		BaseURL:           "https://example.openai.azure.com",
		APIKey:            "sk-upstream-secret-" + name,
		APIVersion:        "2024-10-21",
		Organization:      "org-" + name,
		Project:           "proj_" + name,
		Models:            []string{"gpt-4o", "gpt-4o-*"},
		ModelMap:          map[string]string{"gpt-4o": "deploy-4o", "gpt-4o-mini": "deploy-mini"},
		Weight:            7,
		Priority:          3,
		MaxConcurrency:    12,
		Queue:             config.Queue{Enabled: true, Timeout: 1500 * time.Millisecond, MaxLength: 42, Discipline: config.DisciplineFIFO},
		RateLimit:         config.RateLimit{RPM: 600, TPM: 90000},
		SpendLimit:        config.SpendLimit{USD: 12.34, Period: "day"},
		Price:             config.Price{InputPerMTok: 2.5, OutputPerMTok: 10.125, CacheReadPerMTok: 1.25, CacheWritePerMTok: 3.125},
		Prices:            map[string]config.Price{"gpt-4o-*": {InputPerMTok: 0.15, OutputPerMTok: 0.6, CacheReadPerMTok: 0.075, CacheWritePerMTok: 0.2}},
		PriceMultiplier:   0.8,
		AffinityMigration: config.AffinityMigration{Mode: "cross_tier", MaxContentLength: 65536},
		Headers:           map[string]string{"X-Org": "acme", "X-Team": "infra"},
		Active:            true,
		// No provider takes all three blocks; the store keeps whatever it is given.
		Bedrock: &provider.BedrockSettings{Region: "eu-west-1", AccessKeyID: "AKIAEXAMPLE", SecretAccessKey: "bedrock-secret-" + name, SessionToken: "session-" + name, Profile: "prod"},
		Vertex:  &provider.VertexSettings{Project: "proj-" + name, Location: "us-east5", CredentialsFile: "/etc/sa.json", CredentialsJSON: `{"type":"service_account"}`},
		Azure: &provider.AzureSettings{Auth: provider.AzureAuthEntra, TenantID: "tenant-" + name, ClientID: "client-" + name,
			ClientSecret: "entra-secret-" + name, FederatedTokenFile: "/var/run/secrets/azure/token", AuthorityHost: "https://login.example.com/"},
	}
}

// Key returns a client key named name, stored as a hash, with every other
// field set to a non-zero value.
func Key(name string) config.Key {
	return config.Key{
		Name:             name,
		KeySHA256:        config.HashKey("sk-client-" + name),
		AllowedModels:    []string{"gpt-4o*", "claude-*"},
		AllowedUpstreams: []string{"openai-main", "azure-east"},
		RPM:              120,
		SpendLimit:       config.SpendLimit{USD: 99.5, Period: "month"},
		Preferences:      true,
		Team:             "research",
		Class:            config.ClassBatch,
		Weight:           3,
		MaxConcurrency:   6,
		TPM:              90000,
		Tags:             []string{"batch", "eu"},
		Debug:            true,
	}
}

// Route returns a route for model with every field set to a non-zero value.
func Route(model string) config.Route {
	enabled := false
	return config.Route{
		Model: model,
		RouteSettings: config.RouteSettings{
			Strategy:          config.StrategyWeightedRandom,
			Retries:           4,
			Timeout:           90 * time.Second,
			FirstByteTimeout:  15*time.Second + 250*time.Millisecond,
			MaxBodyBytes:      1 << 22,
			StreamIdleTimeout: 45 * time.Second,
			RetryBudget:       0.35,
			Hedge:             config.Hedge{Delay: "250ms", Max: 2, Budget: 0.05},
			MaxWait:           750 * time.Millisecond,
			Translate:         true,
			DefaultMaxTokens:  8192,
		},
		FallbackModels: []string{"gpt-4o-mini", "claude-3-5-haiku"},
		Affinity: config.RouteAffinity{Enabled: &enabled, SlidingTTL: 2 * time.Minute, AbsoluteTTL: time.Hour,
			Prefix: config.RoutePrefixAffinity{Enabled: &enabled, MinTokens: 512, TTL: 3 * time.Minute, MaxShare: 0.6}},
		Rules: []config.Rule{
			{When: config.RuleWhen{Header: map[string]string{"x-team": "research*"}, MinInputTokens: 10, MaxInputTokens: 1000,
				Key: []string{"batch-*"}, Tags: []string{"batch"}, Stream: &enabled, Tools: &enabled, Images: &enabled,
				Metadata: config.RuleMetadata{UserID: "u-*"}},
				Upstreams: []string{"openai-main"}, Exclude: []string{"bedrock"}, Strategy: config.StrategyFailover,
				Priority: map[string]int{"azure-east": 0}},
			{Model: "gpt-4o-mini"},
		},
	}
}

// Log returns request log number i: every field set, IDs "req-NNNN", and
// times one second apart (with a nanosecond part) in the order of i.
func Log(i int) store.RequestLog {
	return store.RequestLog{
		ID:           fmt.Sprintf("req-%04d", i),
		Time:         time.Date(2025, 3, 4, 5, 6, 7, 123456789, time.UTC).Add(time.Duration(i) * time.Second),
		Key:          "team-a",
		Model:        "gpt-4o",
		Upstream:     "openai-main",
		Status:       502,
		Attempts:     3,
		Stream:       true,
		Latency:      1234567891 * time.Nanosecond,
		TTFT:         345678912 * time.Nanosecond,
		InputTokens:  1 << 40,
		OutputTokens: 4321,
		// Cost and cache counts that a float32 or 32-bit column would not
		// hold exactly.
		CacheReadTokens:  1<<39 + 1,
		CacheWriteTokens: 1<<33 + 7,
		CostUSD:          1234.000000123456789,
		Unpriced:         true,
		ErrorClass:       "server_error",
		Error:            "upstream reset the connection",
		Translated:       "anthropic->openai-chat",
		TraceID:          "4bf92f3577b34da6a3ce929d0e0e4736",
		Tried: []store.Attempt{
			{Upstream: "openai-main", Start: time.Millisecond, End: 300 * time.Millisecond, Status: 500, Outcome: "server_error", Detail: "status 500"},
			{Upstream: "openai-spare", Start: 301 * time.Millisecond, FirstByte: 90 * time.Millisecond, End: 900 * time.Millisecond,
				Status: 200, Outcome: "success", InputTokens: 12, OutputTokens: 34, Hedge: true, Won: true},
		},
	}
}

// Day returns midnight UTC of the given day of 2025, a spend period start.
func Day(m time.Month, d int) time.Time { return time.Date(2025, m, d, 0, 0, 0, 0, time.UTC) }

// AssertAllFieldsSet fails t when v (a struct) has a zero-valued field, so
// that a field added to a type later is caught by the round-trip tests. The
// plaintext Key of a config.Key is exempt: it is never stored.
func AssertAllFieldsSet(t *testing.T, v any) {
	t.Helper()
	rv := reflect.ValueOf(v)
	for i := range rv.NumField() {
		f := rv.Type().Field(i)
		if f.Name == "Key" && rv.Type() == reflect.TypeFor[config.Key]() {
			continue
		}
		if rv.Field(i).IsZero() {
			t.Errorf("%s.%s is zero in the round-trip fixture; set it so it is tested", rv.Type().Name(), f.Name)
		}
		if rv.Field(i).Kind() == reflect.Struct && f.Type != reflect.TypeFor[time.Time]() {
			AssertAllFieldsSet(t, rv.Field(i).Interface())
		}
	}
}

// PlaintextSecret is the client secret TryPlaintextKeys offers a Store; a
// backend's test scans its storage for it afterwards.
const PlaintextSecret = "sk-switchyard-known-plaintext-7f3a9c"

// TryPlaintextKeys offers s every wrong form of the client key "a" (the
// plaintext PlaintextSecret, alone or with its hash, in the hash field, a
// short or non-hex hash), asserting that each is refused with
// store.ErrPlaintextKey, by an error that does not repeat the secret, and
// that nothing was stored. It then upserts the accepted form, the hash
// only, and returns that hash. A backend's test then asserts that its
// storage holds the hash and nowhere the secret.
func TryPlaintextKeys(t *testing.T, s store.Store) (hash string) {
	t.Helper()
	ctx := context.Background()
	const secret = PlaintextSecret
	hash = config.HashKey(secret)
	tests := []struct {
		name string
		key  config.Key
	}{
		{"plaintext with hash", config.Key{Name: "a", Key: secret, KeySHA256: hash}},
		{"plaintext only", config.Key{Name: "a", Key: secret}},
		{"no hash", config.Key{Name: "a"}},
		{"plaintext in the hash field", config.Key{Name: "a", KeySHA256: secret}},
		{"short hash", config.Key{Name: "a", KeySHA256: hash[:32]}},
		{"non-hex hash", config.Key{Name: "a", KeySHA256: strings.Repeat("z", 64)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := s.UpsertKey(ctx, tt.key)
			if !errors.Is(err, store.ErrPlaintextKey) {
				t.Fatalf("UpsertKey = %v, want ErrPlaintextKey", err)
			}
			if strings.Contains(err.Error(), secret) {
				t.Errorf("error %q repeats the secret", err)
			}
		})
	}
	ks, err := s.ListKeys(ctx)
	if err != nil || len(ks) != 0 {
		t.Fatalf("ListKeys after rejections = %+v, %v, want none", ks, err)
	}
	if err := s.UpsertKey(ctx, config.Key{Name: "a", KeySHA256: hash}); err != nil {
		t.Fatalf("UpsertKey(hash only): %v", err)
	}
	ks, err = s.ListKeys(ctx)
	if err != nil || len(ks) != 1 || ks[0].KeySHA256 != hash || ks[0].Key != "" {
		t.Fatalf("ListKeys after the hash-only upsert = %+v, %v, want the hash only", ks, err)
	}
	return hash
}
