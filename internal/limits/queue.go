package limits

import (
	"context"
	"errors"
	"fmt"
	"time"

	"switchyard/internal/clock"
	"switchyard/internal/config"
)

// waiter is one request queued for a slot.
type waiter struct {
	prev, next *waiter       // queue links; guarded by slot.mu
	limit      int           // the max_concurrency it waits under
	granted    bool          // a slot was handed over; guarded by slot.mu
	ready      chan struct{} // closed when granted

	q         config.Queue // the queue settings it waits under (its discipline)
	class     Class
	flow      *FlowTag  // its flow's tags (fairq.go)
	start     float64   // its start tag as it joined (fairq.go)
	refund    float64   // what leaving unserved gives back to its flow (Refund)
	refunded0 float64   // its flow's refunds when it joined (Start)
	seq       uint64    // its arrival order
	joined    time.Time // when it queued
}

// Acquire takes a slot on upstream name, waiting for one when every slot is
// taken and the upstream's queue is enabled (seed 000 queue_policy,
// docs/reference.md#concurrency-and-queues). limit is max_concurrency (≤ 0:
// unlimited, never waits) and q the upstream's queue settings, given on every
// call so a configuration change applies at once.
//
//   - A free slot with nobody queued is taken at once.
//   - Full, with q.Enabled false: ErrConcurrencyFull at once.
//   - Full, with q.MaxLength requests already waiting (q.MaxLength ≤ 0: no
//     bound): ErrQueueFull at once.
//   - Otherwise the request joins the tail of a strict FIFO queue. A
//     released slot is handed directly to the head waiter, so a newcomer
//     never overtakes it. After q.Timeout (on the Slots' clock; ≤ 0: no
//     timeout, ctx alone bounds the wait) it fails with ErrQueueTimeout.
//     When ctx ends while it waits, even at the moment the queue times
//     out, it fails with ctx's error instead (context.Canceled
//     or context.DeadlineExceeded, wrapping context.Cause(ctx) when that
//     differs), never ErrQueueTimeout: a caller that left is not a queue
//     timeout. Either way it leaves the queue, and a slot handed over at
//     that very moment goes on to the next waiter when the caller has gone
//     away, or is kept on a timeout.
//
// Errors are wrapped with the upstream's name; classify them with errors.Is.
// On success release gives the slot back exactly once; further calls do
// nothing. Acquire blocks only while queued.
func (s *Slots) Acquire(ctx context.Context, name string, limit int, q config.Queue) (release func(), err error) {
	return s.AcquireAs(ctx, name, limit, q, Tenant{})
}

// AcquireAs is Acquire for a request of tenant t: the queue hands a freed
// slot to the waiter with the lowest score under q.Discipline (fairq.go:
// by class, then weighted fair across flows; or fifo), and a batch request
// that would have to wait fails at once with ErrShed when Shed says so.
func (s *Slots) AcquireAs(ctx context.Context, name string, limit int, q config.Queue, t Tenant) (release func(), err error) {
	sl := s.slot(name)
	if limit <= 0 || sl.depth.Load() == 0 {
		if sl.tryTake(limit) {
			return s.releaser(sl), nil
		}
	}
	if !q.Enabled {
		return nil, fmt.Errorf("acquiring a slot on upstream %q: %w", name, ErrConcurrencyFull)
	}
	if ctx.Err() != nil {
		return nil, fmt.Errorf("waiting for a slot on upstream %q: %w", name, contextError(ctx))
	}

	w := &waiter{limit: limit, ready: make(chan struct{}), q: q, class: t.Class, joined: s.clk.Now()}
	sl.mu.Lock()
	if q.MaxLength > 0 && sl.depth.Load() >= int64(q.MaxLength) {
		sl.mu.Unlock()
		return nil, fmt.Errorf("acquiring a slot on upstream %q: %d waiting: %w", name, q.MaxLength, ErrQueueFull)
	}
	if Shed(q, t.Class, sl.nonBatch, int(sl.depth.Load())) {
		sl.mu.Unlock()
		return nil, fmt.Errorf("queueing on upstream %q: %w", name, ErrShed)
	}
	sl.fair.join(w, t)
	sl.pushLocked(w)
	sl.dispatchLocked() // a slot may have freed since the first attempt
	granted := w.granted
	sl.mu.Unlock()
	if granted {
		return s.releaser(sl), nil
	}
	return s.wait(ctx, name, sl, w, q)
}

