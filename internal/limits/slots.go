// Package limits keeps the per-upstream limits that decide whether an
// upstream may take another request: concurrency slots now, and the RPM/TPM
// windows, 429 cooldowns, queues and spend quotas of DESIGN.md §6.
package limits

import (
	"sync"
	"sync/atomic"
)

// Slots counts in-flight requests per upstream and enforces max_concurrency.
// Safe for concurrent use; counts survive configuration reloads.
type Slots struct {
	mu     sync.RWMutex // guards counts (the map, not the counters)
	counts map[string]*atomic.Int64
}

// NewSlots returns an empty slot table.
func NewSlots() *Slots {
	return &Slots{counts: map[string]*atomic.Int64{}}
}

func (s *Slots) counter(name string) *atomic.Int64 {
	s.mu.RLock()
	c := s.counts[name]
	s.mu.RUnlock()
	if c != nil {
		return c
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if c = s.counts[name]; c == nil {
		c = new(atomic.Int64)
		s.counts[name] = c
	}
	return c
}

// InFlight returns the number of requests upstream name is serving now.
func (s *Slots) InFlight(name string) int64 {
	return s.counter(name).Load()
}

// TryAcquire takes a slot on upstream name if fewer than limit are in
// flight (limit ≤ 0 means unlimited). On success it returns a release
// function that gives the slot back; calling it more than once is harmless.
func (s *Slots) TryAcquire(name string, limit int) (release func(), ok bool) {
	c := s.counter(name)
	for {
		n := c.Load()
		if limit > 0 && n >= int64(limit) {
			return nil, false
		}
		if c.CompareAndSwap(n, n+1) {
			var once atomic.Bool
			return func() {
				if once.CompareAndSwap(false, true) {
					c.Add(-1)
				}
			}, true
		}
	}
}
