package config

import "time"

// Affinity configures session affinity (docs/reference.md#session-affinity).
type Affinity struct {
	// Enabled turns session affinity on. Default true.
	Enabled bool `yaml:"enabled" json:"enabled"`
	// SlidingTTL expires a binding unused for this long. Default 5m, > 0.
	SlidingTTL time.Duration `yaml:"sliding_ttl" json:"sliding_ttl"`
	// AbsoluteTTL expires a binding this long after it was made. Default 30m, ≥ SlidingTTL.
	AbsoluteTTL time.Duration `yaml:"absolute_ttl" json:"absolute_ttl"`
	// ResponseTTL is how long an OpenAI Responses id (or conversation id)
	// stays pinned to the upstream that produced it
	// (docs/routing.md#stateful-calls-pinned-not-sticky). Default 24h, > 0.
	ResponseTTL time.Duration `yaml:"response_ttl" json:"response_ttl"`
	// MaxEntries bounds the table (LRU eviction). Default 10000, 1–10000000.
	MaxEntries int `yaml:"max_entries" json:"max_entries"`
	// ConversationMaxBytes bounds the history the gateway keeps of one
	// Responses conversation it must continue itself, in bytes of JSON items
	// (docs/routing.md#responses-chains-the-gateway-keeps); a longer one is
	// not kept and continuing it is refused. Default 1048576 (1 MiB),
	// 1024–67108864.
	ConversationMaxBytes int `yaml:"conversation_max_bytes" json:"conversation_max_bytes"`
	// MaxConversations bounds how many such conversations one instance keeps
	// in memory (state.driver: memory, and Redis mode's fallback; LRU
	// eviction, and at most 256 MiB in all). Default 10000, 1–10000000.
	MaxConversations int `yaml:"max_conversations" json:"max_conversations"`
	// FailBack sends a session back to its home upstream once the home is
	// available again; false keeps it on the stand-in that served it
	// meanwhile, as its new home
	// (docs/routing.md#2-candidates-and-session-affinity). Default true.
	FailBack bool `yaml:"fail_back" json:"fail_back"`
	// Prefix binds requests without a session id by their prompt's prefix
	// (docs/routing.md#prefix-cache-affinity).
	Prefix PrefixAffinity `yaml:"prefix" json:"prefix"`
}

// PrefixAffinity configures prefix-cache affinity: a request with no
// session id whose prompt is long enough is bound by a hash of the prompt's
// first MinTokens×4 bytes, like a session
// (docs/routing.md#prefix-cache-affinity).
type PrefixAffinity struct {
	// Enabled turns prefix affinity on where affinity is on. Default true.
	Enabled bool `yaml:"enabled" json:"enabled"`
	// MinTokens is the shortest prompt bound by its prefix, in tokens
	// estimated as bytes/4; the hash covers its first MinTokens×4 bytes.
	// Default 1024, 1–1048576.
	MinTokens int `yaml:"min_tokens" json:"min_tokens"`
	// TTL expires a prefix binding unused for this long (sliding). Default
	// 5m, > 0.
	TTL time.Duration `yaml:"ttl" json:"ttl"`
	// MaxShare: a prefix binding yields to normal selection while its
	// upstream carries more than this share of the route's in-flight
	// requests and its tier has another available upstream. Default 0.5,
	// in (0, 1]; 1 never yields.
	MaxShare float64 `yaml:"max_share" json:"max_share"`
}

// RouteAffinity overrides the global affinity block for one route.
type RouteAffinity struct {
	// Enabled overrides affinity.enabled; nil inherits it.
	Enabled *bool `yaml:"enabled" json:"enabled,omitempty"`
	// SlidingTTL overrides affinity.sliding_ttl when non-zero. ≥ 0.
	SlidingTTL time.Duration `yaml:"sliding_ttl" json:"sliding_ttl,omitempty"`
	// AbsoluteTTL overrides affinity.absolute_ttl when non-zero. ≥ 0; the
	// effective absolute TTL must be ≥ the effective sliding TTL.
	AbsoluteTTL time.Duration `yaml:"absolute_ttl" json:"absolute_ttl,omitempty"`
	// Prefix overrides affinity.prefix: each set field (non-nil Enabled,
	// non-zero others) replaces the global one.
	Prefix RoutePrefixAffinity `yaml:"prefix" json:"prefix,omitzero"`
}

// RoutePrefixAffinity overrides the global affinity.prefix block for one
// route; the bounds are those of PrefixAffinity.
type RoutePrefixAffinity struct {
	// Enabled overrides affinity.prefix.enabled; nil inherits it.
	Enabled *bool `yaml:"enabled" json:"enabled,omitempty"`
	// MinTokens overrides affinity.prefix.min_tokens when non-zero.
	MinTokens int `yaml:"min_tokens" json:"min_tokens,omitempty"`
	// TTL overrides affinity.prefix.ttl when non-zero.
	TTL time.Duration `yaml:"ttl" json:"ttl,omitempty"`
	// MaxShare overrides affinity.prefix.max_share when non-zero.
	MaxShare float64 `yaml:"max_share" json:"max_share,omitempty"`
}

// Maximum of affinity.prefix.min_tokens: 1 MiB of tokens, 4 MiB of prompt.
const maxPrefixMinTokens = 1 << 20

// AffinityMigration says when a session may move to a better tier.
type AffinityMigration struct {
	// Mode is never (default), cross_tier or always.
	Mode string `yaml:"mode" json:"mode"`
	// MaxContentLength > 0 allows migration only for request bodies shorter
	// than this many bytes. Default 0 (no limit), ≥ 0.
	MaxContentLength int64 `yaml:"max_content_length" json:"max_content_length"`
}
