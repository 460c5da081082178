package limits

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"switchyard/internal/clock"
	"switchyard/internal/config"
)

// arrival is one request joining the queue in a grant-sequence test.
type arrival struct {
	label string // what the grant sequence records
	t     Tenant
	after time.Duration // fake time advanced before it joins
}

// tenant returns an arrival labelled label for key (weight w) of class c.
func tenant(label, key string, c Class, w float64) arrival {
	return arrival{label: label, t: Tenant{Class: c, Key: key, Weight: w}}
}

// grantSequence holds the only slot of an upstream, queues the arrivals in
// order, then frees the slot and returns the order the waiters were served
// in (each gives its slot back as soon as it has it), space-separated.
func grantSequence(t *testing.T, q config.Queue, arrivals []arrival) string {
	t.Helper()
	var got []string
	synctest.Test(t, func(t *testing.T) {
		fc := clock.NewFake(t0)
		s := NewSlotsWithClock(fc)
		holder := mustAcquire(t, s, "u", 1, q)
		order := make(chan string, len(arrivals))
		var wg sync.WaitGroup
		for _, a := range arrivals {
			fc.Advance(a.after)
			wg.Go(func() {
				r, err := s.AcquireAs(t.Context(), "u", 1, q, a.t)
				if err != nil {
					t.Errorf("%s: %v", a.label, err)
					return
				}
				order <- a.label
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

func TestFairQueueGrantSequence(t *testing.T) {
	fair := config.Queue{Enabled: true, Timeout: 10 * time.Second, MaxLength: 100, Discipline: config.DisciplineFair}
	fifo := fair
	fifo.Discipline = config.DisciplineFIFO
	a := func(label string) arrival { return tenant(label, "a", ClassInteractive, 1) }
	b := func(label string) arrival { return tenant(label, "b", ClassInteractive, 1) }
	tests := []struct {
		name     string
		q        config.Queue
		arrivals []arrival
		want     string
	}{
		{"one tenant stays fifo", fair, []arrival{a("a1"), a("a2"), a("a3"), a("a4")}, "a1 a2 a3 a4"},
		{"a flood does not hold back another key", fair,
			[]arrival{a("a1"), a("a2"), a("a3"), a("a4"), b("b1"), b("b2")}, "a1 b1 a2 b2 a3 a4"},
		{"the same mix under fifo", fifo,
			[]arrival{a("a1"), a("a2"), a("a3"), a("a4"), b("b1"), b("b2")}, "a1 a2 a3 a4 b1 b2"},
		{"weight 2 gets two turns to one", fair, []arrival{
			tenant("a1", "a", ClassInteractive, 2), tenant("a2", "a", ClassInteractive, 2),
			tenant("a3", "a", ClassInteractive, 2), tenant("a4", "a", ClassInteractive, 2),
			b("b1"), b("b2"), b("b3"), b("b4"),
		}, "a1 b1 a2 a3 b2 a4 b3 b4"},
		{"critical, then interactive, then batch", fair, []arrival{
			tenant("x1", "x", ClassBatch, 1), a("a1"), tenant("c1", "c", ClassCritical, 1), a("a2"),
		}, "c1 a1 a2 x1"},
		{"classes do not matter under fifo", fifo, []arrival{
			tenant("x1", "x", ClassBatch, 1), a("a1"), tenant("c1", "c", ClassCritical, 1),
		}, "x1 a1 c1"},
		{"keys of one team are flows of their own", fair, []arrival{
			{label: "r1", t: Tenant{Team: "research", Key: "r"}}, {label: "r2", t: Tenant{Team: "research", Key: "r"}},
			{label: "s1", t: Tenant{Team: "research", Key: "s"}},
		}, "r1 s1 r2"},
		// The catalog splits one key's weight between a team's keys
		// (proxy.teamShares): two keys of research at 0.5 each are served
		// as much as the one key c, not twice as much.
		{"a team's keys share one tenant's weight", fair, []arrival{
			{label: "r1", t: Tenant{Team: "research", Key: "r", Weight: 0.5}}, {label: "r2", t: Tenant{Team: "research", Key: "r", Weight: 0.5}},
			{label: "s1", t: Tenant{Team: "research", Key: "s", Weight: 0.5}}, {label: "s2", t: Tenant{Team: "research", Key: "s", Weight: 0.5}},
			tenant("c1", "c", ClassInteractive, 1), tenant("c2", "c", ClassInteractive, 1),
		}, "r1 s1 c1 c2 r2 s2"},
		{"a batch request waiting half the timeout goes before newer interactive ones", fair, []arrival{
			tenant("x1", "x", ClassBatch, 1),
			{label: "a1", t: Tenant{Key: "a"}, after: 5 * time.Second}, a("a2"),
		}, "x1 a1 a2"},
		{"a younger batch request waits for interactive ones", fair, []arrival{
			tenant("x1", "x", ClassBatch, 1),
			{label: "a1", t: Tenant{Key: "a"}, after: 4 * time.Second}, a("a2"),
		}, "a1 a2 x1"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := grantSequence(t, tc.q, tc.arrivals); got != tc.want {
				t.Fatalf("grant sequence = %q, want %q", got, tc.want)
			}
		})
	}
}

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
