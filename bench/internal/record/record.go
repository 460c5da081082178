// Package record is the result of one load-benchmark run: the JSON line that
// bench/load writes and bench/report reads.
package record

import "fmt"

// Modes of a run.
const (
	// ModeSerial sends one request at a time (a closed loop of 1).
	ModeSerial = "serial"
	// ModeRate sends requests at a fixed rate (an open loop).
	ModeRate = "rate"
	// ModeMax is a closed loop of Concurrency workers: the maximum rate.
	ModeMax = "max"
	// ModeStream is a closed loop of Concurrency streaming chat requests,
	// timing the first SSE data line (TTFT) and the whole stream.
	ModeStream = "stream"
	// ModeStreams holds Concurrency long streams open at once (issue 26):
	// events per second, CPU per event and memory per stream.
	ModeStreams = "streams"
)

// Record is one run against one target. Latencies are in milliseconds, CPU
// in microseconds per request, memory in MB (10⁶ bytes). Fields that a run does not
// measure are 0.
type Record struct {
	// Target names the system under test: direct, barehop or switchyard.
	Target string `json:"target"`
	// Mode is one of the Mode constants.
	Mode string `json:"mode"`
	// Rate is the offered rate in requests per second (ModeRate only).
	Rate int `json:"rate,omitempty"`
	// Concurrency is the number of workers of a closed loop.
	Concurrency int `json:"concurrency,omitempty"`
	// Seconds is how long the measured part of the run lasted (the warm-up
	// is not counted anywhere in a Record).
	Seconds float64 `json:"seconds"`
	// Requests counts the measured requests, successful or not.
	Requests int `json:"requests"`
	// Errors counts transport errors and non-2xx answers among Requests.
	Errors int `json:"errors"`
	// FirstError is the first error seen, to tell why Errors is not 0.
	FirstError string `json:"first_error,omitempty"`
	// RPS is Requests / Seconds.
	RPS float64 `json:"rps"`
	// P50Ms and P99Ms are latency percentiles of the successful requests:
	// to the end of the body (for a stream, to its end).
	P50Ms float64 `json:"p50_ms"`
	P99Ms float64 `json:"p99_ms"`
	// TTFTP50Ms and TTFTP99Ms are the percentiles of the time to the first
	// SSE data line (ModeStream only).
	TTFTP50Ms float64 `json:"ttft_p50_ms,omitempty"`
	TTFTP99Ms float64 `json:"ttft_p99_ms,omitempty"`
	// CPUUsPerReq is the user+system CPU time the target process (the mock
	// for direct, else the hop) used during the measured part, per request.
	CPUUsPerReq float64 `json:"cpu_us_per_req"`
	// PeakRSSMB is the target process's VmHWM at the end of the run. The
	// load generator resets it (clear_refs) before the warm-up when it may,
	// so it is this run's peak; PeakRSSReset says whether that worked.
	PeakRSSMB    float64 `json:"peak_rss_mb"`
	PeakRSSReset bool    `json:"peak_rss_reset"`
	// LoadCPUUsPerReq is the load generator's own CPU per request.
	LoadCPUUsPerReq float64 `json:"load_cpu_us_per_req"`

	// The streams mode's figures (ModeStreams only). Events counts the SSE
	// data lines received during the measured window, EventsPerSec is
	// Events / Seconds; CPUCores is the target's CPU time in the window ÷
	// Seconds and CPUUsPerEvent that time per event. BaseRSSMB is the
	// target's RSS before the run, RSSPerStreamKB (PeakRSSMB − BaseRSSMB)
	// ÷ Concurrency in kB.
	Events         int64   `json:"events,omitempty"`
	EventsPerSec   float64 `json:"events_per_sec,omitempty"`
	CPUCores       float64 `json:"cpu_cores,omitempty"`
	CPUUsPerEvent  float64 `json:"cpu_us_per_event,omitempty"`
	BaseRSSMB      float64 `json:"base_rss_mb,omitempty"`
	RSSPerStreamKB float64 `json:"rss_per_stream_kb,omitempty"`
}

// Case names the load shape of a run, the same for every target:
// "serial", "1000 req/s", "max @64", "stream @32", "3000 streams".
func (r Record) Case() string {
	switch r.Mode {
	case ModeRate:
		return fmt.Sprintf("%d req/s", r.Rate)
	case ModeMax, ModeStream:
		return fmt.Sprintf("%s @%d", r.Mode, r.Concurrency)
	case ModeStreams:
		return fmt.Sprintf("%d streams", r.Concurrency)
	default:
		return r.Mode
	}
}
