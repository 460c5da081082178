package state

import (
	"context"
	"testing"
	"time"

	"switchyard/internal/clock"
	"switchyard/internal/limits"
)

// Tests of the keys' and teams' max_concurrency (Driver.AcquireTenant):
// one harness for both drivers, then what Redis adds — slots shared by
// instances, leases that expire with a dead instance and are renewed by a
// live one, the local fallback and the convergence after an outage —
// against the real Redis with a fake clock.

// teamSlots is the counter the tests take slots of.
var teamSlots = limits.CounterName("research", "", "concurrency")

// acquireWant takes a slot of name under limit on d and fails tb unless
// AcquireTenant answers want; it returns the release function (nil when
// refused).
func acquireWant(tb testing.TB, d Driver, name string, limit int, want bool) func() {
	tb.Helper()
	release, ok := d.AcquireTenant(context.Background(), name, limit)
	if ok != want {
		tb.Fatalf("AcquireTenant(%s, %d) = %v, want %v", name, limit, ok, want)
	}
	if ok == (release == nil) {
		tb.Fatalf("AcquireTenant(%s, %d) = %v with release %v", name, limit, ok, release != nil)
	}
	return release
}

// Both drivers, alone: limit slots, a refusal beyond them, a release frees
// exactly one however often it is called, counters are independent, and a
// limit of 0 never refuses.
func TestAcquireTenant(t *testing.T) {
	drivers := []struct {
		name string
		new  func(t *testing.T) Driver
	}{
		{"memory", func(*testing.T) Driver { return NewLocal(LocalOptions{Clock: clock.NewFake(t0)}) }},
		{"redis", func(t *testing.T) Driver { return newTestDriver(t, clock.NewFake(t0)) }},
	}
	for _, dc := range drivers {
		t.Run(dc.name, func(t *testing.T) {
			d := dc.new(t)
			first := acquireWant(t, d, teamSlots, 2, true)
			acquireWant(t, d, teamSlots, 2, true)
			acquireWant(t, d, teamSlots, 2, false)
			other := acquireWant(t, d, "svc-a/concurrency", 1, true) // another counter
			acquireWant(t, d, "svc-a/concurrency", 1, false)
			first()
			first() // a second call gives nothing back
			acquireWant(t, d, teamSlots, 2, true)
			acquireWant(t, d, teamSlots, 2, false)
			other()
			acquireWant(t, d, "svc-a/concurrency", 1, true)
			for range 5 {
				acquireWant(t, d, "unlimited", 0, true)
			}
		})
	}
}

// Two instances share a team's slots: what one holds the other cannot
// take, a release on one frees a slot for the other, and each instance's
// local slots count what it holds (to decide alone should Redis go down).
func TestRedisTenantSlotsShared(t *testing.T) {
	clk := clock.NewFake(t0)
	a := newTestDriver(t, clk)
	b := newTestDriver(t, clk, sharing(a.r))
	raw := rawClient(t)
	ra := acquireWant(t, a, teamSlots, 2, true)
	acquireWant(t, b, teamSlots, 2, true)
	acquireWant(t, a, teamSlots, 2, false)
	acquireWant(t, b, teamSlots, 2, false)
	key := a.r.keys.counter(teamSlots, "conc")
	if n := raw.ZCard(context.Background(), key).Val(); n != 2 {
		t.Fatalf("%s holds %d leases, want 2", key, n)
	}
	if na, nb := a.local.tenants.InFlight(teamSlots), b.local.tenants.InFlight(teamSlots); na != 1 || nb != 1 {
		t.Fatalf("local counts = %d and %d, want 1 each", na, nb)
	}
	ra()
	if n := raw.ZCard(context.Background(), key).Val(); n != 1 {
		t.Fatalf("%s holds %d leases after a release, want 1", key, n)
	}
	acquireWant(t, b, teamSlots, 2, true)
	acquireWant(t, a, teamSlots, 2, false)
}

