// Package fairtest holds the fair queue's grant-sequence cases
// (docs/routing.md#tenants-classes-and-fair-queueing), run against every
// queue that follows the discipline: the memory queue
// (internal/limits/fairq_seq_test.go) and the queue shared through Redis
// (internal/state/redis_fairq_test.go). Each case holds an upstream's only
// slot, queues its arrivals in order, frees the slot and expects the
// waiters served in the order Want gives, each handing its slot back as
// soon as it has it.
package fairtest

import (
	"testing"
	"time"

	"switchyard/internal/config"
	"switchyard/internal/limits"
)

// Arrival is one request joining the queue.
type Arrival struct {
	Label  string        // what the grant sequence records
	Tenant limits.Tenant // whom it waits as
	After  time.Duration // how long the clock moves on before it joins
}

// Case is one grant sequence.
type Case struct {
	Name     string
	Queue    config.Queue
	Arrivals []Arrival
	Want     string // the labels in the order served, space-separated
}

// Fair and FIFO are the queues the cases wait in: one slot's queue of 100
// with a 10 s timeout, under either discipline.
var (
	Fair = config.Queue{Enabled: true, Timeout: 10 * time.Second, MaxLength: 100, Discipline: config.DisciplineFair}
	FIFO = config.Queue{Enabled: true, Timeout: 10 * time.Second, MaxLength: 100, Discipline: config.DisciplineFIFO}
)

// key returns n arrivals of key k (no team, weight w, class c), labelled
// k1, k2, ….
func key(k string, c limits.Class, w float64, n int) []Arrival {
	return arrivals(limits.Tenant{Class: c, Key: k, Weight: w}, n)
}

// member returns n arrivals of key k of team research (weight tw), of
// weight w, labelled k1, k2, ….
func member(k string, w, tw float64, n int) []Arrival {
	return arrivals(limits.Tenant{Team: "research", Key: k, Weight: w, TeamWeight: tw}, n)
}

func arrivals(t limits.Tenant, n int) []Arrival {
	out := make([]Arrival, n)
	for i := range out {
		out[i] = Arrival{Label: t.Key + string(rune('1'+i)), Tenant: t}
	}
	return out
}

// zip interleaves the arrivals of several keys: the first of each, then
// the second of each, ….
func zip(lists ...[]Arrival) []Arrival {
	var out []Arrival
	for i := 0; ; i++ {
		n := len(out)
		for _, l := range lists {
			if i < len(l) {
				out = append(out, l[i])
			}
		}
		if len(out) == n {
			return out
		}
	}
}

// then concatenates arrivals.
func then(lists ...[]Arrival) []Arrival {
	var out []Arrival
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// after returns a with the clock moved on by d before it joins.
func after(d time.Duration, a Arrival) Arrival {
	a.After = d
	return a
}

// Cases returns the grant sequences. A key of no team is a tenant of its
// own; team research's keys share the team's weight, split among those
// backlogged when a request joins.
func Cases() []Case {
	const (
		I = limits.ClassInteractive
		B = limits.ClassBatch
		C = limits.ClassCritical
	)
	a, b := key("a", I, 1, 4), key("b", I, 1, 4)
	return []Case{
		{"one tenant stays fifo", Fair, a, "a1 a2 a3 a4"},
		{"a flood does not hold back another key", Fair, then(a, b[:2]), "a1 b1 a2 b2 a3 a4"},
		{"the same mix under fifo", FIFO, then(a, b[:2]), "a1 a2 a3 a4 b1 b2"},
		{"weight 2 gets two turns to one", Fair, then(key("a", I, 2, 4), b), "a1 b1 a2 a3 b2 a4 b3 b4"},
		{"critical, then interactive, then batch", Fair,
			then(key("x", B, 1, 1), a[:1], key("c", C, 1, 1), a[1:2]), "c1 a1 a2 x1"},
		{"classes do not matter under fifo", FIFO, then(key("x", B, 1, 1), a[:1], key("c", C, 1, 1)), "x1 a1 c1"},
		// Hierarchical shares: the team against a key of its own weight
		// 50/50 while both wait (the first 8 grants: c 4, r 2, s 2), the
		// team's two busy keys 25/25; the rest is the team's.
		{"a team and a lone key split 50/50, the team's two keys 25/25", Fair,
			then(key("c", I, 1, 4), zip(member("r", 1, 1, 4), member("s", 1, 1, 4))),
			"c1 r1 s1 c2 r2 c3 s2 c4 r3 s3 r4 s4"},
		{"a team's lone busy key has the whole team's share", Fair,
			then(key("c", I, 1, 4), member("r", 1, 1, 4)), "c1 r1 c2 r2 c3 r3 c4 r4"},
		{"a team of weight 2 gets two turns to a lone key's one", Fair,
			then(key("c", I, 1, 4), zip(member("r", 1, 2, 4), member("s", 1, 2, 4))),
			"c1 r1 s1 r2 c2 s2 r3 c3 s3 r4 c4 s4"},
		// r weighs 2 and s 1 within the team: of the first 12 grants,
		// c 6, r 4, s 2.
		{"a team's keys split its share by their weights", Fair,
			then(key("c", I, 1, 6), zip(member("r", 2, 1, 4), member("s", 1, 1, 4))),
			"c1 r1 s1 c2 r2 c3 r3 c4 s2 c5 r4 c6 s3 s4"},
		{"a batch request waiting half the timeout goes before newer interactive ones", Fair,
			then(key("x", B, 1, 1), []Arrival{after(5*time.Second, a[0]), a[1]}), "x1 a1 a2"},
		{"a younger batch request waits for interactive ones", Fair,
			then(key("x", B, 1, 1), []Arrival{after(4*time.Second, a[0]), a[1]}), "a1 a2 x1"},
		{"a team's batch key is not starved by the team's interactive keys", Fair,
			then(arrivals(limits.Tenant{Class: B, Team: "research", Key: "n", Weight: 1, TeamWeight: 1}, 1),
				[]Arrival{after(5*time.Second, member("r", 1, 1, 1)[0])}, member("s", 1, 1, 2)), "n1 r1 s1 s2"},
	}
}

// Run runs every case as a subtest of t: grant queues the case's arrivals
// in the queue under test and returns the order they were served in,
// space-separated.
func Run(t *testing.T, grant func(*testing.T, Case) string) {
	for _, tc := range Cases() {
		t.Run(tc.Name, func(t *testing.T) {
			if got := grant(t, tc); got != tc.Want {
				t.Fatalf("grant sequence = %q, want %q", got, tc.Want)
			}
		})
	}
}
