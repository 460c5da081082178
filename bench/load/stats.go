package main

import (
	"math"
	"slices"
	"time"
)

// percentile returns the q-quantile (0 < q ≤ 1) of sorted by the nearest-rank
// method: the smallest value with at least q of the samples at or below it.
// It returns 0 for no samples.
func percentile(sorted []time.Duration, q float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(q * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// summary is what a run measured, before it becomes a record.Record.
type summary struct {
	lat      []time.Duration // successful requests, to the end of the body
	ttft     []time.Duration // streams only: to the first data line
	requests int
	errors   int
	firstErr string
}

// add counts one request: err == "" is a success whose latency (and, for a
// stream, TTFT when ttft > 0) is kept.
func (s *summary) add(total, ttft time.Duration, err string) {
	s.requests++
	if err != "" {
		s.errors++
		if s.firstErr == "" {
			s.firstErr = err
		}
		return
	}
	s.lat = append(s.lat, total)
	if ttft > 0 {
		s.ttft = append(s.ttft, ttft)
	}
}

// merge adds o's requests to s.
func (s *summary) merge(o *summary) {
	s.lat = append(s.lat, o.lat...)
	s.ttft = append(s.ttft, o.ttft...)
	s.requests += o.requests
	s.errors += o.errors
	if s.firstErr == "" {
		s.firstErr = o.firstErr
	}
}

// quantiles sorts the samples and returns p50 and p99 of the latencies and
// of the TTFTs, in milliseconds.
func (s *summary) quantiles() (p50, p99, ttft50, ttft99 float64) {
	slices.Sort(s.lat)
	slices.Sort(s.ttft)
	return ms(percentile(s.lat, 0.50)), ms(percentile(s.lat, 0.99)),
		ms(percentile(s.ttft, 0.50)), ms(percentile(s.ttft, 0.99))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
