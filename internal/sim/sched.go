package sim

import (
	"context"
	"time"

	"switchyard/internal/clock"
)

// sched runs the gateway's real request path in virtual time. It is the
// clock every component of the run reads (a clock.Waiter), a min-heap of
// timed callbacks, and a cooperative scheduler of tasks: goroutines — one
// per client request — of which exactly one runs at any moment. A task
// runs until it blocks in Wait (the request path blocks only there: the
// slot queue and max_wait through clock.Wait, the simulated upstream
// through the transport) or ends; then the scheduler resumes the next task
// that can go on, lowest block sequence first, and advances the clock to
// the next timer only when none can. Every choice is made in that order,
// so the same scenario and seed give the same run.
type sched struct {
	start time.Time
	now   time.Duration // since start
	seq   uint64
	heap  []timed       // callbacks by (at, seq)
	tasks []*task       // blocked or new tasks, in the order they blocked
	cur   *task         // the running task; nil while the scheduler runs
	yield chan struct{} // the running task gives control back on it
	idle  []*worker     // goroutines of ended tasks, kept to run new ones
	fired int
}

// worker is a goroutine that runs tasks one after another, so that a new
// task does not grow a new goroutine's stack through the request path.
type worker struct{ jobs chan job }

type job struct {
	t *task
	f func()
}

// timed is a callback due at a virtual time. A stopped one stays in the
// heap with dead set.
type timed struct {
	at  time.Duration
	seq uint64
	gen uint64 // the timer's generation it was scheduled for
	t   *simTimer
}

// task is one goroutine under the scheduler.
type task struct {
	seq      uint64
	resume   chan clock.WaitResult
	ctx      context.Context
	ready    <-chan struct{}
	deadline time.Duration // < 0: none
	req      *request      // the client request it serves
	result   clock.WaitResult
	started  bool
}

var (
	_ clock.Waiter = (*sched)(nil)
	_ clock.Timer  = (*simTimer)(nil)
)

func newSched(start time.Time) *sched {
	return &sched{start: start, yield: make(chan struct{}), heap: make([]timed, 0, 1024)}
}

// Now returns the virtual time.
func (s *sched) Now() time.Time { return s.start.Add(s.now) }

// After is not used on the request path, which waits through Wait; it
// returns a channel sent on when the time comes.
func (s *sched) After(d time.Duration) <-chan time.Time {
	ch := make(chan time.Time, 1)
	s.AfterFunc(d, func() { ch <- s.Now() })
	return ch
}

// AfterFunc calls f from the scheduler, not a goroutine of its own, once
// the virtual clock has advanced by d.
func (s *sched) AfterFunc(d time.Duration, f func()) clock.Timer {
	t := &simTimer{s: s, f: f}
	t.Reset(d)
	return t
}

// Wait blocks the running task until ready is closed, timeout passes in
// virtual time or ctx ends (clock.Wait).
func (s *sched) Wait(ctx context.Context, ready <-chan struct{}, timeout time.Duration) clock.WaitResult {
	if r, ok := poll(ctx, ready, -1, 0); ok {
		return r
	}
	t := s.cur
	if t == nil {
		panic("sim: Wait outside a task")
	}
	t.ctx, t.ready, t.deadline = ctx, ready, -1
	if timeout > 0 {
		t.deadline = s.now + timeout
		s.AfterFunc(timeout, func() {}) // wakes the scheduler then
	}
	s.block(t)
	return t.result
}

// sleep blocks the running task for d of virtual time, or until ctx ends.
func (s *sched) sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	if s.Wait(ctx, nil, d) == clock.Done {
		return ctx.Err()
	}
	return nil
}

// poll reports whether a wait on ctx, ready and deadline is over at now.
func poll(ctx context.Context, ready <-chan struct{}, deadline, now time.Duration) (clock.WaitResult, bool) {
	if ready != nil {
		select {
		case <-ready:
			return clock.Ready, true
		default:
		}
	}
	if deadline >= 0 && now >= deadline {
		return clock.Expired, true
	}
	if ctx != nil && ctx.Err() != nil {
		return clock.Done, true
	}
	return 0, false
}

