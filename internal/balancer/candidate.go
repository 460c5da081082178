package balancer

// Candidate is the routing view of one upstream at planning time: its static
// settings plus a snapshot of its live stats. The caller builds one per
// upstream that serves the requested model and that the key may use; Plan only
// reads it. Names must be unique within one Plan call.
type Candidate struct {
	// Name is the upstream's unique, stable id.
	Name string
	// Priority is the tier, 0–100; lower tiers are tried first.
	Priority int
	// Weight is the relative share within the tier, 1–100 (0 or less counts
	// as 0: such a candidate is picked only after every positive one).
	Weight int
	// Active is false for an upstream switched off by the operator; it is
	// filtered as FilterInactive.
	Active bool
	// LatencyMs is the last active-probe round trip in milliseconds (seed
	// 000); 0 means unknown and scores 1.
	LatencyMs float64
	// InFlight is the number of requests currently in flight on the upstream.
	InFlight int64
	// MaxConcurrency is the concurrency slot count; 0 means unlimited.
	MaxConcurrency int
	// QueueEnabled makes a full upstream (InFlight ≥ MaxConcurrency) waitable
	// instead of dropped.
	QueueEnabled bool
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
	// upstream is cooling down after a 429; it is filtered as
	// FilterRateLimited.
	RateLimited bool
	// RateLimitReason says which limit or until when, for the Decision.
	RateLimitReason string
	// SlowStart is the effective-weight factor after a breaker closes, in
	// (0,1]; 0 (and anything outside (0,1]) means 1.
	SlowStart float64
}

// Request is what Plan needs to know about the request being routed.
type Request struct {
	// RequestID, Model, Key (the API key's name) and Session are copied into
	// the Decision.
	RequestID, Model, Key, Session string
	// Stream is true for a streaming request; copied into the Decision.
	Stream bool
	// Exclude lists upstream names already tried by this request; they are
	// filtered as FilterExcluded.
	Exclude []string
	// K is the plan length, 1 + retries; 0 or less means 1.
	K int
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
