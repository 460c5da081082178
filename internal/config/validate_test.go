package config

import (
	"math"
	"reflect"
	"strings"
	"testing"
	"time"

	"switchyard/internal/provider"
)

// validConfig returns a configuration that passes Validate: the defaults,
// two keys, one route and three upstreams (one per major provider).
func validConfig() Config {
	c := Default()
	k1 := DefaultKey()
	k1.Name, k1.Key = "team-a", "sk-team-a-secret"
	k1.AllowedModels = []string{"gpt-4o*", "claude-*"}
	k2 := DefaultKey()
	k2.Name, k2.KeySHA256 = "team-b", HashKey("sk-team-b-secret")
	k2.AllowedUpstreams = []string{"openai-main"}
	c.Keys = []Key{k1, k2}
	c.Routes = []Route{{Model: "gpt-4o", RouteSettings: c.Defaults, FallbackModels: []string{"gpt-4o-mini"}}}

	up := func(name, provider, baseURL string, models ...string) Upstream {
		u := DefaultUpstream()
		u.Name, u.Provider, u.BaseURL, u.APIKey, u.Models = name, provider, baseURL, "sk-upstream-"+name, models
		return u
	}
	openai := up("openai-main", ProviderOpenAI, "https://api.openai.com/v1", "gpt-4o", "gpt-4o-mini")
	openai.ModelMap = map[string]string{"gpt-4o": "gpt-4o-2024-08-06"}
	openai.Headers = map[string]string{"OpenAI-Organization": "org-1"}
	anthropic := up("anthropic-main", ProviderAnthropic, "https://api.anthropic.com/v1", "claude-*")
	azure := up("azure-east", ProviderAzureOpenAI, "https://east.openai.azure.com", "gpt-4o")
	azure.APIVersion = "2024-10-21"
	c.Upstreams = []Upstream{openai, anthropic, azure}
	return c
}

// bedrockUpstream makes u a bedrock upstream with SigV4 keys and no base_url.
func bedrockUpstream(u *Upstream) {
	u.Provider, u.BaseURL, u.APIKey, u.APIVersion = ProviderBedrock, "", "", ""
	u.Bedrock = &provider.BedrockSettings{Region: "us-east-1", AccessKeyID: "AKIDEXAMPLE", SecretAccessKey: "secret"}
}

func TestValidConfigHasNoErrors(t *testing.T) {
	c := validConfig()
	if errs := c.Validate(); len(errs) != 0 {
		t.Fatalf("Validate() = %v, want no errors", errs)
	}
	d := Default()
	if errs := d.Validate(); len(errs) != 0 {
		t.Fatalf("Default().Validate() = %v, want no errors", errs)
	}
}

// TestValidateRules has one case per rule: the mutation must produce exactly
// the wanted error (or none, for the cases that show a value is accepted).
// validateCase is one mutation of validConfig and the one error it must
// give (the zero FieldError: none).
type validateCase struct {
	name   string
	mutate func(c *Config)
	want   FieldError
}

// runValidateCases runs each case on a fresh validConfig.
func runValidateCases(t *testing.T, tests []validateCase) {
	t.Helper()
	var ok FieldError
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			tt.mutate(&c)
			got := c.Validate()
			if tt.want == ok {
				if len(got) != 0 {
					t.Fatalf("Validate() = %q, want no errors", got)
				}
				return
			}
			if len(got) != 1 || got[0] != tt.want {
				t.Fatalf("Validate() =\n%q\nwant exactly\n%q", got, Errors{tt.want})
			}
		})
	}
}

