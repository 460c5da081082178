package admin

import (
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultTrafficWindow is the recent-traffic window of /state's counts,
// rates and shares.
const DefaultTrafficWindow = 5 * time.Minute

// MaxTrafficModels bounds the client models Traffic counts per upstream: a
// glob such as `claude-*` lets clients name any number of models, and each
// counted one costs a ring of the window's seconds. A model beyond the
// bound takes the place of one without attempts in the window, or is not
// counted while every place is busy.
const MaxTrafficModels = 64

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
// made; and, per upstream and client model, the attempts alone (AddModel),
// so that shares can be told per model. The gateway feeds it from the
// proxy's attempt path and its routing decisions; /state reads it. Memory is
// fixed per upstream and model (one bucket per second of the window, at
// most MaxTrafficModels models per upstream). Safe for concurrent use; time
// is passed in, never read.
type Traffic struct {
	window int64 // buckets, one per second

	mu     sync.RWMutex // guards byName (the map; each entry has its own locks)
	byName map[string]*upstreamTraffic
}

// upstreamTraffic is one upstream's counts: all its attempts and their
// outcomes, and its attempts per client model.
type upstreamTraffic struct {
	all *series[counts]

	mu     sync.RWMutex // guards models (the map; each series has its own lock)
	models map[string]*series[int64]
}

// counts are one second's events of an upstream.
type counts struct {
	attempts, failures, rateLimited int64
	hedges, hedgesWon               int64
}

// series is a ring of one-second buckets of C, and a count of attempts
// since it was made.
type series[C any] struct {
	mu      sync.Mutex // guards buckets and born
	buckets []stamped[C]
	born    int64 // the earliest second counted, or the one it was made in
	total   atomic.Int64
}

// stamped is one bucket; sec says which second it counts, so that a stale
// bucket is reset on use.
type stamped[C any] struct {
	sec int64
	c   C
}

// newSeries returns a series over window seconds, born at second sec.
func newSeries[C any](window, sec int64) *series[C] {
	return &series[C]{buckets: make([]stamped[C], window), born: sec}
}

// atLocked returns the bucket of second sec, reset if it held an older one.
func (s *series[C]) atLocked(sec int64) *C {
	s.born = min(s.born, sec)
	n := int64(len(s.buckets))
	b := &s.buckets[((sec%n)+n)%n]
	if b.sec != sec {
		*b = stamped[C]{sec: sec}
	}
	return &b.c
}

// eachLocked calls f with every bucket of the seconds in (from, to].
func (s *series[C]) eachLocked(from, to int64, f func(sec int64, c *C)) {
	for i := range s.buckets {
		if b := &s.buckets[i]; b.sec > from && b.sec <= to {
			f(b.sec, &b.c)
		}
	}
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
	return &Traffic{window: secs, byName: map[string]*upstreamTraffic{}}
}

// Window returns the window's length.
func (t *Traffic) Window() time.Duration { return time.Duration(t.window) * time.Second }

// Add counts one event for upstream at now.
func (t *Traffic) Add(upstream string, e TrafficEvent, now time.Time) {
	s := t.upstream(upstream, now.Unix()).all
	s.mu.Lock()
	b := s.atLocked(now.Unix())
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

// AddModel counts one attempt of a request for client model on upstream at
// now. The attempt itself is counted by Add; AddModel only says which model
// it was for.
func (t *Traffic) AddModel(upstream, model string, now time.Time) {
	s := t.upstream(upstream, now.Unix()).model(model, now.Unix(), t.window)
	if s == nil {
		return
	}
	s.mu.Lock()
	*s.atLocked(now.Unix())++
	s.mu.Unlock()
	s.total.Add(1)
}

// Counts returns upstream's counts over the window ending at now (the
// current second included).
func (t *Traffic) Counts(upstream string, now time.Time) TrafficCounts {
	u := t.lookup(upstream)
	if u == nil {
		return TrafficCounts{}
	}
	s := u.all
	c := TrafficCounts{Total: s.total.Load()}
	end := now.Unix()
	s.mu.Lock()
	defer s.mu.Unlock()
	s.eachLocked(end-t.window, end, func(_ int64, b *counts) {
		c.Attempts += b.attempts
		c.Failures += b.failures
		c.RateLimited += b.rateLimited
		c.Hedges += b.hedges
		c.HedgesWon += b.hedgesWon
	})
	return c
}

// Models returns upstream's attempts per client model over the window
// ending at now, ordered by model; a model counted before but not in the
// window is listed with 0 attempts. With step > 0 each also has its History
// in steps of step (whole seconds, at least one): see ModelTraffic.History.
func (t *Traffic) Models(upstream string, now time.Time, step time.Duration) []ModelTraffic {
	u := t.lookup(upstream)
	if u == nil {
		return nil
	}
	end := now.Unix()
	u.mu.RLock()
	out := make([]ModelTraffic, 0, len(u.models))
	for model, s := range u.models {
		m := ModelTraffic{Model: model, RequestsTotal: s.total.Load()}
		s.mu.Lock()
		s.eachLocked(end-t.window, end, func(_ int64, n *int64) { m.Requests5m += *n })
		if step > 0 {
			m.History = historyLocked(s, end-1, t.window, max(int64(step/time.Second), 1))
		}
		s.mu.Unlock()
		out = append(out, m)
	}
	u.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].Model < out[j].Model })
	return out
}

