package state

import (
	"context"
	"slices"
	"testing"
	"time"

	"switchyard/internal/affinity"
	"switchyard/internal/clock"
)

// Tests of the Responses conversations shared through Redis.

// convDriver is a RedisDriver over r with a local conversation table of ttl.
func convDriver(r *Redis, clk clock.Clock, ttl time.Duration) *RedisDriver {
	return NewRedisDriver(r, NewLocal(LocalOptions{Clock: clk, Conversations: affinity.NewConversationTable(100, ttl, clk)}))
}

// A conversation kept through one instance is read through another; the
// key lives under the prefix with the TTL; deleting a client key deletes
// its conversations, and only its, on every instance.
func TestRedisConversationsShared(t *testing.T) {
	clk := clock.NewFake(t0)
	a := newTestRedis(t, testCircuit, clk)
	b := newTestRedis(t, testCircuit, clk, sharing(a))
	const ttl = 90 * time.Minute
	da, db := convDriver(a, clk, ttl), convDriver(b, clk, ttl)
	ctx := context.Background()
	c1 := affinity.Conversation{Key: "k1", Items: []byte(`[{"role":"user","content":"hi"}]`)}
	c2 := affinity.Conversation{Key: "k1", Refused: "store: false"}
	c3 := affinity.Conversation{Key: "k2", Items: []byte(`[]`)}
	da.Keep(ctx, "resp_1", c1)
	da.Keep(ctx, "resp_2", c2)
	db.Keep(ctx, "resp_3", c3)

	check := func(when string, want map[string]*affinity.Conversation) {
		t.Helper()
		for _, id := range []string{"resp_1", "resp_2", "resp_3", "resp_4"} {
			got, ok := db.Conversation(ctx, id)
			w := want[id]
			if ok != (w != nil) || w != nil && (got.Key != w.Key || string(got.Items) != string(w.Items) || got.Refused != w.Refused) {
				t.Fatalf("%s: B.Conversation(%s) = %+v %v, want %+v", when, id, got, ok, w)
			}
		}
	}
	check("kept", map[string]*affinity.Conversation{"resp_1": &c1, "resp_2": &c2, "resp_3": &c3})
	if _, ok := db.local.Conversation(ctx, "resp_1"); ok {
		t.Error("B's local table holds a conversation B only read")
	}
	rdb := rawClient(t)
	if v, err := rdb.Get(ctx, a.prefix+"conv:resp_1").Result(); err != nil || v != `{"k":"k1","i":[{"role":"user","content":"hi"}]}` {
		t.Errorf("GET conv:resp_1 = %s, %v; want the conversation as JSON", v, err)
	}
	for _, id := range []string{"resp_1", "resp_2", "resp_3"} {
		key := a.prefix + "conv:" + id
		if d, err := rdb.PTTL(ctx, key).Result(); err != nil || d <= ttl-time.Minute || d > ttl {
			t.Errorf("PTTL %s = %v, %v; want about %v", key, d, err, ttl)
		}
	}

	db.ForgetKey(ctx, "k1") // through B: A's keeping is in Redis's index
	check("k1 forgotten", map[string]*affinity.Conversation{"resp_3": &c3})
	if keys := keysUnder(t, rdb, a.prefix); !slices.Equal(keys, []string{a.prefix + "conv:resp_3", a.prefix + "convkey:k2"}) {
		t.Fatalf("keys after forgetting k1 = %q", keys)
	}
}

// A conversation kept while Redis is down is served by the local table,
// for its TTL.
func TestRedisConversationsFallback(t *testing.T) {
	clk := clock.NewFake(t0)
	r := newTestRedis(t, testCircuit, clk, withURL("redis://127.0.0.1:1/0", 100*time.Millisecond))
	d := convDriver(r, clk, time.Hour)
	ctx := context.Background()
	d.Keep(ctx, "resp_1", affinity.Conversation{Key: "k1", Items: []byte(`[]`)}) // Redis believed up: the call fails
	if r.Up() {
		t.Fatal("Up() after a failed call")
	}
	if c, ok := d.Conversation(ctx, "resp_1"); !ok || c.Key != "k1" {
		t.Fatalf("Conversation while down = %+v %v, want k1's from the local table", c, ok)
	}
	clk.Advance(time.Hour)
	if c, ok := d.Conversation(ctx, "resp_1"); ok {
		t.Fatalf("Conversation after the TTL = %+v, want none", c)
	}
}
