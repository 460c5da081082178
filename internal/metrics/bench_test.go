package metrics

import (
	"fmt"
	"testing"
	"time"
)

// Hot-path benchmarks: the proxy calls Request, Attempt and TTFT for every
// request (goal: 0 allocations per operation).

func benchNames(n int) (upstreams, models []string) {
	for i := range n {
		upstreams = append(upstreams, fmt.Sprintf("upstream-%d", i))
	}
	return upstreams, []string{"gpt-4o", "gpt-4o-mini", "claude-3-5-haiku"}
}

func BenchmarkRequestAttemptTTFT(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("upstreams=%d", n), func(b *testing.B) {
			ups, models := benchNames(n)
			m := New(list(ups...).get, list(models...).get)
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				u, mod := ups[i%n], models[i%len(models)]
				i++
				m.Attempt(u, OutcomeSuccess)
				m.TTFT(u, 300*time.Millisecond)
				m.Request(u, mod, 200, true, 2*time.Second)
			}
		})
	}
}

func BenchmarkRequestAttemptTTFTParallel(b *testing.B) {
	for _, n := range []int{1, 10, 100} {
		b.Run(fmt.Sprintf("upstreams=%d", n), func(b *testing.B) {
			ups, models := benchNames(n)
			m := New(list(ups...).get, list(models...).get)
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				i := 0
				for pb.Next() {
					u, mod := ups[i%n], models[i%len(models)]
					i++
					m.Attempt(u, OutcomeSuccess)
					m.TTFT(u, 300*time.Millisecond)
					m.Request(u, mod, 200, true, 2*time.Second)
				}
			})
		})
	}
}

// BenchmarkUnknownNames measures the "other" path: a miss reads the clock
// and finds the paced refresh not yet due.
func BenchmarkUnknownNames(b *testing.B) {
	ups, models := benchNames(10)
	m := New(list(ups...).get, list(models...).get)
	m.Attempt("not-configured", OutcomeSuccess) // spends the first paced refresh
	b.ReportAllocs()
	for b.Loop() {
		m.Attempt("not-configured", OutcomeSuccess)
		m.Request("not-configured", "nope", 404, false, time.Millisecond)
	}
}

func BenchmarkTokensSpendSelection(b *testing.B) {
	ups, models := benchNames(10)
	m := New(list(ups...).get, list(models...).get)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		u := ups[i%len(ups)]
		i++
		m.Tokens(u, "gpt-4o", 1200, 300, 1024, 0)
		m.Spend(u, "team-a", 0.0042)
		m.Selection("gpt-4o", u)
		m.Affinity(AffinityHit)
		m.Retry("gpt-4o")
	}
}
