package config

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

// env returns a lookup function over a fixed map, standing in for os.LookupEnv.
func env(vars map[string]string) func(string) (string, bool) {
	return func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	}
}

// minimalUpstream is a valid upstreams list for tests that are about other keys.
const minimalUpstream = `
upstreams:
  - name: u1
    provider: openai-compatible
    base_url: http://127.0.0.1:9000/v1
    models: [gpt-4o, gpt-4o-mini]
`

func mustParse(t *testing.T, yaml string, vars map[string]string) *Config {
	t.Helper()
	cfg, err := Parse([]byte(yaml), env(vars))
	if err != nil {
		t.Fatalf("Parse() error:\n%v", err)
	}
	return cfg
}

// parseErrors parses yaml and returns its Errors, failing if it parsed cleanly.
func parseErrors(t *testing.T, yaml string, vars map[string]string) Errors {
	t.Helper()
	cfg, err := Parse([]byte(yaml), env(vars))
	if err == nil {
		t.Fatalf("Parse() = %+v, want an error", cfg)
	}
	var errs Errors
	if !errors.As(err, &errs) {
		t.Fatalf("Parse() error %T %v, want Errors", err, err)
	}
	return errs
}

// TestParseGivesDefaults: a file that sets nothing but its upstream holds
// every default. (An empty file is an error: TestNoUpstreams.)
func TestParseGivesDefaults(t *testing.T) {
	for name, doc := range map[string]string{
		"upstream only": minimalUpstream,
		"comments":      "# nothing else configured yet\n" + minimalUpstream,
		"null values":   "admin:\nkeys:\nroutes:\n" + minimalUpstream,
	} {
		t.Run(name, func(t *testing.T) {
			cfg := mustParse(t, doc, nil)
			want := Default()
			want.Upstreams = cfg.Upstreams
			if !reflect.DeepEqual(*cfg, want) {
				t.Fatalf("Parse(%q) =\n%+v\nwant Default() and the upstream\n%+v", doc, *cfg, want)
			}
		})
	}
	t.Run("default values", func(t *testing.T) {
		cfg := mustParse(t, minimalUpstream, nil)
		checks := []struct {
			name      string
			got, want any
		}{
			{"listen", cfg.Listen, ":8080"},
			{"store", cfg.Store, Store{Driver: "sqlite", DSN: "switchyard.db"}},
			{"state", cfg.State, State{Driver: "memory", RedisPrefix: "switchyard:", LeaseTTL: 15 * time.Second,
				SyncInterval: 250 * time.Millisecond, RedisTimeout: 250 * time.Millisecond}},
			{"log", cfg.Log, Log{Level: "info", Format: "json", Requests: true}},
			{"defaults", cfg.Defaults, RouteSettings{Strategy: "weighted-random", Retries: 2, Timeout: 300 * time.Second,
				FirstByteTimeout: 60 * time.Second, MaxBodyBytes: 10485760, StreamIdleTimeout: 60 * time.Second, RetryBudget: 0.2,
				Translate: true, DefaultMaxTokens: 4096, Hedge: Hedge{Delay: "0s", Max: 1, Budget: 0.1}}},
			{"affinity", cfg.Affinity, Affinity{Enabled: true, SlidingTTL: 5 * time.Minute, AbsoluteTTL: 30 * time.Minute, MaxEntries: 10000, FailBack: true, ResponseTTL: 24 * time.Hour,
				ConversationMaxBytes: 1 << 20, MaxConversations: 10000,
				Prefix: PrefixAffinity{Enabled: true, MinTokens: 1024, TTL: 5 * time.Minute, MaxShare: 0.5}}},
			{"health", cfg.Health, Health{Interval: 30 * time.Second, Probe: "models", Timeout: 5 * time.Second}},
			{"circuit", cfg.Circuit, Circuit{FailureThreshold: 5, Window: 30 * time.Second, OpenDuration: 60 * time.Second,
				ProbeInterval: 10 * time.Second, SuccessThreshold: 1, SlowStart: 30 * time.Second}},
		}
		for _, c := range checks {
			if !reflect.DeepEqual(c.got, c.want) {
				t.Errorf("%s = %+v, want %+v", c.name, c.got, c.want)
			}
		}
	})
}

