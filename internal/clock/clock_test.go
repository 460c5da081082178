package clock

import (
	"testing"
	"time"
)

func TestFakeAfterFiresOnlyWhenDue(t *testing.T) {
	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	f := NewFake(start)
	ch := f.After(10 * time.Second)
	f.Advance(9 * time.Second)
	select {
	case <-ch:
		t.Fatal("fired early")
	default:
	}
	f.Advance(time.Second)
	select {
	case at := <-ch:
		if !at.Equal(start.Add(10 * time.Second)) {
			t.Fatalf("fired at %v", at)
		}
	default:
		t.Fatal("did not fire when due")
	}
	if f.Pending() != 0 {
		t.Fatalf("pending %d", f.Pending())
	}
}

func TestFakeAfterFuncStopAndReset(t *testing.T) {
	tests := []struct {
		name      string
		run       func(f *Fake, tm Timer)
		wantFired bool
	}{
		{"fires when due", func(f *Fake, _ Timer) { f.Advance(time.Second) }, true},
		{"stopped timer never fires", func(f *Fake, tm Timer) {
			if !tm.Stop() {
				t.Error("Stop of a pending timer reported false")
			}
			f.Advance(time.Hour)
		}, false},
		{"reset pushes the deadline", func(f *Fake, tm Timer) {
			f.Advance(900 * time.Millisecond)
			tm.Reset(time.Second)
			f.Advance(900 * time.Millisecond)
		}, false},
		{"reset timer fires at its new deadline", func(f *Fake, tm Timer) {
			f.Advance(900 * time.Millisecond)
			tm.Reset(time.Second)
			f.Advance(time.Second)
		}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			f := NewFake(time.Unix(0, 0))
			fired := make(chan struct{}, 1)
			tm := f.AfterFunc(time.Second, func() { fired <- struct{}{} })
			tc.run(f, tm)
			select {
			case <-fired:
				if !tc.wantFired {
					t.Fatal("fired")
				}
			case <-time.After(200 * time.Millisecond):
				if tc.wantFired {
					t.Fatal("did not fire")
				}
			}
		})
	}
}
