package sim

import (
	"fmt"
	"os"
	"switchyard/internal/codec"
	adapters "switchyard/internal/provider"
	"time"

	"github.com/goccy/go-yaml"

	"switchyard/internal/config"
)

// Scenario is one simulation: how long it runs, the traffic it sends and how
// every upstream provider behaves. docs/simulator.md documents each field.
type Scenario struct {
	// Name titles the report and the charts. Default: the file's name.
	Name string `yaml:"name"`
	// Description is one paragraph for the report.
	Description string `yaml:"description"`
	// Duration is the simulated time traffic arrives in; requests still in
	// flight at the end finish. Required, 1s–7d.
	Duration time.Duration `yaml:"duration"`
	// Seed is used when the command line gives none. Default 1.
	Seed uint64 `yaml:"seed"`
	// Model is the client model of the phases that name none.
	Model string `yaml:"model"`
	// Key is the client key (by name, from the config) requests are sent
	// with; "" means a key that may use every model and upstream.
	Key string `yaml:"key"`
	// Protocol is the protocol the clients speak: openai (Chat
	// Completions) or anthropic (Messages). Default, per model: anthropic
	// when every upstream serving it speaks Anthropic's protocol for it,
	// else openai; the gateway translates for the others.
	Protocol string `yaml:"protocol"`
	// Bucket is the charts' time resolution. Default: Duration/120 rounded
	// to 1, 2, 5, 10, 15 or 30 s or whole minutes.
	Bucket time.Duration `yaml:"bucket"`
	// Traffic holds the phases; they may overlap.
	Traffic []Phase `yaml:"traffic"`
	// Upstreams is the provider model of each config upstream that serves a
	// simulated model, by upstream name.
	Upstreams map[string]Provider `yaml:"upstreams"`
	// Compare runs the scenario a second time, same seed, with a feature
	// off, and adds the comparison to the report: "hedging" (hedging off
	// in every route), or "" for none.
	Compare string `yaml:"compare"`
}

// Phase is a stretch of traffic at one rate and mix.
type Phase struct {
	// Name labels the phase in the report.
	Name string `yaml:"name"`
	// Start is when the phase begins; nil means when the previous phase
	// ends (0 for the first).
	Start *time.Duration `yaml:"start"`
	// Duration is how long new requests arrive. Required, > 0.
	Duration time.Duration `yaml:"duration"`
	// Rate is new requests per second (a session's first turn counts, its
	// later turns do not). Required, > 0.
	Rate float64 `yaml:"rate"`
	// Burst is how many requests arrive together at each arrival instant of
	// the Poisson process (whose rate is Rate/Burst). Default 1.
	Burst int `yaml:"burst"`
	// Model is the client model; default Scenario.Model.
	Model string `yaml:"model"`
	// StreamShare is the share of requests with "stream": true, 0–1.
	StreamShare float64 `yaml:"stream_share"`
	// Sessions makes a share of arrivals multi-turn conversations.
	Sessions Sessions `yaml:"sessions"`
	// SharedPrompts opens a share of requests with one of a handful of
	// long system prompts, the way an application's users share its
	// instructions and tools: what prompt caches and prefix affinity are
	// for.
	SharedPrompts SharedPrompts `yaml:"shared_prompts"`
	// PromptTokens and CompletionTokens are the token counts of one turn.
	// Default p50 500/p95 2000 and p50 200/p95 800.
	PromptTokens     CountDist `yaml:"prompt_tokens"`
	CompletionTokens CountDist `yaml:"completion_tokens"`
	// MaxTokens is the request's max_tokens (caps the completion; counts in
	// the TPM estimate). Default 1024.
	MaxTokens int `yaml:"max_tokens"`
}

// Sessions describes the multi-turn conversations of a phase.
type Sessions struct {
	// Share of arrivals that start a session, 0–1. Default 0.
	Share float64 `yaml:"share"`
	// Turns per session, ≥ 1. Default p50 5/p95 15.
	Turns CountDist `yaml:"turns"`
	// ThinkTime between an answer and the next turn. Default p50 20s/p95 60s.
	ThinkTime DurationDist `yaml:"think_time"`
}

