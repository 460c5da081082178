// Package config defines Switchyard's YAML schema (docs/config.md): the types,
// their defaults, ${ENV} expansion and validation with field paths.
//
// Load reads a file, expands ${NAME} references in string values, applies
// defaults (a route inherits every key of `defaults` it does not set) and
// validates the result. Every problem is reported as a FieldError naming the
// path of the offending key, e.g. `upstreams[2].weight: must be 1–100, got 0`.
package config

import (
	"time"

	"switchyard/internal/balancer"
	"switchyard/internal/provider"
)

// Providers an upstream may speak.
const (
	ProviderOpenAI           = provider.NameOpenAI
	ProviderOpenAICompatible = provider.NameOpenAICompatible
	ProviderAzureOpenAI      = provider.NameAzureOpenAI
	ProviderAnthropic        = provider.NameAnthropic
	ProviderGemini           = provider.NameGemini
	ProviderVertex           = provider.NameVertex
	ProviderBedrock          = provider.NameBedrock
)

// Balancing strategies a route may select (docs/reference.md#strategies). The
// balancer's registry is the one list of valid names: these are its constants
// under the config's name, and validation accepts exactly
// balancer.StrategyNames().
const (
	StrategyWeightedRandom = balancer.StrategyWeightedRandom
	StrategySmoothWRR      = balancer.StrategySmoothWRR
	StrategyRoundRobin     = balancer.StrategyRoundRobin
	StrategyLeastConn      = balancer.StrategyLeastConn
	StrategyP2CEWMA        = balancer.StrategyP2CEWMA
	StrategyAdaptive       = balancer.StrategyAdaptive
	StrategyFailover       = balancer.StrategyFailover
)

// Config is the whole switchyard.yaml file.
type Config struct {
	// Listen is the client API address, host:port (host optional). Required; default ":8080".
	Listen string `yaml:"listen" json:"listen"`
	// Admin configures the admin API and dashboard.
	Admin Admin `yaml:"admin" json:"admin"`
	// Store selects the persistence backend.
	Store Store `yaml:"store" json:"store"`
	// State selects where live routing state is kept.
	State State `yaml:"state" json:"state"`
	// Log configures logging.
	Log Log `yaml:"log" json:"log"`
	// Metrics configures the /metrics endpoint.
	Metrics Metrics `yaml:"metrics" json:"metrics"`
	// MemoryLimitMB is the soft memory limit `serve` gives the Go runtime, in
	// MiB: as the process nears it the garbage collector runs more often,
	// which keeps the peaks of a traffic burst from piling up; it never
	// fails an allocation. 0 leaves the runtime's default (no limit); the
	// GOMEMLIMIT environment variable, when set, wins. Default 40, 0 or ≥ 16.
	MemoryLimitMB int `yaml:"memory_limit_mb" json:"memory_limit_mb"`
	// Defaults are the route settings used when a model has no route entry,
	// and inherited by every route for the keys it does not set.
	Defaults RouteSettings `yaml:"defaults" json:"defaults"`
	// Affinity is the global session-affinity block.
	Affinity Affinity `yaml:"affinity" json:"affinity"`
	// Health configures active health probes.
	Health Health `yaml:"health" json:"health"`
	// Circuit configures the per-upstream circuit breaker.
	Circuit Circuit `yaml:"circuit" json:"circuit"`
	// Keys are the client API keys.
	Keys []Key `yaml:"keys" json:"keys"`
	// Teams group keys under shared limits (docs/routing.md#tenants-classes-and-fair-queueing).
	Teams []Team `yaml:"teams" json:"teams"`
	// Routes are per-model settings.
	Routes []Route `yaml:"routes" json:"routes"`
	// Upstreams are the provider accounts and endpoints traffic is spread over.
	Upstreams []Upstream `yaml:"upstreams" json:"upstreams"`
	// Tracing exports OpenTelemetry traces (docs/tracing.md); off by default.
	Tracing Tracing `yaml:"tracing" json:"tracing"`
	// Pricing selects the price catalogue (docs/pricing.md).
	Pricing Pricing `yaml:"pricing" json:"pricing"`

	// Warnings are problems that do not stop loading, such as a ${NAME}
	// reference to an unset variable. Not part of the file.
	Warnings Errors `yaml:"-" json:"-"`
}

