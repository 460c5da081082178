package limits

import (
	"sync"
	"sync/atomic"

	"switchyard/internal/clock"
)

// Slots counts in-flight requests per upstream, enforces max_concurrency and
// keeps the FIFO queue of requests waiting for a slot (Acquire, queue.go).
// Safe for concurrent use; counts survive configuration reloads, since the
// limit is given on every call.
type Slots struct {
	clk clock.Clock

	mu     sync.RWMutex // guards byName (the map, not the slots)
	byName map[string]*slot

	// tokens recycles the one-shot release tokens (see releaser).
	tokens sync.Pool
}

// slot is one upstream's in-flight count and wait queue.
type slot struct {
	clk      clock.Clock // ages the waiters (Score)
	inFlight atomic.Int64
	depth    atomic.Int64 // waiters queued; written under mu, read without it

	mu         sync.Mutex // guards head, tail, nonBatch, fair and the links and granted flag of every queued waiter
	head, tail *waiter
	nonBatch   int       // waiters of a class other than batch
	fair       fairState // the virtual times of the fair discipline
}

// NewSlots returns an empty slot table whose queue timeouts run on the wall
// clock.
func NewSlots() *Slots { return NewSlotsWithClock(clock.Real{}) }

// NewSlotsWithClock returns an empty slot table whose queue timeouts run on
// clk (a clock.Fake in tests and the simulator).
func NewSlotsWithClock(clk clock.Clock) *Slots {
	return &Slots{clk: clk, byName: map[string]*slot{}}
}

func (s *Slots) slot(name string) *slot {
	s.mu.RLock()
	sl := s.byName[name]
	s.mu.RUnlock()
	if sl != nil {
		return sl
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if sl = s.byName[name]; sl == nil {
		sl = &slot{clk: s.clk}
		s.byName[name] = sl
	}
	return sl
}

// InFlight returns the number of requests upstream name is serving now.
func (s *Slots) InFlight(name string) int64 {
	return s.slot(name).inFlight.Load()
}

// QueueDepth returns the number of requests waiting for a slot on upstream
// name.
func (s *Slots) QueueDepth(name string) int {
	return int(s.slot(name).depth.Load())
}

// TryAcquire takes a slot on upstream name if fewer than limit are in
// flight (limit ≤ 0 means unlimited) and nobody is queued for one (a queued
// request is served first). On success it returns a release function that
// gives the slot back — to the head of the queue when one waits; calling it
// more than once is harmless. It never blocks.
func (s *Slots) TryAcquire(name string, limit int) (release func(), ok bool) {
	sl := s.slot(name)
	if limit > 0 && sl.depth.Load() > 0 {
		return nil, false
	}
	if !sl.tryTake(limit) {
		return nil, false
	}
	return s.releaser(sl), true
}

// tryTake increments inFlight if it is below limit (limit ≤ 0: always).
func (sl *slot) tryTake(limit int) bool {
	if limit <= 0 {
		sl.inFlight.Add(1)
		return true
	}
	for {
		n := sl.inFlight.Load()
		if n >= int64(limit) {
			return false
		}
		if sl.inFlight.CompareAndSwap(n, n+1) {
			return true
		}
	}
}

// releaseToken makes one release function idempotent without allocating
// per call: a release function captures a token and the generation it was
// issued at, and only the call that advances that generation releases.
// Tokens are recycled through Slots.tokens; a stale release function holds
// an old generation and can never advance the token again.
type releaseToken struct{ gen atomic.Uint64 }

// releaser returns the release function for one slot taken on sl. It
// allocates only the function itself.
func (s *Slots) releaser(sl *slot) func() {
	tok, _ := s.tokens.Get().(*releaseToken)
	if tok == nil {
		tok = new(releaseToken)
	}
	gen := tok.gen.Load()
	return func() {
		if tok.gen.CompareAndSwap(gen, gen+1) {
			s.tokens.Put(tok)
			sl.release()
		}
	}
}

// release gives one slot back: straight to the head waiter when one is
// queued and the slot count allows it (inFlight stays the same, so nobody
// can barge in between), else back to the pool.
func (sl *slot) release() {
	if sl.depth.Load() == 0 {
		sl.inFlight.Add(-1)
		// A waiter may have queued after the check above but before the
		// decrement became visible to its own attempt; serve it.
		if sl.depth.Load() == 0 {
			return
		}
		sl.mu.Lock()
		sl.dispatchLocked()
		sl.mu.Unlock()
		return
	}
	sl.mu.Lock()
	defer sl.mu.Unlock()
	if w := sl.nextLocked(); w != nil && sl.inFlight.Load() <= int64(w.limit) {
		sl.grantLocked(w)
		return
	}
	sl.inFlight.Add(-1)
	sl.dispatchLocked()
}
