package affinity

import (
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"switchyard/internal/clock"
	"switchyard/internal/config"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func newTestTable(max int) (*Table, *clock.Fake) {
	clk := clock.NewFake(t0)
	return NewTable(max, clk), clk
}

func key(s string) Key { return Key{APIKey: "team-a", Route: "gpt-4o", Session: s} }

// mustGet fails unless k is bound to want (want "" means unbound).
func mustGet(t *testing.T, tb *Table, k Key, pol Policy, want string) {
	t.Helper()
	b, ok := tb.Get(k, pol)
	if want == "" {
		if ok {
			t.Fatalf("Get(%v) = %+v, want a miss", k, b)
		}
		return
	}
	if !ok || b.Home != want {
		t.Fatalf("Get(%v) = (%+v, %v), want home %q", k, b, ok, want)
	}
}

// TestTableStandIn: a stand-in joins a live binding without changing its
// home or its age; binding the home (again, or another) drops it; a
// stand-in for a session with no live binding makes it the home.
func TestTableStandIn(t *testing.T) {
	clk := clock.NewFake(time.Unix(0, 0))
	tb := NewTable(10, clk)
	k := key("s")
	steps := []struct {
		do        func()
		home, sub string
	}{
		{func() { tb.Bind(k, "a", DefaultPolicy) }, "a", ""},
		{func() { tb.BindStandIn(k, "b", DefaultPolicy) }, "a", "b"},
		{func() { tb.BindStandIn(k, "c", DefaultPolicy) }, "a", "c"},
		{func() { tb.Bind(k, "a", DefaultPolicy) }, "a", ""},
		{func() { tb.BindStandIn(k, "b", DefaultPolicy) }, "a", "b"},
		{func() { tb.Bind(k, "b", DefaultPolicy) }, "b", ""},
		{func() { clk.Advance(DefaultPolicy.Sliding); tb.BindStandIn(k, "c", DefaultPolicy) }, "c", ""},
	}
	for i, s := range steps {
		s.do()
		b, ok := tb.Get(k, DefaultPolicy)
		if !ok || b.Home != s.home || b.StandIn != s.sub {
			t.Fatalf("step %d: %+v (live %v), want home %q stand-in %q", i, b, ok, s.home, s.sub)
		}
		if l := tb.Lookup("s"); len(l) != 1 || l[0].Upstream != s.home || l[0].StandIn != s.sub {
			t.Fatalf("step %d: Lookup %+v", i, l)
		}
	}
}

func TestTableSlidingTTL(t *testing.T) {
	tests := []struct {
		name  string
		idle  time.Duration
		alive bool
	}{
		{"just bound", 0, true},
		{"4m59s idle", 4*time.Minute + 59*time.Second, true},
		{"5m minus 1ns idle", 5*time.Minute - 1, true},
		{"exactly 5m idle", 5 * time.Minute, false},
		{"6m idle", 6 * time.Minute, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tb, clk := newTestTable(10)
			tb.Bind(key("s"), "up-a", DefaultPolicy)
			clk.Advance(tc.idle)
			want := ""
			if tc.alive {
				want = "up-a"
			}
			if _, ok := tb.Peek(key("s"), DefaultPolicy); ok != tc.alive {
				t.Fatalf("Peek alive = %v, want %v", ok, tc.alive)
			}
			mustGet(t, tb, key("s"), DefaultPolicy, want)
			if !tc.alive && tb.Len() != 0 {
				t.Fatalf("expired binding not removed by Get: Len = %d", tb.Len())
			}
		})
	}
}

func TestTableSlidingTTLIsRefreshedByGet(t *testing.T) {
	tb, clk := newTestTable(10)
	tb.Bind(key("s"), "up-a", DefaultPolicy)
	for range 5 { // 20 minutes of use, each gap under the sliding TTL
		clk.Advance(4 * time.Minute)
		mustGet(t, tb, key("s"), DefaultPolicy, "up-a")
	}
	clk.Advance(4*time.Minute + 59*time.Second)
	mustGet(t, tb, key("s"), DefaultPolicy, "up-a")
	clk.Advance(5 * time.Minute)
	mustGet(t, tb, key("s"), DefaultPolicy, "")
}

