package limits

import (
	"context"
	"errors"
	"testing"
	"testing/synctest"
	"time"

	"switchyard/internal/clock"
	"switchyard/internal/config"
)

func TestBatchShedding(t *testing.T) {
	q := config.Queue{Enabled: true, Timeout: 10 * time.Second, MaxLength: 4}
	fifo := q
	fifo.Discipline = config.DisciplineFIFO
	batch := Tenant{Class: ClassBatch, Key: "x"}
	tests := []struct {
		name    string
		q       config.Queue
		held    int      // slots held of 1 (0: the slot is free)
		waiting []Tenant // already queued
		wantErr error    // of the batch request; nil: it queues (or gets the free slot)
	}{
		{"free slot: served at once", q, 0, nil, nil},
		{"full, nobody waiting: queued", q, 1, nil, nil},
		{"interactive waiting: shed", q, 1, []Tenant{{Key: "a"}}, ErrShed},
		{"critical waiting: shed", q, 1, []Tenant{{Class: ClassCritical, Key: "c"}}, ErrShed},
		{"two batch waiting of 4: queued", q, 1, []Tenant{batch, batch}, nil},
		{"three batch waiting of 4 (over half): shed", q, 1, []Tenant{batch, batch, batch}, ErrShed},
		{"fifo never sheds", fifo, 1, []Tenant{{Key: "a"}}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := NewSlotsWithClock(clock.NewFake(t0))
				for range tc.held {
					mustAcquire(t, s, "u", 1, tc.q)
				}
				ctx, cancel := context.WithCancel(t.Context())
				defer cancel()
				for _, w := range tc.waiting {
					go s.AcquireAs(ctx, "u", 1, tc.q, w) //nolint:errcheck // cancelled at the end
					synctest.Wait()
				}
				res := make(chan error, 1)
				go func() {
					_, err := s.AcquireAs(ctx, "u", 1, tc.q, batch)
					res <- err
				}()
				synctest.Wait()
				var err error
				select {
				case err = <-res:
				default: // queued
					if d := s.QueueDepth("u"); d != len(tc.waiting)+1 {
						t.Fatalf("QueueDepth = %d, want %d (the batch request queued)", d, len(tc.waiting)+1)
					}
				}
				if !errors.Is(err, tc.wantErr) {
					t.Fatalf("AcquireAs(batch) = %v, want %v", err, tc.wantErr)
				}
				cancel()
				synctest.Wait()
			})
		})
	}
}

func TestScore(t *testing.T) {
	q := config.Queue{Enabled: true, Timeout: 10 * time.Second, MaxLength: 10}
	tests := []struct {
		name   string
		c      Class
		waited time.Duration
		want   float64
	}{
		{"critical", ClassCritical, 0, 7},
		{"interactive", ClassInteractive, 0, 2*bandWidth + 7},
		{"batch", ClassBatch, 4 * time.Second, BatchBand + 7},
		{"batch aged at half the timeout", ClassBatch, 5 * time.Second, bandWidth + 7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := Score(q, tc.c, 7, 99, tc.waited); got != tc.want {
				t.Fatalf("Score = %v, want %v", got, tc.want)
			}
		})
	}
	q.Discipline = config.DisciplineFIFO
	if got := Score(q, ClassCritical, 7, 99, 0); got != 99 {
		t.Fatalf("fifo Score = %v, want the arrival order 99", got)
	}
}
