package balancer

import "time"

// Candidate is the routing view of one upstream at planning time: its static
// settings plus a snapshot of its live stats. The caller builds one per
// upstream that serves the requested model and that the key may use; Plan only
// reads it. Names must be unique within one Plan call.
//
// Every live stat uses its zero value for "no data": a strategy that needs a
// stat the caller does not track scores the upstream neutrally.
type Candidate struct {
	// Name is the upstream's unique, stable id.
	Name string
	// Priority is the tier, 0–100; lower tiers are tried first.
	Priority int
	// Weight is the relative share within the tier, 1–100. Strategies that
	// divide by it treat 0 or less as documented in their file (most as 0:
	// picked only after every positive one; adaptive as 1, the config
	// default).
	Weight int
	// Active is false for an upstream switched off by the operator; it is
	// filtered as FilterInactive.
	Active bool
	// LatencyMs is the last active-probe round trip in milliseconds (seed
	// 000); 0 means unknown and scores 1.
	LatencyMs float64
	// LatencyEWMA is the moving average (α = 0.3) of non-streaming
	// end-to-end latency in milliseconds; 0 means no data.
	LatencyEWMA float64
	// TTFTEWMA is the moving average (α = 0.3) of the time to first token of
	// streaming requests in milliseconds; 0 means no data.
	TTFTEWMA float64
	// TPSEWMA is the moving average (α = 0.3) of the output throughput of
	// streaming requests in tokens per second; 0 means no data.
	TPSEWMA float64
	// WindowRequests counts the requests dispatched to the upstream within
	// the sliding window (adaptive's weighted round robin); 0 means none or
	// no data.
	WindowRequests int64
	// ConsecutiveFailures counts the failures since the last success.
	ConsecutiveFailures int
	// LastFailure is when the upstream last failed; the zero time means
	// never (or no data).
	LastFailure time.Time
	// RPMUsed and TPMUsed are the requests and tokens used in the current
	// minute; RPMLimit and TPMLimit are the upstream's limits, 0 meaning
	// unknown or unlimited.
	RPMUsed, RPMLimit, TPMUsed, TPMLimit int64
	// InFlight is the number of requests currently in flight on the upstream.
	InFlight int64
	// MaxConcurrency is the concurrency slot count; 0 means unlimited.
	MaxConcurrency int
	// QueueEnabled makes a full upstream (InFlight ≥ MaxConcurrency) waitable
	// instead of dropped.
	QueueEnabled bool
	// QueueDepth is the number of requests waiting for a slot; QueueMax
	// bounds it, 0 meaning unbounded (or no queue).
	QueueDepth, QueueMax int
	// BreakerOpen means the circuit breaker rejects traffic now (open, or
	// half-open with its probe slot taken).
	BreakerOpen bool
	// BreakerReason says why the breaker is open, for the Decision, e.g.
	// "5 consecutive failures".
	BreakerReason string
	// SpendExceeded means the upstream's spend quota for the period is used
	// up; it is filtered as FilterSpendExceeded.
	SpendExceeded bool
	// SpendReason says which quota, for the Decision.
	SpendReason string
	// RateLimited means an RPM/TPM reservation would exceed a limit or the
	// upstream is cooling down after a 429. It is filtered as
	// FilterRateLimited, except by a strategy that scores it as a fallback
	// itself (adaptive), which keeps it and ranks it last in its tier.
	RateLimited bool
	// RateLimitReason says which limit or until when, for the Decision.
	RateLimitReason string
	// Incompatible names what the request uses that this upstream's wire
	// protocol cannot express ("n", "previous_response_id", …;
	// docs/protocols.md); "" when it can. It is filtered as FilterIncompatible.
	Incompatible string
	// PinnedElsewhere says why the request may go to another upstream
	// only: it refers to state that upstream holds (a Responses
	// response or conversation, docs/routing.md#stateful-calls-pinned-not-sticky),
	// e.g. "previous response resp_1 is held by up-a"; "" when it may go here. It
	// is filtered as FilterPinnedElsewhere, before any other filter.
	PinnedElsewhere string
	// Translate is the wire protocol the request is translated into for
	// this upstream ("openai-chat", "anthropic", "gemini"), "" when it
	// passes through in the client's own protocol; it is recorded in the
	// Decision.
	Translate string
	// Provider is the upstream's provider (openai, bedrock, …), which
	// request preferences may name instead of the upstream.
	Provider string
	// Priced says InputPerMTok and OutputPerMTok are known; an unpriced
	// candidate sorts after every priced one in lowest-cost and is dropped
	// by a preference's max_price.
	Priced bool
	// InputPerMTok and OutputPerMTok are the request model's prices on this
	// upstream in USD per million tokens, when Priced.
	InputPerMTok, OutputPerMTok float64
	// SlowStart is the effective-weight factor after a breaker closes, in
	// (0,1]; 0 (and anything outside (0,1]) means 1.
	SlowStart float64
}