func TestTablePeekDoesNotTouch(t *testing.T) {
	tb, clk := newTestTable(10)
	tb.Bind(key("s"), "up-a", DefaultPolicy)
	clk.Advance(4 * time.Minute)
	b, ok := tb.Peek(key("s"), DefaultPolicy)
	if !ok || b.Upstream != "up-a" || !b.LastUsed.Equal(t0) || !b.CreatedAt.Equal(t0) ||
		!b.ExpiresAt.Equal(t0.Add(5*time.Minute)) || b.Key != key("s") {
		t.Fatalf("Peek = %+v, %v", b, ok)
	}
	clk.Advance(time.Minute) // 5m since the Bind: Peek must not have refreshed it
	if _, ok := tb.Peek(key("s"), DefaultPolicy); ok {
		t.Fatal("Peek refreshed the sliding TTL")
	}
	if tb.Len() != 1 {
		t.Fatalf("Peek removed the expired binding: Len = %d", tb.Len())
	}
	if h, m, _ := tb.Stats(); h != 0 || m != 0 {
		t.Fatalf("Peek counted in stats: hits %d misses %d", h, m)
	}
}

func TestTableAbsoluteTTL(t *testing.T) {
	tests := []struct {
		name  string
		touch func(tb *Table)
	}{
		{"touched by Get every minute", func(tb *Table) { tb.Get(key("s"), DefaultPolicy) }},
		{"rebound to the same upstream every minute", func(tb *Table) { tb.Bind(key("s"), "up-a", DefaultPolicy) }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tb, clk := newTestTable(10)
			tb.Bind(key("s"), "up-a", DefaultPolicy)
			for range 29 {
				clk.Advance(time.Minute)
				tc.touch(tb)
			}
			clk.Advance(59 * time.Second) // 29m59s after the first Bind
			b, ok := tb.Peek(key("s"), DefaultPolicy)
			if !ok || !b.CreatedAt.Equal(t0) || !b.ExpiresAt.Equal(t0.Add(30*time.Minute)) {
				t.Fatalf("at 29m59s Peek = %+v, %v; want alive, created at t0, expiring at 30m", b, ok)
			}
			mustGet(t, tb, key("s"), DefaultPolicy, "up-a")
			clk.Advance(time.Second) // exactly 30m
			mustGet(t, tb, key("s"), DefaultPolicy, "")
		})
	}
}

func TestTableRebind(t *testing.T) {
	tests := []struct {
		name        string
		gap         time.Duration // between the two Binds
		keepAlive   bool          // Get every minute in between
		second      string        // upstream of the second Bind
		wantCreated time.Duration // offset from t0
	}{
		{"same upstream keeps the creation time", 10 * time.Minute, true, "up-a", 0},
		{"other upstream resets the creation time", 10 * time.Minute, true, "up-b", 10 * time.Minute},
		{"same upstream after expiry starts anew", 6 * time.Minute, false, "up-a", 6 * time.Minute},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tb, clk := newTestTable(10)
			tb.Bind(key("s"), "up-a", DefaultPolicy)
			if tc.keepAlive {
				for range int(tc.gap / time.Minute) {
					clk.Advance(time.Minute)
					mustGet(t, tb, key("s"), DefaultPolicy, "up-a")
				}
			} else {
				clk.Advance(tc.gap)
			}
			tb.Bind(key("s"), tc.second, DefaultPolicy)
			b, ok := tb.Peek(key("s"), DefaultPolicy)
			if !ok || b.Upstream != tc.second || !b.CreatedAt.Equal(t0.Add(tc.wantCreated)) ||
				!b.LastUsed.Equal(t0.Add(tc.gap)) {
				t.Fatalf("after rebind Peek = %+v, %v; want upstream %s created at +%v", b, ok, tc.second, tc.wantCreated)
			}
			if tb.Len() != 1 {
				t.Fatalf("Len = %d, want 1", tb.Len())
			}
		})
	}
}

func TestTableRebindToOtherUpstreamRestartsAbsoluteTTL(t *testing.T) {
	tb, clk := newTestTable(10)
	tb.Bind(key("s"), "up-a", DefaultPolicy)
	for range 20 {
		clk.Advance(time.Minute)
		tb.Get(key("s"), DefaultPolicy)
	}
	tb.Bind(key("s"), "up-b", DefaultPolicy) // at 20m
	for range 29 {
		clk.Advance(time.Minute)
		mustGet(t, tb, key("s"), DefaultPolicy, "up-b")
	}
	clk.Advance(time.Minute) // 30m after the rebind
	mustGet(t, tb, key("s"), DefaultPolicy, "")
}