// HistoryEnd is the end of the last step of a History read at now: the
// start of now's second, which is not over yet.
func HistoryEnd(now time.Time) time.Time { return time.Unix(now.Unix(), 0).In(now.Location()) }

// historyLocked sums the attempts of s in the window's seconds up to end
// (the second before the current one), in steps of step seconds, oldest
// first, the last step ending with second end: as many whole steps as the
// window holds before the current second. The steps that end before the series was born are left out, so a
// young series has a shorter history. It needs s.mu held.
func historyLocked(s *series[int64], end, window, step int64) []int64 {
	n := (window - 1) / step // the ring holds the current second and window-1 before it
	from := end - n*step     // the steps cover the seconds (from, end]
	if s.born > from {
		n = max(n-(s.born-from-1)/step, 0) // 0: born after end (a reader's clock behind a writer's)
		from = end - n*step
	}
	out := make([]int64, n)
	s.eachLocked(from, end, func(sec int64, c *int64) { out[(sec-from-1)/step] += *c })
	return out
}

// Forget drops upstream's counts (it was deleted).
func (t *Traffic) Forget(upstream string) {
	t.mu.Lock()
	delete(t.byName, upstream)
	t.mu.Unlock()
}

func (t *Traffic) lookup(name string) *upstreamTraffic {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.byName[name]
}

// upstream returns name's counts, made at second sec if there were none.
func (t *Traffic) upstream(name string, sec int64) *upstreamTraffic {
	if u := t.lookup(name); u != nil {
		return u
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	u := t.byName[name]
	if u == nil {
		u = &upstreamTraffic{all: newSeries[counts](t.window, sec), models: map[string]*series[int64]{}}
		t.byName[name] = u
	}
	return u
}

// model returns the series of model, making it if there is room (see
// MaxTrafficModels); nil if there is none.
func (u *upstreamTraffic) model(model string, sec, window int64) *series[int64] {
	u.mu.RLock()
	s := u.models[model]
	u.mu.RUnlock()
	if s != nil {
		return s
	}
	u.mu.Lock()
	defer u.mu.Unlock()
	if s = u.models[model]; s != nil {
		return s
	}
	if len(u.models) >= MaxTrafficModels && !u.evictIdleLocked(sec, window) {
		return nil
	}
	s = newSeries[int64](window, sec)
	u.models[model] = s
	return s
}

// evictIdleLocked drops one model without attempts in the window ending at
// sec, and reports whether it found one. It needs u.mu held.
func (u *upstreamTraffic) evictIdleLocked(sec, window int64) bool {
	for model, s := range u.models {
		var n int64
		s.mu.Lock()
		s.eachLocked(sec-window, sec, func(_ int64, c *int64) { n += *c })
		s.mu.Unlock()
		if n == 0 {
			delete(u.models, model)
			return true
		}
	}
	return false
}
