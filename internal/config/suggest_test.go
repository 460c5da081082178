package config

import (
	"reflect"
	"slices"
	"strings"
	"testing"
)

// TestUnknownKeySuggestions: an unknown key names the key meant, at the same
// level or where it lives in the schema, and nothing when nothing is close.
func TestUnknownKeySuggestions(t *testing.T) {
	tests := []struct {
		name, doc string
		want      FieldError
	}{
		{"typo at the same level", "defaults:\n  first_byte_timout: 3s\n" + minimalUpstream,
			FieldError{"defaults.first_byte_timout", "unknown key; did you mean first_byte_timeout?"}},
		{"transposition", minimalUpstream + "    wieght: 3\n",
			FieldError{"upstreams[0].wieght", "unknown key; did you mean weight?"}},
		{"top-level typo", "listn: :8080\n" + minimalUpstream,
			FieldError{"listn", "unknown key; did you mean listen?"}},
		{"dashes for underscores", minimalUpstream + "    max-concurrency: 4\n",
			FieldError{"upstreams[0].max-concurrency", "unknown key; did you mean max_concurrency?"}},
		{"camel case", "defaults:\n  firstByteTimeout: 3s\n" + minimalUpstream,
			FieldError{"defaults.firstByteTimeout", "unknown key; did you mean first_byte_timeout?"}},
		{"key from a block below", minimalUpstream + "    rpm: 500\n",
			FieldError{"upstreams[0].rpm", "unknown key; did you mean rate_limit.rpm?"}},
		{"key from a provider block below", minimalUpstream + "    region: us-east-1\n",
			FieldError{"upstreams[0].region", "unknown key; did you mean bedrock.region?"}},
		{"typo of a key from a block below", minimalUpstream + "    rmp: 500\n",
			FieldError{"upstreams[0].rmp", "unknown key; did you mean rate_limit.rpm?"}},
		{"key from another block", "retries: 3\n" + minimalUpstream,
			FieldError{"retries", "unknown key; did you mean defaults.retries or routes[].retries?"}},
		{"key of the enclosing element", minimalUpstream + "    queue: {weight: 2}\n",
			FieldError{"upstreams[0].queue.weight", "unknown key; did you mean keys[].weight, teams[].weight or upstreams[0].weight?"}},
		{"top-level block of the same name as a key here", "routes:\n  - model: m\n    fail_back: false\n" + minimalUpstream,
			FieldError{"routes[0].fail_back", "unknown key; did you mean top-level affinity.fail_back?"}},
		{"near key here and the same key elsewhere", "keys:\n  - name: k\n    key: s\n    usd: 10\n" + minimalUpstream,
			FieldError{"keys[0].usd", "unknown key; did you mean spend_limit.usd?"}},
		{"at most three places", "timeout: 30s\n" + minimalUpstream,
			FieldError{"timeout", "unknown key; did you mean defaults.timeout, health.timeout or routes[].timeout?"}},
		{"nothing close", minimalUpstream + "    colour: blue\n",
			FieldError{"upstreams[0].colour", "unknown key"}},
		{"short key, nothing within half its length", "foo: 1\n" + minimalUpstream,
			FieldError{"foo", "unknown key"}},
		{"free-form map keys are not schema keys", "listen: :8080\nheaders: {X-A: b}\n" + minimalUpstream,
			FieldError{"headers", "unknown key; did you mean upstreams[].headers or tracing.headers?"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := parseErrors(t, tt.doc, nil)
			if want := (Errors{tt.want}); !reflect.DeepEqual(errs, want) {
				t.Errorf("errors = %q, want %q", errs, want)
			}
		})
	}
}

// TestSuggestionsCoverEverySchemaKey mistypes every key of the schema (two
// adjacent letters swapped) where it belongs and expects the key back: the
// key sets come from the structs, so none is missing.
func TestSuggestionsCoverEverySchemaKey(t *testing.T) {
	keys := schemaKeys()
	if len(keys) < 100 {
		t.Fatalf("schema has %d keys; the walk missed blocks", len(keys))
	}
	for _, want := range []string{"defaults.first_byte_timeout", "routes[].first_byte_timeout", "routes[].affinity.sliding_ttl",
		"upstreams[].rate_limit.rpm", "upstreams[].bedrock.region", "upstreams[].vertex.credentials_file", "tracing.sample_ratio"} {
		if !slices.ContainsFunc(keys, func(k schemaKey) bool { return k.path() == want }) {
			t.Errorf("schema lacks %s", want)
		}
	}
	tried := 0
	for _, k := range keys {
		typo, ok := swapAdjacent(k.name)
		if !ok || len(k.name) < 5 {
			continue
		}
		tried++
		written := strings.ReplaceAll(k.parent, "[]", "[0]")
		if got := suggest(written, typo); len(got) == 0 || got[0] != k.name {
			t.Errorf("%s: suggestions for %q = %q, want %q first", k.path(), typo, got, k.name)
		}
	}
	if tried < 80 {
		t.Errorf("mistyped only %d keys", tried)
	}
}

