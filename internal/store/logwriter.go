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
// Enqueue never blocks. Run, started once in its own goroutine, collects logs
// into batches and writes a batch when it reaches BatchSize or when the
// FlushInterval ticks. Close stops accepting logs, stops Run and writes what
// is still buffered. A failed batch is reported through OnError and counted
// in Dropped; it never blocks Enqueue.
type LogWriter struct {
	store Store
	opts  LogWriterOptions
	buf   chan RequestLog

	// closeMu guards closed. Enqueue holds it for reading while it sends, so
	// that once Close has taken it for writing no log can enter buf.
	closeMu sync.RWMutex
	closed  bool

	stop     chan struct{} // closed by Close to stop Run
	stopOnce sync.Once

	// runMu guards running, runDone, leftover and abandoned.
	runMu     sync.Mutex
	running   bool
	runDone   chan struct{} // closed when the current Run returns
	leftover  []RequestLog  // the partial batch a returning Run hands to Close
	abandoned bool          // Close gave up waiting; Run drops its partial batch

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
		buf:   make(chan RequestLog, opts.BufferSize),
		stop:  make(chan struct{}),
	}
}

// Enqueue hands l to the writer without blocking. It returns false, and
// counts l in Dropped, when the buffer is full or the writer is closed.
func (w *LogWriter) Enqueue(l RequestLog) bool {
	w.closeMu.RLock()
	defer w.closeMu.RUnlock()
	if !w.closed {
		select {
		case w.buf <- l:
			return true
		default:
		}
	}
	w.dropped.Add(1)
	return false
}

// Dropped returns the number of logs lost: refused by Enqueue (buffer full or
// writer closed), in a batch whose insert failed, or left unwritten when
// Close's context ended.
func (w *LogWriter) Dropped() uint64 { return w.dropped.Load() }

// Written returns the number of logs stored successfully.
func (w *LogWriter) Written() uint64 { return w.written.Load() }

// Run collects buffered logs into batches and writes them until ctx ends or
// Close is called; call it once, in its own goroutine. A batch already being
// written when ctx ends is completed (its insert does not inherit the
// cancellation); the partial batch still in memory is left for Close to
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
	batch := w.leftover
	w.leftover = nil
	w.runMu.Unlock()

	defer close(done)
	if batch == nil {
		batch = make([]RequestLog, 0, w.opts.BatchSize)
	}
	// The insert of a batch taken from the buffer is completed even when
	// ctx ends meanwhile: cancelling it would only lose the batch.
	insertCtx := context.WithoutCancel(ctx)
	tick := w.opts.Clock.After(w.opts.FlushInterval)
	for {
		// Close takes over promptly: without this check the select below
		// could keep draining a backlog that Close would rather write
		// under its own deadline.
		if w.isStopped() {
			w.handOver(batch)
			return
		}
		select {
		case <-ctx.Done():
			w.handOver(batch)
			return
		case <-w.stop:
			w.handOver(batch)
			return
		case l := <-w.buf:
			batch = append(batch, l)
			if len(batch) >= w.opts.BatchSize {
				w.write(insertCtx, batch)
				batch = batch[:0]
			}
		case <-tick:
			if len(batch) > 0 {
				w.write(insertCtx, batch)
				batch = batch[:0]
			}
			tick = w.opts.Clock.After(w.opts.FlushInterval)
		}
	}
}

// Close stops accepting logs, stops Run, and writes every log still buffered,
// in batches. ctx bounds the wait for Run and the writing: when it ends, Close
// counts every log it could not write as dropped and returns an error
// wrapping ctx.Err(). Close after Close is a no-op that returns nil.
func (w *LogWriter) Close(ctx context.Context) error {
	w.closeMu.Lock()
	w.closed = true
	w.closeMu.Unlock()
	w.stopOnce.Do(func() { close(w.stop) })

	w.runMu.Lock()
	running, done := w.running, w.runDone
	w.runMu.Unlock()
	if running {
		select {
		case <-done:
		case <-ctx.Done():
			w.abandon()
			return fmt.Errorf("closing log writer: waiting for the batch being written: %w", ctx.Err())
		}
	}

	w.runMu.Lock()
	batch := w.leftover
	w.leftover = nil
	w.runMu.Unlock()
	for {
		for len(batch) < w.opts.BatchSize {
			l, ok := w.tryReceive()
			if !ok {
				break
			}
			batch = append(batch, l)
		}
		if len(batch) == 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			n := len(batch) + w.dropBuffered()
			w.dropped.Add(uint64(n))
			return fmt.Errorf("closing log writer: %d logs unwritten: %w", n, err)
		}
		w.write(ctx, batch)
		batch = batch[:0]
	}
}

// abandon is Close giving up on a Run that is still writing: the logs left in
// the buffer, and the partial batch Run will hand over, count as dropped.
func (w *LogWriter) abandon() {
	w.runMu.Lock()
	w.abandoned = true
	n := len(w.leftover)
	w.leftover = nil
	w.runMu.Unlock()
	w.dropped.Add(uint64(n + w.dropBuffered()))
}

// dropBuffered empties the buffer and returns how many logs it held.
func (w *LogWriter) dropBuffered() int {
	n := 0
	for {
		if _, ok := w.tryReceive(); !ok {
			return n
		}
		n++
	}
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

// handOver stores a returning Run's partial batch for Close (or a later Run)
// and marks Run as no longer running.
func (w *LogWriter) handOver(batch []RequestLog) {
	w.runMu.Lock()
	defer w.runMu.Unlock()
	w.running = false
	switch {
	case len(batch) == 0:
	case w.abandoned:
		w.dropped.Add(uint64(len(batch)))
	default:
		w.leftover = append(w.leftover, batch...)
	}
}

func (w *LogWriter) tryReceive() (RequestLog, bool) {
	select {
	case l := <-w.buf:
		return l, true
	default:
		return RequestLog{}, false
	}
}

func (w *LogWriter) isStopped() bool {
	select {
	case <-w.stop:
		return true
	default:
		return false
	}
}