// A lease outlives a dead instance by lease_ttl, and no more; a live
// instance's renewal keeps its leases past it.
func TestRedisTenantLeaseExpiry(t *testing.T) {
	t.Run("dead instance", func(t *testing.T) {
		clk := clock.NewFake(t0)
		a := newTestDriver(t, clk)
		b := newTestDriver(t, clk, sharing(a.r))
		acquireWant(t, a, teamSlots, 2, true) // a dies holding both: never released, never renewed
		acquireWant(t, a, teamSlots, 2, true)
		clk.Advance(testLeaseTTL - time.Millisecond)
		acquireWant(t, b, teamSlots, 2, false)
		clk.Advance(2 * time.Millisecond)
		acquireWant(t, b, teamSlots, 2, true)
		acquireWant(t, b, teamSlots, 2, true)
		acquireWant(t, b, teamSlots, 2, false)
	})
	t.Run("renewed", func(t *testing.T) {
		clk := clock.NewFake(t0)
		a := newTestDriver(t, clk)
		b := newTestDriver(t, clk, sharing(a.r))
		acquireWant(t, a, teamSlots, 2, true)
		acquireWant(t, a, teamSlots, 2, true)
		clk.Advance(testLeaseTTL / 2)
		a.r.Renew()
		clk.Advance(testLeaseTTL/2 + time.Millisecond)
		acquireWant(t, b, teamSlots, 2, false) // the renewal kept them
		clk.Advance(testLeaseTTL / 2)          // lease_ttl after the renewal
		acquireWant(t, b, teamSlots, 2, true)
	})
}

// While Redis is down the local slots decide under the same limit, counting
// the slots this instance took through Redis before (fails closed, per
// instance); once Redis answers, the leases taken locally are registered
// and the one released meanwhile is removed.
func TestRedisTenantSlotsOutage(t *testing.T) {
	proxy, proxied := proxiedRedis(t)
	clk := clock.NewFake(t0)
	rec := newRecorder()
	other := newTestDriver(t, clk)
	p := newTestDriver(t, clk, sharing(other.r), withURL(proxied, 300*time.Millisecond), withOptions(rec.options()))
	raw := rawClient(t)
	ctx := context.Background()
	key := p.r.keys.counter(teamSlots, "conc")

	shared := acquireWant(t, p, teamSlots, 3, true)
	proxy.stop()
	l1 := acquireWant(t, p, teamSlots, 3, true) // the call fails: the local slots decide
	if p.r.Up() {
		t.Fatal("Up() = true after a failed call")
	}
	l2 := acquireWant(t, p, teamSlots, 3, true)
	acquireWant(t, p, teamSlots, 3, false) // 3 held here, the shared one included
	shared()                               // Redis cannot be told: left for Renew
	if fb, _ := rec.snapshot(); fb[OpTenant] != 4 {
		t.Fatalf("fallbacks = %v, want %s: 4 (3 acquisitions and a release)", fb, OpTenant)
	}
	if n := raw.ZCard(ctx, key).Val(); n != 1 {
		t.Fatalf("%s holds %d leases during the outage, want the 1 taken before it", key, n)
	}

	proxy.start()
	clk.Advance(testSyncInterval)
	p.r.Sync(nil) // the sync loop's next tick reaches Redis, then renews
	if !p.r.Up() {
		t.Fatal("Up() = false after a successful Sync")
	}
	if n := raw.ZCard(ctx, key).Val(); n != 2 {
		t.Fatalf("%s holds %d leases after the reconnect, want the 2 taken locally (the released one gone)", key, n)
	}
	acquireWant(t, other, teamSlots, 3, true)
	acquireWant(t, other, teamSlots, 3, false)
	l1()
	l2()
	if n := raw.ZCard(ctx, key).Val(); n != 1 {
		t.Fatalf("%s holds %d leases after the releases, want the other instance's 1", key, n)
	}
}

// BenchmarkDriverAcquireTenant is one key's or team's max_concurrency slot
// through each driver: taken, then given back. The Redis driver makes its
// two round trips (tenant_lease.lua, ZREM) and keeps its Local's count.
func BenchmarkDriverAcquireTenant(b *testing.B) {
	drivers := []struct {
		name string
		make func(b *testing.B) Driver
	}{
		{"local", func(*testing.B) Driver { return NewLocal(LocalOptions{Clock: clock.Real{}}) }},
		{"redis", func(b *testing.B) Driver {
			return NewRedisDriver(newTestRedis(b, testCircuit, clock.Real{}), NewLocal(LocalOptions{Clock: clock.Real{}}))
		}},
	}
	for _, d := range drivers {
		b.Run(d.name, func(b *testing.B) {
			drv := d.make(b)
			ctx := context.Background()
			b.ReportAllocs()
			for b.Loop() {
				release, ok := drv.AcquireTenant(ctx, teamSlots, 1)
				if !ok {
					b.Fatal("slot refused with none held")
				}
				release()
			}
		})
	}
}
