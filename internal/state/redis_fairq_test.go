package state

import (
	"context"
	"slices"
	"testing"
	"time"

	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/limits"
)

// The shared queue ranks its waiters by limits.Score, computed in Go from
// the virtual times kept in Redis: a key flooding the queue through one
// instance pushes its own later requests back, and another key's first
// request, joining through another instance, ranks with the flood's first.
// A batch request meeting an interactive waiter is shed, as in memory.
func TestRedisFairQueue(t *testing.T) {
	q := config.Queue{Enabled: true, MaxLength: 10, Timeout: 10 * time.Second, Discipline: config.DisciplineFair}
	adm := func(key string, c limits.Class) Admission {
		return Admission{Upstream: "u", MaxConcurrency: 1, Queue: q, Wait: true, Tenant: limits.Tenant{Class: c, Key: key, Weight: 1}}
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
	}{{a, "flood", 0}, {a, "flood", 1}, {b, "flood", 2}, {b, "other", 0}, {a, "other", 1}}
	for i, j := range joins {
		base := clk.Pending()
		res := admitAsync(j.r, ctx, adm(j.key, limits.ClassInteractive))
		waitQueued(t, clk, base, res)
		if n := raw.ZCard(ctx, a.key("u", "queue")).Val(); n != int64(i+1) {
			t.Fatalf("after join %d the queue holds %d, want %d", i+1, n, i+1)
		}
	}
	var got []float64
	for _, z := range raw.ZRangeWithScores(ctx, a.key("u", "queue"), 0, -1).Val() {
		got = append(got, z.Score-limits.Score(q, limits.ClassInteractive, 0, 0, 0))
	}
	if want := []float64{0, 0, 1, 1, 2}; !slices.Equal(got, want) {
		t.Fatalf("queue start tags in order = %v, want %v", got, want)
	}
	if f := raw.HGet(ctx, a.key("u", "fair"), "f:"+limits.Tenant{Key: "flood"}.Flow()).Val(); f != "3" {
		t.Fatalf("the flood's finish tag = %q, want 3", f)
	}
	admitDenied(t, b, adm("nightly", limits.ClassBatch), "shed", 0, 0)
	a.Settle(holder, keep)
	cancel()
}
