package state

import (
	"context"
	"fmt"
	"testing"
	"time"

	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/health"
	"switchyard/internal/limits"
	"switchyard/internal/outcome"
)

// BenchmarkDriverAdmitDone is one attempt through each driver: Admit, then
// Done with a success. The Redis driver makes its two round trips to the
// real Redis and keeps its Local's count; with and without max_concurrency
// (a lease in Redis, a breaker Permit of the local one either way).
func BenchmarkDriverAdmitDone(b *testing.B) {
	drivers := []struct {
		name string
		make func(b *testing.B) Driver
	}{
		{"local", func(*testing.B) Driver {
			return NewLocal(LocalOptions{Clock: clock.Real{}, Breakers: health.NewBreakers(testCircuit, clock.Real{})})
		}},
		{"redis", func(b *testing.B) Driver {
			r := newTestRedis(b, testCircuit, clock.Real{})
			return NewRedisDriver(r, NewLocal(LocalOptions{Clock: clock.Real{}, Breakers: health.NewBreakers(testCircuit, clock.Real{})}))
		}},
	}
	o := outcome.Outcome{Class: outcome.Success, InputTokens: 80, Latency: 100 * time.Millisecond}
	for _, d := range drivers {
		for _, maxc := range []int{0, 1 << 20} {
			b.Run(fmt.Sprintf("%s/max_concurrency=%d", d.name, maxc), func(b *testing.B) {
				drv := d.make(b)
				adm := Admission{Upstream: "bench", Tokens: 100, MaxConcurrency: maxc}
				ctx := context.Background()
				b.ReportAllocs()
				for b.Loop() {
					l, err := drv.Admit(ctx, adm)
					if err != nil {
						b.Fatal(err)
					}
					l.Done(o, Ending{})
				}
			})
		}
	}
}

// BenchmarkRedisFairJoin is the join round trip of a request about to
// queue on a full upstream (admit.lua's join reply and the tags computed
// from it, redis_admit.go), while every key of its team waits already.
func BenchmarkRedisFairJoin(b *testing.B) {
	for _, n := range []int{1, 4, 16, 64} {
		b.Run(fmt.Sprintf("team-keys=%d", n), func(b *testing.B) {
			r := newTestRedis(b, testCircuit, clock.Real{})
			q := config.Queue{Enabled: true, MaxLength: 1000, Timeout: time.Minute, Discipline: config.DisciplineFair}
			tenants := benchTeam(n)
			adm := func(t limits.Tenant) Admission {
				return Admission{Upstream: "bench", MaxConcurrency: 1, Queue: q, Wait: true, Tenant: t}
			}
			ctx := context.Background()
			holder := admitOK(b, r, adm(tenants[0]))
			defer r.Settle(holder, keep)
			for _, t := range tenants { // one waiter of each key
				a := adm(t)
				tk := r.newTicket(a)
				var p queuePlace
				res, err := r.admitOnce(ctx, &tk, a, true, false, &p)
				if err != nil || !r.join(&p, a, res) {
					b.Fatalf("join reply %v, %v", res, err)
				}
				if res, err = r.admitOnce(ctx, &tk, a, true, false, &p); err != nil || res[1] != "full" {
					b.Fatalf("joining: %v, %v", res, err)
				}
			}
			a := adm(tenants[0])
			b.ReportAllocs()
			for b.Loop() {
				tk := r.newTicket(a)
				var p queuePlace
				res, err := r.admitOnce(ctx, &tk, a, true, false, &p)
				if err != nil || !r.join(&p, a, res) {
					b.Fatalf("join reply %v, %v", res, err)
				}
			}
		})
	}
}

// benchTeam returns the tenants of n keys of one team.
func benchTeam(n int) []limits.Tenant {
	out := make([]limits.Tenant, n)
	for i := range out {
		out[i] = limits.Tenant{Team: "research", Key: fmt.Sprintf("key-%d", i), Weight: 1, TeamWeight: 1}
	}
	return out
}
