package sim

import (
	"time"

	"switchyard/internal/clock"
)

// eventKind says what an event does when it fires.
type eventKind uint8

const (
	evArrival   eventKind = iota // a phase's next arrival instant (ref: phase)
	evTurn                       // a session's next turn (req: the new request)
	evReplan                     // a request that waited max_wait plans again
	evAttempt                    // an attempt's answer arrives (req, gen)
	evQueueWait                  // a queued request's wait expires (req, gen)
	evProbe                      // an active health probe is due (ref: upstream)
	evProbeDone                  // an active probe's answer arrives (ref: upstream)
)

// event is one scheduled happening. Events are values in the heap; a
// request's events carry the generation they were scheduled for, so a
// stale one (its wait already ended) is ignored when it fires.
type event struct {
	at   time.Duration // since the start
	seq  uint64        // scheduling order: ties fire first-scheduled first
	kind eventKind
	ref  int // phase or upstream index
	gen  uint32
	req  *request
}

// engine is the discrete-event loop: a binary min-heap of events ordered by
// (at, seq) and the fake clock it advances to each event's time. It runs in
// one goroutine; handlers schedule further events.
type engine struct {
	clk   *clock.Fake
	start time.Time
	now   time.Duration
	seq   uint64
	heap  []event
	fired int
}

func newEngine(start time.Time) *engine {
	return &engine{clk: clock.NewFake(start), start: start, heap: make([]event, 0, 1024)}
}

// schedule adds ev to fire at now + after (a negative after fires now).
func (e *engine) schedule(after time.Duration, ev event) {
	ev.at = e.now + max(after, 0)
	ev.seq = e.seq
	e.seq++
	e.heap = append(e.heap, ev)
	e.up(len(e.heap) - 1)
}

// run fires events in order until none is left, advancing the clock to each
// one's time before calling handle.
func (e *engine) run(handle func(ev event)) {
	for len(e.heap) > 0 {
		ev := e.pop()
		if ev.at > e.now {
			e.clk.Advance(ev.at - e.now)
			e.now = ev.at
		}
		e.fired++
		handle(ev)
	}
}

func less(a, b *event) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}

func (e *engine) pop() event {
	h := e.heap
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h[last] = event{}
	e.heap = h[:last]
	if last > 0 {
		e.down(0)
	}
	return top
}

func (e *engine) up(i int) {
	h := e.heap
	for i > 0 {
		p := (i - 1) / 2
		if !less(&h[i], &h[p]) {
			return
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (e *engine) down(i int) {
	h := e.heap
	n := len(h)
	for {
		l := 2*i + 1
		if l >= n {
			return
		}
		m := l
		if r := l + 1; r < n && less(&h[r], &h[l]) {
			m = r
		}
		if !less(&h[m], &h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
