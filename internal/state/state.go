// Package state is the live per-upstream routing state behind one
// interface, Driver (driver.go): admission and its lease, the read side
// planning, the admin API and the metrics share, the client keys' rpm and
// the prober's breaker. Local keeps it in process (state.driver: memory);
// RedisDriver shares it between gateway instances through Redis and falls
// back to the Local it wraps (docs/reference.md#state-drivers). Stats and
// Memory are the statistics part: requests in a sliding window,
// latency/TTFT/throughput EWMAs and the failure streak.
package state

import (
	"switchyard/internal/outcome"
	"time"
)

// Alpha is the EWMA smoothing factor for latency, TTFT and throughput
// (seed 001: α = 0.3, recent requests weigh more).
const Alpha = 0.3

// DefaultWindow is the sliding window for request counts.
const DefaultWindow = time.Minute

// Snapshot is one upstream's statistics at a moment.
type Snapshot struct {
	// WindowRequests counts requests dispatched within the window.
	WindowRequests int64
	// LatencyEWMA is the non-streaming latency EWMA in milliseconds; 0 = no data.
	LatencyEWMA float64
	// TTFTEWMA is the streaming time-to-first-token EWMA in milliseconds; 0 = no data.
	TTFTEWMA float64
	// TPSEWMA is the streaming throughput EWMA in tokens per second; 0 = no data.
	TPSEWMA float64
	// ConsecutiveFailures is the current failure streak.
	ConsecutiveFailures int
	// LastFailure is when the streak last grew; zero if never.
	LastFailure time.Time
	// FirstByteP95 is the 95th percentile, in milliseconds, of the recent
	// successful attempts' first-byte times (a stream's first event, a
	// whole answer's body), this instance's own; 0 until there are
	// MinFirstByteSamples. A hedge delay of p95 (docs/routing.md#hedged-requests)
	// reads it.
	FirstByteP95 float64
}

// Stats records and reports live per-upstream statistics. Implementations
// are safe for concurrent use and never block on I/O longer than the shared
// store's round trip.
type Stats interface {
	// Dispatched counts a request sent to upstream at now.
	Dispatched(upstream string, now time.Time)
	// Observe records how an attempt on upstream ended: a server or auth
	// error extends the failure streak, a success ends it, anything else
	// leaves it; a success's latency, TTFT and throughput feed the EWMAs.
	Observe(upstream string, o outcome.Outcome, now time.Time)
	// Snapshot returns upstream's statistics as of now.
	Snapshot(upstream string, now time.Time) Snapshot
	// Forget drops the statistics of an upstream that no longer exists.
	Forget(upstream string)
}