// TestRouteInheritsDefaults sets every `defaults` key to a non-default value;
// a route that sets one key keeps its own value there and inherits the rest.
func TestRouteInheritsDefaults(t *testing.T) {
	const defaults = `
defaults:
  strategy: least-conn
  retries: 4
  timeout: 120s
  first_byte_timeout: 20s
  max_body_bytes: 2048
  stream_idle_timeout: 15s
  retry_budget: 0.5
  max_wait: 2s
  translate: false
  default_max_tokens: 1000
  hedge: {delay: 300ms, max: 2, budget: 0.05}
`
	inherited := RouteSettings{Strategy: "least-conn", Retries: 4, Timeout: 120 * time.Second,
		FirstByteTimeout: 20 * time.Second, MaxBodyBytes: 2048, StreamIdleTimeout: 15 * time.Second,
		RetryBudget: 0.5, MaxWait: 2 * time.Second, DefaultMaxTokens: 1000,
		Hedge: Hedge{Delay: "300ms", Max: 2, Budget: 0.05}}
	tests := []struct {
		key, value string
		set        func(s *RouteSettings)
	}{
		{"strategy", "adaptive", func(s *RouteSettings) { s.Strategy = "adaptive" }},
		{"retries", "0", func(s *RouteSettings) { s.Retries = 0 }},
		{"timeout", "90s", func(s *RouteSettings) { s.Timeout = 90 * time.Second }},
		{"first_byte_timeout", "5s", func(s *RouteSettings) { s.FirstByteTimeout = 5 * time.Second }},
		{"max_body_bytes", "4096", func(s *RouteSettings) { s.MaxBodyBytes = 4096 }},
		{"stream_idle_timeout", "30s", func(s *RouteSettings) { s.StreamIdleTimeout = 30 * time.Second }},
		{"retry_budget", "0", func(s *RouteSettings) { s.RetryBudget = 0 }},
		{"max_wait", "0s", func(s *RouteSettings) { s.MaxWait = 0 }},
		{"translate", "true", func(s *RouteSettings) { s.Translate = true }},
		{"default_max_tokens", "64000", func(s *RouteSettings) { s.DefaultMaxTokens = 64000 }},
		{"hedge", "{delay: p95}", func(s *RouteSettings) { s.Hedge.Delay = "p95" }},
	}
	for _, tt := range tests {
		t.Run(tt.key, func(t *testing.T) {
			doc := defaults + "routes:\n  - model: gpt-4o\n  - model: gpt-4o-mini\n    " + tt.key + ": " + tt.value + "\n" + minimalUpstream
			cfg := mustParse(t, doc, nil)
			if cfg.Defaults != inherited {
				t.Fatalf("defaults = %+v, want %+v", cfg.Defaults, inherited)
			}
			if got := cfg.Routes[0].RouteSettings; got != inherited {
				t.Errorf("route without %s = %+v, want every defaults key %+v", tt.key, got, inherited)
			}
			want := inherited
			tt.set(&want)
			if got := cfg.Routes[1].RouteSettings; got != want {
				t.Errorf("route with %s: %s = %+v, want %+v", tt.key, tt.value, got, want)
			}
		})
	}
	t.Run("settings for unrouted model are the defaults", func(t *testing.T) {
		cfg := mustParse(t, defaults+"routes:\n  - model: gpt-4o\n    retries: 1\n"+minimalUpstream, nil)
		r, ok := cfg.Settings("claude-3-5-haiku")
		if ok || r.RouteSettings != inherited || r.Model != "claude-3-5-haiku" {
			t.Errorf("Settings(claude-3-5-haiku) = %+v, %v; want the defaults, false", r, ok)
		}
		r, ok = cfg.Settings("gpt-4o")
		if !ok || r.Retries != 1 || r.Timeout != 120*time.Second {
			t.Errorf("Settings(gpt-4o) = %+v, %v; want retries 1 and the default timeout", r, ok)
		}
	})
}