func TestValidateRules(t *testing.T) {
	ok := FieldError{}
	tests := []validateCase{
		// listen, admin, metrics
		{"listen required", func(c *Config) { c.Listen = "" }, FieldError{"listen", "required"}},
		{"listen without port", func(c *Config) { c.Listen = "8080" },
			FieldError{"listen", `must be host:port such as ":8080" or "127.0.0.1:8080", got "8080"`}},
		{"listen port out of range", func(c *Config) { c.Listen = ":99999" },
			FieldError{"listen", `port must be a number 0–65535, got "99999"`}},
		{"listen bad host", func(c *Config) { c.Listen = "bad_host!:80" },
			FieldError{"listen", `host must be an IP address or a host name, got "bad_host!"`}},
		{"listen ipv6 accepted", func(c *Config) { c.Listen = "[::1]:8080" }, ok},
		{"listen host name accepted", func(c *Config) { c.Listen = "gateway.internal:8080" }, ok},
		{"admin listen empty accepted", func(c *Config) { c.Admin.Listen = "" }, ok},
		{"admin listen accepted", func(c *Config) { c.Admin.Listen = "127.0.0.1:9090" }, ok},
		{"admin listen invalid", func(c *Config) { c.Admin.Listen = "localhost" },
			FieldError{"admin.listen", `must be host:port such as ":8080" or "127.0.0.1:8080", got "localhost"`}},
		{"admin listen same port as listen", func(c *Config) { c.Admin.Listen = "127.0.0.1:8080" },
			FieldError{"admin.listen", "uses the same port as listen (:8080); leave it empty to serve the admin API under /admin on the main listener"}},
		{"admin token whitespace", func(c *Config) { c.Admin.Token = "secret\n" },
			FieldError{"admin.token", "must not contain whitespace (check for a trailing newline)"}},
		{"metrics token whitespace", func(c *Config) { c.Metrics.Token = "a b" },
			FieldError{"metrics.token", "must not contain whitespace (check for a trailing newline)"}},

		// tracing
		{"tracing endpoint scheme", func(c *Config) { c.Tracing.OTLPEndpoint = "collector:4317" },
			FieldError{"tracing.otlp_endpoint", `must be http(s)://host:4318 (OTLP/HTTP) or grpc(s)://host:4317 (OTLP/gRPC), got "collector:4317"`}},
		{"tracing grpc endpoint path", func(c *Config) { c.Tracing.OTLPEndpoint = "grpc://collector:4317/v1/traces" },
			FieldError{"tracing.otlp_endpoint", `an OTLP/gRPC endpoint has no path, got "grpc://collector:4317/v1/traces"`}},
		{"tracing sample ratio", func(c *Config) { c.Tracing.SampleRatio = 1.5 },
			FieldError{"tracing.sample_ratio", "must be 0–1, got 1.5"}},
		{"tracing service name", func(c *Config) { c.Tracing.ServiceName = "" },
			FieldError{"tracing.service_name", "required"}},
		{"tracing header name", func(c *Config) { c.Tracing.Headers = map[string]string{"bad header": "x"} },
			FieldError{"tracing.headers.bad header", "not a valid HTTP header name"}},

		// store
		{"store driver unknown", func(c *Config) { c.Store.Driver = "mysql" },
			FieldError{"store.driver", `must be one of sqlite, postgres; got "mysql"`}},
		{"store driver empty", func(c *Config) { c.Store.Driver = "" },
			FieldError{"store.driver", "required; must be one of sqlite, postgres"}},
		{"store dsn required", func(c *Config) { c.Store.DSN = "" }, FieldError{"store.dsn", "required"}},
		{"postgres dsn not a postgres url", func(c *Config) { c.Store.Driver, c.Store.DSN = "postgres", "mysql://db/x" },
			FieldError{"store.dsn", "must be a postgres:// or postgresql:// URL or a key=value DSN (host=… dbname=…)"}},
		{"postgres dsn bad key value", func(c *Config) { c.Store.Driver, c.Store.DSN = "postgres", "host=db user" },
			FieldError{"store.dsn", "must be a postgres:// or postgresql:// URL or a key=value DSN (host=… dbname=…)"}},
		{"postgres dsn unterminated quote", func(c *Config) { c.Store.Driver, c.Store.DSN = "postgres", "host=db password='x" },
			FieldError{"store.dsn", "must be a postgres:// or postgresql:// URL or a key=value DSN (host=… dbname=…)"}},
		{"postgres url accepted", func(c *Config) {
			c.Store.Driver, c.Store.DSN = "postgres", "postgres://app:pw@db:5432/switchyard?sslmode=disable"
		}, ok},
		{"postgresql url accepted", func(c *Config) { c.Store.Driver, c.Store.DSN = "postgres", "postgresql:///switchyard" }, ok},
		{"postgres key value accepted", func(c *Config) {
			c.Store.Driver, c.Store.DSN = "postgres", "host=db user=app dbname=switchyard password='a \\' b'"
		}, ok},
		{"sqlite with postgres url", func(c *Config) { c.Store.DSN = "postgres://db/switchyard" },
			FieldError{"store.dsn", "is a postgres URL but store.driver is sqlite; set store.driver: postgres"}},

		// state
		{"state driver unknown", func(c *Config) { c.State.Driver = "etcd" },
			FieldError{"state.driver", `must be one of memory, redis; got "etcd"`}},
		{"redis url required", func(c *Config) { c.State.Driver = "redis" },
			FieldError{"state.redis_url", "required: a redis:// URL, or state.redis with addrs (and mode: sentinel or cluster)"}},
		{"redis url and block", func(c *Config) {
			c.State.Driver, c.State.RedisURL, c.State.Redis.Addrs = "redis", "redis://127.0.0.1:6379/0", []string{"127.0.0.1:6379"}
		}, FieldError{"state.redis", "set either state.redis_url (one server) or state.redis, not both; for one server move the URL's host:port into state.redis.addrs"}},
		{"redis block without addrs", func(c *Config) { c.State.Driver, c.State.Redis.Mode = "redis", "cluster" },
			FieldError{"state.redis.addrs", "required: host:port addresses of some cluster nodes, e.g. [10.0.0.1:6379, 10.0.0.2:6379]"}},
		{"redis mode unknown", func(c *Config) {
			c.State.Driver, c.State.Redis = "redis", RedisConn{Mode: "clustr", Addrs: []string{"a:1"}}
		}, FieldError{"state.redis.mode", `must be one of single, sentinel, cluster; got "clustr"; did you mean cluster?`}},
		{"redis single with two addrs", func(c *Config) {
			c.State.Driver, c.State.Redis.Addrs = "redis", []string{"a:6379", "b:6379"}
		}, FieldError{"state.redis.addrs", "mode single takes one address, got 2; for several nodes set mode: cluster, or mode: sentinel with master_name"}},
		{"redis addr without port", func(c *Config) {
			c.State.Driver, c.State.Redis = "redis", RedisConn{Mode: "cluster", Addrs: []string{"a:7000", "b"}}
		}, FieldError{"state.redis.addrs[1]", `must be host:port such as 127.0.0.1:6379, got "b"`}},
		{"redis addr port zero", func(c *Config) { c.State.Driver, c.State.Redis.Addrs = "redis", []string{"cache:0"} },
			FieldError{"state.redis.addrs[0]", `port must be a number 1–65535, got "0"`}},
		{"redis sentinel without master name", func(c *Config) {
			c.State.Driver, c.State.Redis = "redis", RedisConn{Mode: "sentinel", Addrs: []string{"s1:26379", "s2:26379"}}
		}, FieldError{"state.redis.master_name", "required in mode sentinel: the name the sentinels monitor (sentinel monitor <name> host port quorum)"}},
		{"redis master name without sentinel", func(c *Config) {
			c.State.Driver, c.State.Redis = "redis", RedisConn{Addrs: []string{"s1:26379"}, MasterName: "mymaster"}
		}, FieldError{"state.redis.master_name", "is only for mode: sentinel, got mode single; did you mean mode: sentinel?"}},
		{"redis cluster with a database", func(c *Config) {
			c.State.Driver, c.State.Redis = "redis", RedisConn{Mode: "cluster", Addrs: []string{"n1:7000"}, DB: 2}
		}, FieldError{"state.redis.db", "must be 0 in mode cluster (Redis Cluster has database 0 only), got 2; remove it, or use a separate state.redis_prefix to share a cluster"}},
		{"redis negative database", func(c *Config) {
			c.State.Driver, c.State.Redis = "redis", RedisConn{Addrs: []string{"n1:6379"}, DB: -1}
		}, FieldError{"state.redis.db", "must be ≥ 0, got -1"}},
		{"redis password whitespace", func(c *Config) {
			c.State.Driver, c.State.Redis = "redis", RedisConn{Addrs: []string{"n1:6379"}, Password: "s3cret\n"}
		}, FieldError{"state.redis.password", "must not contain whitespace (check for a trailing newline)"}},
		{"redis tls options without tls", func(c *Config) {
			c.State.Driver, c.State.Redis = "redis", RedisConn{Addrs: []string{"n1:6379"}, TLS: RedisTLS{CAFile: "/etc/ca.pem"}}
		}, FieldError{"state.redis.tls.enabled", "is false, but ca_file or insecure_skip_verify is set; set enabled: true to use TLS"}},
		{"redis sentinel accepted", func(c *Config) {
			c.State.Driver, c.State.Redis = "redis", RedisConn{Mode: "sentinel", Addrs: []string{"s1:26379", "[::1]:26380"}, MasterName: "mymaster",
				Username: "switchyard", Password: "pw", DB: 3, TLS: RedisTLS{Enabled: true, CAFile: "/etc/ca.pem"}}
		}, ok},
		{"redis cluster accepted", func(c *Config) {
			c.State.Driver, c.State.Redis = "redis", RedisConn{Mode: "cluster", Addrs: []string{"n1:7000", "n2:7000", "n3:7000"}}
		}, ok},
		{"redis single accepted", func(c *Config) { c.State.Driver, c.State.Redis.Addrs = "redis", []string{"cache:6379"} }, ok},
		{"redis block ignored for memory", func(c *Config) { c.State.Redis.Mode = "bogus" }, ok},
		{"redis url wrong scheme", func(c *Config) { c.State.Driver, c.State.RedisURL = "redis", "http://127.0.0.1:6379" },
			FieldError{"state.redis_url", "must be a redis:// or rediss:// URL such as redis://127.0.0.1:6379/0"}},
		{"redis url without host", func(c *Config) { c.State.Driver, c.State.RedisURL = "redis", "redis:///0" },
			FieldError{"state.redis_url", "must be a redis:// or rediss:// URL such as redis://127.0.0.1:6379/0"}},
		{"redis url bad database", func(c *Config) { c.State.Driver, c.State.RedisURL = "redis", "redis://127.0.0.1:6379/x" },
			FieldError{"state.redis_url", "database (the URL path) must be a number ≥ 0, as in redis://host:6379/0"}},
		{"rediss url accepted", func(c *Config) { c.State.Driver, c.State.RedisURL = "redis", "rediss://:pw@cache:6380/1" }, ok},
		{"redis url ignored for memory", func(c *Config) { c.State.RedisURL = "not a url" }, ok},
		{"redis prefix whitespace", func(c *Config) { c.State.RedisPrefix = "sy :" },
			FieldError{"state.redis_prefix", `must not contain whitespace, got "sy :"`}},
		{"memory limit too small", func(c *Config) { c.MemoryLimitMB = 8 },
			FieldError{"memory_limit_mb", "must be 0 (no limit) or at least 16, got 8"}},
		{"memory limit off", func(c *Config) { c.MemoryLimitMB = 0 }, ok},
		{"lease ttl too short", func(c *Config) { c.State.LeaseTTL = 500 * time.Millisecond },
			FieldError{"state.lease_ttl", "must be at least 1s, got 500ms"}},
		{"sync interval zero", func(c *Config) { c.State.SyncInterval = 0 },
			FieldError{"state.sync_interval", "must be positive, got 0s"}},
		{"sync interval too long for the lease", func(c *Config) { c.State.LeaseTTL, c.State.SyncInterval = 3*time.Second, time.Second },
			FieldError{"state.sync_interval", "must be less than a third of state.lease_ttl (3s), got 1s"}},
		{"redis timeout negative", func(c *Config) { c.State.RedisTimeout = -time.Second },
			FieldError{"state.redis_timeout", "must be positive, got -1s"}},

		// log
		{"log level unknown", func(c *Config) { c.Log.Level = "trace" },
			FieldError{"log.level", `must be one of debug, info, warn, error; got "trace"`}},

		// defaults (route settings)
		{"defaults strategy unknown", func(c *Config) { c.Defaults.Strategy = "random" },
			FieldError{"defaults.strategy", `must be one of adaptive, failover, least-conn, lowest-cost, p2c-ewma, round-robin, smooth-wrr, weighted-random; got "random"`}},
		{"defaults retries above 10", func(c *Config) { c.Defaults.Retries = 11 }, FieldError{"defaults.retries", "must be 0–10, got 11"}},
		{"defaults retries negative", func(c *Config) { c.Defaults.Retries = -1 }, FieldError{"defaults.retries", "must be 0–10, got -1"}},
		{"defaults timeout zero", func(c *Config) { c.Defaults.Timeout = 0 }, FieldError{"defaults.timeout", "must be > 0, got 0s"}},
		{"defaults first byte timeout zero", func(c *Config) { c.Defaults.FirstByteTimeout = 0 },
			FieldError{"defaults.first_byte_timeout", "must be > 0, got 0s"}},
		{"defaults first byte timeout above timeout", func(c *Config) { c.Defaults.FirstByteTimeout = 301 * time.Second },
			FieldError{"defaults.first_byte_timeout", "must be ≤ timeout (5m0s), got 5m1s"}},
		{"defaults max body bytes zero", func(c *Config) { c.Defaults.MaxBodyBytes = 0 },
			FieldError{"defaults.max_body_bytes", "must be 1–1073741824 (1 GiB), got 0"}},
		{"defaults max body bytes above 1 GiB", func(c *Config) { c.Defaults.MaxBodyBytes = 1<<30 + 1 },
			FieldError{"defaults.max_body_bytes", "must be 1–1073741824 (1 GiB), got 1073741825"}},
		{"defaults stream idle timeout negative", func(c *Config) { c.Defaults.StreamIdleTimeout = -time.Second },
			FieldError{"defaults.stream_idle_timeout", "must be > 0, got -1s"}},
		{"defaults retry budget above 1", func(c *Config) { c.Defaults.RetryBudget = 1.5 },
			FieldError{"defaults.retry_budget", "must be 0–1, got 1.5"}},
		{"defaults retry budget NaN", func(c *Config) { c.Defaults.RetryBudget = math.NaN() },
			FieldError{"defaults.retry_budget", "must be 0–1, got NaN"}},
		{"hedge delay not a duration", func(c *Config) { c.Defaults.Hedge.Delay = "p99" },
			FieldError{"defaults.hedge.delay", `must be a duration such as 300ms (0s: off) or "p95", got "p99"`}},
		{"hedge delay beyond first byte timeout", func(c *Config) { c.Defaults.Hedge.Delay = "90s" },
			FieldError{"defaults.hedge.delay", "must be less than first_byte_timeout (1m0s), got 1m30s: a hedge would never start"}},
		{"hedge max zero", func(c *Config) { c.Defaults.Hedge.Max = 0 },
			FieldError{"defaults.hedge.max", "must be 1–3, got 0"}},
		{"hedge budget above 1", func(c *Config) { c.Defaults.Hedge.Budget = 2 },
			FieldError{"defaults.hedge.budget", "must be 0–1, got 2"}},
		{"defaults max wait negative", func(c *Config) { c.Defaults.MaxWait = -time.Second },
			FieldError{"defaults.max_wait", "must be ≥ 0, got -1s"}},
		{"defaults max wait not below timeout", func(c *Config) { c.Defaults.MaxWait = 300 * time.Second },
			FieldError{"defaults.max_wait", "must be less than timeout (5m0s), got 5m0s"}},
		{"defaults default_max_tokens zero", func(c *Config) { c.Defaults.DefaultMaxTokens = 0 },
			FieldError{"defaults.default_max_tokens", "must be 1–1000000, got 0"}},

		// affinity
		{"affinity sliding ttl zero", func(c *Config) { c.Affinity.SlidingTTL = 0 },
			FieldError{"affinity.sliding_ttl", "must be > 0, got 0s"}},
		{"affinity absolute ttl below sliding", func(c *Config) { c.Affinity.AbsoluteTTL = time.Minute },
			FieldError{"affinity.absolute_ttl", "must be ≥ sliding_ttl (5m0s), got 1m0s"}},
		{"affinity absolute ttl zero", func(c *Config) { c.Affinity.AbsoluteTTL = 0 },
			FieldError{"affinity.absolute_ttl", "must be > 0, got 0s"}},
		{"affinity max entries zero", func(c *Config) { c.Affinity.MaxEntries = 0 },
			FieldError{"affinity.max_entries", "must be 1–10000000, got 0"}},
		{"affinity max entries above limit", func(c *Config) { c.Affinity.MaxEntries = 10_000_001 },
			FieldError{"affinity.max_entries", "must be 1–10000000, got 10000001"}},
		{"affinity checked when disabled", func(c *Config) { c.Affinity.Enabled, c.Affinity.SlidingTTL = false, -time.Second },
			FieldError{"affinity.sliding_ttl", "must be > 0, got -1s"}},
		{"affinity prefix min tokens zero", func(c *Config) { c.Affinity.Prefix.MinTokens = 0 },
			FieldError{"affinity.prefix.min_tokens", "must be 1–1048576, got 0"}},
		{"affinity prefix min tokens above limit", func(c *Config) { c.Affinity.Prefix.MinTokens = 1<<20 + 1 },
			FieldError{"affinity.prefix.min_tokens", "must be 1–1048576, got 1048577"}},
		{"affinity prefix ttl zero", func(c *Config) { c.Affinity.Prefix.TTL = 0 },
			FieldError{"affinity.prefix.ttl", "must be > 0, got 0s"}},
		{"affinity prefix max share zero", func(c *Config) { c.Affinity.Prefix.MaxShare = 0 },
			FieldError{"affinity.prefix.max_share", "must be in (0, 1], got 0"}},
		{"affinity prefix max share above one", func(c *Config) { c.Affinity.Prefix.MaxShare = 1.5 },
			FieldError{"affinity.prefix.max_share", "must be in (0, 1], got 1.5"}},
		{"affinity prefix max share NaN", func(c *Config) { c.Affinity.Prefix.MaxShare = math.NaN() },
			FieldError{"affinity.prefix.max_share", "must be in (0, 1], got NaN"}},
		{"affinity response ttl zero", func(c *Config) { c.Affinity.ResponseTTL = 0 },
			FieldError{"affinity.response_ttl", "must be > 0, got 0s"}},
		{"affinity response ttl negative", func(c *Config) { c.Affinity.ResponseTTL = -time.Hour },
			FieldError{"affinity.response_ttl", "must be > 0, got -1h0m0s"}},

		// health
		{"health interval negative", func(c *Config) { c.Health.Interval = -time.Second },
			FieldError{"health.interval", "must be ≥ 0, got -1s"}},
		{"health interval zero accepted", func(c *Config) { c.Health.Interval = 0; c.Health.Timeout = time.Minute }, ok},
		{"health probe unknown", func(c *Config) { c.Health.Probe = "ping" },
			FieldError{"health.probe", `must be one of models, chat; got "ping"`}},
		{"health timeout zero", func(c *Config) { c.Health.Timeout = 0 }, FieldError{"health.timeout", "must be > 0, got 0s"}},
		{"health timeout above interval", func(c *Config) { c.Health.Timeout = time.Minute },
			FieldError{"health.timeout", "must be ≤ interval (30s), got 1m0s"}},

		// circuit
		{"circuit failure threshold zero", func(c *Config) { c.Circuit.FailureThreshold = 0 },
			FieldError{"circuit.failure_threshold", "must be ≥ 1, got 0"}},
		{"circuit window zero", func(c *Config) { c.Circuit.Window = 0 }, FieldError{"circuit.window", "must be > 0, got 0s"}},
		{"circuit open duration zero", func(c *Config) { c.Circuit.OpenDuration = 0 },
			FieldError{"circuit.open_duration", "must be > 0, got 0s"}},
		{"circuit probe interval zero", func(c *Config) { c.Circuit.ProbeInterval = 0 },
			FieldError{"circuit.probe_interval", "must be > 0, got 0s"}},
		{"circuit success threshold zero", func(c *Config) { c.Circuit.SuccessThreshold = 0 },
			FieldError{"circuit.success_threshold", "must be ≥ 1, got 0"}},
		{"circuit slow start negative", func(c *Config) { c.Circuit.SlowStart = -time.Second },
			FieldError{"circuit.slow_start", "must be ≥ 0, got -1s"}},
		{"circuit slow start zero accepted", func(c *Config) { c.Circuit.SlowStart = 0 }, ok},

		// keys
		{"key name required", func(c *Config) { c.Keys[0].Name = "" }, FieldError{"keys[0].name", "required"}},
		{"key name whitespace", func(c *Config) { c.Keys[0].Name = "team a" },
			FieldError{"keys[0].name", `must not contain whitespace, got "team a"`}},
		{"key name slash", func(c *Config) { c.Keys[0].Name = "team/a" },
			FieldError{"keys[0].name", `must not contain '/', '?', '#' or '%', got "team/a"`}},
		{"key name duplicate", func(c *Config) { c.Keys[1].Name = "team-a" },
			FieldError{"keys[1].name", `duplicate key name "team-a" (also keys[0])`}},
		{"key secret missing", func(c *Config) { c.Keys[0].Key = "" },
			FieldError{"keys[0].key", "one of key or key_sha256 is required"}},
		{"key and key_sha256 both set", func(c *Config) { c.Keys[0].KeySHA256 = HashKey("other") },
			FieldError{"keys[0].key_sha256", "set only one of key and key_sha256"}},
		{"key_sha256 wrong length", func(c *Config) { c.Keys[1].KeySHA256 = "abc123" },
			FieldError{"keys[1].key_sha256", "must be 64 hex characters (the SHA-256 of the key), got 6 characters"}},
		{"key_sha256 not hex", func(c *Config) { c.Keys[1].KeySHA256 = strings.Repeat("g", 64) },
			FieldError{"keys[1].key_sha256", "must be 64 hex characters (the SHA-256 of the key); found a non-hex character"}},
		{"key team unknown, with a suggestion", func(c *Config) {
			c.Teams = []Team{{Name: "research", SpendLimit: SpendLimit{Period: "month"}, Weight: 1}}
			c.Keys[0].Team = "reserch"
		}, FieldError{"keys[0].team", `unknown team "reserch"; did you mean research?`}},
		{"key team unknown, nothing near", func(c *Config) { c.Keys[0].Team = "ops" },
			FieldError{"keys[0].team", `unknown team "ops"`}},
		{"key team known", func(c *Config) {
			c.Teams = []Team{{Name: "research", RPM: 4, SpendLimit: SpendLimit{USD: 5, Period: "day"}, Weight: 1}}
			c.Keys[0].Team = "research"
		}, ok},
		{"key class unknown", func(c *Config) { c.Keys[0].Class = "bach" },
			FieldError{"keys[0].class", `must be one of interactive, batch, critical; got "bach"; did you mean batch?`}},
		{"key weight zero", func(c *Config) { c.Keys[0].Weight = 0 }, FieldError{"keys[0].weight", "must be 1–100, got 0"}},
		{"key max_concurrency negative", func(c *Config) { c.Keys[0].MaxConcurrency = -1 },
			FieldError{"keys[0].max_concurrency", "must be ≥ 0, got -1"}},
		{"key tpm negative", func(c *Config) { c.Keys[1].TPM = -1 }, FieldError{"keys[1].tpm", "must be ≥ 0, got -1"}},
		{"team name duplicate", func(c *Config) {
			c.Teams = []Team{{Name: "r", SpendLimit: SpendLimit{Period: "month"}, Weight: 1}, {Name: "r", SpendLimit: SpendLimit{Period: "month"}, Weight: 1}}
		}, FieldError{"teams[1].name", `duplicate team name "r" (also teams[0])`}},
		{"team rpm negative", func(c *Config) {
			c.Teams = []Team{{Name: "r", RPM: -1, SpendLimit: SpendLimit{Period: "month"}, Weight: 1}}
		},
			FieldError{"teams[0].rpm", "must be ≥ 0, got -1"}},
		{"team weight zero", func(c *Config) { c.Teams = []Team{{Name: "r", SpendLimit: SpendLimit{Period: "month"}}} },
			FieldError{"teams[0].weight", "must be 1–100, got 0"}},
		{"team weight over 100", func(c *Config) { c.Teams = []Team{{Name: "r", SpendLimit: SpendLimit{Period: "month"}, Weight: 101}} },
			FieldError{"teams[0].weight", "must be 1–100, got 101"}},
		{"team spend period unknown", func(c *Config) { c.Teams = []Team{{Name: "r", SpendLimit: SpendLimit{Period: "week"}, Weight: 1}} },
			FieldError{"teams[0].spend_limit.period", `must be one of day, month; got "week"`}},
		{"queue discipline unknown", func(c *Config) {
			c.Upstreams[0].MaxConcurrency, c.Upstreams[0].Queue.Enabled, c.Upstreams[0].Queue.Discipline = 2, true, "fifi"
		}, FieldError{"upstreams[0].queue.discipline", `must be one of fair, fifo; got "fifi"; did you mean fifo?`}},
		{"key_sha256 upper case accepted", func(c *Config) { c.Keys[1].KeySHA256 = strings.ToUpper(c.Keys[1].KeySHA256) }, ok},
		{"key whitespace", func(c *Config) { c.Keys[0].Key = "sk-team-a\n" },
			FieldError{"keys[0].key", "must not contain whitespace (check for a trailing newline)"}},
		{"key plaintext duplicate", func(c *Config) { c.Keys[1].KeySHA256, c.Keys[1].Key = "", "sk-team-a-secret" },
			FieldError{"keys[1].key", "same secret as keys[0]; every key needs its own secret"}},
		{"key_sha256 duplicates a plaintext key", func(c *Config) { c.Keys[1].KeySHA256 = HashKey("sk-team-a-secret") },
			FieldError{"keys[1].key_sha256", "same secret as keys[0]; every key needs its own secret"}},
		{"key allowed model invalid glob", func(c *Config) { c.Keys[0].AllowedModels[1] = "claude-[" },
			FieldError{"keys[0].allowed_models[1]", `invalid pattern "claude-[": syntax error in pattern`}},
		{"key allowed model empty", func(c *Config) { c.Keys[0].AllowedModels[0] = "" },
			FieldError{"keys[0].allowed_models[0]", "must not be empty"}},
		{"key allowed upstream unknown", func(c *Config) { c.Keys[1].AllowedUpstreams = []string{"openai-main", "nope"} },
			FieldError{"keys[1].allowed_upstreams[1]", `unknown upstream "nope"`}},
		{"key allowed upstream empty", func(c *Config) { c.Keys[1].AllowedUpstreams = []string{""} },
			FieldError{"keys[1].allowed_upstreams[0]", "must not be empty"}},
		{"key rpm negative", func(c *Config) { c.Keys[0].RPM = -1 }, FieldError{"keys[0].rpm", "must be ≥ 0, got -1"}},
		{"key spend usd negative", func(c *Config) { c.Keys[0].SpendLimit.USD = -1 },
			FieldError{"keys[0].spend_limit.usd", "must be a number ≥ 0, got -1"}},
		{"key spend usd infinite", func(c *Config) { c.Keys[0].SpendLimit.USD = math.Inf(1) },
			FieldError{"keys[0].spend_limit.usd", "must be a number ≥ 0, got +Inf"}},
		{"key spend period unknown", func(c *Config) { c.Keys[0].SpendLimit.Period = "week" },
			FieldError{"keys[0].spend_limit.period", `must be one of day, month; got "week"`}},

		// routes
		{"route model required", func(c *Config) { c.Routes[0].Model = ""; c.Routes[0].FallbackModels = nil },
			FieldError{"routes[0].model", "required"}},
		{"route model invalid glob", func(c *Config) { c.Routes[0].Model = "gpt-[" },
			FieldError{"routes[0].model", `invalid pattern "gpt-[": syntax error in pattern`}},
		{"route model duplicate", func(c *Config) { c.Routes = append(c.Routes, Route{Model: "gpt-4o", RouteSettings: c.Defaults}) },
			FieldError{"routes[1].model", `duplicate route for "gpt-4o" (also routes[0])`}},
		{"route glob accepted", func(c *Config) {
			c.Routes[0].Model = "gpt-4o*"
			c.Routes[0].FallbackModels = []string{"claude-3-5-haiku"}
		}, ok},
		{"route strategy unknown", func(c *Config) { c.Routes[0].Strategy = "fastest" },
			FieldError{"routes[0].strategy", `must be one of adaptive, failover, least-conn, lowest-cost, p2c-ewma, round-robin, smooth-wrr, weighted-random; got "fastest"`}},
		{"route retries above 10", func(c *Config) { c.Routes[0].Retries = 11 }, FieldError{"routes[0].retries", "must be 0–10, got 11"}},
		{"route timeout zero", func(c *Config) { c.Routes[0].Timeout = 0 }, FieldError{"routes[0].timeout", "must be > 0, got 0s"}},
		{"route first byte timeout above its own timeout", func(c *Config) { c.Routes[0].Timeout = 30 * time.Second },
			FieldError{"routes[0].first_byte_timeout", "must be ≤ timeout (30s), got 1m0s"}},
		{"route max body bytes zero", func(c *Config) { c.Routes[0].MaxBodyBytes = 0 },
			FieldError{"routes[0].max_body_bytes", "must be 1–1073741824 (1 GiB), got 0"}},
		{"route stream idle timeout zero", func(c *Config) { c.Routes[0].StreamIdleTimeout = 0 },
			FieldError{"routes[0].stream_idle_timeout", "must be > 0, got 0s"}},
		{"route retry budget negative", func(c *Config) { c.Routes[0].RetryBudget = -0.1 },
			FieldError{"routes[0].retry_budget", "must be 0–1, got -0.1"}},
		{"route max wait negative", func(c *Config) { c.Routes[0].MaxWait = -time.Second },
			FieldError{"routes[0].max_wait", "must be ≥ 0, got -1s"}},
		{"route error inherited from defaults reported once", func(c *Config) { c.Defaults.Retries, c.Routes[0].Retries = 11, 11 },
			FieldError{"defaults.retries", "must be 0–10, got 11"}},
		{"fallback is the route's own model", func(c *Config) { c.Routes[0].FallbackModels = []string{"gpt-4o"} },
			FieldError{"routes[0].fallback_models[0]", `must not be the route's own model "gpt-4o"`}},
		{"fallback not served", func(c *Config) { c.Routes[0].FallbackModels = []string{"gpt-4o-mini", "mistral-large"} },
			FieldError{"routes[0].fallback_models[1]", `no upstream serves "mistral-large" (no upstreams[].models pattern matches it)`}},
		{"fallback served through a glob", func(c *Config) { c.Routes[0].FallbackModels = []string{"claude-3-5-sonnet"} }, ok},
		{"fallback is a pattern", func(c *Config) { c.Routes[0].FallbackModels = []string{"claude-*"} },
			FieldError{"routes[0].fallback_models[0]", `must be a model name, not a pattern, got "claude-*"`}},
		{"fallback duplicate", func(c *Config) { c.Routes[0].FallbackModels = []string{"gpt-4o-mini", "gpt-4o-mini"} },
			FieldError{"routes[0].fallback_models[1]", "duplicate of fallback_models[0]"}},
		{"fallback empty", func(c *Config) { c.Routes[0].FallbackModels = []string{""} },
			FieldError{"routes[0].fallback_models[0]", "must not be empty"}},
		{"route affinity prefix min tokens negative", func(c *Config) { c.Routes[0].Affinity.Prefix.MinTokens = -1 },
			FieldError{"routes[0].affinity.prefix.min_tokens", "must be 1–1048576, got -1"}},
		{"route affinity prefix ttl negative", func(c *Config) { c.Routes[0].Affinity.Prefix.TTL = -time.Second },
			FieldError{"routes[0].affinity.prefix.ttl", "must be ≥ 0, got -1s"}},
		{"route affinity prefix max share above one", func(c *Config) { c.Routes[0].Affinity.Prefix.MaxShare = 2 },
			FieldError{"routes[0].affinity.prefix.max_share", "must be in (0, 1], got 2"}},
		{"route affinity sliding ttl negative", func(c *Config) { c.Routes[0].Affinity.SlidingTTL = -time.Second },
			FieldError{"routes[0].affinity.sliding_ttl", "must be ≥ 0, got -1s"}},
		{"route affinity absolute ttl negative", func(c *Config) { c.Routes[0].Affinity.AbsoluteTTL = -time.Second },
			FieldError{"routes[0].affinity.absolute_ttl", "must be ≥ 0, got -1s"}},
		{"route affinity absolute ttl below global sliding", func(c *Config) { c.Routes[0].Affinity.AbsoluteTTL = time.Minute },
			FieldError{"routes[0].affinity.absolute_ttl", "must be ≥ sliding_ttl (5m0s), got 1m0s"}},
		{"route affinity sliding ttl above global absolute", func(c *Config) { c.Routes[0].Affinity.SlidingTTL = time.Hour },
			FieldError{"routes[0].affinity.sliding_ttl", "must be ≤ affinity.absolute_ttl (30m0s), got 1h0m0s"}},
		{"route affinity overrides accepted", func(c *Config) {
			enabled := false
			c.Routes[0].Affinity = RouteAffinity{Enabled: &enabled, SlidingTTL: time.Hour, AbsoluteTTL: 2 * time.Hour}
		}, ok},

		// upstreams
		{"upstream name required", func(c *Config) { c.Upstreams[2].Name = "" }, FieldError{"upstreams[2].name", "required"}},
		{"upstream name slash", func(c *Config) { c.Upstreams[2].Name = "azure/east" },
			FieldError{"upstreams[2].name", `must not contain '/', '?', '#' or '%', got "azure/east"`}},
		{"upstream name whitespace", func(c *Config) { c.Upstreams[2].Name = "azure east" },
			FieldError{"upstreams[2].name", `must not contain whitespace, got "azure east"`}},
		{"upstream name duplicate", func(c *Config) { c.Upstreams[2].Name = "openai-main" },
			FieldError{"upstreams[2].name", `duplicate upstream name "openai-main" (also upstreams[0])`}},
		{"upstream provider required", func(c *Config) { c.Upstreams[2].Provider = "" },
			FieldError{"upstreams[2].provider", "required; must be one of openai, anthropic, azure-openai, openai-compatible, gemini, vertex, bedrock"}},
		{"upstream provider unknown", func(c *Config) { c.Upstreams[2].Provider = "palm" },
			FieldError{"upstreams[2].provider", `must be one of openai, anthropic, azure-openai, openai-compatible, gemini, vertex, bedrock; got "palm"`}},
		{"upstream base url required", func(c *Config) { c.Upstreams[0].BaseURL = "" }, FieldError{"upstreams[0].base_url", "required"}},
		{"bedrock has a default base url", func(c *Config) { bedrockUpstream(&c.Upstreams[2]) }, ok},
		{"bedrock base url still checked when set", func(c *Config) { bedrockUpstream(&c.Upstreams[2]); c.Upstreams[2].BaseURL = "bedrock.local" },
			FieldError{"upstreams[2].base_url", `must be an absolute http(s) URL with a host, such as https://api.openai.com/v1, got "bedrock.local"`}},
		{"bedrock region required", func(c *Config) { bedrockUpstream(&c.Upstreams[2]); c.Upstreams[2].Bedrock.Region = "" },
			FieldError{"upstreams[2].bedrock.region", "required for provider bedrock (us-east-1, eu-central-1, …)"}},
		{"bedrock block required", func(c *Config) { bedrockUpstream(&c.Upstreams[2]); c.Upstreams[2].Bedrock = nil },
			FieldError{"upstreams[2].bedrock", "required for provider bedrock: set at least bedrock.region and credentials"}},
		{"bedrock block on another provider", func(c *Config) { c.Upstreams[0].Bedrock = &provider.BedrockSettings{Region: "us-east-1"} },
			FieldError{"upstreams[0].bedrock", "only provider bedrock reads a bedrock block, not openai"}},
		{"upstream base url relative", func(c *Config) { c.Upstreams[0].BaseURL = "api.openai.com/v1" },
			FieldError{"upstreams[0].base_url", `must be an absolute http(s) URL with a host, such as https://api.openai.com/v1, got "api.openai.com/v1"`}},
		{"upstream base url scheme", func(c *Config) { c.Upstreams[0].BaseURL = "ftp://api.openai.com/v1" },
			FieldError{"upstreams[0].base_url", `scheme must be http or https, got "ftp"`}},
		{"upstream base url without host name", func(c *Config) { c.Upstreams[0].BaseURL = "http://:8080/v1" },
			FieldError{"upstreams[0].base_url", `must name a host, got "http://:8080/v1"`}},
		{"upstream base url credentials", func(c *Config) { c.Upstreams[0].BaseURL = "https://user:pw@api.openai.com/v1" },
			FieldError{"upstreams[0].base_url", "must not contain credentials; use api_key"}},
		{"upstream base url query", func(c *Config) { c.Upstreams[0].BaseURL = "https://api.openai.com/v1?x=1" },
			FieldError{"upstreams[0].base_url", `must not have a query or fragment (the gateway appends paths to it), got "https://api.openai.com/v1?x=1"`}},
		{"upstream base url whitespace", func(c *Config) { c.Upstreams[0].BaseURL = "https://api.openai.com/v1\n" },
			FieldError{"upstreams[0].base_url", "must be an absolute http(s) URL with a host; it contains whitespace"}},
		{"upstream base url http accepted", func(c *Config) { c.Upstreams[0].BaseURL = "http://127.0.0.1:11434/v1/" }, ok},
		{"api key required for openai", func(c *Config) { c.Upstreams[0].APIKey = "" },
			FieldError{"upstreams[0].api_key", "required for provider openai"}},
		{"api key required for anthropic", func(c *Config) { c.Upstreams[1].APIKey = "" },
			FieldError{"upstreams[1].api_key", "required for provider anthropic"}},
		{"api key required for azure-openai", func(c *Config) { c.Upstreams[2].APIKey = "" },
			FieldError{"upstreams[2].api_key", "required for provider azure-openai"}},
		{"api key optional for openai-compatible", func(c *Config) {
			c.Upstreams[0].Provider, c.Upstreams[0].APIKey = ProviderOpenAICompatible, ""
		}, ok},
		{"api key whitespace", func(c *Config) { c.Upstreams[0].APIKey = "sk-abc\n" },
			FieldError{"upstreams[0].api_key", "must not contain whitespace (check for a trailing newline)"}},
		{"api version malformed", func(c *Config) { c.Upstreams[2].APIVersion = "latest" },
			FieldError{"upstreams[2].api_version", `must be a dated version such as 2024-10-21 or 2025-01-01-preview, got "latest"`}},
		{"api version preview accepted", func(c *Config) { c.Upstreams[2].APIVersion = "2025-01-01-preview" }, ok},
		{"upstream models required", func(c *Config) { c.Upstreams[1].Models = nil },
			FieldError{"upstreams[1].models", "at least one model name or pattern is required"}},
		{"upstream model invalid glob", func(c *Config) { c.Upstreams[1].Models = []string{"claude-*", "claude-["} },
			FieldError{"upstreams[1].models[1]", `invalid pattern "claude-[": syntax error in pattern`}},
		{"upstream model empty", func(c *Config) { c.Upstreams[1].Models = []string{""} },
			FieldError{"upstreams[1].models[0]", "must not be empty"}},
		{"model map value empty", func(c *Config) { c.Upstreams[0].ModelMap["gpt-4o"] = "" },
			FieldError{"upstreams[0].model_map.gpt-4o", "must not be empty"}},
		{"model map key empty", func(c *Config) { c.Upstreams[0].ModelMap[""] = "x" },
			FieldError{"upstreams[0].model_map", "model names (keys) must not be empty"}},
		{"model map key not served", func(c *Config) { c.Upstreams[0].ModelMap["gpt-5"] = "gpt-5-2025" },
			FieldError{"upstreams[0].model_map.gpt-5", `no pattern in models matches "gpt-5", so the mapping is never used`}},
		{"weight zero", func(c *Config) { c.Upstreams[2].Weight = 0 }, FieldError{"upstreams[2].weight", "must be 1–100, got 0"}},
		{"weight above 100", func(c *Config) { c.Upstreams[2].Weight = 101 }, FieldError{"upstreams[2].weight", "must be 1–100, got 101"}},
		{"priority negative", func(c *Config) { c.Upstreams[2].Priority = -1 }, FieldError{"upstreams[2].priority", "must be 0–100, got -1"}},
		{"priority above 100", func(c *Config) { c.Upstreams[2].Priority = 101 }, FieldError{"upstreams[2].priority", "must be 0–100, got 101"}},
		{"max concurrency negative", func(c *Config) { c.Upstreams[0].MaxConcurrency = -1 },
			FieldError{"upstreams[0].max_concurrency", "must be ≥ 0, got -1"}},
		{"queue needs max concurrency", func(c *Config) { c.Upstreams[0].Queue.Enabled = true },
			FieldError{"upstreams[0].queue.enabled", "requires max_concurrency > 0 (the queue waits for a concurrency slot)"}},
		{"queue timeout zero", func(c *Config) {
			c.Upstreams[0].MaxConcurrency, c.Upstreams[0].Queue = 4, Queue{Enabled: true, MaxLength: 10}
		}, FieldError{"upstreams[0].queue.timeout", "must be > 0, got 0s"}},
		{"queue max length zero", func(c *Config) {
			c.Upstreams[0].MaxConcurrency, c.Upstreams[0].Queue = 4, Queue{Enabled: true, Timeout: time.Second}
		}, FieldError{"upstreams[0].queue.max_length", "must be ≥ 1, got 0"}},
		{"queue disabled negative max length", func(c *Config) { c.Upstreams[0].Queue.MaxLength = -1 },
			FieldError{"upstreams[0].queue.max_length", "must be ≥ 0, got -1"}},
		{"queue enabled accepted", func(c *Config) { c.Upstreams[0].MaxConcurrency, c.Upstreams[0].Queue.Enabled = 4, true }, ok},
		{"rate limit rpm negative", func(c *Config) { c.Upstreams[0].RateLimit.RPM = -1 },
			FieldError{"upstreams[0].rate_limit.rpm", "must be ≥ 0, got -1"}},
		{"rate limit tpm negative", func(c *Config) { c.Upstreams[0].RateLimit.TPM = -5 },
			FieldError{"upstreams[0].rate_limit.tpm", "must be ≥ 0, got -5"}},
		{"upstream spend usd negative", func(c *Config) { c.Upstreams[0].SpendLimit.USD = -0.5 },
			FieldError{"upstreams[0].spend_limit.usd", "must be a number ≥ 0, got -0.5"}},
		{"upstream spend period unknown", func(c *Config) { c.Upstreams[0].SpendLimit.Period = "year" },
			FieldError{"upstreams[0].spend_limit.period", `must be one of day, month; got "year"`}},
		{"price input negative", func(c *Config) { c.Upstreams[0].Price.InputPerMTok = -1 },
			FieldError{"upstreams[0].price.input_per_mtok", "must be a number ≥ 0, got -1"}},
		{"price output NaN", func(c *Config) { c.Upstreams[0].Price.OutputPerMTok = math.NaN() },
			FieldError{"upstreams[0].price.output_per_mtok", "must be a number ≥ 0, got NaN"}},
		{"affinity migration mode unknown", func(c *Config) { c.Upstreams[0].AffinityMigration.Mode = "sometimes" },
			FieldError{"upstreams[0].affinity_migration.mode", `must be one of never, cross_tier, always; got "sometimes"`}},
		{"affinity migration max content length negative", func(c *Config) { c.Upstreams[0].AffinityMigration.MaxContentLength = -1 },
			FieldError{"upstreams[0].affinity_migration.max_content_length", "must be ≥ 0, got -1"}},
		{"header name invalid", func(c *Config) { c.Upstreams[0].Headers["Bad Header"] = "x" },
			FieldError{"upstreams[0].headers.Bad Header", "not a valid HTTP header name"}},
		{"header authorization reserved", func(c *Config) { c.Upstreams[0].Headers["authorization"] = "Bearer x" },
			FieldError{"upstreams[0].headers.authorization", "is set by the gateway and cannot be overridden"}},
		{"header x-api-key reserved", func(c *Config) { c.Upstreams[0].Headers["X-API-Key"] = "x" },
			FieldError{"upstreams[0].headers.X-API-Key", "is set by the gateway and cannot be overridden"}},
		{"header api-key reserved", func(c *Config) { c.Upstreams[0].Headers["api-key"] = "x" },
			FieldError{"upstreams[0].headers.api-key", "is set by the gateway and cannot be overridden"}},
		{"header host reserved", func(c *Config) { c.Upstreams[0].Headers["Host"] = "x" },
			FieldError{"upstreams[0].headers.Host", "is set by the gateway and cannot be overridden"}},
		{"header content-length reserved", func(c *Config) { c.Upstreams[0].Headers["content-length"] = "1" },
			FieldError{"upstreams[0].headers.content-length", "is set by the gateway and cannot be overridden"}},
		{"header value line break", func(c *Config) { c.Upstreams[0].Headers["X-Team"] = "a\r\nInjected: 1" },
			FieldError{"upstreams[0].headers.X-Team", "value must not contain line breaks or control characters"}},
		{"header duplicate by case", func(c *Config) { c.Upstreams[0].Headers["openai-organization"] = "org-2" },
			FieldError{"upstreams[0].headers.openai-organization", `duplicate of header "OpenAI-Organization" (header names are case-insensitive)`}},
		{"inactive upstream still checked", func(c *Config) { c.Upstreams[2].Active, c.Upstreams[2].Weight = false, 0 },
			FieldError{"upstreams[2].weight", "must be 1–100, got 0"}},
	}
	runValidateCases(t, tests)
}

