// Package clock abstracts time so that every time-based component of the
// gateway can be driven by a fake clock in tests and in the simulator.
package clock

import (
	"sync"
	"time"
)

// Clock tells the time and makes timers. Components take a Clock instead of
// calling time.Now, so tests and the simulator control time.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// After returns a channel that receives the time once d has passed.
	After(d time.Duration) <-chan time.Time
	// AfterFunc calls f in its own goroutine once d has passed, unless the
	// returned Timer is stopped first.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a stoppable, resettable one-shot timer made by AfterFunc.
type Timer interface {
	// Stop prevents the timer from firing; it reports whether it was pending.
	Stop() bool
	// Reset re-arms the timer to fire d from now; it reports whether it was pending.
	Reset(d time.Duration) bool
}

// Real is the wall clock.
type Real struct{}

var _ Clock = Real{}

// Now returns time.Now().
func (Real) Now() time.Time { return time.Now() }

// After returns time.After(d).
func (Real) After(d time.Duration) <-chan time.Time { return time.After(d) }

// AfterFunc returns time.AfterFunc(d, f).
func (Real) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

// Fake is a manually advanced clock for tests. Its zero value is not usable;
// create one with NewFake.
type Fake struct {
	mu      sync.Mutex // guards now and waiters
	now     time.Time
	waiters []fakeWaiter
}

type fakeWaiter struct {
	at time.Time
	ch chan time.Time // fired by a send, for After
	t  *fakeTimer     // fired by a call, for AfterFunc
}

var _ Clock = (*Fake)(nil)

// NewFake returns a fake clock that reads start until advanced.
func NewFake(start time.Time) *Fake { return &Fake{now: start} }

// Now returns the fake current time.
func (f *Fake) Now() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.now
}

// After returns a channel that fires when the fake clock has been advanced by d.
func (f *Fake) After(d time.Duration) <-chan time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan time.Time, 1)
	at := f.now.Add(d)
	if d <= 0 {
		ch <- f.now
		return ch
	}
	f.waiters = append(f.waiters, fakeWaiter{at: at, ch: ch})
	return ch
}

// Advance moves the fake clock forward by d and fires every timer that is due.
func (f *Fake) Advance(d time.Duration) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.now = f.now.Add(d)
	kept := f.waiters[:0]
	for _, w := range f.waiters {
		if w.at.After(f.now) {
			kept = append(kept, w)
			continue
		}
		if w.t != nil {
			go w.t.f()
			continue
		}
		w.ch <- f.now
	}
	f.waiters = kept
}

// AfterFunc calls f in its own goroutine once the fake clock has been advanced by d.
func (f *Fake) AfterFunc(d time.Duration, fn func()) Timer {
	t := &fakeTimer{clock: f, f: fn}
	t.Reset(d)
	return t
}

// Pending returns how many timers and After channels are waiting to fire.
func (f *Fake) Pending() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.waiters)
}

type fakeTimer struct {
	clock *Fake
	f     func()
}

func (t *fakeTimer) Stop() bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	return t.removeLocked()
}

func (t *fakeTimer) Reset(d time.Duration) bool {
	t.clock.mu.Lock()
	defer t.clock.mu.Unlock()
	was := t.removeLocked()
	if d <= 0 {
		go t.f()
		return was
	}
	t.clock.waiters = append(t.clock.waiters, fakeWaiter{at: t.clock.now.Add(d), t: t})
	return was
}

// removeLocked drops the timer from the clock's waiters; f.clock.mu must be held.
func (t *fakeTimer) removeLocked() bool {
	ws := t.clock.waiters
	for i, w := range ws {
		if w.t == t {
			t.clock.waiters = append(ws[:i], ws[i+1:]...)
			return true
		}
	}
	return false
}
