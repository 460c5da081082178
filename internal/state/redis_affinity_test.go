package state

import (
	"context"
	"slices"
	"testing"
	"time"

	"switchyard/internal/affinity"
	"switchyard/internal/clock"
	"switchyard/internal/outcome"
)

// Tests of the sticky table shared through Redis (RedisAffinity).

func affinityPolicy(sliding, absolute time.Duration) affinity.Policy {
	return affinity.Policy{Sliding: sliding, Absolute: absolute}
}

func testKey(session string) affinity.Key {
	return affinity.Key{APIKey: "team", Route: "gpt-*", Session: session}
}

// affinityPair is two instances on one prefix, each with its local table.
type affinityPair struct {
	clk        *clock.Fake
	a, b       *Redis
	la, lb     *affinity.Table
	affA, affB *RedisAffinity
}

func newAffinityPair(t *testing.T) *affinityPair {
	t.Helper()
	p := &affinityPair{clk: clock.NewFake(t0)}
	p.a = newTestRedis(t, testCircuit, p.clk)
	p.b = newTestRedis(t, testCircuit, p.clk, sharing(p.a))
	p.la, p.lb = affinity.NewTable(100, p.clk), affinity.NewTable(100, p.clk)
	p.affA, p.affB = p.a.Affinity(p.la), p.b.Affinity(p.lb)
	return p
}

// A session bound through one instance is served by the same upstream
// through another.
func TestRedisAffinitySharedBinding(t *testing.T) {
	p := newAffinityPair(t)
	pol := affinityPolicy(time.Minute, time.Hour)
	k := testKey("s1")
	if up, ok := p.affB.Get(context.Background(), k, pol); ok {
		t.Fatalf("Get before any Bind = %q, want a miss", up)
	}
	p.affA.Bind(context.Background(), k, "up1", pol)
	if up, ok := p.affB.Get(context.Background(), k, pol); !ok || up.Home != "up1" {
		t.Fatalf("B.Get = %q %v, want up1 bound through A", up, ok)
	}
	if up, ok := p.la.Get(k, pol); !ok || up.Home != "up1" {
		t.Fatalf("A's local table = %q %v, want the binding written through", up, ok)
	}
	if _, ok := p.lb.Peek(k, pol); ok {
		t.Fatal("B's local table holds a binding B only read")
	}
	// Another key, route or session is another binding.
	for _, other := range []affinity.Key{
		{APIKey: "other", Route: k.Route, Session: k.Session},
		{APIKey: k.APIKey, Route: "claude-*", Session: k.Session},
		{APIKey: k.APIKey, Route: k.Route, Session: "s2"},
	} {
		if up, ok := p.affB.Get(context.Background(), other, pol); ok {
			t.Fatalf("Get(%+v) = %q, want a miss", other, up)
		}
	}
	p.clk.Advance(10 * time.Second)
	b, ok := p.affB.Peek(context.Background(), k, pol)
	if !ok || b.Upstream != "up1" || b.Key != k || !b.CreatedAt.Equal(t0) || !b.LastUsed.Equal(t0) {
		t.Fatalf("Peek = %+v %v, want up1 created and used at t0 (the Get was at t0)", b, ok)
	}
	if d := b.ExpiresAt.Sub(p.clk.Now()); d <= 0 || d > time.Minute {
		t.Fatalf("Peek.ExpiresAt = now+%v, want within the sliding minute", d)
	}
	// Empty sessions and upstreams are not bound.
	p.affA.Bind(context.Background(), testKey(""), "up1", pol)
	p.affA.Bind(context.Background(), testKey("s3"), "", pol)
	if keys := keysUnder(t, rawClient(t), p.a.prefix+"aff:"); len(keys) != 2 {
		t.Fatalf("affinity keys = %q, want the one binding and its session index", keys)
	}
}