func TestElementDefaults(t *testing.T) {
	cfg := mustParse(t, `
keys:
  - name: k
    key: sk-1
  - name: strict
    key: sk-2
    preferences: false
teams:
  - name: research
  - name: ops
    weight: 3
routes:
  - model: gpt-4o
`+minimalUpstream, nil)
	u := cfg.Upstreams[0]
	checks := []struct {
		name      string
		got, want any
	}{
		{"upstream weight", u.Weight, 1},
		{"upstream priority", u.Priority, 0},
		{"upstream active", u.Active, true},
		{"upstream queue", u.Queue, Queue{Enabled: false, Timeout: 5 * time.Second, MaxLength: 100, Discipline: DisciplineFair}},
		{"upstream spend period", u.SpendLimit, SpendLimit{Period: "month"}},
		{"upstream affinity migration", u.AffinityMigration, AffinityMigration{Mode: "never"}},
		{"key spend period", cfg.Keys[0].SpendLimit, SpendLimit{Period: "month"}},
		{"key preferences allowed", cfg.Keys[0].Preferences, true},
		{"key preferences: false", cfg.Keys[1].Preferences, false},
		{"route affinity inherits", cfg.Routes[0].Affinity, RouteAffinity{}},
		{"team defaults", cfg.Teams[0], Team{Name: "research", SpendLimit: SpendLimit{Period: "month"}, Weight: 1}},
		{"team weight given", cfg.Teams[1].Weight, 3},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if !reflect.DeepEqual(c.got, c.want) {
				t.Errorf("got %+v, want %+v", c.got, c.want)
			}
		})
	}
	t.Run("partial nested block keeps other defaults", func(t *testing.T) {
		cfg := mustParse(t, `
upstreams:
  - name: u1
    provider: openai-compatible
    base_url: http://127.0.0.1:9000/v1
    models: [m]
    max_concurrency: 2
    queue: {enabled: true}
    active: false
`, nil)
		u := cfg.Upstreams[0]
		if want := (Queue{Enabled: true, Timeout: 5 * time.Second, MaxLength: 100, Discipline: DisciplineFair}); u.Queue != want || u.Active {
			t.Errorf("queue = %+v, active = %v; want %+v, false", u.Queue, u.Active, want)
		}
	})
}

func TestWeightExplicitZeroVersusAbsent(t *testing.T) {
	t.Run("absent defaults to 1", func(t *testing.T) {
		if w := mustParse(t, minimalUpstream, nil).Upstreams[0].Weight; w != 1 {
			t.Errorf("weight = %d, want 1", w)
		}
	})
	t.Run("explicit 0 rejected", func(t *testing.T) {
		errs := parseErrors(t, minimalUpstream+"    weight: 0\n", nil)
		want := Errors{{"upstreams[0].weight", "must be 1–100, got 0"}}
		if !reflect.DeepEqual(errs, want) {
			t.Errorf("errors = %q, want %q", errs, want)
		}
		if got := errs.Error(); got != "upstreams[0].weight: must be 1–100, got 0" {
			t.Errorf("Error() = %q", got)
		}
	})
}

