// Package watch holds what the store backends share to implement
// store.Watcher: a Group that lets Close stop every running Watch, a Signal
// that coalesces change notices and delivers them one at a time, and Poll,
// which turns a change counter read from the database into notices.
package watch

import (
	"context"
	"sync"
	"time"

	"switchyard/internal/clock"
	"switchyard/internal/store"
)

// Group tracks the Watch calls running on one Store so that Close can stop
// them and wait for them. The zero value is ready to use.
type Group struct {
	// mu guards closed and done, and orders wg.Add before Close's wg.Wait.
	mu     sync.Mutex
	closed bool
	done   chan struct{} // closed by Close; made lazily
	wg     sync.WaitGroup
}

// Join registers a Watch call. It returns a context that ends when ctx ends
// or Close is called, and leave, which the call must run when it returns.
// It returns store.ErrClosed after Close.
func (g *Group) Join(ctx context.Context) (context.Context, func(), error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed {
		return nil, nil, store.ErrClosed
	}
	g.doneLocked()
	g.wg.Add(1)
	wctx, cancel := context.WithCancel(ctx)
	done := g.done
	go func() {
		select {
		case <-done:
			cancel()
		case <-wctx.Done():
		}
	}()
	return wctx, func() {
		cancel()
		g.wg.Done()
	}, nil
}

// doneLocked makes done on first use; g.mu must be held.
func (g *Group) doneLocked() {
	if g.done == nil {
		g.done = make(chan struct{})
	}
}

// Closed reports whether Close was called.
func (g *Group) Closed() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.closed
}

// Close ends the context of every joined call, refuses later Joins and waits
// until every joined call has left. Close after Close returns at once.
func (g *Group) Close() {
	g.mu.Lock()
	if !g.closed {
		g.closed = true
		g.doneLocked()
		close(g.done)
	}
	g.mu.Unlock()
	g.wg.Wait()
}

// Signal coalesces change notices: any number of Notify calls made while a
// notice is pending count as one.
type Signal chan struct{}

// NewSignal returns a Signal with no notice pending.
func NewSignal() Signal { return make(Signal, 1) }

// Notify records a notice without blocking.
func (s Signal) Notify() {
	select {
	case s <- struct{}{}:
	default:
	}
}

// Deliver calls onChange once per pending notice, one call at a time, until
// ctx ends.
func (s Signal) Deliver(ctx context.Context, onChange func()) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-s:
			onChange()
		}
	}
}

// Poll reads a change counter with read every interval, on clk, and notifies
// sig whenever it differs from the last value read. The first successful
// read sets the baseline (and, when ready is non-nil, calls it); a failed
// read is skipped and retried at the next tick. Poll returns when ctx ends.
func Poll(ctx context.Context, clk clock.Clock, every time.Duration, read func(context.Context) (int64, error), sig Signal, ready func()) {
	var (
		last  int64
		known bool
	)
	check := func() {
		v, err := read(ctx)
		if err != nil {
			return
		}
		switch {
		case !known:
			known = true
			if ready != nil {
				ready()
			}
		case v != last:
			sig.Notify()
		}
		last = v
	}
	check()
	for {
		select {
		case <-ctx.Done():
			return
		case <-clk.After(every):
			check()
		}
	}
}