func TestValidateCollectsAllErrorsInFileOrder(t *testing.T) {
	c := validConfig()
	c.Upstreams[2].Weight = 0
	c.Upstreams[0].Priority = 200
	c.Routes[0].Retries = 20
	c.Keys[1].RPM = -1
	c.Circuit.Window = 0
	c.Affinity.MaxEntries = 0
	c.Defaults.Strategy = "x"
	c.Log.Level = "loud"
	c.Listen = ""
	c.Keys[0].SpendLimit.Period = "week"
	c.Keys[0].Name = ""
	want := Errors{
		{"listen", "required"},
		{"log.level", `must be one of debug, info, warn, error; got "loud"`},
		{"defaults.strategy", `must be one of adaptive, failover, least-conn, lowest-cost, p2c-ewma, round-robin, smooth-wrr, weighted-random; got "x"`},
		{"affinity.max_entries", "must be 1–10000000, got 0"},
		{"circuit.window", "must be > 0, got 0s"},
		{"keys[0].name", "required"},
		{"keys[0].spend_limit.period", `must be one of day, month; got "week"`},
		{"keys[1].rpm", "must be ≥ 0, got -1"},
		{"routes[0].retries", "must be 0–10, got 20"},
		{"upstreams[0].priority", "must be 0–100, got 200"},
		{"upstreams[2].weight", "must be 1–100, got 0"},
	}
	for run := 0; run < 3; run++ { // stable across runs (maps are iterated sorted)
		if got := c.Validate(); !reflect.DeepEqual(got, want) {
			t.Fatalf("Validate() =\n%s\nwant\n%s", got, want)
		}
	}
	if got := want.Error(); !strings.HasPrefix(got, "listen: required\nlog.level: ") {
		t.Errorf("Errors.Error() = %q, want one line per error", got)
	}
}

