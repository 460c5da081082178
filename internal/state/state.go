// Package state keeps the live per-upstream statistics that routing reads:
// requests in a sliding window, latency/TTFT/throughput EWMAs and the failure
// streak. The Stats interface is what the proxy and the balancer's snapshot
// builder use; Memory keeps it in process, and a shared implementation lets
// several gateway instances see the same numbers (DESIGN.md §7).
package state

import "time"

// Alpha is the EWMA smoothing factor for latency, TTFT and throughput
// (seed 001: α = 0.3, recent requests weigh more).
const Alpha = 0.3

// DefaultWindow is the sliding window for request counts.
const DefaultWindow = time.Minute

// Result is what one finished attempt tells the statistics.
type Result struct {
	// Failed marks a server or auth error: it extends the failure streak.
	// A success (Failed false and not Neutral) ends it.
	Failed bool
	// Neutral marks an outcome that says nothing about health (a 429, the
	// client's own error or cancel): the streak is left alone.
	Neutral bool
	// Latency is the end-to-end time of a non-streaming success; 0 = none.
	Latency time.Duration
	// TTFT is the time to the first event of a streaming success; 0 = none.
	TTFT time.Duration
	// TPS is a stream's output tokens per second after the first event; 0 = unknown.
	TPS float64
}

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
}

// Stats records and reports live per-upstream statistics. Implementations
// are safe for concurrent use and never block on I/O longer than the shared
// store's round trip.
type Stats interface {
	// Dispatched counts a request sent to upstream at now.
	Dispatched(upstream string, now time.Time)
	// Observe records how an attempt on upstream ended.
	Observe(upstream string, r Result, now time.Time)
	// Snapshot returns upstream's statistics as of now.
	Snapshot(upstream string, now time.Time) Snapshot
	// Forget drops the statistics of an upstream that no longer exists.
	Forget(upstream string)
}
