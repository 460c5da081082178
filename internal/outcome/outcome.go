// Package outcome defines how one upstream attempt ended: the one record
// that travels from the attempt loop to the breaker, the live statistics,
// the state drivers, metrics, request logs and the simulator
// (docs/architecture.md, docs/reference.md#outcome-classes). Provider adapters
// produce it; nothing else re-derives it.
package outcome

import "time"

// Class is the kind of an attempt's ending (docs/reference.md#outcome-classes).
type Class uint8

// Outcome classes. Server and auth errors feed the breaker; a 429 feeds the
// cooldown; client errors and cancellations touch nothing.
const (
	// Success is a 2xx answer.
	Success Class = iota
	// ClientError is a 4xx that is the caller's fault (400, 404, 413, 422):
	// returned as is, no failover, no penalty.
	ClientError
	// AuthError is a 401/403 (or 402) from the upstream, or a failed token
	// exchange or signature: the account is unusable, so the breaker opens
	// at once.
	AuthError
	// RateLimited is a 429 (or a provider's throttling signal).
	RateLimited
	// ServerError is a 5xx, a connection failure, a timeout or a malformed answer.
	ServerError
	// Canceled means the client went away, or the attempt was never sent;
	// it says nothing about the upstream.
	Canceled
)

var classNames = [...]string{"success", "client_error", "auth_error", "rate_limited", "server_error", "canceled"}

// String returns the snake_case name used in logs and metrics.
func (c Class) String() string {
	if int(c) < len(classNames) {
		return classNames[c]
	}
	return "unknown"
}

// Failover reports whether the next candidate should be tried after c.
func (c Class) Failover() bool {
	return c == AuthError || c == RateLimited || c == ServerError
}

// Failure reports whether c counts against the upstream's health: a server
// or auth error extends the failure streak and feeds the breaker.
func (c Class) Failure() bool { return c == ServerError || c == AuthError }

// Neutral reports whether c says nothing about the upstream's health (a
// 429, the client's own error, a cancel): the failure streak is left alone.
func (c Class) Neutral() bool { return c != Success && !c.Failure() }

// Outcome is how one attempt on one upstream ended.
type Outcome struct {
	// Class is the kind of ending.
	Class Class
	// Detail says what went wrong, safe to show the client (no secrets);
	// "" on success.
	Detail string
	// Kind is the metrics error class of a failure (metrics.Error*); "" for none.
	Kind string
	// Status is the upstream's HTTP status; 0 when none arrived.
	Status int
	// Hedge: the attempt was raced alongside a slower one
	// (docs/routing.md#hedged-requests).
	Hedge bool
	// Latency is the end-to-end time of a non-streaming success; 0 = none.
	Latency time.Duration
	// TTFT is the time to a stream's first event; 0 = none.
	TTFT time.Duration
	// Headers is the time to a non-streaming answer's response headers,
	// its time to first token for metrics only.
	Headers time.Duration
	// TPS is a stream's output tokens per second after its first event; 0 = unknown.
	TPS float64
	// Cooldown is how long a 429 asks the upstream to rest; LimitType is the
	// quota it ran out of ("requests", "tokens" or "").
	Cooldown  time.Duration
	LimitType string
	// InputTokens and OutputTokens are the usage counted for the attempt:
	// what the upstream reported, or what arrived before a cut. InputTokens
	// counts every prompt token, the prompt cache's included.
	InputTokens, OutputTokens int64
	// CacheReadTokens and CacheWriteTokens are the parts of InputTokens
	// the upstream reported read from and written to its prompt cache
	// (docs/protocols.md#usage-and-cache-tokens).
	CacheReadTokens, CacheWriteTokens int64
}

// Of returns an outcome of class c with detail d.
func Of(c Class, d string) Outcome { return Outcome{Class: c, Detail: d} }

// Tokens returns input plus output tokens.
func (o Outcome) Tokens() int64 { return o.InputTokens + o.OutputTokens }
