package limits

import (
	"context"
	"fmt"
	"testing"

	"switchyard/internal/clock"
	"switchyard/internal/config"
)

// Hot-path benchmarks: each reports allocations (goal: 0–1 per operation).

func BenchmarkLimiterViewReserveCommit(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("upstreams=%d", n), func(b *testing.B) {
			l := NewLimiter(clock.Real{})
			names := make([]string, n)
			for i := range names {
				names[i] = fmt.Sprintf("u%d", i)
				l.Configure(names[i], 1<<30, 1<<40)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				name := names[i%n]
				i++
				if v := l.View(name, 1000); v.Limited() {
					b.Fatalf("limited: %+v", v)
				}
				r, _, ok := l.Reserve(name, 1000)
				if !ok {
					b.Fatal("refused")
				}
				r.Commit(800)
			}
		})
	}
}

func BenchmarkLimiterObserveHeaders(b *testing.B) {
	l := NewLimiter(clock.Real{})
	h := hdr(
		"x-ratelimit-limit-requests", "10000", "x-ratelimit-remaining-requests", "9999", "x-ratelimit-reset-requests", "6ms",
		"x-ratelimit-limit-tokens", "2000000", "x-ratelimit-remaining-tokens", "1999000", "x-ratelimit-reset-tokens", "30ms",
	)
	b.ReportAllocs()
	for b.Loop() {
		l.ObserveHeaders("u", h)
	}
}

func BenchmarkSlotsAcquireUncontended(b *testing.B) {
	for _, limit := range []int{0, 8} {
		b.Run(fmt.Sprintf("limit=%d", limit), func(b *testing.B) {
			s := NewSlots()
			ctx := context.Background()
			q := config.Queue{Enabled: true, Timeout: 5e9, MaxLength: 100}
			b.ReportAllocs()
			for b.Loop() {
				release, err := s.Acquire(ctx, "u", limit, q)
				if err != nil {
					b.Fatal(err)
				}
				release()
			}
		})
	}
}

func BenchmarkSlotsAcquireParallel(b *testing.B) {
	s := NewSlots()
	q := config.Queue{Enabled: true, MaxLength: 1 << 20}
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		ctx := context.Background()
		for pb.Next() {
			release, err := s.Acquire(ctx, "u", 4, q)
			if err != nil {
				b.Error(err)
				return
			}
			release()
		}
	})
}

// benchNames runs sub-benchmarks named label=n, for 1 and 100 names (k0,
// k1, …): each calls the op setup makes with every name in turn.
func benchNames(b *testing.B, label string, setup func() func(b *testing.B, name string)) {
	for _, n := range []int{1, 100} {
		b.Run(fmt.Sprintf("%s=%d", label, n), func(b *testing.B) {
			op := setup()
			names := make([]string, n)
			for i := range names {
				names[i] = fmt.Sprintf("k%d", i)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				op(b, names[i%n])
				i++
			}
		})
	}
}

func BenchmarkSpendAdd(b *testing.B) {
	benchNames(b, "names", func() func(*testing.B, string) {
		s := NewSpend(clock.Real{})
		return func(_ *testing.B, name string) { s.Add(ScopeKey, name, 0.0001) }
	})
}

func BenchmarkKeyLimiterAllow(b *testing.B) {
	benchNames(b, "keys", func() func(*testing.B, string) {
		k := NewKeyLimiter(clock.Real{})
		return func(b *testing.B, name string) {
			if ok, _ := k.Allow(name, 1<<40); !ok {
				b.Fatal("refused")
			}
		}
	})
}

func BenchmarkRetryBudget(b *testing.B) {
	rb := NewRetryBudget(clock.Real{}, 0.2)
	b.ReportAllocs()
	for b.Loop() {
		rb.Request()
		rb.TryRetry()
	}
}

// BenchmarkFairJoin is the fair queue's join (fairq.go): the tags of a
// request of a team's key joining while every key of the team is backlogged.
func BenchmarkFairJoin(b *testing.B) {
	for _, n := range []int{1, 4, 16, 64} {
		b.Run(fmt.Sprintf("team-keys=%d", n), func(b *testing.B) {
			tenants := benchTeam(n)
			var f fairState
			for _, t := range tenants {
				f.join(&waiter{}, t)
			}
			w := &waiter{}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				f.join(w, tenants[i%n])
				i++
			}
		})
	}
}

// benchTeam returns the tenants of the n keys of one team, of weight 1.
func benchTeam(n int) []Tenant {
	out := make([]Tenant, n)
	for i := range out {
		out[i] = Tenant{Team: "research", Key: fmt.Sprintf("key-%d", i), Weight: 1, TeamWeight: 1}
	}
	return out
}