// Admin configures the admin API.
type Admin struct {
	// Listen is a separate admin address (host:port, not the port of
	// Config.Listen); "" (default) serves admin under /admin on the main listener.
	Listen string `yaml:"listen" json:"listen"`
	// Token is the bearer token /admin/api requires; empty (default) disables
	// the admin API. No whitespace.
	Token string `yaml:"token" json:"-"`
}

// Store selects the persistence backend.
type Store struct {
	// Driver is sqlite (default) or postgres.
	Driver string `yaml:"driver" json:"driver"`
	// DSN is the sqlite file path (default "switchyard.db") or, for postgres,
	// a postgres:// or postgresql:// URL or a key=value DSN. Required.
	DSN string `yaml:"dsn" json:"-"`
}

// State selects where live routing state lives.
type State struct {
	// Driver is memory (default) or redis.
	Driver string `yaml:"driver" json:"driver"`
	// RedisURL is the redis:// or rediss:// URL (redis://host:6379/0) of
	// one server. When Driver is redis, exactly one of RedisURL and
	// Redis.Addrs is required; both are ignored otherwise.
	RedisURL string `yaml:"redis_url" json:"-"`
	// Redis connects to a server, a Sentinel-managed primary or a Redis
	// Cluster (docs/scale-out.md#redis-sentinel-and-redis-cluster); the
	// alternative to RedisURL.
	Redis RedisConn `yaml:"redis" json:"redis"`
	// RedisPrefix prefixes every key. Default "switchyard:".
	RedisPrefix string `yaml:"redis_prefix" json:"redis_prefix"`
	// LeaseTTL is how long an in-flight lease outlives its last renewal:
	// the slots of an instance that dies come back within it. Its holder
	// renews it every LeaseTTL/3. Default 15s, ≥ 1s.
	LeaseTTL time.Duration `yaml:"lease_ttl" json:"lease_ttl"`
	// SyncInterval is how often an instance refreshes its planning view
	// (breakers, cooldowns, windows, in-flight, statistics, spend) from
	// Redis: the bound on how stale a plan can be. Default 250ms, > 0 and
	// < LeaseTTL/3.
	SyncInterval time.Duration `yaml:"sync_interval" json:"sync_interval"`
	// RedisTimeout bounds each Redis operation; one that takes longer is
	// served from local state instead. Default 250ms, > 0.
	RedisTimeout time.Duration `yaml:"redis_timeout" json:"redis_timeout"`
}

// Log configures logging.
type Log struct {
	// Level is debug, info (default), warn or error. debug logs every routing decision.
	Level string `yaml:"level" json:"level"`
	// Format is json (default: one JSON object per line) or text
	// (key=value, for a terminal).
	Format string `yaml:"format" json:"format"`
	// Access writes one line per request (id, key, model, upstream,
	// status, attempts, latency, TTFT, tokens; never bodies). Default false.
	Access bool `yaml:"access" json:"access"`
	// Requests persists request logs (never bodies). Default true.
	Requests bool `yaml:"requests" json:"requests"`
}

// Tracing configures the OpenTelemetry trace exporter (docs/tracing.md).
type Tracing struct {
	// OTLPEndpoint is the collector: http(s)://host:4318[/path] for
	// OTLP/HTTP (path default /v1/traces), grpc(s)://host:4317 for OTLP/gRPC.
	// "" (default) turns tracing off.
	OTLPEndpoint string `yaml:"otlp_endpoint" json:"otlp_endpoint"`
	// SampleRatio is the share of traces started here that are recorded,
	// 0–1; a client's traceparent decides for its own. Default 1.
	SampleRatio float64 `yaml:"sample_ratio" json:"sample_ratio"`
	// ServiceName is the resource's service.name. Default "switchyard".
	ServiceName string `yaml:"service_name" json:"service_name"`
	// Headers are sent with every export (a collector's auth token); never
	// echoed.
	Headers map[string]string `yaml:"headers" json:"-"`
}