func TestElementValidateUsesRelativePaths(t *testing.T) {
	u := DefaultUpstream()
	u.Name, u.Provider, u.BaseURL, u.APIKey, u.Models, u.Weight = "u", ProviderOpenAI, "https://x/v1", "k", []string{"m"}, 0
	k := DefaultKey()
	k.Name = "k"
	r := Route{Model: "m", RouteSettings: Default().Defaults, FallbackModels: []string{"m"}}
	r.Affinity = RouteAffinity{SlidingTTL: 2 * time.Minute, AbsoluteTTL: time.Minute}
	tests := []struct {
		name string
		got  Errors
		want Errors
	}{
		{"upstream", u.Validate(), Errors{{"weight", "must be 1–100, got 0"}}},
		{"key", k.Validate(), Errors{{"key", "one of key or key_sha256 is required"}}},
		{"route", r.Validate(), Errors{
			{"fallback_models[0]", `must not be the route's own model "m"`},
			{"affinity.absolute_ttl", "must be ≥ sliding_ttl (2m0s), got 1m0s"},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !reflect.DeepEqual(tt.got, tt.want) {
				t.Fatalf("Validate() = %q, want %q", tt.got, tt.want)
			}
		})
	}
}

func TestHashKey(t *testing.T) {
	tests := []struct{ secret, want string }{
		{"", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"},
		{"abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"},
	}
	for _, tt := range tests {
		t.Run(tt.secret, func(t *testing.T) {
			if got := HashKey(tt.secret); got != tt.want {
				t.Errorf("HashKey(%q) = %s, want %s", tt.secret, got, tt.want)
			}
		})
	}
	t.Run("SecretHash", func(t *testing.T) {
		plain := Key{Key: "abc"}
		hashed := Key{KeySHA256: strings.ToUpper(tests[1].want)}
		if plain.SecretHash() != tests[1].want || hashed.SecretHash() != tests[1].want {
			t.Errorf("SecretHash() = %s, %s; want %s for both", plain.SecretHash(), hashed.SecretHash(), tests[1].want)
		}
	})
}