// SharedPrompts describes the long prompt prefixes a phase's requests
// share.
type SharedPrompts struct {
	// Count is how many distinct shared prompts there are; 0 (default)
	// means none. A request that draws one opens with it: prompt i of
	// the phase is the same bytes in every request that draws it.
	Count int `yaml:"count"`
	// Tokens is each shared prompt's length in tokens, ≥ 1 when Count > 0.
	// The request's own prompt (prompt_tokens) comes after it.
	Tokens int64 `yaml:"tokens"`
	// Share of requests that open with one, 0–1. Default 1 when Count > 0.
	Share *float64 `yaml:"share"`
}

// Provider models one upstream as the provider behind it behaves.
type Provider struct {
	// Latency is the response time of a non-streaming request. Required.
	Latency DurationDist `yaml:"latency"`
	// TTFT is the time to the first event of a streaming request. Required.
	TTFT DurationDist `yaml:"ttft"`
	// TokensPerSecond is the streaming output rate after the first event. Default 50.
	TokensPerSecond float64 `yaml:"tokens_per_second"`
	// RPM and TPM are the provider's limits per minute; 0 means none.
	RPM int `yaml:"rpm"`
	TPM int `yaml:"tpm"`
	// Headers is the rate-limit header dialect it answers with: openai
	// (x-ratelimit-*), anthropic (anthropic-ratelimit-*) or none. Default:
	// by the config upstream's provider.
	Headers string `yaml:"headers"`
	// RetryAfter sends Retry-After on a 429. Default true.
	RetryAfter *bool `yaml:"retry_after"`
	// ErrorRate is the share of requests answered 5xx, 0–1.
	ErrorRate float64 `yaml:"error_rate"`
	// ProbeRTT is the round trip of an active health probe. Default 50ms.
	ProbeRTT time.Duration `yaml:"probe_rtt"`
	// Outages refuse connections.
	Outages []Window `yaml:"outages"`
	// Brownouts raise the error rate and stretch latencies.
	Brownouts []Brownout `yaml:"brownouts"`
	// Hangs accept requests and never answer.
	Hangs []Window `yaml:"hangs"`
	// SlowStarts makes a share of successful answers start late.
	SlowStarts SlowStarts `yaml:"slow_starts"`
}

// SlowStarts is a share of answers whose first byte (a stream's first
// event, a whole answer's response) takes a fixed time instead of the
// TTFT or latency draw: a provider that now and then queues a request.
type SlowStarts struct {
	// Share of successful answers that start slowly, 0–1. Default 0.
	Share float64 `yaml:"share"`
	// TTFT replaces the draw for them. Required, > 0, when Share > 0.
	TTFT time.Duration `yaml:"ttft"`
}

// Window is a stretch of simulated time, [Start, End).
type Window struct {
	Start time.Duration `yaml:"start"`
	End   time.Duration `yaml:"end"`
}

// contains reports whether t falls in w.
func (w Window) contains(t time.Duration) bool { return t >= w.Start && t < w.End }

// Brownout is a window of degraded service.
type Brownout struct {
	Start time.Duration `yaml:"start"`
	End   time.Duration `yaml:"end"`
	// ErrorRate replaces the provider's error rate inside the window, 0–1.
	ErrorRate float64 `yaml:"error_rate"`
	// LatencyFactor multiplies latency, TTFT and probe RTT and divides
	// tokens/s. Default 1, ≥ 1.
	LatencyFactor float64 `yaml:"latency_factor"`
}

// Client protocols of Scenario.Protocol.
const (
	ProtocolOpenAI    = "openai"
	ProtocolAnthropic = "anthropic"
)

// Header dialects of Provider.Headers.
const (
	HeadersOpenAI    = "openai"
	HeadersAnthropic = "anthropic"
	HeadersNone      = "none"
)

// LoadScenario reads and decodes the scenario file at path, applies its
// defaults and validates it against cfg. Problems come back as config.Errors
// with field paths (`upstreams.openai-a.latency.p50: must be > 0, got 0s`).
func LoadScenario(path string, cfg *config.Config) (*Scenario, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("reading scenario: %w", err)
	}
	return ParseScenario(data, cfg)
}