// block parks the running task t and hands control to the scheduler.
func (s *sched) block(t *task) {
	t.seq = s.next()
	s.tasks = append(s.tasks, t)
	s.cur = nil
	s.yield <- struct{}{}
	t.result = <-t.resume
}

// spawn starts f as a new task serving q; it first runs when the scheduler
// next resumes tasks.
func (s *sched) spawn(q *request, f func()) {
	t := &task{resume: make(chan clock.WaitResult), req: q, deadline: -1}
	t.seq = s.next()
	s.tasks = append(s.tasks, t)
	var w *worker
	if n := len(s.idle); n > 0 {
		w, s.idle = s.idle[n-1], s.idle[:n-1]
	} else {
		w = &worker{jobs: make(chan job, 1)}
		go w.loop(s)
	}
	w.jobs <- job{t, f}
}

// loop runs the worker's jobs: each waits to be resumed, runs, and hands
// control back; the worker then waits, idle, for its next job.
func (w *worker) loop(s *sched) {
	for j := range w.jobs {
		<-j.t.resume
		j.f()
		s.cur = nil
		s.idle = append(s.idle, w)
		s.yield <- struct{}{}
	}
}

// current returns the request of the running task; nil outside one.
func (s *sched) current() *request {
	if s.cur == nil {
		return nil
	}
	return s.cur.req
}

// run resumes tasks and fires timers until nothing is left.
func (s *sched) run() {
	for {
		s.drain()
		if len(s.heap) == 0 {
			return
		}
		ev := s.pop()
		if ev.t.dead || ev.gen != ev.t.gen {
			continue
		}
		if ev.at > s.now {
			s.now = ev.at
		}
		ev.t.dead = true
		s.fired++
		ev.t.f()
	}
}

// stop ends the idle workers' goroutines; call it when run has returned.
func (s *sched) stop() {
	for _, w := range s.idle {
		close(w.jobs)
	}
	s.idle = nil
}

// drain resumes every task that can go on, first-blocked first, until none can.
func (s *sched) drain() {
	for {
		i := s.readyTask()
		if i < 0 {
			return
		}
		t := s.tasks[i]
		s.tasks = append(s.tasks[:i], s.tasks[i+1:]...)
		t.started = true
		s.cur = t
		t.resume <- t.result
		<-s.yield
	}
}

// readyTask returns the index of the first task that can go on, or -1. A
// new task (no ctx yet) always can.
func (s *sched) readyTask() int {
	for i, t := range s.tasks {
		if !t.started {
			return i
		}
		if r, ok := poll(t.ctx, t.ready, t.deadline, s.now); ok {
			t.result = r
			return i
		}
	}
	return -1
}

func (s *sched) next() uint64 {
	s.seq++
	return s.seq
}

// simTimer is a callback in the scheduler's heap.
type simTimer struct {
	s    *sched
	f    func()
	gen  uint64 // bumped by Reset: heap entries of older generations are void
	dead bool   // fired or stopped
}

// Stop keeps the callback from firing; it reports whether it was pending.
func (t *simTimer) Stop() bool {
	was := !t.dead
	t.dead = true
	return was
}

// Reset schedules the callback d from now (≤ 0: at once, from the scheduler).
func (t *simTimer) Reset(d time.Duration) bool {
	was := !t.dead
	t.gen++
	t.dead = false
	t.s.push(timed{at: t.s.now + max(d, 0), seq: t.s.next(), gen: t.gen, t: t})
	return was
}

func (s *sched) push(ev timed) {
	s.heap = append(s.heap, ev)
	h := s.heap
	for i := len(h) - 1; i > 0; {
		p := (i - 1) / 2
		if !earlier(&h[i], &h[p]) {
			break
		}
		h[i], h[p] = h[p], h[i]
		i = p
	}
}

func (s *sched) pop() timed {
	h := s.heap
	top := h[0]
	last := len(h) - 1
	h[0] = h[last]
	h[last] = timed{}
	h = h[:last]
	s.heap = h
	for i, n := 0, len(h); ; {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && earlier(&h[r], &h[l]) {
			m = r
		}
		if !earlier(&h[m], &h[i]) {
			break
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
	return top
}

func earlier(a, b *timed) bool {
	if a.at != b.at {
		return a.at < b.at
	}
	return a.seq < b.seq
}
