package admin

import (
	"sync"
	"sync/atomic"
	"time"
)

// DefaultTrafficWindow is the recent-traffic window of /state's counts,
// rates and shares.
const DefaultTrafficWindow = 5 * time.Minute

// TrafficEvent is what Traffic.Add counts.
type TrafficEvent uint8

// Traffic events.
const (
	// Attempt: a request was sent to the upstream.
	Attempt TrafficEvent = iota
	// Failure: an attempt ended in a server or auth error.
	Failure
	// RateLimited: an attempt was answered 429.
	RateLimited
	// Hedge: a hedged attempt ended; HedgeWon: one whose answer the client got.
	Hedge
	HedgeWon
)

// Traffic counts, per upstream, the attempts, failures and 429s of a recent
// window in a ring of one-second buckets, and the attempts since it was
// made. The gateway feeds it from the proxy's attempt path; /state reads it.
// Memory is fixed per upstream (one bucket per second of the window). Safe
// for concurrent use; time is passed in, never read.
type Traffic struct {
	window int64 // buckets, one per second

	mu     sync.RWMutex // guards byName (the map; each series has its own lock)
	byName map[string]*series
}

// series is one upstream's ring.
type series struct {
	mu      sync.Mutex // guards buckets
	buckets []bucket
	total   atomic.Int64 // attempts since the series was made
}

// bucket counts one second; sec says which, so a stale bucket is reset on use.
type bucket struct {
	sec                             int64
	attempts, failures, rateLimited int64
	hedges, hedgesWon               int64
}

// TrafficCounts are one upstream's counts over the window.
type TrafficCounts struct {
	// Attempts, Failures and RateLimited count the window's events.
	Attempts, Failures, RateLimited int64
	// Hedges counts the hedged attempts that ended, HedgesWon those the
	// client got the answer of.
	Hedges, HedgesWon int64
	// Total counts the attempts since the Traffic was made (or the upstream forgotten).
	Total int64
}

// NewTraffic returns a Traffic over window, rounded up to whole seconds
// (DefaultTrafficWindow when ≤ 0).
func NewTraffic(window time.Duration) *Traffic {
	if window <= 0 {
		window = DefaultTrafficWindow
	}
	secs := int64((window + time.Second - 1) / time.Second)
	return &Traffic{window: secs, byName: map[string]*series{}}
}

// Window returns the window's length.
func (t *Traffic) Window() time.Duration { return time.Duration(t.window) * time.Second }

// Add counts one event for upstream at now.
func (t *Traffic) Add(upstream string, e TrafficEvent, now time.Time) {
	s := t.series(upstream)
	sec := now.Unix()
	s.mu.Lock()
	b := &s.buckets[t.slot(sec)]
	if b.sec != sec {
		*b = bucket{sec: sec}
	}
	switch e {
	case Attempt:
		b.attempts++
	case Failure:
		b.failures++
	case RateLimited:
		b.rateLimited++
	case Hedge:
		b.hedges++
	case HedgeWon:
		b.hedgesWon++
	}
	s.mu.Unlock()
	if e == Attempt {
		s.total.Add(1)
	}
}

// Counts returns upstream's counts over the window ending at now (the
// current second included).
func (t *Traffic) Counts(upstream string, now time.Time) TrafficCounts {
	t.mu.RLock()
	s := t.byName[upstream]
	t.mu.RUnlock()
	if s == nil {
		return TrafficCounts{}
	}
	c := TrafficCounts{Total: s.total.Load()}
	end := now.Unix()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, b := range s.buckets {
		if b.sec > end-t.window && b.sec <= end {
			c.Attempts += b.attempts
			c.Failures += b.failures
			c.RateLimited += b.rateLimited
			c.Hedges += b.hedges
			c.HedgesWon += b.hedgesWon
		}
	}
	return c
}

// Forget drops upstream's counts (it was deleted).
func (t *Traffic) Forget(upstream string) {
	t.mu.Lock()
	delete(t.byName, upstream)
	t.mu.Unlock()
}

// slot is the ring index of second sec.
func (t *Traffic) slot(sec int64) int64 { return ((sec % t.window) + t.window) % t.window }

func (t *Traffic) series(name string) *series {
	t.mu.RLock()
	s := t.byName[name]
	t.mu.RUnlock()
	if s != nil {
		return s
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if s = t.byName[name]; s == nil {
		s = &series{buckets: make([]bucket, t.window)}
		t.byName[name] = s
	}
	return s
}
