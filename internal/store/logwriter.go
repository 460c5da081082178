package store

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"switchyard/internal/clock"
)

// Defaults of LogWriterOptions.
const (
	// DefaultLogBufferSize is the default LogWriterOptions.BufferSize.
	DefaultLogBufferSize = 10000
	// DefaultLogBatchSize is the default LogWriterOptions.BatchSize.
	DefaultLogBatchSize = 500
	// DefaultLogFlushInterval is the default LogWriterOptions.FlushInterval.
	DefaultLogFlushInterval = time.Second
)

// LogWriterOptions configures a LogWriter. Zero values select the defaults.
type LogWriterOptions struct {
	// BufferSize bounds the logs waiting to be written; beyond it Enqueue
	// drops. Default 10000, ≥ 1.
	BufferSize int
	// BatchSize is the largest batch given to one InsertRequestLogs; a full
	// batch is written at once. Default 500, ≥ 1.
	BatchSize int
	// FlushInterval is the period at which a partial batch is written.
	// Default 1s, > 0.
	FlushInterval time.Duration
	// Clock drives the flush interval. Default clock.Real.
	Clock clock.Clock
	// OnError, when set, is told of every failed batch (the batch's logs are
	// counted as dropped). It runs on the writer's goroutine and must not
	// block for long.
	OnError func(error)
}

// LogWriter writes request logs asynchronously in batches from a bounded
// buffer, so the hot path never waits on the database.
//
// Enqueue never blocks: it appends the log to the buffer under a mutex and,
// when the buffer has just filled a batch, wakes Run. Run, started once in
// its own goroutine, writes every full batch when woken and whatever is
// waiting when the FlushInterval ticks. Close stops accepting logs, stops Run
// and writes what is still buffered. A failed batch is reported through
// OnError and counted in Dropped; it never blocks Enqueue.
//
// The buffer is a slice, not a channel: a request hands its log over
// without waking the writer's goroutine (a channel send wakes a parked
// receiver on every log, two futex calls and a trip through the scheduler
// per request), and its memory grows with the backlog instead of being
// allocated for BufferSize logs at start (docs/benchmarks.md).
type LogWriter struct {
	store Store
	opts  LogWriterOptions

	// mu guards ring, head, n, batch and closed.
	mu sync.Mutex
	// ring holds the n logs waiting, oldest first from ring[head],
	// wrapping around; n ≤ BufferSize. It grows by doubling as a backlog
	// builds, up to BufferSize logs.
	ring    []RequestLog
	head, n int
	// batch is the one batch being written (by Run, or by Close after Run
	// returned): take copies logs out of ring into it, so that Enqueue
	// may reuse their room while the batch is written.
	batch  []RequestLog
	closed bool
	// kick wakes Run when a full batch is waiting; one token is enough.
	kick chan struct{}

	stop     chan struct{} // closed by Close to stop Run
	stopOnce sync.Once

	// runMu guards running and runDone.
	runMu   sync.Mutex
	running bool
	runDone chan struct{} // closed when the current Run returns

	dropped atomic.Uint64
	written atomic.Uint64
}