// On reports whether traces are exported.
func (t Tracing) On() bool { return t.OTLPEndpoint != "" }

// Metrics configures /metrics.
type Metrics struct {
	// Token, when non-empty, is the bearer token /metrics requires. Default "".
	Token string `yaml:"token" json:"-"`
}

// RouteSettings are the per-route knobs; `defaults` holds the global values.
type RouteSettings struct {
	// Strategy names a registered balancer strategy (balancer.StrategyNames).
	// Default weighted-random.
	Strategy string `yaml:"strategy" json:"strategy"`
	// Retries is the number of extra attempts after the first, on other upstreams. Default 2, 0–10.
	Retries int `yaml:"retries" json:"retries"`
	// Timeout bounds the whole request. Default 300s, > 0.
	Timeout time.Duration `yaml:"timeout" json:"timeout"`
	// FirstByteTimeout bounds the wait for response headers (and, when
	// streaming, the first event) before failing over. Default 60s, > 0 and ≤ Timeout.
	FirstByteTimeout time.Duration `yaml:"first_byte_timeout" json:"first_byte_timeout"`
	// MaxBodyBytes caps the request body, in bytes. Default 10485760 (10 MiB), 1–1073741824 (1 GiB).
	MaxBodyBytes int64 `yaml:"max_body_bytes" json:"max_body_bytes"`
	// StreamIdleTimeout bounds the gap between SSE events after the first. Default 60s, > 0.
	StreamIdleTimeout time.Duration `yaml:"stream_idle_timeout" json:"stream_idle_timeout"`
	// RetryBudget is the share of the request rate retries may add (at least 3/s). Default 0.2, 0–1.
	RetryBudget float64 `yaml:"retry_budget" json:"retry_budget"`
	// MaxWait is how long to wait when every candidate is cooling down or
	// full before answering 503. Default 0 (do not wait), ≥ 0 and < Timeout.
	MaxWait time.Duration `yaml:"max_wait" json:"max_wait"`
	// Translate lets a request go to an upstream of another protocol
	// family, translated (docs/protocols.md); false keeps it to its own family.
	// Default true.
	Translate bool `yaml:"translate" json:"translate"`
	// DefaultMaxTokens is the max_tokens sent to a family that requires one
	// (Anthropic) when the client gave none. Default 4096, 1–1000000.
	DefaultMaxTokens int64 `yaml:"default_max_tokens" json:"default_max_tokens"`
	// Hedge races a slow attempt with the plan's next candidate
	// (docs/routing.md#hedged-requests). Default off.
	Hedge Hedge `yaml:"hedge" json:"hedge"`
}

// Hedge configures hedged requests (docs/routing.md#hedged-requests).
type Hedge struct {
	// Delay is how long an attempt may go without its first byte before
	// the next candidate starts alongside it: a duration ("300ms"; "0s"
	// turns hedging off) or "p95", the attempt's upstream's observed
	// first-byte p95 (no hedge while it has too few samples). Default "0s".
	Delay string `yaml:"delay" json:"delay"`
	// Max is how many hedges may join one request's first attempt. Default 1, 1–3.
	Max int `yaml:"max" json:"max"`
	// Budget is the share of the route's request rate hedges may add (at
	// least 1/s). Default 0.1, 0–1.
	Budget float64 `yaml:"budget" json:"budget"`
}

// HedgeP95 is Hedge.Delay's value for the observed first-byte p95.
const HedgeP95 = "p95"

// Wait returns h's fixed delay, or p95 when it follows the observed p95;
// 0 and false when hedging is off (or Delay does not parse: validation
// reports that).
func (h Hedge) Wait() (fixed time.Duration, p95 bool) {
	if h.Delay == HedgeP95 {
		return 0, true
	}
	d, err := time.ParseDuration(h.Delay)
	if err != nil || d < 0 {
		return 0, false
	}
	return d, false
}

// On reports whether h races attempts.
func (h Hedge) On() bool {
	d, p95 := h.Wait()
	return d > 0 || p95
}