// ParseScenario decodes scenario YAML (unknown keys are errors), applies
// defaults and validates it against cfg.
func ParseScenario(data []byte, cfg *config.Config) (*Scenario, error) {
	var s Scenario
	if err := yaml.UnmarshalWithOptions(data, &s, yaml.Strict()); err != nil {
		return nil, config.Errors{{Msg: "parsing scenario YAML: " + yaml.FormatError(err, false, true)}}
	}
	s.applyDefaults(cfg)
	if errs := s.Validate(cfg); len(errs) > 0 {
		return nil, errs
	}
	return &s, nil
}

// applyDefaults fills every field left unset with its documented default.
func (s *Scenario) applyDefaults(cfg *config.Config) {
	if s.Seed == 0 {
		s.Seed = 1
	}
	if s.Bucket == 0 {
		s.Bucket = defaultBucket(s.Duration)
	}
	var end time.Duration
	for i := range s.Traffic {
		p := &s.Traffic[i]
		if p.Start == nil {
			start := end
			p.Start = &start
		}
		end = *p.Start + p.Duration
		if p.Name == "" {
			p.Name = fmt.Sprintf("phase %d", i+1)
		}
		if p.Model == "" {
			p.Model = s.Model
		}
		if p.Burst == 0 {
			p.Burst = 1
		}
		if p.MaxTokens == 0 {
			p.MaxTokens = 1024
		}
		p.PromptTokens.orDefault(500, 2000)
		p.CompletionTokens.orDefault(200, 800)
		if p.SharedPrompts.Count > 0 && p.SharedPrompts.Share == nil {
			all := 1.0
			p.SharedPrompts.Share = &all
		}
		p.Sessions.Turns.orDefault(5, 15)
		p.Sessions.ThinkTime.orDefault(20*time.Second, 60*time.Second)
	}
	for name, u := range s.Upstreams {
		if u.TokensPerSecond == 0 {
			u.TokensPerSecond = 50
		}
		if u.Headers == "" {
			u.Headers = HeadersOpenAI
			for _, cu := range cfg.Upstreams {
				if cu.Name == name {
					u.Headers = headerDialect(cu)
				}
			}
		}
		if u.RetryAfter == nil {
			yes := true
			u.RetryAfter = &yes
		}
		if u.ProbeRTT == 0 {
			u.ProbeRTT = 50 * time.Millisecond
		}
		for j := range u.Brownouts {
			if u.Brownouts[j].LatencyFactor == 0 {
				u.Brownouts[j].LatencyFactor = 1
			}
		}
		u.Latency.orDefault(0, 0)
		u.TTFT.orDefault(0, 0)
		s.Upstreams[name] = u
	}
}

// defaultBucket is about a 120th of d, rounded up to a readable step.
func defaultBucket(d time.Duration) time.Duration {
	steps := []time.Duration{
		time.Second, 2 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 30 * time.Second,
		time.Minute, 2 * time.Minute, 5 * time.Minute, 10 * time.Minute, 15 * time.Minute, 30 * time.Minute, time.Hour,
	}
	for _, s := range steps {
		if d/s <= 120 {
			return s
		}
	}
	return 2 * time.Hour
}

// familyOf returns the protocol family u's provider speaks for model
// ("" for its own protocol); false for an unknown provider.
func familyOf(u config.Upstream, model string) (codec.Family, bool) {
	p, ok := adapters.Builtin().Lookup(u.Provider)
	if !ok {
		return 0, false
	}
	a := u.Adapter()
	a.Simulated = true
	return p.New(a).Family(model), true
}

// headerDialect is the rate-limit headers u's provider sends by default:
// OpenAI's and Anthropic's own send theirs; Google's and AWS's (Gemini,
// Vertex, Bedrock) send none, and only their 429s tell.
func headerDialect(u config.Upstream) string {
	switch f, _ := familyOf(u, ""); f {
	case codec.FamilyAnthropic:
		return HeadersAnthropic
	case codec.FamilyOpenAI:
		return HeadersOpenAI
	}
	return HeadersNone
}
