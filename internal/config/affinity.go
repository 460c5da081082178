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
}

// AffinityMigration says when a session may move to a better tier.
type AffinityMigration struct {
	// Mode is never (default), cross_tier or always.
	Mode string `yaml:"mode" json:"mode"`
	// MaxContentLength > 0 allows migration only for request bodies shorter
	// than this many bytes. Default 0 (no limit), ≥ 0.
	MaxContentLength int64 `yaml:"max_content_length" json:"max_content_length"`
}