// Health configures active probes.
type Health struct {
	// Interval is the probe period; 0 disables probes. Default 30s, ≥ 0.
	Interval time.Duration `yaml:"interval" json:"interval"`
	// Probe is models (GET {base_url}/models, default) or chat (max_tokens=1).
	Probe string `yaml:"probe" json:"probe"`
	// Timeout bounds one probe. Default 5s, > 0 and ≤ Interval when probing.
	Timeout time.Duration `yaml:"timeout" json:"timeout"`
}

// Circuit configures the circuit breaker
// (docs/reference.md#circuit-breaker-and-probes).
type Circuit struct {
	// FailureThreshold failures within Window open the breaker. Default 5, ≥1.
	FailureThreshold int `yaml:"failure_threshold" json:"failure_threshold"`
	// Window is the failure-counting window. Default 30s, > 0.
	Window time.Duration `yaml:"window" json:"window"`
	// OpenDuration is how long an open breaker rejects traffic. Default 60s, > 0.
	OpenDuration time.Duration `yaml:"open_duration" json:"open_duration"`
	// ProbeInterval spaces half-open probe requests. Default 10s, > 0.
	ProbeInterval time.Duration `yaml:"probe_interval" json:"probe_interval"`
	// SuccessThreshold successful probes close the breaker. Default 1, ≥1.
	SuccessThreshold int `yaml:"success_threshold" json:"success_threshold"`
	// SlowStart ramps effective weight from 10% to 100% after closing. Default 30s, ≥ 0; 0 disables.
	SlowStart time.Duration `yaml:"slow_start" json:"slow_start"`
}

// SpendLimit caps spend over a period.
type SpendLimit struct {
	// USD is the cap in US dollars, ≥ 0; 0 (default) means none.
	USD float64 `yaml:"usd" json:"usd"`
	// Period is day or month (default).
	Period string `yaml:"period" json:"period"`
}

// Queue disciplines (upstreams[].queue.discipline).
const (
	DisciplineFair = "fair"
	DisciplineFIFO = "fifo"
)

// Route holds per-model settings. It inherits every key of `defaults` it does not set.
type Route struct {
	// Model is the client-facing model name; globs (`gpt-4o*`) allowed. Required, unique.
	Model string `yaml:"model" json:"model"`
	// RouteSettings are the inherited knobs.
	RouteSettings `yaml:",inline" json:",inline"`
	// FallbackModels are tried, in order, after every upstream of Model
	// failed. Model names (not globs), not Model itself, each served by an upstream.
	FallbackModels []string `yaml:"fallback_models" json:"fallback_models"`
	// Affinity overrides the global affinity block.
	Affinity RouteAffinity `yaml:"affinity" json:"affinity"`
	// Rules narrow, reorder or re-route the route's requests by what they
	// carry; the first whose When holds applies (docs/routing.md#rules).
	// Default none.
	Rules []Rule `yaml:"rules" json:"rules,omitempty"`
}

// Queue configures an upstream's concurrency wait queue.
type Queue struct {
	// Enabled makes a full upstream waitable instead of skipped. Default false.
	Enabled bool `yaml:"enabled" json:"enabled"`
	// Timeout is the longest wait for a slot. Default 5s, > 0 when Enabled.
	Timeout time.Duration `yaml:"timeout" json:"timeout"`
	// MaxLength bounds the number waiting. Default 100, ≥ 1 when Enabled.
	MaxLength int `yaml:"max_length" json:"max_length"`
	// Discipline orders the waiting requests: fair (default; by class,
	// then weighted fair across keys, docs/routing.md#tenants-classes-and-fair-queueing)
	// or fifo (arrival order, no classes and no shedding).
	Discipline string `yaml:"discipline" json:"discipline"`
}

// RateLimit gives an upstream's known provider limits.
type RateLimit struct {
	// RPM is requests per minute, ≥ 0; 0 (default) means unknown (learned from headers).
	RPM int `yaml:"rpm" json:"rpm"`
	// TPM is tokens per minute, ≥ 0; 0 (default) means unknown (learned from headers).
	TPM int `yaml:"tpm" json:"tpm"`
}

