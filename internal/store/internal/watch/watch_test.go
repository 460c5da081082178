package watch

import (
	"context"
	"errors"
	"slices"
	"testing"
	"testing/synctest"
	"time"

	"switchyard/internal/clock"
	"switchyard/internal/store"
)

func TestSignalCoalescesNotices(t *testing.T) {
	sig := NewSignal()
	for range 3 {
		sig.Notify()
	}
	ctx, cancel := context.WithCancel(context.Background())
	calls := 0
	sig.Deliver(ctx, func() {
		calls++
		cancel()
	})
	if calls != 1 {
		t.Errorf("onChange called %d times for 3 notices made while one was pending, want 1", calls)
	}
}

func TestPoll(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const every = 2 * time.Second
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		start := time.Now()
		sig := NewSignal()
		errRead := errors.New("database down")
		// Each read returns the next scripted value and records whether a
		// notice was pending since the previous read, and when it ran.
		script := []struct {
			v   int64
			err error
		}{{0, errRead}, {5, nil}, {5, nil}, {6, nil}, {6, nil}, {7, nil}, {7, errRead}}
		var (
			pending []bool
			at      []time.Duration
			readies int
		)
		read := func(context.Context) (int64, error) {
			select {
			case <-sig:
				pending = append(pending, true)
			default:
				pending = append(pending, false)
			}
			at = append(at, time.Since(start))
			i := len(at) - 1
			if i == len(script)-1 {
				cancel()
			}
			return script[i].v, script[i].err
		}
		Poll(ctx, clock.Real{}, every, read, sig, func() { readies++ })

		// The first good read (5) sets the baseline; 6 and 7 are changes,
		// seen as pending notices at the read after each.
		wantPending := []bool{false, false, false, false, true, false, true}
		if !slices.Equal(pending, wantPending) {
			t.Errorf("notice pending at each read = %v, want %v", pending, wantPending)
		}
		if readies != 1 {
			t.Errorf("ready called %d times, want once, at the first good read", readies)
		}
		for i, d := range at {
			if want := time.Duration(i) * every; d != want {
				t.Errorf("read %d at %v, want %v", i, d, want)
			}
		}
	})
}

func TestGroup(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		var g Group
		parent, cancelParent := context.WithCancel(context.Background())
		a, leaveA, err := g.Join(context.Background())
		if err != nil {
			t.Fatalf("Join: %v", err)
		}
		b, leaveB, err := g.Join(parent)
		if err != nil {
			t.Fatalf("Join: %v", err)
		}

		// Ending the parent ends only that call's context.
		cancelParent()
		synctest.Wait()
		if b.Err() == nil || a.Err() != nil {
			t.Fatalf("after the parent ended: a.Err, b.Err = %v, %v; want nil, canceled", a.Err(), b.Err())
		}
		leaveB()

		// Close ends the rest and waits for them to leave.
		closed := make(chan struct{})
		go func() {
			g.Close()
			close(closed)
		}()
		synctest.Wait()
		if a.Err() == nil {
			t.Fatal("Close did not end a joined call's context")
		}
		select {
		case <-closed:
			t.Fatal("Close returned before the joined call left")
		default:
		}
		if !g.Closed() {
			t.Error("Closed = false during Close")
		}
		leaveA()
		<-closed

		if _, _, err := g.Join(context.Background()); !errors.Is(err, store.ErrClosed) {
			t.Errorf("Join after Close = %v, want ErrClosed", err)
		}
		g.Close() // a second Close returns at once
	})
}