func TestEnvExpansion(t *testing.T) {
	vars := map[string]string{
		"KEY": "sk-from-env", "W": "7", "T": "45s", "ACTIVE": "false", "MODEL": "gpt-4o",
		"PRICE": "2.5", "FBT": "10s", "HOST": "api.example.com", "EMPTY": "", "ON": "true", "TRICKY": "${W}",
	}
	cfg := mustParse(t, `
admin:
  token: ${KEY}
defaults:
  timeout: ${T}
  first_byte_timeout: ${FBT}
  retries: ${W}
keys:
  - name: team
    key: prefix-${KEY}-suffix
routes:
  - model: ${MODEL}
    affinity: {enabled: "${ON}"}
upstreams:
  - name: u1
    provider: openai
    base_url: https://${HOST}/v1
    api_key: ${TRICKY}
    models: ${MODEL}
    weight: ${W}
    active: ${ACTIVE}
    price: {input_per_mtok: "${PRICE}", output_per_mtok: "${UNSET_PRICE:-10}"}
    headers: {X-Team: "${EMPTY:-fallback}", X-Literal: "$${NOT_EXPANDED}"}
`, vars)
	u := cfg.Upstreams[0]
	checks := []struct {
		name      string
		got, want any
	}{
		{"string", cfg.Admin.Token, "sk-from-env"},
		{"string with text around", cfg.Keys[0].Key, "prefix-sk-from-env-suffix"},
		{"url", u.BaseURL, "https://api.example.com/v1"},
		{"duration", cfg.Defaults.Timeout, 45 * time.Second},
		{"int", cfg.Defaults.Retries, 7},
		{"route inherits expanded defaults", cfg.Routes[0].Timeout, 45 * time.Second},
		{"route model", cfg.Routes[0].Model, "gpt-4o"},
		{"optional bool", *cfg.Routes[0].Affinity.Enabled, true},
		{"lone string as list", u.Models, []string{"gpt-4o"}},
		{"upstream int", u.Weight, 7},
		{"bool", u.Active, false},
		{"float", u.Price.InputPerMTok, 2.5},
		{"fallback when unset", u.Price.OutputPerMTok, 10.0},
		{"fallback when empty", u.Headers["X-Team"], "fallback"},
		{"value not expanded again", u.APIKey, "${W}"},
		{"$${ escapes", u.Headers["X-Literal"], "${NOT_EXPANDED}"},
		{"no warnings", len(cfg.Warnings), 0},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if !reflect.DeepEqual(c.got, c.want) {
				t.Errorf("got %#v, want %#v", c.got, c.want)
			}
		})
	}
	t.Run("fallback ignored when set", func(t *testing.T) {
		cfg := mustParse(t, "listen: ${ADDR:-:9000}\n"+minimalUpstream, map[string]string{"ADDR": ":7000"})
		if cfg.Listen != ":7000" {
			t.Errorf("listen = %q, want :7000", cfg.Listen)
		}
		cfg = mustParse(t, "listen: ${ADDR:-:9000}\n"+minimalUpstream, nil)
		if cfg.Listen != ":9000" {
			t.Errorf("listen = %q, want :9000", cfg.Listen)
		}
	})
}