// Upstream is one provider account or endpoint.
type Upstream struct {
	// Name is the unique, stable id. Required, without whitespace, '/', '?', '#' or '%'.
	Name string `yaml:"name" json:"name"`
	// Provider is openai, anthropic, azure-openai, openai-compatible,
	// gemini, vertex or bedrock. Required.
	Provider string `yaml:"provider" json:"provider"`
	// BaseURL includes the version path (https://api.openai.com/v1); the
	// gateway appends /chat/completions, /messages, /models, …  For
	// azure-openai it is the resource URL (https://NAME.openai.azure.com).
	// An absolute http(s) URL with a host, no query or credentials;
	// required unless the provider has a default (gemini, vertex,
	// bedrock).
	BaseURL string `yaml:"base_url" json:"base_url"`
	// APIKey is the upstream secret. Never logged or returned. Required
	// except for openai-compatible.
	APIKey string `yaml:"api_key" json:"api_key,omitempty"`
	// APIVersion is the azure-openai api-version query parameter
	// (default 2024-10-21) or the anthropic-version header (default
	// 2023-06-01); a dated version such as 2024-10-21 or 2025-01-01-preview.
	APIVersion string `yaml:"api_version" json:"api_version,omitempty"`
	// Organization and Project (openai, openai-compatible; refused by the
	// others) are sent as OpenAI-Organization and OpenAI-Project: the
	// organization and project of the key that requests are billed to.
	// Default "" (none: the key's default); ids without whitespace.
	Organization string `yaml:"organization" json:"organization,omitempty"`
	Project      string `yaml:"project" json:"project,omitempty"`
	// Models are the client model names (globs allowed) this upstream serves. At least one.
	Models []string `yaml:"models" json:"models"`
	// ModelMap rewrites a client model name to the upstream's name (for
	// azure-openai: the deployment name). Keys must be served by Models;
	// values non-empty.
	ModelMap map[string]string `yaml:"model_map" json:"model_map,omitempty"`
	// Weight is the share within a tier. Default 1, 1–100.
	Weight int `yaml:"weight" json:"weight"`
	// Priority is the tier; lower is tried first. Default 0, 0–100.
	Priority int `yaml:"priority" json:"priority"`
	// MaxConcurrency caps in-flight requests, ≥ 0; 0 (default) means unlimited.
	MaxConcurrency int `yaml:"max_concurrency" json:"max_concurrency"`
	// Queue makes a full upstream waitable; enabling it requires MaxConcurrency > 0.
	Queue Queue `yaml:"queue" json:"queue"`
	// RateLimit gives known provider limits.
	RateLimit RateLimit `yaml:"rate_limit" json:"rate_limit"`
	// SpendLimit caps the upstream's spend.
	SpendLimit SpendLimit `yaml:"spend_limit" json:"spend_limit"`
	// Price is the token price of every model the upstream serves, used
	// when any of its fields is set and no Prices pattern matches the
	// client model (docs/pricing.md).
	Price Price `yaml:"price" json:"price"`
	// Prices are per-client-model prices: glob (see Glob) → price. An
	// exact key wins over globs; among globs the longest pattern wins,
	// then the first in byte order. Patterns must be valid globs.
	Prices map[string]Price `yaml:"prices" json:"prices,omitempty"`
	// PriceMultiplier scales catalogue prices (never Price or Prices):
	// 0.8 for a negotiated 20% discount. Default 1, > 0 and finite; 0 in
	// a value built in code (or stored before the key existed) means 1.
	PriceMultiplier float64 `yaml:"price_multiplier" json:"price_multiplier"`
	// AffinityMigration says when bound sessions may move to a better tier.
	AffinityMigration AffinityMigration `yaml:"affinity_migration" json:"affinity_migration"`
	// Headers are extra headers sent upstream. Names must be valid HTTP
	// tokens other than those the gateway sets (Authorization, x-api-key,
	// api-key, Host, Content-Length, Transfer-Encoding, Connection).
	Headers map[string]string `yaml:"headers" json:"headers,omitempty"`
	// Active includes the upstream in routing. Default true.
	Active bool `yaml:"active" json:"active"`
	// Bedrock holds the bedrock provider's settings (region, SigV4
	// credentials); required by it, refused by the others.
	Bedrock *provider.BedrockSettings `yaml:"bedrock" json:"bedrock,omitempty"`
	// Vertex holds the vertex provider's settings (project, location,
	// service-account credentials); required by it, refused by the others.
	Vertex *provider.VertexSettings `yaml:"vertex" json:"vertex,omitempty"`
	// Azure holds the azure-openai provider's authentication (api_key or
	// Entra ID); optional for it, refused by the others.
	Azure *provider.AzureSettings `yaml:"azure" json:"azure,omitempty"`
}