// Bindings expire by their sliding and absolute TTLs, judged on the
// injected clock; an expired one is deleted from Redis by the Get that
// finds it so.
func TestRedisAffinityTTLs(t *testing.T) {
	type step struct {
		advance time.Duration
		hit     bool
	}
	tests := []struct {
		name  string
		pol   affinity.Policy
		steps []step
	}{
		{"sliding: each use restarts it", affinityPolicy(10*time.Second, 0),
			[]step{{9 * time.Second, true}, {9 * time.Second, true}, {9*time.Second + 999*time.Millisecond, true}, {10 * time.Second, false}}},
		{"sliding: expires exactly at the TTL", affinityPolicy(10*time.Second, 0),
			[]step{{10 * time.Second, false}}},
		{"absolute: however often used", affinityPolicy(10*time.Second, 25*time.Second),
			[]step{{8 * time.Second, true}, {8 * time.Second, true}, {8 * time.Second, true}, {time.Second, false}}},
		{"absolute only", affinityPolicy(0, 25*time.Second),
			[]step{{24 * time.Second, true}, {time.Second, false}}},
		{"no limits", affinityPolicy(0, 0),
			[]step{{time.Hour, true}, {24 * time.Hour, true}}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newAffinityPair(t)
			raw := rawClient(t)
			k := testKey("s1")
			bk := p.a.keys.binding(k)
			p.affA.Bind(context.Background(), k, "up1", tc.pol)
			for i, s := range tc.steps {
				p.clk.Advance(s.advance)
				if _, ok := p.affB.Peek(context.Background(), k, tc.pol); ok != s.hit {
					t.Fatalf("step %d (+%v): Peek hit %v, want %v", i, p.clk.Now().Sub(t0), ok, s.hit)
				}
				up, ok := p.affB.Get(context.Background(), k, tc.pol)
				if ok != s.hit || s.hit && up.Home != "up1" {
					t.Fatalf("step %d (+%v): Get = %q %v, want hit %v", i, p.clk.Now().Sub(t0), up, ok, s.hit)
				}
				exists := raw.Exists(context.Background(), bk).Val() == 1
				if exists != s.hit {
					t.Fatalf("step %d: binding key exists %v after the Get, want %v", i, exists, s.hit)
				}
				if s.hit {
					if ttl := raw.PTTL(context.Background(), bk).Val(); ttl <= 0 {
						t.Fatalf("step %d: binding has no TTL (%v)", i, ttl)
					}
				}
			}
		})
	}
}

// Rebinding to the same upstream keeps the creation time (the absolute TTL
// keeps running); another upstream, or an expired binding, starts anew.
func TestRedisAffinityRebind(t *testing.T) {
	p := newAffinityPair(t)
	pol := affinityPolicy(10*time.Second, time.Hour)
	k := testKey("s1")
	steps := []struct {
		advance  time.Duration
		on       *RedisAffinity
		upstream string
		created  time.Duration // after t0
	}{
		{0, p.affA, "up1", 0},
		{5 * time.Second, p.affB, "up1", 0},
		{5 * time.Second, p.affA, "up1", 0},
		{5 * time.Second, p.affB, "up2", 15 * time.Second},
		{5 * time.Second, p.affA, "up2", 15 * time.Second},
		{10 * time.Second, p.affB, "up2", 30 * time.Second}, // expired (idle 10s): a new binding
	}
	for i, s := range steps {
		p.clk.Advance(s.advance)
		s.on.Bind(context.Background(), k, s.upstream, pol)
		b, ok := p.affB.Peek(context.Background(), k, pol)
		if !ok || b.Upstream != s.upstream || !b.CreatedAt.Equal(t0.Add(s.created)) || !b.LastUsed.Equal(p.clk.Now()) {
			t.Fatalf("step %d: Peek = %+v %v, want %s created at +%v, used now (+%v)",
				i, b, ok, s.upstream, s.created, p.clk.Now().Sub(t0))
		}
	}
}