// wait blocks until w is granted a slot, q.Timeout passes or ctx ends.
func (s *Slots) wait(ctx context.Context, name string, sl *slot, w *waiter, q config.Queue) (func(), error) {
	var err error
	switch clock.Wait(ctx, s.clk, w.ready, q.Timeout) {
	case clock.Expired:
		err = fmt.Errorf("waiting for a slot on upstream %q for %s: %w", name, q.Timeout, ErrQueueTimeout)
	case clock.Done:
		err = fmt.Errorf("waiting for a slot on upstream %q: %w", name, contextError(ctx))
	}
	if errors.Is(err, ErrQueueTimeout) && ctx.Err() != nil {
		// The caller went away just as the queue timed out: it is gone,
		// so its context says why, not the queue.
		err = fmt.Errorf("waiting for a slot on upstream %q: %w", name, contextError(ctx))
	}
	if err == nil {
		return s.releaser(sl), nil
	}
	sl.mu.Lock()
	if !w.granted {
		sl.removeLocked(w)
		sl.fair.left(w)
		sl.dispatchLocked() // the next waiter may fit a limit w did not
		sl.mu.Unlock()
		return nil, err
	}
	sl.mu.Unlock()
	// Granted while timing out or being cancelled.
	release := s.releaser(sl)
	if ctx.Err() != nil {
		release() // nobody left to use it: pass it on
		return nil, err
	}
	return release, nil
}

// contextError returns why ctx ended: ctx.Err(), wrapping also
// context.Cause(ctx) when the canceller gave a cause of its own, so that
// errors.Is finds both (context.Canceled and, say, the proxy's request
// timeout).
func contextError(ctx context.Context) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if cause == nil || cause == err {
		return err
	}
	return fmt.Errorf("%w: %w", err, cause)
}

// pushLocked appends w to the queue.
func (sl *slot) pushLocked(w *waiter) {
	if w.class != ClassBatch {
		sl.nonBatch++
	}
	w.prev, w.next = sl.tail, nil
	if sl.tail != nil {
		sl.tail.next = w
	} else {
		sl.head = w
	}
	sl.tail = w
	sl.depth.Add(1)
}

// removeLocked unlinks w from the queue.
func (sl *slot) removeLocked(w *waiter) {
	if w.prev != nil {
		w.prev.next = w.next
	} else {
		sl.head = w.next
	}
	if w.next != nil {
		w.next.prev = w.prev
	} else {
		sl.tail = w.prev
	}
	w.prev, w.next = nil, nil
	sl.depth.Add(-1)
	if w.class != ClassBatch {
		sl.nonBatch--
	}
}

// grantLocked hands w a slot already counted in inFlight and wakes it.
func (sl *slot) grantLocked(w *waiter) {
	sl.removeLocked(w)
	sl.fair.served(w)
	w.granted = true
	close(w.ready)
}

// dispatchLocked grants free slots to the next waiters (nextLocked) while
// there are any.
func (sl *slot) dispatchLocked() {
	for w := sl.nextLocked(); w != nil; w = sl.nextLocked() {
		if !sl.tryTake(w.limit) {
			return
		}
		sl.grantLocked(w)
	}
}

// nextLocked returns the waiter a freed slot goes to: the lowest score
// (fairq.go Score), the earliest arrival among equal scores; nil when none
// waits.
func (sl *slot) nextLocked() *waiter {
	if sl.head == nil || sl.head.next == nil {
		return sl.head
	}
	now := sl.clk.Now()
	var best *waiter
	var bestScore float64
	for w := sl.head; w != nil; w = w.next {
		sc := Score(w.q, w.class, startOf(w), float64(w.seq), now.Sub(w.joined))
		if best == nil || sc < bestScore {
			best, bestScore = w, sc
		}
	}
	return best
}