func TestTableLRUEviction(t *testing.T) {
	const n = 10000
	tb, clk := newTestTable(n)
	for i := range n {
		tb.Bind(key(fmt.Sprint("s", i)), "up-a", DefaultPolicy)
		if i%1000 == 999 {
			clk.Advance(time.Second)
		}
	}
	if tb.Len() != n {
		t.Fatalf("Len = %d, want %d", tb.Len(), n)
	}
	mustGet(t, tb, key("s0"), DefaultPolicy, "up-a") // the oldest, touched: now the most recent

	tb.Bind(key("s-new"), "up-b", DefaultPolicy) // the 10,001st session
	if tb.Len() != n {
		t.Fatalf("Len = %d after the 10,001st Bind, want %d", tb.Len(), n)
	}
	if _, ok := tb.Peek(key("s1"), DefaultPolicy); ok {
		t.Fatal("s1, the least recently used, was not evicted")
	}
	for _, s := range []string{"s0", "s2", "s9999", "s-new"} {
		if _, ok := tb.Peek(key(s), DefaultPolicy); !ok {
			t.Fatalf("%s was evicted", s)
		}
	}
	if len(tb.Lookup("s1")) != 0 {
		t.Fatal("evicted s1 still in the session index")
	}
	if _, _, ev := tb.Stats(); ev != 1 {
		t.Fatalf("evictions = %d, want 1", ev)
	}

	tb.Bind(key("s-newer"), "up-b", DefaultPolicy)
	if _, ok := tb.Peek(key("s2"), DefaultPolicy); ok {
		t.Fatal("s2 was not evicted next")
	}
	if _, _, ev := tb.Stats(); ev != 2 {
		t.Fatalf("evictions = %d, want 2", ev)
	}
}

func TestTableEvictionOrderSmall(t *testing.T) {
	// A Bind to an existing key and a Get both refresh recency; Peek does not.
	tb, _ := newTestTable(3)
	tb.Bind(key("a"), "u", DefaultPolicy)
	tb.Bind(key("b"), "u", DefaultPolicy)
	tb.Bind(key("c"), "u", DefaultPolicy)
	tb.Bind(key("a"), "u", DefaultPolicy) // order: a c b
	tb.Peek(key("b"), DefaultPolicy)      // no change
	tb.Bind(key("d"), "u", DefaultPolicy) // evicts b
	tb.Get(key("c"), DefaultPolicy)       // order: c d a
	tb.Bind(key("e"), "u", DefaultPolicy) // evicts a
	var alive []string
	for _, s := range []string{"a", "b", "c", "d", "e"} {
		if _, ok := tb.Peek(key(s), DefaultPolicy); ok {
			alive = append(alive, s)
		}
	}
	if fmt.Sprint(alive) != "[c d e]" {
		t.Fatalf("alive = %v, want [c d e]", alive)
	}
}

func TestTableExpiredTailIsCollectedNotEvicted(t *testing.T) {
	tb, clk := newTestTable(3)
	tb.Bind(key("a"), "u", DefaultPolicy)
	tb.Bind(key("b"), "u", DefaultPolicy)
	clk.Advance(5 * time.Minute) // a and b expire
	tb.Bind(key("c"), "u", DefaultPolicy)
	if tb.Len() != 1 {
		t.Fatalf("Len = %d, want 1 (expired tail collected)", tb.Len())
	}
	tb.Bind(key("d"), "u", DefaultPolicy)
	tb.Bind(key("e"), "u", DefaultPolicy)
	if _, _, ev := tb.Stats(); ev != 0 {
		t.Fatalf("evictions = %d, want 0", ev)
	}
}