// Request is what Plan needs to know about the request being routed.
type Request struct {
	// RequestID, Model, Key (the API key's name) and Session are copied into
	// the Decision.
	RequestID, Model, Key, Session string
	// Stream is true for a streaming request; copied into the Decision and
	// used by adaptive's latency component (TTFT and throughput instead of
	// end-to-end latency).
	Stream bool
	// Exclude lists upstream names already tried by this request; they are
	// filtered as FilterExcluded.
	Exclude []string
	// K is the plan length, 1 + retries; 0 or less means 1.
	K int
	// SessionSource says where Session was found, for the Decision.
	SessionSource string
	// Pinned is the upstream the session is bound to
	// (docs/routing.md#2-candidates-and-session-affinity); it goes first when it
	// survives the filters and Migrate does not move it.
	Pinned string
	// StandIn is the binding's stand-in
	// (docs/routing.md#2-candidates-and-session-affinity): second after an
	// available Pinned, first while Pinned is unavailable.
	StandIn string
	// Migrate, when set, may move a session off an available Pinned
	// upstream (the bound upstream's affinity_migration policy); nil never
	// migrates. BodyLen is the request body's size, for its
	// max_content_length rule.
	Migrate MigrateFunc
	BodyLen int64
	// InputTokens is the request's estimated prompt size in tokens;
	// MaxTokens is its max_tokens (or equivalent), 0 when not given; and
	// OutputEWMA is the route's moving average of output tokens, 0 when
	// unknown. lowest-cost estimates each candidate's cost from them
	// (ExpectedOutputTokens).
	InputTokens, MaxTokens int64
	OutputEWMA             float64
	// Prefs are the request's routing preferences
	// (docs/routing.md#per-request-preferences); nil means none.
	Prefs *Preferences
	// MaxShare, when > 0, makes an available Pinned yield to normal
	// selection while it carries more than this share of the candidates'
	// in-flight requests and its tier has another available candidate
	// (affinity.prefix.max_share, set for prefix bindings only:
	// docs/routing.md#prefix-cache-affinity). 0 never yields.
	MaxShare float64
	// DryRun plans without advancing the state of stateful strategies
	// (smooth-wrr, round-robin), for /admin/api/explain: the next real Plan
	// picks what it would have picked anyway.
	DryRun bool
}

// Plan is the attempt order for one request.
type Plan struct {
	// Order holds at most K upstream names in attempt order: tier by tier in
	// ascending priority, each tier ordered by the strategy. Empty when no
	// candidate survived the filters.
	Order []string
	// Waitable holds the full upstreams whose queue is enabled, tier by tier,
	// each tier ordered by the strategy; the caller may wait for a slot on
	// them once Order is exhausted (seed 000 waitableCandidates).
	Waitable []string
	// Decision records how the plan was made.
	Decision Decision
}