// swapAdjacent swaps the first two adjacent, different letters after the
// first character.
func swapAdjacent(s string) (string, bool) {
	b := []byte(s)
	for i := 1; i+1 < len(b); i++ {
		if b[i] != b[i+1] && b[i] != '_' && b[i+1] != '_' {
			b[i], b[i+1] = b[i+1], b[i]
			return string(b), true
		}
	}
	return "", false
}

func TestOSADistance(t *testing.T) {
	tests := []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"", "abc", 3},
		{"weight", "weight", 0},
		{"wieght", "weight", 1},  // transposition
		{"timout", "timeout", 1}, // deletion
		{"listenn", "listen", 1}, // insertion
		{"tpm", "rpm", 1},        // substitution
		{"ca", "abc", 3},         // OSA edits no substring twice (unrestricted DL: 2)
		{"retry", "retries", 3},  // y→i, +e, +s
		{"héllo", "hello", 1},    // runes, not bytes
		{"kitten", "sitting", 3},
	}
	for _, tt := range tests {
		if got := osaDistance(tt.a, tt.b); got != tt.want {
			t.Errorf("osaDistance(%q, %q) = %d, want %d", tt.a, tt.b, got, tt.want)
		}
		if got := osaDistance(tt.b, tt.a); got != tt.want {
			t.Errorf("osaDistance(%q, %q) = %d, want %d (symmetry)", tt.b, tt.a, got, tt.want)
		}
	}
}