func TestEnvWarningsAndErrors(t *testing.T) {
	t.Run("unset variable warns with path", func(t *testing.T) {
		cfg := mustParse(t, "admin:\n  token: ${SWITCHYARD_ADMIN_TOKEN}\n"+minimalUpstream, nil)
		want := Errors{{"admin.token", "environment variable SWITCHYARD_ADMIN_TOKEN is not set; using an empty value"}}
		if !reflect.DeepEqual(cfg.Warnings, want) || cfg.Admin.Token != "" {
			t.Errorf("warnings = %q, token = %q; want %q and empty", cfg.Warnings, cfg.Admin.Token, want)
		}
	})
	t.Run("set but empty variable does not warn", func(t *testing.T) {
		cfg := mustParse(t, "metrics:\n  token: ${TOKEN}\n"+minimalUpstream, map[string]string{"TOKEN": ""})
		if len(cfg.Warnings) != 0 {
			t.Errorf("warnings = %q, want none", cfg.Warnings)
		}
	})
	t.Run("warning explains the resulting error", func(t *testing.T) {
		errs := parseErrors(t, "keys:\n  - name: team-a\n    key: ${TEAM_A_KEY}\n"+minimalUpstream, nil)
		want := Errors{{"keys[0].key",
			"one of key or key_sha256 is required (environment variable TEAM_A_KEY is not set; using an empty value)"}}
		if !reflect.DeepEqual(errs, want) {
			t.Errorf("errors = %q, want %q", errs, want)
		}
	})
	tests := []struct {
		name, doc string
		want      Errors
	}{
		{"invalid variable name", "listen: ${1PORT}\n" + minimalUpstream,
			Errors{{"listen", "invalid environment variable reference ${1PORT}"}}},
		{"empty variable name", "listen: ${}\n" + minimalUpstream,
			Errors{{"listen", "invalid environment variable reference ${}"}}},
		{"unterminated reference", "listen: ${PORT\n" + minimalUpstream,
			Errors{{"listen", "unterminated ${ in value"}}},
		{"unset number", "defaults:\n  retries: ${RETRIES}\n" + minimalUpstream, Errors{{"defaults.retries",
			`must be a whole number, got "" (environment variable RETRIES is not set; using an empty value)`}}},
		{"number from environment not a number", "defaults:\n  retries: ${NOT_NUM:-many}\n" + minimalUpstream,
			Errors{{"defaults.retries", `must be a whole number, got "many"`}}},
		{"duration from environment without unit", "defaults:\n  timeout: ${T:-30}\n" + minimalUpstream,
			Errors{{"defaults.timeout", `must be a duration such as 500ms, 30s or 5m, got "30"`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if errs := parseErrors(t, tt.doc, nil); !reflect.DeepEqual(errs, tt.want) {
				t.Errorf("errors = %q, want %q", errs, tt.want)
			}
		})
	}
}

func TestDecodeErrors(t *testing.T) {
	tests := []struct {
		name, doc string
		want      Errors
	}{
		{"unknown upstream key", minimalUpstream + "    wieght: 3\n",
			Errors{{"upstreams[0].wieght", "unknown key; did you mean weight?"}}},
		{"unknown top-level key", "listn: :8080\n" + minimalUpstream, Errors{{"listn", "unknown key; did you mean listen?"}}},
		{"unknown nested key", minimalUpstream + "    queue: {enable: true}\n",
			Errors{{"upstreams[0].queue.enable", "unknown key; did you mean enabled?"}}},
		{"unknown route key", "routes:\n  - model: m\n    retry: 1\n" + minimalUpstream, Errors{{"routes[0].retry", "unknown key"}}},
		{"int type", minimalUpstream + "    weight: heavy\n",
			Errors{{"upstreams[0].weight", `must be a whole number, got "heavy"`}}},
		{"int from fraction", "defaults:\n  retries: 1.5\n" + minimalUpstream, Errors{{"defaults.retries", "must be a whole number, got 1.5"}}},
		{"duration without unit", "defaults:\n  timeout: 30\n" + minimalUpstream,
			Errors{{"defaults.timeout", "must be a duration with a unit such as 500ms, 30s or 5m, got 30"}}},
		{"duration bad text", "health:\n  interval: soon\n" + minimalUpstream,
			Errors{{"health.interval", `must be a duration such as 500ms, 30s or 5m, got "soon"`}}},
		{"bool type", minimalUpstream + "    active: maybe\n",
			Errors{{"upstreams[0].active", `must be true or false, got "maybe"`}}},
		{"float type", minimalUpstream + "    price: {input_per_mtok: cheap}\n",
			Errors{{"upstreams[0].price.input_per_mtok", `must be a number, got "cheap"`}}},
		{"string type", "listen: [a, b]\n" + minimalUpstream, Errors{{"listen", "must be a string, got a list"}}},
		{"list type", "keys:\n  - name: k\n    key: s\n    allowed_models: {a: b}\n" + minimalUpstream,
			Errors{{"keys[0].allowed_models", "must be a list, got a mapping"}}},
		{"mapping type", minimalUpstream + "    queue: 5\n", Errors{{"upstreams[0].queue", "must be a mapping, got 5"}}},
		{"map value type", minimalUpstream + "    headers: {X-A: [1]}\n",
			Errors{{"upstreams[0].headers.X-A", "must be a string, got a list"}}},
		{"root not a mapping", "- a\n- b\n", Errors{{"", "must be a mapping, got a list"}}},
		{"several errors together", `
listen: 8080
lg:
  level: info
defaults:
  retries: two
upstreams:
  - name: u1
    wieght: 3
    weight: 0
    price: {input_per_mtok: x}
  - name: u2
    active: nope
`, Errors{
			{"lg", "unknown key; did you mean log?"},
			{"defaults.retries", `must be a whole number, got "two"`},
			{"upstreams[0].wieght", "unknown key; did you mean weight?"},
			{"upstreams[0].price.input_per_mtok", `must be a number, got "x"`},
			{"upstreams[1].active", `must be true or false, got "nope"`},
			{"listen", `must be host:port such as ":8080" or "127.0.0.1:8080", got "8080"`},
			{"upstreams[0].provider", "required; must be one of openai, anthropic, azure-openai, openai-compatible, gemini, vertex, bedrock"},
			{"upstreams[0].base_url", "required"},
			{"upstreams[0].models", "at least one model name or pattern is required"},
			{"upstreams[0].weight", "must be 1–100, got 0"},
			{"upstreams[1].provider", "required; must be one of openai, anthropic, azure-openai, openai-compatible, gemini, vertex, bedrock"},
			{"upstreams[1].base_url", "required"},
			{"upstreams[1].models", "at least one model name or pattern is required"},
		}},
		{"no validation error caused by a decoding error", `
keys:
  - name: k
    key: s
    allowed_upstreams: [u1]
routes:
  - model: m
    fallback_models: [gpt-4o]
upstreams:
  - name: [u1]
    provider: openai-compatible
    base_url: http://127.0.0.1:9000/v1
    models: {gpt-4o: true}
`, Errors{
			{"upstreams[0].name", "must be a string, got a list"},
			{"upstreams[0].models", "must be a list, got a mapping"},
		}},
		{"several validation errors together", `
listen: "8080"
upstreams:
  - name: u1
    provider: openai
    base_url: api.openai.com
    models: []
    weight: 0
`, Errors{
			{"listen", `must be host:port such as ":8080" or "127.0.0.1:8080", got "8080"`},
			{"upstreams[0].base_url", `must be an absolute http(s) URL with a host, such as https://api.openai.com/v1, got "api.openai.com"`},
			{"upstreams[0].api_key", "required for provider openai"},
			{"upstreams[0].models", "at least one model name or pattern is required"},
			{"upstreams[0].weight", "must be 1–100, got 0"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if errs := parseErrors(t, tt.doc, nil); !reflect.DeepEqual(errs, tt.want) {
				t.Errorf("errors =\n%s\nwant\n%s", errs, tt.want)
			}
		})
	}
}

func TestYAMLSyntaxErrors(t *testing.T) {
	tests := []struct{ name, doc, mention string }{
		{"unclosed flow sequence", "upstreams: [a, b\n", "[1:"},
		{"duplicate key", "listen: :1\nlisten: :2\n", `"listen" already defined`},
		{"bad indentation", "admin:\n  listen: :9\n token: x\n", "parsing YAML"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := parseErrors(t, tt.doc, nil)
			if len(errs) != 1 || errs[0].Path != "" || !strings.HasPrefix(errs[0].Msg, "parsing YAML: ") ||
				!strings.Contains(errs[0].Msg, tt.mention) {
				t.Errorf("errors = %q, want one YAML error mentioning %q", errs, tt.mention)
			}
		})
	}
}

func TestKeySHA256NormalizedToLowercase(t *testing.T) {
	upper := strings.ToUpper(HashKey("sk-1"))
	cfg := mustParse(t, "keys:\n  - name: k\n    key_sha256: "+upper+"\n"+minimalUpstream, nil)
	if got := cfg.Keys[0].KeySHA256; got != HashKey("sk-1") {
		t.Errorf("key_sha256 = %s, want %s", got, HashKey("sk-1"))
	}
}

func TestDesignExampleParses(t *testing.T) {
	vars := map[string]string{
		"SWITCHYARD_ADMIN_TOKEN": "admin-secret",
		"TEAM_A_KEY":             "sk-team-a",
		"OPENAI_KEY":             "sk-openai",
	}
	data, err := os.ReadFile(filepath.Join("testdata", "design.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := Parse(data, env(vars))
	if err != nil {
		t.Fatalf("Parse(design.yaml) error:\n%v", err)
	}
	if len(cfg.Warnings) != 0 {
		t.Errorf("warnings = %q, want none", cfg.Warnings)
	}
	u := cfg.Upstreams[0]
	checks := []struct {
		name      string
		got, want any
	}{
		{"admin token", cfg.Admin.Token, "admin-secret"},
		{"key", cfg.Keys[0].Key, "sk-team-a"},
		{"allowed models", cfg.Keys[0].AllowedModels, []string{"gpt-4o*", "claude-*"}},
		{"route strategy", cfg.Routes[0].Strategy, "adaptive"},
		{"route inherits timeout", cfg.Routes[0].Timeout, 300 * time.Second},
		{"route fallback", cfg.Routes[0].FallbackModels, []string{"gpt-4o-mini"}},
		{"route affinity", *cfg.Routes[0].Affinity.Enabled, true},
		{"affinity prefix", cfg.Affinity.Prefix, PrefixAffinity{Enabled: true, MinTokens: 2048, TTL: 10 * time.Minute, MaxShare: 0.6}},
		{"route affinity prefix", cfg.Routes[0].Affinity.Prefix, RoutePrefixAffinity{MinTokens: 512}},
		{"upstream api key", u.APIKey, "sk-openai"},
		{"upstream model map", u.ModelMap, map[string]string{"gpt-4o": "gpt-4o-2024-08-06"}},
		{"upstream weight", u.Weight, 3},
		{"upstream price", u.Price, Price{InputPerMTok: 2.5, OutputPerMTok: 10, CacheReadPerMTok: 1.25}},
		{"upstream prices", u.Prices, map[string]Price{"gpt-4o-mini*": {InputPerMTok: 0.15, OutputPerMTok: 0.6, CacheReadPerMTok: 0.075}}},
		{"upstream price multiplier", u.PriceMultiplier, 1.0},
		{"pricing catalogue", cfg.Pricing.Catalogue, "builtin"},
		{"upstream queue", u.Queue, Queue{Timeout: 5 * time.Second, MaxLength: 100, Discipline: DisciplineFair}},
	}
	for _, c := range checks {
		t.Run(c.name, func(t *testing.T) {
			if !reflect.DeepEqual(c.got, c.want) {
				t.Errorf("got %#v, want %#v", c.got, c.want)
			}
		})
	}
	t.Run("without environment the errors name the unset variables", func(t *testing.T) {
		errs := parseErrors(t, string(data), nil) // TEAM_A_KEY and OPENAI_KEY are then missing
		want := Errors{
			{"keys[0].key", "one of key or key_sha256 is required (environment variable TEAM_A_KEY is not set; using an empty value)"},
			{"upstreams[0].api_key", "required for provider openai (environment variable OPENAI_KEY is not set; using an empty value)"},
		}
		if !reflect.DeepEqual(errs, want) {
			t.Errorf("errors =\n%s\nwant\n%s", errs, want)
		}
	})
}

func TestLoad(t *testing.T) {
	t.Run("reads file and environment", func(t *testing.T) {
		t.Setenv("SWITCHYARD_ADMIN_TOKEN", "t")
		t.Setenv("TEAM_A_KEY", "sk-a")
		t.Setenv("OPENAI_KEY", "sk-o")
		cfg, err := Load(filepath.Join("testdata", "design.yaml"))
		if err != nil {
			t.Fatalf("Load() error: %v", err)
		}
		if cfg.Upstreams[0].APIKey != "sk-o" {
			t.Errorf("api_key = %q, want sk-o", cfg.Upstreams[0].APIKey)
		}
	})
	t.Run("missing file", func(t *testing.T) {
		_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
		if !errors.Is(err, os.ErrNotExist) {
			t.Errorf("Load() error = %v, want os.ErrNotExist", err)
		}
	})
}