func TestTableDeleteSessionAndLookup(t *testing.T) {
	tb, clk := newTestTable(100)
	binds := []struct {
		k  Key
		up string
	}{
		{Key{"team-b", "gpt-4o", "S"}, "up-1"},
		{Key{"team-a", "gpt-4o", "S"}, "up-2"},
		{Key{"team-a", "claude-*", "S"}, "up-3"},
		{Key{"team-a", "gpt-4o", "other"}, "up-4"},
		{Key{"team-a", "gpt-4o-mini", "S"}, "up-5"},
	}
	for _, b := range binds {
		tb.Bind(b.k, b.up, DefaultPolicy)
		clk.Advance(time.Second)
	}
	// The gpt-4o-mini binding expires under its short route policy.
	short := Policy{Sliding: 2 * time.Second, Absolute: time.Hour}
	tb.Bind(Key{"team-a", "gpt-4o-mini", "S"}, "up-5", short)
	clk.Advance(2 * time.Second)

	got := tb.Lookup("S")
	want := []struct{ route, key, up string }{
		{"claude-*", "team-a", "up-3"},
		{"gpt-4o", "team-a", "up-2"},
		{"gpt-4o", "team-b", "up-1"},
	}
	if len(got) != len(want) {
		t.Fatalf("Lookup(S) = %+v, want %d bindings", got, len(want))
	}
	for i, w := range want {
		g := got[i]
		if g.Route != w.route || g.APIKey != w.key || g.Upstream != w.up || g.Session != "S" {
			t.Fatalf("Lookup(S)[%d] = %+v, want %+v", i, g, w)
		}
		if !g.ExpiresAt.Equal(g.LastUsed.Add(5 * time.Minute)) {
			t.Fatalf("Lookup(S)[%d].ExpiresAt = %v, want LastUsed+5m", i, g.ExpiresAt)
		}
	}
	if l := tb.Lookup("nobody"); l == nil || len(l) != 0 {
		t.Fatalf("Lookup(nobody) = %#v, want an empty non-nil slice", l)
	}

	if n := tb.DeleteSession("S"); n != 3 {
		t.Fatalf("DeleteSession(S) = %d, want 3 live bindings", n)
	}
	if l := tb.Lookup("S"); len(l) != 0 {
		t.Fatalf("Lookup(S) after delete = %+v", l)
	}
	for _, b := range binds {
		if b.k.Session == "S" {
			mustGet(t, tb, b.k, DefaultPolicy, "")
		}
	}
	mustGet(t, tb, Key{"team-a", "gpt-4o", "other"}, DefaultPolicy, "up-4")
	if tb.Len() != 1 {
		t.Fatalf("Len = %d, want 1", tb.Len())
	}
	if n := tb.DeleteSession("S"); n != 0 {
		t.Fatalf("second DeleteSession(S) = %d, want 0", n)
	}
}

func TestTableSessionIndexSurvivesMixedRemoval(t *testing.T) {
	// Remove the head, a middle and the tail of one session's list in turn
	// (through Delete, expiry and eviction) and check the index each time.
	tb, clk := newTestTable(4)
	ks := []Key{{"k1", "r", "S"}, {"k2", "r", "S"}, {"k3", "r", "S"}, {"k4", "r", "S"}}
	for _, k := range ks {
		tb.Bind(k, "u", DefaultPolicy)
	}
	// Session list is k4 k3 k2 k1 (head first); LRU tail is k1.
	if !tb.Delete(ks[2]) { // middle
		t.Fatal("Delete(k3) = false")
	}
	if tb.Delete(ks[2]) {
		t.Fatal("second Delete(k3) = true")
	}
	if n := len(tb.Lookup("S")); n != 3 {
		t.Fatalf("Lookup = %d bindings, want 3", n)
	}
	tb.Delete(ks[3]) // head
	tb.Get(ks[1], DefaultPolicy)
	clk.Advance(time.Minute)
	tb.Bind(Key{"x", "r", "T"}, "u", DefaultPolicy)
	tb.Bind(Key{"y", "r", "T"}, "u", DefaultPolicy)
	tb.Bind(Key{"z", "r", "T"}, "u", DefaultPolicy) // evicts k1, the LRU tail
	l := tb.Lookup("S")
	if len(l) != 1 || l[0].APIKey != "k2" {
		t.Fatalf("Lookup(S) = %+v, want only k2", l)
	}
	if n := tb.DeleteSession("S"); n != 1 {
		t.Fatalf("DeleteSession(S) = %d, want 1", n)
	}
	if l := tb.Lookup("T"); len(l) != 3 {
		t.Fatalf("Lookup(T) = %+v, want 3", l)
	}
}