// Lookup lists a session's bindings under every key and route, ordered by
// route then key; DeleteSession removes them from Redis and the local table.
func TestRedisAffinityLookupAndDelete(t *testing.T) {
	p := newAffinityPair(t)
	raw := rawClient(t)
	ctx := context.Background()
	pol := affinityPolicy(time.Minute, time.Hour)
	binds := []struct {
		key      affinity.Key
		upstream string
	}{
		{affinity.Key{APIKey: "beta", Route: "r-b", Session: "s1"}, "up3"},
		{affinity.Key{APIKey: "alpha", Route: "r-b", Session: "s1"}, "up2"},
		{affinity.Key{APIKey: "alpha", Route: "r-a", Session: "s1"}, "up1"},
		{affinity.Key{APIKey: "alpha", Route: "r-a", Session: "s2"}, "up9"},
	}
	for i, bd := range binds {
		[]*RedisAffinity{p.affA, p.affB}[i%2].Bind(context.Background(), bd.key, bd.upstream, pol)
		p.clk.Advance(time.Second)
	}
	got := p.affB.Lookup(context.Background(), "s1")
	want := []struct{ route, key, upstream string }{{"r-a", "alpha", "up1"}, {"r-b", "alpha", "up2"}, {"r-b", "beta", "up3"}}
	if len(got) != len(want) {
		t.Fatalf("Lookup(s1) = %+v, want %d bindings", got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Route != w.route || g.APIKey != w.key || g.Upstream != w.upstream || g.Session != "s1" || g.ExpiresAt.IsZero() {
			t.Fatalf("Lookup(s1)[%d] = %+v, want %s/%s → %s", i, g, w.route, w.key, w.upstream)
		}
	}
	if got := p.affA.Lookup(context.Background(), "none"); got == nil || len(got) != 0 {
		t.Fatalf("Lookup(none) = %#v, want empty and not nil", got)
	}

	// A holds s1's first and third bindings in its local table (it made
	// them); the count is of the bindings Redis held.
	if n := p.affA.DeleteSession(context.Background(), "s1"); n != 3 {
		t.Fatalf("DeleteSession(s1) = %d, want 3", n)
	}
	if got := p.affB.Lookup(context.Background(), "s1"); len(got) != 0 {
		t.Fatalf("Lookup(s1) after DeleteSession = %+v", got)
	}
	if got := p.la.Lookup("s1"); len(got) != 0 {
		t.Fatalf("A's local table keeps %+v after DeleteSession", got)
	}
	for _, bd := range binds[:3] {
		if up, ok := p.affB.Get(context.Background(), bd.key, pol); ok {
			t.Fatalf("Get(%+v) = %q after DeleteSession", bd.key, up)
		}
		if raw.Exists(ctx, p.a.keys.binding(bd.key)).Val() != 0 {
			t.Fatalf("binding %+v still in Redis", bd.key)
		}
	}
	if raw.Exists(ctx, p.a.keys.session("s1")).Val() != 0 {
		t.Fatal("session index still in Redis")
	}
	if got := p.affA.Lookup(context.Background(), "s2"); len(got) != 1 || got[0].Upstream != "up9" {
		t.Fatalf("Lookup(s2) = %+v, want the other session untouched", got)
	}
	if n := p.affB.DeleteSession(context.Background(), "s2"); n != 1 {
		t.Fatalf("DeleteSession(s2) through B = %d, want 1", n)
	}
	if n := p.affB.DeleteSession(context.Background(), "s2"); n != 0 {
		t.Fatalf("DeleteSession(s2) again = %d, want 0", n)
	}
}

// Settle binds the session in Redis and in the local table in its round trip.
func TestRedisAffinitySettleBinds(t *testing.T) {
	p := newAffinityPair(t)
	pol := affinityPolicy(time.Minute, time.Hour)
	k := testKey("s1")
	tk := admitOK(t, p.a, Admission{Upstream: "up1"})
	p.a.Settle(tk, Settlement{Outcome: outcome.Outcome{Class: outcome.Success}, Bind: &Bind{Key: k, Upstream: "up1", Policy: pol}})
	if up, ok := p.la.Get(k, pol); !ok || up.Home != "up1" {
		t.Fatalf("A's local table = %q %v, want up1", up, ok)
	}
	if up, ok := p.affB.Get(context.Background(), k, pol); !ok || up.Home != "up1" {
		t.Fatalf("B.Get = %q %v, want up1 from Redis", up, ok)
	}
	if got := p.affB.Lookup(context.Background(), "s1"); len(got) != 1 || got[0].Upstream != "up1" {
		t.Fatalf("Lookup = %+v, want the binding indexed", got)
	}
	// A rebinding in Settle keeps the creation time too.
	p.clk.Advance(5 * time.Second)
	tk = admitOK(t, p.b, Admission{Upstream: "up1"})
	p.b.Settle(tk, Settlement{Outcome: outcome.Outcome{Class: outcome.Success}, Bind: &Bind{Key: k, Upstream: "up1", Policy: pol}})
	if b, ok := p.affA.Peek(context.Background(), k, pol); !ok || !b.CreatedAt.Equal(t0) || !b.LastUsed.Equal(p.clk.Now()) {
		t.Fatalf("Peek after rebinding in Settle = %+v %v", b, ok)
	}
	if b, ok := p.lb.Peek(k, pol); !ok || b.Upstream != "up1" {
		t.Fatalf("B's local table after its Settle = %+v %v", b, ok)
	}
}

// With Redis down the local table serves: sessions stay sticky per instance.
func TestRedisAffinityFallback(t *testing.T) {
	clk := clock.NewFake(t0)
	rec := newRecorder()
	r := newTestRedis(t, testCircuit, clk, withURL("redis://127.0.0.1:1/0", 100*time.Millisecond), withOptions(rec.options()))
	local := affinity.NewTable(100, clk)
	aff := r.Affinity(local)
	pol := affinityPolicy(time.Minute, time.Hour)
	k := testKey("s1")
	local.Bind(k, "up1", pol)
	// Redis is believed up: the call fails and the local table answers.
	if up, ok := aff.Get(context.Background(), k, pol); !ok || up.Home != "up1" {
		t.Fatalf("Get with Redis failing = %q %v, want up1 from the local table", up, ok)
	}
	if r.Up() {
		t.Fatal("Up() after a failed call")
	}
	// Known down: straight to the local table.
	aff.Bind(context.Background(), testKey("s2"), "up2", pol)
	if up, ok := aff.Get(context.Background(), testKey("s2"), pol); !ok || up.Home != "up2" {
		t.Fatalf("Get while down = %q %v, want up2", up, ok)
	}
	if b, ok := aff.Peek(context.Background(), k, pol); !ok || b.Upstream != "up1" {
		t.Fatalf("Peek while down = %+v %v", b, ok)
	}
	if got := aff.Lookup(context.Background(), "s2"); len(got) != 1 || got[0].Upstream != "up2" {
		t.Fatalf("Lookup while down = %+v", got)
	}
	tk, _ := r.Admit(context.Background(), Admission{Upstream: "up3"})
	r.Settle(tk, Settlement{Outcome: outcome.Outcome{Class: outcome.Success}, Bind: &Bind{Key: testKey("s3"), Upstream: "up3", Policy: pol}})
	if up, ok := aff.Get(context.Background(), testKey("s3"), pol); !ok || up.Home != "up3" {
		t.Fatalf("Get of a binding Settle made while down = %q %v", up, ok)
	}
	if n := aff.DeleteSession(context.Background(), "s2"); n != 1 {
		t.Fatalf("DeleteSession while down = %d, want 1", n)
	}
	fb, ups := rec.snapshot()
	if fb[OpAffinity] != 3 { // the failed Get and the two Gets while known down
		t.Fatalf("affinity fallbacks = %d (%v), want 3", fb[OpAffinity], fb)
	}
	if !slices.Equal(ups, []bool{false}) {
		t.Fatalf("OnUp = %v, want [false]", ups)
	}
}

// TestRedisAffinityStandIn: a stand-in bound through one instance is seen
// by the other with its home, and in the admin Lookup; binding the home
// again drops it (the same steps as affinity.TestTableStandIn).
func TestRedisAffinityStandIn(t *testing.T) {
	p := newAffinityPair(t)
	pol := affinityPolicy(time.Minute, time.Hour)
	k := testKey("s-stand")
	ctx := context.Background()
	steps := []struct {
		do        func()
		home, sub string
	}{
		{func() { p.affA.Bind(ctx, k, "up1", pol) }, "up1", ""},
		{func() { p.affA.BindStandIn(ctx, k, "up2", pol) }, "up1", "up2"},
		{func() { p.affB.BindStandIn(ctx, k, "up3", pol) }, "up1", "up3"},
		{func() { p.affB.Bind(ctx, k, "up1", pol) }, "up1", ""},
		{func() { p.affA.BindStandIn(ctx, testKey("s-new"), "up2", pol) }, "up1", ""},
	}
	for i, s := range steps {
		s.do()
		b, ok := p.affB.Get(ctx, k, pol)
		if !ok || b.Home != s.home || b.StandIn != s.sub {
			t.Fatalf("step %d: B.Get = %+v %v, want home %q stand-in %q", i, b, ok, s.home, s.sub)
		}
		if l := p.affA.Lookup(ctx, k.Session); len(l) != 1 || l[0].Upstream != s.home || l[0].StandIn != s.sub {
			t.Fatalf("step %d: Lookup = %+v", i, l)
		}
	}
	if b, ok := p.affB.Get(ctx, testKey("s-new"), pol); !ok || b.Home != "up2" || b.StandIn != "" {
		t.Fatalf("a stand-in without a binding = %+v %v, want it bound as the home", b, ok)
	}
}
