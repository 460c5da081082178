package state

import (
	"context"
	"testing"

	"switchyard/internal/clock"
	"switchyard/internal/outcome"
)

// The shared lease set holds the tickets of upstreams with max_concurrency
// only: the in-flight count another instance reads for an upstream without
// the limit stays its own (it jumped with every renewal before, as Renew
// put this instance's tickets into it).
func TestRedisLeaseSetOnlyLimited(t *testing.T) {
	clk := clock.NewFake(t0)
	a := newTestDriver(t, clk)
	b := newTestDriver(t, clk, sharing(a.r))
	raw := rawClient(t)
	ctx := context.Background()
	unlimited, limited := Admission{Upstream: "u"}, Admission{Upstream: "v", MaxConcurrency: 5}
	for _, adm := range []Admission{unlimited, unlimited, limited} {
		if _, err := a.Admit(ctx, adm); err != nil {
			t.Fatal(err)
		}
	}
	b.r.SetWatch(Watch{Upstreams: []string{"u", "v"}})
	for tick := range 3 {
		clk.Advance(testLeaseTTL / 3)
		a.r.Renew()
		b.r.Sync(nil)
		for _, c := range []struct {
			upstream string
			want     int64
		}{{"u", 0}, {"v", 1}} {
			if n := raw.ZCard(ctx, a.r.key(c.upstream, "lease")).Val(); n != c.want {
				t.Fatalf("renewal %d: %s's lease set holds %d, want %d", tick+1, c.upstream, n, c.want)
			}
			if v, ok := b.r.View(c.upstream); !ok || v.InFlight != c.want {
				t.Fatalf("renewal %d: shared in flight of %s = %d (synced %v), want %d", tick+1, c.upstream, v.InFlight, ok, c.want)
			}
		}
		if here, there := a.Upstream("u", 0).InFlight, b.Upstream("u", 0).InFlight; here != 2 || there != 0 {
			t.Fatalf("renewal %d: u in flight = %d here, %d on the other instance; want 2, 0", tick+1, here, there)
		}
	}
}

// A ticket Redis did not admit (the instance could not ask it) belongs to
// no generation of the shared breaker: settled after Redis is back, its
// outcome does not trip it.
func TestRedisLocalTicketFeedsNoSharedBreaker(t *testing.T) {
	clk := clock.NewFake(t0)
	r := newTestRedis(t, testCircuit, clk)
	local := r.newTicket(Admission{Upstream: "u"})
	r.Settle(local, Settlement{Outcome: outcome.Of(outcome.AuthError, "status 401")})
	if v := syncView(t, r, "u"); v.Breaker != "closed" {
		t.Fatalf("shared breaker %q after a local ticket's auth error, want closed", v.Breaker)
	}
	r.Settle(admitOK(t, r, Admission{Upstream: "u"}), Settlement{Outcome: outcome.Of(outcome.AuthError, "status 401")})
	if v := syncView(t, r, "u"); v.Breaker != "open" {
		t.Fatalf("shared breaker %q after an admitted request's auth error, want open", v.Breaker)
	}
}