func TestTableKeysAreIndependent(t *testing.T) {
	tb, _ := newTestTable(10)
	tb.Bind(Key{"team-a", "gpt-4o", "S"}, "up-a", DefaultPolicy)
	mustGet(t, tb, Key{"team-b", "gpt-4o", "S"}, DefaultPolicy, "")
	mustGet(t, tb, Key{"team-a", "gpt-4o-mini", "S"}, DefaultPolicy, "")
	mustGet(t, tb, Key{"team-a", "gpt-4o", "S2"}, DefaultPolicy, "")
	mustGet(t, tb, Key{"team-a", "gpt-4o", "S"}, DefaultPolicy, "up-a")
}

func TestTableIgnoresEmptyBind(t *testing.T) {
	tb, _ := newTestTable(10)
	tb.Bind(Key{"team-a", "gpt-4o", ""}, "up-a", DefaultPolicy)
	tb.Bind(key("s"), "", DefaultPolicy)
	if tb.Len() != 0 {
		t.Fatalf("Len = %d, want 0", tb.Len())
	}
}

func TestTablePerRoutePolicy(t *testing.T) {
	tests := []struct {
		name    string
		pol     Policy
		advance []time.Duration // with a Get after each
		want    []bool          // Get hit after each advance
	}{
		{"long sliding", Policy{Sliding: time.Hour, Absolute: 2 * time.Hour},
			[]time.Duration{50 * time.Minute, 50 * time.Minute, 19 * time.Minute, time.Minute},
			[]bool{true, true, true, false}},
		{"short sliding", Policy{Sliding: 30 * time.Second, Absolute: time.Hour},
			[]time.Duration{29 * time.Second, 29 * time.Second, 30 * time.Second},
			[]bool{true, true, false}},
		{"no sliding limit", Policy{Sliding: 0, Absolute: 10 * time.Minute},
			[]time.Duration{9 * time.Minute, time.Minute},
			[]bool{true, false}},
		{"no limits", Policy{},
			[]time.Duration{24 * time.Hour, 24 * time.Hour},
			[]bool{true, true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			tb, clk := newTestTable(10)
			k := Key{"team-a", "route-" + tc.name, "S"}
			tb.Bind(k, "up", tc.pol)
			tb.Bind(key("S"), "up-default", DefaultPolicy) // another route, default policy
			for i, d := range tc.advance {
				clk.Advance(d)
				_, ok := tb.Get(k, tc.pol)
				if ok != tc.want[i] {
					t.Fatalf("step %d (+%v): hit = %v, want %v", i, d, ok, tc.want[i])
				}
			}
			if tc.pol == (Policy{}) {
				if b, ok := tb.Peek(k, tc.pol); !ok || !b.ExpiresAt.IsZero() {
					t.Fatalf("Peek = %+v, %v; want a live binding with no expiry", b, ok)
				}
			}
		})
	}
}

func TestPolicyFor(t *testing.T) {
	yes, no := true, false
	global := config.Affinity{Enabled: true, SlidingTTL: 5 * time.Minute, AbsoluteTTL: 30 * time.Minute, MaxEntries: 10000, FailBack: true}
	tests := []struct {
		name        string
		global      config.Affinity
		route       config.RouteAffinity
		want        Policy
		wantEnabled bool
	}{
		{"inherits", global, config.RouteAffinity{}, DefaultPolicy, true},
		{"sliding override", global, config.RouteAffinity{SlidingTTL: time.Minute}, Policy{time.Minute, 30 * time.Minute, true}, true},
		{"absolute override", global, config.RouteAffinity{AbsoluteTTL: time.Hour}, Policy{5 * time.Minute, time.Hour, true}, true},
		{"route disables", global, config.RouteAffinity{Enabled: &no}, DefaultPolicy, false},
		{"route enables", config.Affinity{SlidingTTL: time.Minute, AbsoluteTTL: time.Hour}, config.RouteAffinity{Enabled: &yes}, Policy{time.Minute, time.Hour, false}, true},
		{"global disabled", config.Affinity{SlidingTTL: time.Minute, AbsoluteTTL: time.Hour}, config.RouteAffinity{}, Policy{time.Minute, time.Hour, false}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			pol, en := PolicyFor(tc.global, tc.route)
			if pol != tc.want || en != tc.wantEnabled {
				t.Fatalf("PolicyFor = %+v, %v; want %+v, %v", pol, en, tc.want, tc.wantEnabled)
			}
		})
	}
	if d := config.Default().Affinity; d.SlidingTTL != DefaultPolicy.Sliding ||
		d.AbsoluteTTL != DefaultPolicy.Absolute || d.MaxEntries != DefaultMaxEntries {
		t.Fatalf("DefaultPolicy/DefaultMaxEntries disagree with config.Default: %+v", d)
	}
}