// NewLogWriter returns a LogWriter that writes to s. Start it with
// go w.Run(ctx) and stop it with Close.
func NewLogWriter(s Store, opts LogWriterOptions) *LogWriter {
	if opts.BufferSize <= 0 {
		opts.BufferSize = DefaultLogBufferSize
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultLogBatchSize
	}
	if opts.FlushInterval <= 0 {
		opts.FlushInterval = DefaultLogFlushInterval
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	return &LogWriter{
		store: s,
		opts:  opts,
		kick:  make(chan struct{}, 1),
		stop:  make(chan struct{}),
	}
}

// Enqueue hands l to the writer without blocking. It returns false, and
// counts l in Dropped, when the buffer is full or the writer is closed.
func (w *LogWriter) Enqueue(l RequestLog) bool {
	w.mu.Lock()
	if w.closed || w.n >= w.opts.BufferSize {
		w.mu.Unlock()
		w.dropped.Add(1)
		return false
	}
	if w.n == len(w.ring) {
		w.grow()
	}
	i := w.head + w.n
	if i >= len(w.ring) {
		i -= len(w.ring)
	}
	w.ring[i] = l
	w.n++
	full := w.n == w.opts.BatchSize
	w.mu.Unlock()
	if full {
		// Run takes every full batch once woken, and the count of waiting
		// logs only grows one at a time: waking it each time a batch
		// fills is enough.
		select {
		case w.kick <- struct{}{}:
		default:
		}
	}
	return true
}

// grow doubles the ring (from 64 logs, up to BufferSize), keeping the
// waiting logs in order. w.mu is held.
func (w *LogWriter) grow() {
	next := make([]RequestLog, min(max(2*len(w.ring), 64), w.opts.BufferSize))
	k := copy(next, w.ring[w.head:min(w.head+w.n, len(w.ring))])
	copy(next[k:], w.ring[:w.n-k])
	w.ring, w.head = next, 0
}

// Dropped returns the number of logs lost: refused by Enqueue (buffer full or
// writer closed), in a batch whose insert failed, or left unwritten when
// Close's context ended.
func (w *LogWriter) Dropped() uint64 { return w.dropped.Load() }

// Written returns the number of logs stored successfully.
func (w *LogWriter) Written() uint64 { return w.written.Load() }

// Run writes full batches as they fill and the rest every FlushInterval,
// until ctx ends or Close is called; call it once, in its own goroutine. A
// batch already being written when ctx ends is completed (its insert does
// not inherit the cancellation); logs still waiting are left for Close to
// write. A second concurrent Run, or a Run after Close, returns at once.
func (w *LogWriter) Run(ctx context.Context) {
	w.runMu.Lock()
	if w.running || w.isStopped() {
		w.runMu.Unlock()
		return
	}
	w.running = true
	done := make(chan struct{})
	w.runDone = done
	w.runMu.Unlock()
	defer func() {
		w.runMu.Lock()
		w.running = false
		w.runMu.Unlock()
		close(done)
	}()

	// The insert of a batch taken from the buffer is completed even when
	// ctx ends meanwhile: cancelling it would only lose the batch.
	insertCtx := context.WithoutCancel(ctx)
	tick := w.opts.Clock.After(w.opts.FlushInterval)
	for {
		select {
		case <-ctx.Done():
			return
		case <-w.stop:
			return
		case <-w.kick:
			w.flush(insertCtx, true)
		case <-tick:
			w.flush(insertCtx, false)
			tick = w.opts.Clock.After(w.opts.FlushInterval)
		}
	}
}

// flush writes waiting logs batch by batch: only full batches when
// fullOnly, else every one. It stops early when Close has been called, so
// that Close takes over promptly (a backlog is written under Close's
// deadline, not Run's).
func (w *LogWriter) flush(ctx context.Context, fullOnly bool) {
	for !w.isStopped() {
		batch := w.take(fullOnly)
		if len(batch) == 0 {
			return
		}
		w.write(ctx, batch)
	}
}

// take moves at most BatchSize of the oldest waiting logs into w.batch and
// returns it; nothing when none wait, or when fullOnly and fewer than
// BatchSize do. The batch is valid until the next take.
func (w *LogWriter) take(fullOnly bool) []RequestLog {
	w.mu.Lock()
	defer w.mu.Unlock()
	m := min(w.n, w.opts.BatchSize)
	if m == 0 || fullOnly && m < w.opts.BatchSize {
		return nil
	}
	if w.batch == nil {
		w.batch = make([]RequestLog, 0, w.opts.BatchSize)
	}
	clear(w.batch) // the previous batch's strings, no longer needed
	first := w.ring[w.head:min(w.head+m, len(w.ring))]
	w.batch = append(w.batch[:0], first...)
	clear(first)
	if rest := m - len(first); rest > 0 {
		w.batch = append(w.batch, w.ring[:rest]...)
		clear(w.ring[:rest])
	}
	w.head += m
	if w.head >= len(w.ring) {
		w.head -= len(w.ring)
	}
	w.n -= m
	if w.n == 0 {
		w.head = 0
		if !fullOnly && len(w.ring) > 4*w.opts.BatchSize {
			// A backlog has drained by the interval's flush, so logs
			// arrive slower than batches fill: give its memory back.
			w.ring = nil
		}
	}
	return w.batch
}

// Close stops accepting logs, stops Run, and writes every log still buffered,
// in batches. ctx bounds the wait for Run and the writing: when it ends, Close
// counts every log it could not write as dropped and returns an error
// wrapping ctx.Err(). Close after Close is a no-op that returns nil.
func (w *LogWriter) Close(ctx context.Context) error {
	w.mu.Lock()
	w.closed = true
	w.mu.Unlock()
	w.stopOnce.Do(func() { close(w.stop) })

	w.runMu.Lock()
	running, done := w.running, w.runDone
	w.runMu.Unlock()
	if running {
		select {
		case <-done:
		case <-ctx.Done():
			// Run is still writing its batch; what waits behind it is lost.
			w.dropped.Add(uint64(w.dropWaiting()))
			return fmt.Errorf("closing log writer: waiting for the batch being written: %w", ctx.Err())
		}
	}
	for {
		if err := ctx.Err(); err != nil {
			if n := w.dropWaiting(); n > 0 {
				w.dropped.Add(uint64(n))
				return fmt.Errorf("closing log writer: %d logs unwritten: %w", n, err)
			}
			return nil
		}
		batch := w.take(false)
		if len(batch) == 0 {
			return nil
		}
		w.write(ctx, batch)
	}
}

// dropWaiting empties the buffer and returns how many logs it held.
func (w *LogWriter) dropWaiting() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	n := w.n
	w.ring, w.head, w.n = nil, 0, 0
	return n
}

// write inserts one batch and updates the counters; a failure is reported
// through OnError and counts the batch as dropped.
func (w *LogWriter) write(ctx context.Context, batch []RequestLog) {
	if err := w.store.InsertRequestLogs(ctx, batch); err != nil {
		w.dropped.Add(uint64(len(batch)))
		if w.opts.OnError != nil {
			w.opts.OnError(fmt.Errorf("writing %d request logs: %w", len(batch), err))
		}
		return
	}
	w.written.Add(uint64(len(batch)))
}

func (w *LogWriter) isStopped() bool {
	select {
	case <-w.stop:
		return true
	default:
		return false
	}
}
