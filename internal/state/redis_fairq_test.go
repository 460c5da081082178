package state

import (
	"context"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/limits"
	"switchyard/internal/limits/fairtest"
)

// The shared queue ranks its waiters by limits.Score, computed in Go from
// the virtual times kept in Redis: a key flooding the queue through one
// instance pushes its own later requests back, and another key's first
// request, joining through another instance, ranks with the flood's first.
// The keys of a team joining through two instances split its share: the
// second sees the first's tag in the team's hash. A batch request meeting
// an interactive waiter is shed, as in memory.
func TestRedisFairQueue(t *testing.T) {
	q := config.Queue{Enabled: true, MaxLength: 10, Timeout: 10 * time.Second, Discipline: config.DisciplineFair}
	adm := func(key string, c limits.Class) Admission {
		tn := limits.Tenant{Class: c, Key: key, Weight: 1}
		if strings.HasPrefix(key, "research-") {
			tn.Team, tn.TeamWeight = "research", 4
		}
		return Admission{Upstream: "u", MaxConcurrency: 1, Queue: q, Wait: true, Tenant: tn}
	}
	clk := clock.NewFake(t0)
	a := newTestRedis(t, testCircuit, clk)
	b := newTestRedis(t, testCircuit, clk, sharing(a))
	raw := rawClient(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	holder := admitOK(t, a, adm("holder", limits.ClassInteractive))
	joins := []struct {
		r    *Redis
		key  string
		want float64 // its start tag
	}{{a, "flood", 0}, {a, "flood", 1}, {b, "flood", 2}, {b, "other", 0}, {a, "other", 1},
		{a, "research-r", 0}, {b, "research-s", 0}, {a, "research-r", 0.25}}
	for i, j := range joins {
		base := clk.Pending()
		res := admitAsync(j.r, ctx, adm(j.key, limits.ClassInteractive))
		waitQueued(t, clk, base, res)
		if n := raw.ZCard(ctx, a.keys.upstream("u", "queue")).Val(); n != int64(i+1) {
			t.Fatalf("after join %d the queue holds %d, want %d", i+1, n, i+1)
		}
	}
	var got []float64
	for _, z := range raw.ZRangeWithScores(ctx, a.keys.upstream("u", "queue"), 0, -1).Val() {
		got = append(got, z.Score-limits.Score(q, limits.ClassInteractive, 0, 0, 0))
	}
	if want := []float64{0, 0, 0, 0, 0.25, 1, 1, 2}; !slices.Equal(got, want) {
		t.Fatalf("queue start tags in order = %v, want %v", got, want)
	}
	if f := raw.HGet(ctx, a.keys.upstream("u", "fair"), "f:"+limits.Tenant{Key: "flood"}.Flow()).Val(); f != "3" {
		t.Fatalf("the flood's finish tag = %q, want 3", f)
	}
	// r alone: share 4, finish 0.25; s beside r: share 2, finish 0.5; r
	// again: share 2, finish 0.75; each with its key's weight.
	want := map[string]string{"f:research-r": "0.75", "w:research-r": "1", "f:research-s": "0.5", "w:research-s": "1"}
	if tags := raw.HGetAll(ctx, a.keys.upstream("u", "fair:interactive/research")).Val(); !maps.Equal(tags, want) {
		t.Fatalf("the team's tags = %v, want %v", tags, want)
	}
	admitDenied(t, b, adm("nightly", limits.ClassBatch), "shed", 0, 0)
	a.Settle(holder, keep)
	cancel()
}

// TestRedisFairQueueGrantSequence runs fairtest's cases through the queue
// shared in Redis: the same order as the memory queue's.
func TestRedisFairQueueGrantSequence(t *testing.T) { fairtest.Run(t, redisGrantSequence) }

// redisGrantSequence holds the only slot of an upstream, queues tc's
// arrivals in order through one instance, then frees the slot and returns
// the order the waiters were admitted in (each settles at once),
// space-separated.
func redisGrantSequence(t *testing.T, tc fairtest.Case) string {
	t.Helper()
	clk := clock.NewFake(t0)
	longLease := func(s *config.State, _ *RedisOptions) { s.LeaseTTL = time.Minute } // outlives the clock's moves
	r := newTestRedis(t, testCircuit, clk, longLease)
	adm := func(tn limits.Tenant) Admission {
		return Admission{Upstream: "u", MaxConcurrency: 1, Queue: tc.Queue, Wait: true, Tenant: tn}
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	holder := admitOK(t, r, adm(limits.Tenant{Key: "holder"}))
	order := make(chan string, len(tc.Arrivals))
	for i, a := range tc.Arrivals {
		// Every waiter parks on two timers: its queue timeout and its next poll.
		clk.Advance(a.After)
		waitFor(t, "the waiters to ask again", func() bool { return clk.Pending() == 2*i })
		go func() {
			tk, d := r.Admit(ctx, adm(a.Tenant))
			if d != nil {
				order <- a.Label + "(" + d.Reason + ")"
				return
			}
			order <- a.Label
			r.Settle(tk, keep)
		}()
		waitFor(t, a.Label+" to queue", func() bool { return clk.Pending() == 2*(i+1) || len(order) > 0 })
		if len(order) > 0 {
			t.Fatalf("%s was not queued: %s", a.Label, <-order)
		}
	}
	r.Settle(holder, keep)
	var got []string
	for range tc.Arrivals {
		select {
		case l := <-order:
			got = append(got, l)
		case <-time.After(5 * time.Second):
			t.Fatalf("served %v, then nobody", got)
		}
	}
	return strings.Join(got, " ")
}

// TestRedisFairQueueRefund: a queued request that gives up (here its
// caller leaves) gives its flow back what its joining charged
// (limits.Refund, leave.lua): the flow's finish tag moves back, its refund
// total forward, and the flow's request still waiting learns it on its
// next call and ranks that much earlier (limits.Start).
func TestRedisFairQueueRefund(t *testing.T) {
	q := config.Queue{Enabled: true, MaxLength: 10, Timeout: 10 * time.Second, Discipline: config.DisciplineFair}
	adm := func(key string) Admission {
		return Admission{Upstream: "u", MaxConcurrency: 1, Queue: q, Wait: true,
			Tenant: limits.Tenant{Team: "research", Key: key, Weight: 1, TeamWeight: 1}}
	}
	clk := clock.NewFake(t0)
	r := newTestRedis(t, testCircuit, clk)
	raw := rawClient(t)
	ctx := context.Background()
	holder := admitOK(t, r, adm("holder"))
	defer r.Settle(holder, keep)
	first, cancelFirst := context.WithCancel(ctx)
	rest, cancelRest := context.WithCancel(ctx)
	defer cancelRest()
	base := clk.Pending()
	gone := admitAsync(r, first, adm("r")) // start 0, finish 1
	waitQueued(t, clk, base, gone)
	base = clk.Pending()
	waiting := admitAsync(r, rest, adm("r")) // start 1, finish 2
	waitQueued(t, clk, base, waiting)
	hash := r.keys.upstream("u", "fair:interactive/research")
	cancelFirst()
	if res := receive(t, gone); res.d == nil || res.d.Reason != "canceled" {
		t.Fatalf("the first request: %+v, want canceled", res.d)
	}
	if f, rf := raw.HGet(ctx, hash, "f:r").Val(), raw.HGet(ctx, hash, "r:r").Val(); f != "1" || rf != "1" {
		t.Fatalf("after the refund: finish tag %q, refunds %q; want 1 and 1", f, rf)
	}
	// The waiting request's next call learns the refund, the one after
	// ranks by it: its start tag moves from 1 to 0. (The clock moves a poll
	// at a time, at most 2 s, well within the queue's timeout.)
	moved := time.Duration(0)
	waitFor(t, "the waiting request to rank by the refund", func() bool {
		zs := raw.ZRangeWithScores(ctx, r.keys.upstream("u", "queue"), 0, -1).Val()
		if len(zs) == 1 && zs[0].Score == limits.Score(q, limits.ClassInteractive, 0, 0, 0) {
			return true
		}
		if moved < 2*time.Second {
			clk.Advance(queuePoll)
			moved += queuePoll
		}
		return false
	})
	cancelRest()
	receive(t, waiting)
}