// Default returns a Config holding every default of docs/config.md.
func Default() Config {
	return Config{
		Listen:        ":8080",
		Store:         Store{Driver: "sqlite", DSN: "switchyard.db"},
		MemoryLimitMB: 40,
		State: State{
			Driver: "memory", RedisPrefix: "switchyard:",
			LeaseTTL: 15 * time.Second, SyncInterval: 250 * time.Millisecond, RedisTimeout: 250 * time.Millisecond,
		},
		Log: Log{Level: "info", Format: "json", Requests: true},
		Defaults: RouteSettings{
			Strategy:          StrategyWeightedRandom,
			Retries:           2,
			Timeout:           300 * time.Second,
			FirstByteTimeout:  60 * time.Second,
			MaxBodyBytes:      10 << 20,
			StreamIdleTimeout: 60 * time.Second,
			Translate:         true,
			DefaultMaxTokens:  4096,
			RetryBudget:       0.2,
			Hedge:             Hedge{Delay: "0s", Max: 1, Budget: 0.1},
		},
		Affinity: Affinity{Enabled: true, SlidingTTL: 5 * time.Minute, AbsoluteTTL: 30 * time.Minute, MaxEntries: 10000, FailBack: true, ResponseTTL: 24 * time.Hour,
			ConversationMaxBytes: 1 << 20, MaxConversations: 10000,
			Prefix: PrefixAffinity{Enabled: true, MinTokens: 1024, TTL: 5 * time.Minute, MaxShare: 0.5}},
		Health:  Health{Interval: 30 * time.Second, Probe: "models", Timeout: 5 * time.Second},
		Tracing: Tracing{SampleRatio: 1, ServiceName: "switchyard"},
		Pricing: Pricing{Catalogue: CatalogueBuiltin},
		Circuit: Circuit{
			FailureThreshold: 5, Window: 30 * time.Second, OpenDuration: 60 * time.Second,
			ProbeInterval: 10 * time.Second, SuccessThreshold: 1, SlowStart: 30 * time.Second,
		},
	}
}

// DefaultUpstream returns an Upstream holding the per-upstream defaults.
func DefaultUpstream() Upstream {
	return Upstream{
		Weight:            1,
		Active:            true,
		Queue:             Queue{Timeout: 5 * time.Second, MaxLength: 100, Discipline: DisciplineFair},
		SpendLimit:        SpendLimit{Period: "month"},
		PriceMultiplier:   1,
		AffinityMigration: AffinityMigration{Mode: "never"},
	}
}

// Settings returns the effective settings for a client model: the first
// route whose model matches exactly, else the first whose glob matches, else
// the defaults. The boolean reports whether a route matched.
func (c *Config) Settings(model string) (Route, bool) {
	if r, ok := MatchRoute(c.Routes, model); ok {
		return r, true
	}
	return Route{Model: model, RouteSettings: c.Defaults}, false
}

// Adapter returns what u's provider adapter needs of it.
func (u *Upstream) Adapter() provider.Upstream {
	return provider.Upstream{Name: u.Name, BaseURL: u.BaseURL, APIKey: u.APIKey, APIVersion: u.APIVersion, Headers: u.Headers,
		Organization: u.Organization, Project: u.Project, Bedrock: u.Bedrock, Vertex: u.Vertex, Azure: u.Azure}
}
