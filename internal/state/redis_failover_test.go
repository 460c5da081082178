package state

import (
	"context"
	"errors"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/limits"
	"switchyard/internal/outcome"
)

// Admission while Redis fails, and what the shared lease set holds, against
// the real Redis (cut with the tcpProxy of redis_test.go).

// outage is a RedisDriver that reaches Redis through a proxy the test cuts,
// with requests waiting to be admitted.
type outage struct {
	t      *testing.T
	clk    *clock.Fake
	proxy  *tcpProxy
	d      *RedisDriver
	raw    *redis.Client
	prefix string

	results  chan admitted
	inFlight atomic.Int64 // admitted by the driver and not yet done
	maxSeen  atomic.Int64 // the most ever in flight
}

// admitted is what one waiting Admit returned.
type admitted struct {
	lease Lease
	err   error
}

func newOutage(t *testing.T) *outage {
	target, err := redis.ParseURL(testRedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	o := &outage{t: t, clk: clock.NewFake(t0), proxy: newTCPProxy(t, target.Addr), raw: rawClient(t), results: make(chan admitted, 10)}
	u, _ := url.Parse(testRedisURL(t))
	u.Host = o.proxy.addr
	owner := newTestRedis(t, testCircuit, o.clk) // deletes the keys at the end
	o.prefix = owner.prefix
	o.d = newTestDriver(t, o.clk, sharing(owner), withURL(u.String(), 300*time.Millisecond))
	return o
}

// admit admits a now and counts the lease in flight.
func (o *outage) admit(ctx context.Context, a Admission) admitted {
	l, err := o.d.Admit(ctx, a)
	if err == nil {
		n := o.inFlight.Add(1)
		for m := o.maxSeen.Load(); n > m && !o.maxSeen.CompareAndSwap(m, n); m = o.maxSeen.Load() {
		}
	}
	return admitted{l, err}
}

// done ends a lease counted in flight.
func (o *outage) done(l Lease) {
	o.inFlight.Add(-1)
	l.Done(outcome.Outcome{Class: outcome.Success}, Ending{})
}

// receive returns the next waiting Admit's result.
func (o *outage) receive() admitted {
	o.t.Helper()
	select {
	case r := <-o.results:
		return r
	case <-time.After(5 * time.Second):
		o.t.Fatal("no waiting Admit returned")
		return admitted{}
	}
}

// One slot held, three requests queued in Redis for it, Redis cut: the
// local state decides the three under its own limits — at most
// max_concurrency in flight at every moment, admitted one at a time as the
// slot frees, or refused by the queue's timeout or the local breaker. They
// were all admitted at once before.
func TestRedisDriverFailsClosed(t *testing.T) {
	q := config.Queue{Enabled: true, MaxLength: 5, Timeout: 10 * time.Second}
	adm := Admission{Upstream: "u", MaxConcurrency: 1, Queue: q, Wait: true}
	tests := []struct {
		name string
		// beforeCut runs with Redis still up and the three queued in it.
		beforeCut func(o *outage)
		// then runs once the three are queued locally or refused; holder
		// is the lease holding the one slot.
		then func(t *testing.T, o *outage, holder Lease)
	}{
		{"admitted one at a time as the slot frees", nil, func(t *testing.T, o *outage, holder Lease) {
			cur := holder
			for i := range 3 {
				o.done(cur)
				r := o.receive()
				if r.err != nil {
					t.Fatalf("waiter %d: Admit = %v, want admitted when the slot freed", i, r.err)
				}
				if v := o.d.Upstream("u", 0); v.QueueDepthHere != 2-i || v.InFlightHere != 1 {
					t.Fatalf("after the slot freed %d times: %d queued, %d in flight; want %d, 1", i+1, v.QueueDepthHere, v.InFlightHere, 2-i)
				}
				cur = r.lease
			}
			o.done(cur)
		}},
		{"refused when the queue timeout counted from the first wait ends", nil, func(t *testing.T, o *outage, holder Lease) {
			o.clk.Advance(q.Timeout - queuePoll) // t0 + queue.timeout: they started waiting at t0
			for i := range 3 {
				if r := o.receive(); !errors.Is(r.err, limits.ErrQueueTimeout) {
					t.Fatalf("waiter %d: Admit = %v %v, want the queue timeout", i, r.lease, r.err)
				}
			}
			o.done(holder)
		}},
		{"refused by the local breaker", func(o *outage) {
			b := o.d.local.breakers // open here only: Redis's stays closed
			b.Record("u", b.Current("u"), outcome.Of(outcome.AuthError, "status 401"))
		}, func(t *testing.T, o *outage, holder Lease) {
			for i := range 3 {
				if r := o.receive(); !errors.Is(r.err, ErrBreakerOpen) {
					t.Fatalf("waiter %d: Admit = %v %v, want the local breaker's refusal", i, r.lease, r.err)
				}
			}
			o.done(holder)
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			o := newOutage(t)
			ctx := context.Background()
			holder := o.admit(ctx, adm)
			if holder.err != nil || !holder.lease.(*redisLease).t.Shared {
				t.Fatalf("first Admit = %+v, want admitted by Redis", holder)
			}
			base := o.clk.Pending()
			var wg sync.WaitGroup
			t.Cleanup(wg.Wait)
			wctx, cancel := context.WithCancel(ctx)
			t.Cleanup(cancel) // first: a failed test leaves none waiting
			for range 3 {
				wg.Go(func() { o.results <- o.admit(wctx, adm) })
			}
			queue := o.prefix + "u:{u}:queue"
			waitFor(t, "three requests queued in Redis", func() bool {
				return o.clk.Pending() >= base+6 && o.raw.ZCard(context.Background(), queue).Val() == 3
			})
			if tc.beforeCut != nil {
				tc.beforeCut(o)
			}
			o.proxy.stop()
			o.clk.Advance(queuePoll) // they ask Redis again, and fail
			waitFor(t, "the three to be queued locally or answered", func() bool {
				return o.d.local.slots.QueueDepth("u")+len(o.results) == 3
			})
			if o.d.r.Up() {
				t.Fatal("Redis still up after the cut")
			}
			if n := o.inFlight.Load(); n != 1 {
				t.Fatalf("%d in flight once Redis was cut, want the 1 holding the slot (max_concurrency 1)", n)
			}
			tc.then(t, o, holder.lease)
			if m := o.maxSeen.Load(); m != 1 {
				t.Fatalf("%d were in flight at once, want at most max_concurrency (1)", m)
			}
			// Redis answers again: the entries the three left in its queue
			// and the holder's lease, settled while it was down, go at once,
			// and do not hold every instance's requests back.
			o.proxy.start()
			o.d.r.SetWatch(Watch{Upstreams: []string{"u"}})
			o.d.r.Sync(nil)
			if n, m := o.raw.ZCard(ctx, queue).Val(), o.raw.ZCard(ctx, o.prefix+"u:{u}:lease").Val(); n != 0 || m != 0 || !o.d.r.Up() {
				t.Fatalf("shared queue holds %d, leases %d after Redis came back (up %v), want 0, 0", n, m, o.d.r.Up())
			}
			noWait := adm
			noWait.Wait = false
			if r := o.admit(ctx, noWait); r.err != nil || !r.lease.(*redisLease).t.Shared {
				t.Fatalf("Admit once Redis is back = %+v, want admitted by Redis", r)
			} else {
				o.done(r.lease)
			}
		})
	}
}

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
			if n := raw.ZCard(ctx, a.r.keys.upstream(c.upstream, "lease")).Val(); n != c.want {
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

// The entries given up while Redis is down are forgotten once Redis would
// have swept them by itself, so a long outage does not grow them without
// bound.
func TestRedisGivenUpEntriesBounded(t *testing.T) {
	clk := clock.NewFake(t0)
	r := newTestRedis(t, testCircuit, clk, withURL("redis://127.0.0.1:1/0", 100*time.Millisecond))
	adm := Admission{Upstream: "u", MaxConcurrency: 1}
	for range 100 {
		tk, d := r.Admit(context.Background(), adm)
		if d != nil || tk.Shared {
			t.Fatalf("Admit while down = %+v %+v, want a local ticket", tk, d)
		}
		r.Settle(tk, keep)
	}
	left := func() int {
		r.mu.Lock()
		defer r.mu.Unlock()
		return len(r.left)
	}
	for _, step := range []struct {
		advance time.Duration
		want    int
	}{{0, 100}, {testLeaseTTL - time.Millisecond, 100}, {time.Millisecond, 0}} {
		clk.Advance(step.advance)
		r.Renew()
		if n := left(); n != step.want {
			t.Fatalf("at %v: %d leases remembered, want %d", clk.Now().Sub(t0), n, step.want)
		}
	}
}
