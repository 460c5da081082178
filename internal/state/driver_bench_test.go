package state

import (
	"context"
	"fmt"
	"testing"
	"time"

	"switchyard/internal/clock"
	"switchyard/internal/health"
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
