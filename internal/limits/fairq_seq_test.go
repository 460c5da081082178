package limits_test

import (
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"switchyard/internal/clock"
	"switchyard/internal/limits"
	"switchyard/internal/limits/fairtest"
)

// TestFairQueueGrantSequence runs fairtest's cases through the memory
// queue.
func TestFairQueueGrantSequence(t *testing.T) { fairtest.Run(t, grantSequence) }

// grantSequence holds the only slot of an upstream, queues tc's arrivals
// in order, then frees the slot and returns the order the waiters were
// served in (each gives its slot back as soon as it has it),
// space-separated.
func grantSequence(t *testing.T, tc fairtest.Case) string {
	t.Helper()
	var got []string
	synctest.Test(t, func(t *testing.T) {
		fc := clock.NewFake(time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC))
		s := limits.NewSlotsWithClock(fc)
		holder, err := s.Acquire(t.Context(), "u", 1, tc.Queue)
		if err != nil {
			t.Fatal(err)
		}
		order := make(chan string, len(tc.Arrivals))
		var wg sync.WaitGroup
		for _, a := range tc.Arrivals {
			fc.Advance(a.After)
			wg.Go(func() {
				r, err := s.AcquireAs(t.Context(), "u", 1, tc.Queue, a.Tenant)
				if err != nil {
					t.Errorf("%s: %v", a.Label, err)
					return
				}
				order <- a.Label
				r()
			})
			synctest.Wait() // queued before the next one joins
		}
		holder()
		wg.Wait()
		close(order)
		for l := range order {
			got = append(got, l)
		}
	})
	return strings.Join(got, " ")
}