// TestNoUpstreams: a file must configure at least one upstream; an empty
// file says so too.
func TestNoUpstreams(t *testing.T) {
	const noUpstream = "at least one upstream is required; see switchyard.example.yaml"
	tests := []struct {
		name, doc string
		want      Errors
	}{
		{"empty file", "", Errors{{"", "the file is empty: " + noUpstream}}},
		{"comments only", "# nothing yet\n", Errors{{"", "the file is empty: " + noUpstream}}},
		{"empty mapping", "{}\n", Errors{{"upstreams", noUpstream}}},
		{"no upstreams key", "listen: :8080\n", Errors{{"upstreams", noUpstream}}},
		{"upstreams without a value", "upstreams:\n", Errors{{"upstreams", noUpstream}}},
		{"empty list", "upstreams: []\n", Errors{{"upstreams", noUpstream}}},
		{"after the other errors", "listen: 8080\n", Errors{
			{"listen", `must be host:port such as ":8080" or "127.0.0.1:8080", got "8080"`},
			{"upstreams", noUpstream}}},
		{"not repeated when upstreams did not decode", "upstreams: {name: u}\n",
			Errors{{"upstreams", "must be a list, got a mapping"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if errs := parseErrors(t, tt.doc, nil); !reflect.DeepEqual(errs, tt.want) {
				t.Errorf("errors = %q, want %q", errs, tt.want)
			}
		})
	}
	t.Run("a configuration built in code may have none", func(t *testing.T) {
		cfg := Default()
		if errs := cfg.Validate(); len(errs) != 0 {
			t.Errorf("Default().Validate() = %q, want no errors", errs)
		}
	})
}

// TestEnumValueSuggestions: a wrong value of every enum-valued field lists
// the valid ones and, when one is close (the key rule: case, '_' and '-'
// ignored, at most 2 edits, less than half its length), names it.
func TestEnumValueSuggestions(t *testing.T) {
	const strategies = "adaptive, failover, least-conn, lowest-cost, p2c-ewma, round-robin, smooth-wrr, weighted-random"
	const providers = "openai, anthropic, azure-openai, openai-compatible, gemini, vertex, bedrock"
	upstream := func(extra string) string { return minimalUpstream + extra }
	tests := []struct {
		name, doc string
		want      FieldError
	}{
		{"strategy typo", "defaults:\n  strategy: adaptve\n" + minimalUpstream,
			FieldError{"defaults.strategy", `must be one of ` + strategies + `; got "adaptve"; did you mean adaptive?`}},
		{"route strategy with an underscore", "routes:\n  - model: m\n    strategy: least_conn\n" + minimalUpstream,
			FieldError{"routes[0].strategy", `must be one of ` + strategies + `; got "least_conn"; did you mean least-conn?`}},
		{"strategy in capitals", "defaults:\n  strategy: Weighted-Random\n" + minimalUpstream,
			FieldError{"defaults.strategy", `must be one of ` + strategies + `; got "Weighted-Random"; did you mean weighted-random?`}},
		{"strategy, nothing close", "defaults:\n  strategy: fastest\n" + minimalUpstream,
			FieldError{"defaults.strategy", `must be one of ` + strategies + `; got "fastest"`}},
		{"store driver", "store:\n  driver: postgress\n  dsn: postgres://u@h/db\n" + minimalUpstream,
			FieldError{"store.driver", `must be one of sqlite, postgres; got "postgress"; did you mean postgres?`}},
		{"store driver, nothing close", "store:\n  driver: mysql\n" + minimalUpstream,
			FieldError{"store.driver", `must be one of sqlite, postgres; got "mysql"`}},
		{"state driver", "state:\n  driver: reddis\n" + minimalUpstream,
			FieldError{"state.driver", `must be one of memory, redis; got "reddis"; did you mean redis?`}},
		{"log level", "log:\n  level: eror\n" + minimalUpstream,
			FieldError{"log.level", `must be one of debug, info, warn, error; got "eror"; did you mean error?`}},
		{"log level in capitals", "log:\n  level: DEBUG\n" + minimalUpstream,
			FieldError{"log.level", `must be one of debug, info, warn, error; got "DEBUG"; did you mean debug?`}},
		{"log format", "log:\n  format: jsn\n" + minimalUpstream,
			FieldError{"log.format", `must be one of json, text; got "jsn"; did you mean json?`}},
		{"health probe", "health:\n  probe: model\n" + minimalUpstream,
			FieldError{"health.probe", `must be one of models, chat; got "model"; did you mean models?`}},
		{"key spend period", "keys:\n  - name: k\n    key: s\n    spend_limit: {usd: 10, period: monht}\n" + minimalUpstream,
			FieldError{"keys[0].spend_limit.period", `must be one of day, month; got "monht"; did you mean month?`}},
		{"upstream spend period", upstream("    spend_limit: {usd: 10, period: days}\n"),
			FieldError{"upstreams[0].spend_limit.period", `must be one of day, month; got "days"; did you mean day?`}},
		{"provider", "upstreams:\n  - name: u1\n    provider: antropic\n    base_url: http://127.0.0.1:9000/v1\n    models: [m]\n",
			FieldError{"upstreams[0].provider", `must be one of ` + providers + `; got "antropic"; did you mean anthropic?`}},
		{"provider with an underscore", "upstreams:\n  - name: u1\n    provider: openai_compatible\n    base_url: http://127.0.0.1:9000/v1\n    models: [m]\n",
			FieldError{"upstreams[0].provider", `must be one of ` + providers + `; got "openai_compatible"; did you mean openai-compatible?`}},
		{"affinity migration mode", upstream("    affinity_migration: {mode: cross-tier}\n"),
			FieldError{"upstreams[0].affinity_migration.mode", `must be one of never, cross_tier, always; got "cross-tier"; did you mean cross_tier?`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := parseErrors(t, tt.doc, nil)
			if want := (Errors{tt.want}); !reflect.DeepEqual(errs, want) {
				t.Errorf("errors =\n%q\nwant\n%q", errs, want)
			}
		})
	}
}

// TestSuggestValue: the nearest values only, in the order allowed lists
// them, at most three.
func TestSuggestValue(t *testing.T) {
	tests := []struct {
		s       string
		allowed []string
		want    []string
	}{
		{"ab", []string{"abcd", "xyz"}, nil}, // two edits are half of "abcd"'s length
		{"abcd", []string{"abce", "abcf", "abdd", "abxy"}, []string{"abce", "abcf", "abdd"}},
		{"abcde", []string{"abxyz", "abcdf", "abcfe"}, []string{"abcdf", "abcfe"}},
		{"abcdef", []string{"abcdxy", "abcdex"}, []string{"abcdex"}},
		{"A_B-cd", []string{"ab-cd", "abce"}, []string{"ab-cd"}},
	}
	for _, tt := range tests {
		if got := suggestValue(tt.s, tt.allowed); !slices.Equal(got, tt.want) {
			t.Errorf("suggestValue(%q, %q) = %q, want %q", tt.s, tt.allowed, got, tt.want)
		}
	}
}