func TestTableStats(t *testing.T) {
	tb, clk := newTestTable(2)
	tb.Get(key("a"), DefaultPolicy) // miss
	tb.Bind(key("a"), "u", DefaultPolicy)
	tb.Get(key("a"), DefaultPolicy) // hit
	tb.Get(key("a"), DefaultPolicy) // hit
	tb.Bind(key("b"), "u", DefaultPolicy)
	tb.Bind(key("c"), "u", DefaultPolicy) // evicts a, the least recently used
	clk.Advance(5 * time.Minute)
	tb.Get(key("c"), DefaultPolicy) // expired: miss
	hits, misses, ev := tb.Stats()
	if hits != 2 || misses != 2 || ev != 1 {
		t.Fatalf("Stats = %d hits, %d misses, %d evictions; want 2, 2, 1", hits, misses, ev)
	}
}

func TestNewTableDefaults(t *testing.T) {
	tb := NewTable(0, nil)
	if tb.max != DefaultMaxEntries {
		t.Fatalf("max = %d, want %d", tb.max, DefaultMaxEntries)
	}
	tb.Bind(key("s"), "u", DefaultPolicy) // uses the wall clock
	mustGet(t, tb, key("s"), DefaultPolicy, "u")
}

// TestTableConcurrent runs every operation from many goroutines; run with
// -race. It then checks the structural invariants: the LRU ring, the map and
// the session index hold the same entries, and the bound is kept.
func TestTableConcurrent(t *testing.T) {
	const max = 64
	tb, clk := newTestTable(max)
	var wg sync.WaitGroup
	var gets atomic.Uint64
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range 2000 {
				k := Key{fmt.Sprint("k", g%3), "r", fmt.Sprint("s", (i*7+g)%100)}
				switch i % 7 {
				case 0, 1:
					tb.Bind(k, fmt.Sprint("u", i%4), DefaultPolicy)
				case 2, 3:
					tb.Get(k, DefaultPolicy)
					gets.Add(1)
				case 4:
					tb.Peek(k, DefaultPolicy)
				case 5:
					tb.Lookup(k.Session)
					tb.Len()
					tb.Stats()
				case 6:
					if i%70 == 6 {
						tb.DeleteSession(k.Session)
					} else {
						tb.Delete(k)
					}
				}
				if g == 0 && i%500 == 0 {
					clk.Advance(time.Minute)
				}
			}
		}()
	}
	wg.Wait()
	checkInvariants(t, tb, max)
	hits, misses, _ := tb.Stats()
	if hits+misses != gets.Load() || hits == 0 {
		t.Fatalf("Stats: %d hits + %d misses, want %d Gets with some hits", hits, misses, gets.Load())
	}
}

// checkInvariants verifies the table's three structures agree.
func checkInvariants(t *testing.T, tb *Table, max int) {
	t.Helper()
	tb.mu.Lock()
	defer tb.mu.Unlock()
	if len(tb.entries) > max {
		t.Fatalf("%d entries > max %d", len(tb.entries), max)
	}
	n := 0
	for e := tb.root.next; e != &tb.root; e = e.next {
		if e.next.prev != e {
			t.Fatal("LRU ring broken")
		}
		if tb.entries[e.key] != e {
			t.Fatalf("ring entry %v not in the map", e.key)
		}
		n++
	}
	if n != len(tb.entries) {
		t.Fatalf("ring holds %d entries, map %d", n, len(tb.entries))
	}
	n = 0
	for s, head := range tb.sessions {
		if head.sprev != nil {
			t.Fatalf("session %s head has a predecessor", s)
		}
		for e := head; e != nil; e = e.snext {
			if e.key.Session != s || tb.entries[e.key] != e {
				t.Fatalf("session list of %s holds %v", s, e.key)
			}
			if e.snext != nil && e.snext.sprev != e {
				t.Fatalf("session list of %s broken", s)
			}
			n++
		}
	}
	if n != len(tb.entries) {
		t.Fatalf("session index holds %d entries, map %d", n, len(tb.entries))
	}
}
