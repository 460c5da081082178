package state

import (
	"context"
	"testing"
	"time"

	"switchyard/internal/affinity"
	"switchyard/internal/clock"
)

// Tests of the pins of stateful objects shared through Redis.

// pinDriver is a RedisDriver over r with a local pin table of ttl.
func pinDriver(r *Redis, clk clock.Clock, ttl time.Duration) *RedisDriver {
	return NewRedisDriver(r, NewLocal(LocalOptions{Clock: clk, Pins: affinity.NewPinTable(100, ttl, clk)}))
}

// An object pinned through one instance is found through another, each
// call one round trip; the key lives under the prefix with the TTL.
func TestRedisPinsShared(t *testing.T) {
	clk := clock.NewFake(t0)
	recA, recB := newRecorder(), newRecorder()
	a := newTestRedis(t, testCircuit, clk, withOptions(recA.options()))
	b := newTestRedis(t, testCircuit, clk, sharing(a), withOptions(recB.options()))
	const ttl = 90 * time.Minute
	da, db := pinDriver(a, clk, ttl), pinDriver(b, clk, ttl)
	ctx := context.Background()
	r1, c1, r2 := affinity.ResponseRef("resp_1"), affinity.ConversationRef("conv_1"), affinity.ResponseRef("resp_2")

	if up, ref, ok := db.Holder(ctx, r1); ok {
		t.Fatalf("Holder before any pin = %q %q", up, ref)
	}
	da.Pin(ctx, "up-a", r1, c1)
	tests := []struct {
		name    string
		refs    []affinity.StateRef
		want    string
		wantRef affinity.StateRef
	}{
		{"response", []affinity.StateRef{r1}, "up-a", r1},
		{"conversation", []affinity.StateRef{c1}, "up-a", c1},
		{"first known of several", []affinity.StateRef{r2, c1}, "up-a", c1},
		{"unknown", []affinity.StateRef{r2}, "", ""},
		{"other kind of the same id", []affinity.StateRef{affinity.ConversationRef("resp_1")}, "", ""},
		{"no refs", nil, "", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			up, ref, ok := db.Holder(ctx, tt.refs...)
			if up != tt.want || ref != tt.wantRef || ok != (tt.want != "") {
				t.Fatalf("B.Holder(%q) = (%q, %q, %v), want (%q, %q)", tt.refs, up, ref, ok, tt.want, tt.wantRef)
			}
		})
	}
	if _, _, ok := db.local.Holder(ctx, r1); ok {
		t.Error("B's local table holds a pin B only read")
	}
	if up, _, ok := da.local.Holder(ctx, r1); !ok || up != "up-a" {
		t.Errorf("A's local table = %q %v, want the pin written through", up, ok)
	}
	recA.mu.Lock()
	pins := recA.roundTrips[OpAffinity]
	recA.mu.Unlock()
	if pins != 1 {
		t.Errorf("A's round trips for one Pin of two refs = %d, want 1", pins)
	}
	recB.mu.Lock()
	lookups := recB.roundTrips[OpAffinity]
	recB.mu.Unlock()
	if lookups != 6 { // the first miss and the five lookups with refs ("no refs" asks nothing)
		t.Errorf("B's round trips for 6 lookups = %d, want 6", lookups)
	}

	rdb := rawClient(t)
	for _, ref := range []affinity.StateRef{r1, c1} {
		key := a.prefix + "pin:" + string(ref)
		if v, err := rdb.Get(ctx, key).Result(); err != nil || v != "up-a" {
			t.Errorf("GET %s = %q, %v; want up-a", key, v, err)
		}
		if d, err := rdb.PTTL(ctx, key).Result(); err != nil || d <= ttl-time.Minute || d > ttl {
			t.Errorf("PTTL %s = %v, %v; want about %v", key, d, err, ttl)
		}
	}
}

// A pin made while Redis is down is kept in the local table, which answers
// while Redis is down and for what Redis does not know.
func TestRedisPinsFallback(t *testing.T) {
	clk := clock.NewFake(t0)
	rec := newRecorder()
	r := newTestRedis(t, testCircuit, clk, withURL("redis://127.0.0.1:1/0", 100*time.Millisecond), withOptions(rec.options()))
	d := pinDriver(r, clk, time.Hour)
	ctx := context.Background()
	r1 := affinity.ResponseRef("resp_1")
	d.Pin(ctx, "up-a", r1) // Redis believed up: the call fails
	if r.Up() {
		t.Fatal("Up() after a failed call")
	}
	if up, ref, ok := d.Holder(ctx, r1); !ok || up != "up-a" || ref != r1 {
		t.Fatalf("Holder while down = %q %q %v, want up-a from the local table", up, ref, ok)
	}
	clk.Advance(time.Hour)
	if up, _, ok := d.Holder(ctx, r1); ok {
		t.Fatalf("Holder after the TTL = %q, want unknown", up)
	}
	fb, _ := rec.snapshot()
	if fb[OpAffinity] != 3 { // the failed Pin and the two lookups while known down
		t.Fatalf("affinity fallbacks = %d (%v), want 3", fb[OpAffinity], fb)
	}
}

// Redis knows nothing of a pin made while it was down: the local table
// still answers for it once Redis is back.
func TestRedisPinsLocalAfterOutage(t *testing.T) {
	clk := clock.NewFake(t0)
	r := newTestRedis(t, testCircuit, clk)
	d := pinDriver(r, clk, time.Hour)
	ctx := context.Background()
	r1 := affinity.ResponseRef("resp_1")
	d.local.Pin(ctx, "up-a", r1) // as Pin does while Redis is down
	if up, _, ok := d.Holder(ctx, r1); !ok || up != "up-a" {
		t.Fatalf("Holder = %q %v, want up-a from the local table after Redis's miss", up, ok)
	}
	if !r.Up() {
		t.Fatal("a miss marked Redis down")
	}
}

// The memory driver keeps pins in its own table, for its TTL.
func TestLocalPins(t *testing.T) {
	clk := clock.NewFake(t0)
	d := NewLocal(LocalOptions{Clock: clk, Pins: affinity.NewPinTable(10, time.Minute, clk)})
	ctx := context.Background()
	r1 := affinity.ResponseRef("resp_1")
	d.Pin(ctx, "up-a", r1)
	if up, ref, ok := d.Holder(ctx, r1); !ok || up != "up-a" || ref != r1 {
		t.Fatalf("Holder = %q %q %v, want up-a", up, ref, ok)
	}
	clk.Advance(time.Minute)
	if up, _, ok := d.Holder(ctx, r1); ok {
		t.Fatalf("Holder after the TTL = %q, want unknown", up)
	}
	if def := NewLocal(LocalOptions{Clock: clk}); def.pins.TTL() != affinity.DefaultResponseTTL {
		t.Fatalf("default pin TTL = %v, want %v", def.pins.TTL(), affinity.DefaultResponseTTL)
	}
}
