package state

import (
	"cmp"
	"slices"
	"switchyard/internal/outcome"
	"sync"
	"time"
)

// Memory is the in-process Stats implementation (state.driver: memory).
type Memory struct {
	window time.Duration
	bucket time.Duration

	mu   sync.RWMutex // guards byUp (the map; each entry has its own lock)
	byUp map[string]*upstreamStats
}

var _ Stats = (*Memory)(nil)

// windowBuckets is how many buckets the sliding window is divided into.
const windowBuckets = 60

// upstreamStats is one upstream's numbers.
type upstreamStats struct {
	mu       sync.Mutex // guards every field below
	buckets  [windowBuckets]int64
	epochs   [windowBuckets]int64 // which bucket period each slot holds
	latency  float64
	ttft     float64
	tps      float64
	failures int
	lastFail time.Time
	fb       firstBytes
}

// First-byte percentile sampling.
const (
	// firstByteSamples is how many recent first-byte times the p95 is over.
	firstByteSamples = 128
	// MinFirstByteSamples is how many it needs before it says anything.
	MinFirstByteSamples = 20
	// firstByteRefresh is how many new samples make the p95 be recomputed.
	firstByteRefresh = 16
)

// firstBytes holds an upstream's recent first-byte times (ms) in a ring and
// their p95, recomputed once firstByteRefresh new ones have come in, so
// that reading it costs nothing on most requests.
type firstBytes struct {
	ring  [firstByteSamples]float64
	n     int // samples held, ≤ firstByteSamples
	next  int // where the next one goes
	fresh int // samples since p95 was computed
	p95   float64
}

func (f *firstBytes) add(ms float64) {
	f.ring[f.next] = ms
	f.next = (f.next + 1) % firstByteSamples
	f.n = min(f.n+1, firstByteSamples)
	f.fresh++
}

// percentile95 returns the p95 of the samples, 0 with too few.
func (f *firstBytes) percentile95() float64 {
	if f.n < MinFirstByteSamples {
		return 0
	}
	if f.p95 == 0 || f.fresh >= firstByteRefresh {
		var sorted [firstByteSamples]float64
		s := sorted[:f.n]
		copy(s, f.ring[:f.n])
		slices.Sort(s)
		f.p95, f.fresh = s[(len(s)*95+99)/100-1], 0
	}
	return f.p95
}

// NewMemory returns in-process statistics with a sliding window of the
// given length (DefaultWindow when ≤ 0).
func NewMemory(window time.Duration) *Memory {
	if window <= 0 {
		window = DefaultWindow
	}
	return &Memory{window: window, bucket: window / windowBuckets, byUp: map[string]*upstreamStats{}}
}

func (m *Memory) get(name string) *upstreamStats {
	m.mu.RLock()
	s := m.byUp[name]
	m.mu.RUnlock()
	if s != nil {
		return s
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if s = m.byUp[name]; s == nil {
		s = &upstreamStats{}
		m.byUp[name] = s
	}
	return s
}

// Dispatched counts a request in upstream's sliding window.
func (m *Memory) Dispatched(upstream string, now time.Time) {
	s := m.get(upstream)
	epoch := now.UnixNano() / int64(m.bucket)
	i := epoch % windowBuckets
	s.mu.Lock()
	if s.epochs[i] != epoch {
		s.epochs[i], s.buckets[i] = epoch, 0
	}
	s.buckets[i]++
	s.mu.Unlock()
}

// Observe folds an attempt's result into upstream's EWMAs and failure streak.
func (m *Memory) Observe(upstream string, r outcome.Outcome, now time.Time) {
	s := m.get(upstream)
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case r.Class.Failure():
		s.failures++
		s.lastFail = now
	case !r.Class.Neutral():
		s.failures = 0
	}
	if r.Latency > 0 {
		s.latency = ewma(s.latency, ms(r.Latency))
	}
	if r.TTFT > 0 {
		s.ttft = ewma(s.ttft, ms(r.TTFT))
	}
	if fb := cmp.Or(r.TTFT, r.Latency); fb > 0 && r.Class == outcome.Success {
		s.fb.add(ms(fb))
	}
	if r.TPS > 0 {
		s.tps = ewma(s.tps, r.TPS)
	}
}

// Snapshot returns upstream's statistics as of now.
func (m *Memory) Snapshot(upstream string, now time.Time) Snapshot {
	m.mu.RLock()
	s := m.byUp[upstream]
	m.mu.RUnlock()
	if s == nil {
		return Snapshot{}
	}
	oldest := now.UnixNano()/int64(m.bucket) - windowBuckets + 1
	s.mu.Lock()
	defer s.mu.Unlock()
	var n int64
	for i, e := range s.epochs {
		if e >= oldest {
			n += s.buckets[i]
		}
	}
	return Snapshot{
		WindowRequests: n, LatencyEWMA: s.latency, TTFTEWMA: s.ttft, TPSEWMA: s.tps,
		ConsecutiveFailures: s.failures, LastFailure: s.lastFail, FirstByteP95: s.fb.percentile95(),
	}
}

// Forget drops upstream's statistics.
func (m *Memory) Forget(upstream string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.byUp, upstream)
}

// ewma folds x into avg; the first sample (avg 0) is taken as is.
func ewma(avg, x float64) float64 {
	if avg == 0 {
		return x
	}
	return Alpha*x + (1-Alpha)*avg
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
