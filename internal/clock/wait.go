package clock

import (
	"context"
	"time"
)

// WaitResult says why Wait returned.
type WaitResult uint8

// Wait results.
const (
	// Ready: the ready channel was closed (or sent on).
	Ready WaitResult = iota
	// Expired: the timeout passed first.
	Expired
	// Done: the context ended first.
	Done
)

// Waiter is a Clock that schedules the goroutines blocked on it itself: the
// simulator's, which runs every request's goroutine in turn so that a run
// is reproducible. Wait hands blocking to it.
type Waiter interface {
	Clock
	// Wait blocks like the package's Wait.
	Wait(ctx context.Context, ready <-chan struct{}, timeout time.Duration) WaitResult
}

// Wait blocks until ready is closed, timeout has passed on c (≤ 0: no
// timeout) or ctx ends, whichever comes first; ready may be nil. Code that
// blocks on the request path waits here, so that a Waiter clock can run it
// in virtual time.
func Wait(ctx context.Context, c Clock, ready <-chan struct{}, timeout time.Duration) WaitResult {
	if w, ok := c.(Waiter); ok {
		return w.Wait(ctx, ready, timeout)
	}
	var expired <-chan struct{}
	if timeout > 0 {
		ch := make(chan struct{})
		t := c.AfterFunc(timeout, func() { close(ch) })
		defer t.Stop()
		expired = ch
	}
	select {
	case <-ready:
		return Ready
	case <-expired:
		return Expired
	case <-ctx.Done():
		return Done
	}
}
