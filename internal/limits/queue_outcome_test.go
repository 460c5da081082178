package limits

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"switchyard/internal/clock"
)

// errGaveUp stands for a cause a canceller gives, such as the proxy's
// request timeout.
var errGaveUp = errors.New("request timeout")

// TestAcquireOutcomeSaysWhyTheWaitEnded: a queued caller can tell a slot
// from a queue timeout from its own context ending, and a context's cause
// shows through. Whatever the outcome, the waiter has left the queue and
// no slot leaks.
func TestAcquireOutcomeSaysWhyTheWaitEnded(t *testing.T) {
	tests := []struct {
		name string
		// ctxTimeout, when set, is a deadline on the caller's context (in
		// the synctest bubble's time, not the Slots' clock).
		ctxTimeout time.Duration
		// end ends the wait: holder gives back the slot the waiter waits
		// for, cancel cancels the waiter's context.
		end     func(fc *clock.Fake, holder func(), cancel context.CancelCauseFunc)
		granted bool
		is      []error // errors.Is must hold for each
		isNot   []error // and for none of these
	}{
		{
			name:    "granted",
			end:     func(_ *clock.Fake, holder func(), _ context.CancelCauseFunc) { holder() },
			granted: true,
		},
		{
			name:  "queue timeout",
			end:   func(fc *clock.Fake, _ func(), _ context.CancelCauseFunc) { fc.Advance(queueOn.Timeout) },
			is:    []error{ErrQueueTimeout},
			isNot: []error{context.Canceled, context.DeadlineExceeded},
		},
		{
			name:  "client cancels",
			end:   func(_ *clock.Fake, _ func(), cancel context.CancelCauseFunc) { cancel(nil) },
			is:    []error{context.Canceled},
			isNot: []error{ErrQueueTimeout},
		},
		{
			name:  "cancelled with a cause",
			end:   func(_ *clock.Fake, _ func(), cancel context.CancelCauseFunc) { cancel(errGaveUp) },
			is:    []error{context.Canceled, errGaveUp},
			isNot: []error{ErrQueueTimeout},
		},
		{
			name:       "client deadline before the queue timeout",
			ctxTimeout: time.Second,
			end:        func(*clock.Fake, func(), context.CancelCauseFunc) {}, // the bubble's clock runs out
			is:         []error{context.DeadlineExceeded},
			isNot:      []error{ErrQueueTimeout, context.Canceled},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fc := clock.NewFake(t0)
				s := NewSlotsWithClock(fc)
				holder := mustAcquire(t, s, "u", 1, queueOn)
				ctx, cancel := context.WithCancelCause(t.Context())
				defer cancel(nil)
				if tt.ctxTimeout > 0 {
					var stop context.CancelFunc
					ctx, stop = context.WithTimeout(ctx, tt.ctxTimeout)
					defer stop()
				}
				res := goAcquire(ctx, s, "u", 1, queueOn)
				synctest.Wait()
				if s.QueueDepth("u") != 1 {
					t.Fatalf("QueueDepth = %d, want 1", s.QueueDepth("u"))
				}
				tt.end(fc, holder, cancel)
				r := <-res

				if got := r.release != nil; got != tt.granted || (r.err == nil) != tt.granted {
					t.Fatalf("Acquire = (release %v, %v), want granted %v", got, r.err, tt.granted)
				}
				for _, want := range tt.is {
					if !errors.Is(r.err, want) {
						t.Errorf("Acquire error %v is not %v", r.err, want)
					}
				}
				for _, not := range tt.isNot {
					if errors.Is(r.err, not) {
						t.Errorf("Acquire error %v is %v, want it not to be", r.err, not)
					}
				}
				if s.QueueDepth("u") != 0 || s.InFlight("u") != 1 {
					t.Fatalf("queued %d, in flight %d; want 0, 1", s.QueueDepth("u"), s.InFlight("u"))
				}
				if tt.granted {
					r.release()
				} else {
					holder()
				}
				if s.InFlight("u") != 0 {
					t.Fatalf("InFlight = %d after release, want 0", s.InFlight("u"))
				}
			})
		})
	}
}

// gateClock hands its one timer's function to the test instead of firing
// it, and holds the caller that stops the timer until open is closed: that
// widens the window between a queued caller waking on its queue timeout and
// answering, in which its client can leave.
type gateClock struct {
	fire     chan func()   // the function of each AfterFunc
	stopping chan struct{} // receives when Stop is called
	open     chan struct{} // Stop returns once it is closed
}

var _ clock.Clock = (*gateClock)(nil)

func (g *gateClock) Now() time.Time                       { return t0 }
func (g *gateClock) After(time.Duration) <-chan time.Time { return nil }
func (g *gateClock) AfterFunc(_ time.Duration, f func()) clock.Timer {
	g.fire <- f
	return gateTimer{g}
}

type gateTimer struct{ g *gateClock }

func (t gateTimer) Stop() bool {
	t.g.stopping <- struct{}{}
	<-t.g.open
	return false
}

func (t gateTimer) Reset(time.Duration) bool { return false }

// TestAcquireClientLeavesAsTheQueueTimesOut: the queue timer fires, and the
// client cancels before the waiter has answered. The client is gone, so the
// answer is its context's error, not ErrQueueTimeout (which the proxy would
// log as a 503 queue_timeout).
func TestAcquireClientLeavesAsTheQueueTimesOut(t *testing.T) {
	g := &gateClock{fire: make(chan func(), 1), stopping: make(chan struct{}), open: make(chan struct{})}
	s := NewSlotsWithClock(g)
	holder := mustAcquire(t, s, "u", 1, queueOn)
	ctx, cancel := context.WithCancelCause(t.Context())
	defer cancel(nil)
	res := goAcquire(ctx, s, "u", 1, queueOn)

	(<-g.fire)() // the queue times out; ctx is still live, so the waiter takes that case
	<-g.stopping // the waiter has woken and is stopping its timer
	cancel(errGaveUp)
	close(g.open)
	r := <-res

	if r.release != nil || !errors.Is(r.err, context.Canceled) || !errors.Is(r.err, errGaveUp) || errors.Is(r.err, ErrQueueTimeout) {
		t.Fatalf("Acquire = (release %v, %v), want context.Canceled with its cause, not ErrQueueTimeout", r.release != nil, r.err)
	}
	if s.QueueDepth("u") != 0 || s.InFlight("u") != 1 {
		t.Fatalf("queued %d, in flight %d; want 0, 1", s.QueueDepth("u"), s.InFlight("u"))
	}
	holder()
	if s.InFlight("u") != 0 {
		t.Fatalf("InFlight = %d after release, want 0", s.InFlight("u"))
	}
}
