package balancer

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// adaptiveRecord plans cands with adaptive at now and returns the plan.
func adaptivePlan(t *testing.T, req Request, cands []Candidate, now time.Time) Plan {
	t.Helper()
	b := newStrategyBalancer(t, StrategyAdaptive, 1, func() time.Time { return now })
	return b.Plan(req, cands)
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

// TestAdaptiveWRR reproduces seed 001's worked examples of the weighted
// round robin component.
func TestAdaptiveWRR(t *testing.T) {
	tests := []struct {
		name      string
		weight    int
		requests  int64
		slowStart float64
		want      float64
	}{
		{name: "weight 80, 80 requests", weight: 80, requests: 80, want: 90},
		{name: "weight 20, 20 requests", weight: 20, requests: 20, want: 90},
		{name: "weight 80, 0 requests", weight: 80, requests: 0, want: 150},
		{name: "weight 20, 0 requests", weight: 20, requests: 0, want: 150},
		{name: "weight 0 counts as 100", weight: 0, requests: 100, want: 90},
		{name: "negative weight counts as 100", weight: -5, requests: 100, want: 90},
		{name: "slow start halves the weight", weight: 80, requests: 40, slowStart: 0.5, want: 90},
		{name: "weight 100, 300 requests", weight: 100, requests: 300, want: 50},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Candidate{Name: "a", Weight: tt.weight, WindowRequests: tt.requests, SlowStart: tt.slowStart, Active: true}
			r, _, _ := record(adaptivePlan(t, Request{}, []Candidate{c}, testEpoch).Decision, "a")
			if !near(r.Scores.WRR, tt.want) {
				t.Errorf("wrr = %v, want %v", r.Scores.WRR, tt.want)
			}
		})
	}
}

// TestAdaptiveSteadyState simulates equal-health upstreams of weights
// 80/50/20/10, each pick adding one request to the chosen upstream's window:
// the shares must be within ±2 points of 50/31.25/12.5/6.25 after 1,000 and
// after 10,000 requests.
func TestAdaptiveSteadyState(t *testing.T) {
	weights := []int{80, 50, 20, 10}
	want := []float64{50, 31.25, 12.5, 6.25}
	for _, total := range []int{1000, 10000} {
		t.Run(fmt.Sprint(total), func(t *testing.T) {
			b := newStrategyBalancer(t, StrategyAdaptive, 9, stepClock(time.Millisecond))
			cands := make([]Candidate, len(weights))
			for i, w := range weights {
				cands[i] = Candidate{Name: fmt.Sprintf("w%d", w), Weight: w, Active: true, LatencyEWMA: 400}
			}
			for range total {
				p := b.Plan(Request{K: 2}, cands)
				for i := range cands {
					if cands[i].Name == p.Order[0] {
						cands[i].WindowRequests++
					}
				}
			}
			for i, c := range cands {
				if got := 100 * float64(c.WindowRequests) / float64(total); math.Abs(got-want[i]) > 2 {
					t.Errorf("%s got %.2f%%, want %.2f%% ± 2", c.Name, got, want[i])
				}
			}
		})
	}
}

// TestAdaptiveErrorRecovery: an upstream with 3 recent consecutive failures
// drops below a healthy one of lower weight, and its error score recovers
// linearly over 5 minutes (200 − 130 × cooldown).
func TestAdaptiveErrorRecovery(t *testing.T) {
	failedAt := testEpoch
	cands := []Candidate{
		{Name: "heavy", Weight: 80, WindowRequests: 40, ConsecutiveFailures: 3, LastFailure: failedAt, Active: true},
		{Name: "light", Weight: 20, WindowRequests: 40, Active: true},
	}
	now := failedAt
	b := newStrategyBalancer(t, StrategyAdaptive, 1, func() time.Time { return now })
	tests := []struct {
		after     time.Duration
		wantError float64
		wantFirst string
	}{
		{0, 70, "light"},
		{time.Minute, 96, "light"},
		{150 * time.Second, 135, "light"},
		{5 * time.Minute, 200, "heavy"},
		{time.Hour, 200, "heavy"},
	}
	for _, tt := range tests {
		t.Run(tt.after.String(), func(t *testing.T) {
			now = failedAt.Add(tt.after)
			p := b.Plan(Request{K: 2}, cands)
			heavy, _, _ := record(p.Decision, "heavy")
			light, _, _ := record(p.Decision, "light")
			if !near(heavy.Scores.ErrorAware, tt.wantError) || light.Scores.ErrorAware != 200 {
				t.Errorf("error_aware heavy %v light %v, want %v and 200", heavy.Scores.ErrorAware, light.Scores.ErrorAware, tt.wantError)
			}
			if p.Order[0] != tt.wantFirst {
				t.Errorf("Order = %v, want %s first (totals heavy %v, light %v)", p.Order, tt.wantFirst, heavy.Scores.Total, light.Scores.Total)
			}
		})
	}
}

func TestAdaptiveErrorAwareScore(t *testing.T) {
	tests := []struct {
		name     string
		failures int
		ago      time.Duration // since the last failure; < 0: in the future
		never    bool
		want     float64
	}{
		{name: "never failed", never: true, failures: 9, want: 200},
		{name: "recent failure, streak reset", failures: 0, ago: time.Minute, want: 168},
		{name: "one failure now", failures: 1, want: 130},
		{name: "six failures now floor at 0", failures: 6, want: 0},
		{name: "clock skew counts as now", failures: 1, ago: -time.Minute, want: 130},
		{name: "just under 5 minutes", failures: 1, ago: 5*time.Minute - 3*time.Second, want: 200 - 70*0.01},
		{name: "5 minutes: forgiven", failures: 10, ago: 5 * time.Minute, want: 200},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			last := testEpoch.Add(-tt.ago)
			if tt.never {
				last = time.Time{}
			}
			if got := errorAwareScore(tt.failures, last, testEpoch); !near(got, tt.want) {
				t.Errorf("errorAwareScore = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestAdaptiveLatencyAware(t *testing.T) {
	tests := []struct {
		name               string
		stream             bool
		latency, ttft, tps float64
		want               float64
	}{
		{name: "non-streaming no data", want: 40},
		{name: "non-streaming ignores TTFT", ttft: 100, tps: 90, want: 40},
		{name: "non-streaming 300 ms", latency: 300, want: 72},
		{name: "non-streaming 3000 ms", latency: 3000, want: 0},
		{name: "non-streaming clamped at 0", latency: 9000, want: 0},
		{name: "streaming no TTFT data", stream: true, latency: 100, tps: 90, want: 40},
		{name: "streaming 600 ms, 52.5 tok/s", stream: true, ttft: 600, tps: 52.5, want: 80 * (0.7*0.8 + 0.3*0.5)},
		{name: "streaming throughput clamped at 100", stream: true, ttft: 300, tps: 400, want: 80 * (0.7*0.9 + 0.3)},
		{name: "streaming slow and thin", stream: true, ttft: 4000, tps: 3, want: 0},
		{name: "streaming without throughput data", stream: true, ttft: 1500, want: 80 * 0.7 * 0.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := Candidate{Name: "a", Weight: 1, LatencyEWMA: tt.latency, TTFTEWMA: tt.ttft, TPSEWMA: tt.tps, Active: true}
			r, _, _ := record(adaptivePlan(t, Request{Stream: tt.stream}, []Candidate{c}, testEpoch).Decision, "a")
			if !near(r.Scores.LatencyAware, tt.want) {
				t.Errorf("latency_aware = %v, want %v", r.Scores.LatencyAware, tt.want)
			}
		})
	}
}

func TestAdaptiveRateLimitAware(t *testing.T) {
	tests := []struct {
		name                     string
		c                        Candidate
		wantRatio, wantRateLimit float64
		wantConcurrency          float64 // NaN: not recorded
	}{
		{name: "no limits", wantRatio: 0, wantRateLimit: 100, wantConcurrency: math.NaN()},
		{name: "rpm half used", c: Candidate{RPMUsed: 30, RPMLimit: 60}, wantRatio: 0.5, wantRateLimit: 50, wantConcurrency: math.NaN()},
		{name: "the higher ratio counts", c: Candidate{RPMUsed: 30, RPMLimit: 60, TPMUsed: 9000, TPMLimit: 10000}, wantRatio: 0.9, wantRateLimit: 10, wantConcurrency: math.NaN()},
		{name: "unknown limit ignored", c: Candidate{RPMUsed: 500, TPMUsed: 1}, wantRatio: 0, wantRateLimit: 100, wantConcurrency: math.NaN()},
		{name: "rpm exhausted", c: Candidate{RPMUsed: 60, RPMLimit: 60}, wantRatio: 1, wantRateLimit: -10000, wantConcurrency: math.NaN()},
		{name: "cooling after 429", c: Candidate{RateLimited: true}, wantRatio: 0, wantRateLimit: -10000, wantConcurrency: math.NaN()},
		{name: "idle slots", c: Candidate{MaxConcurrency: 4}, wantRatio: 0, wantRateLimit: 100, wantConcurrency: 100},
		{name: "half the slots", c: Candidate{MaxConcurrency: 4, InFlight: 2}, wantRatio: 0, wantRateLimit: 65, wantConcurrency: 65},
		{name: "ratio below concurrency", c: Candidate{MaxConcurrency: 4, InFlight: 2, RPMUsed: 30, RPMLimit: 60}, wantRatio: 0.5, wantRateLimit: 50, wantConcurrency: 65},
		{name: "last slot", c: Candidate{MaxConcurrency: 4, InFlight: 3, RPMUsed: 6, RPMLimit: 60}, wantRatio: 0.1, wantRateLimit: 47.5, wantConcurrency: 47.5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := tt.c
			c.Name, c.Weight, c.Active = "a", 1, true
			r, _, _ := record(adaptivePlan(t, Request{}, []Candidate{c}, testEpoch).Decision, "a")
			s := r.Scores
			if !near(s.UsageRatio, tt.wantRatio) || !near(s.RateLimitAware, tt.wantRateLimit) {
				t.Errorf("usage_ratio %v rate_limit_aware %v, want %v and %v", s.UsageRatio, s.RateLimitAware, tt.wantRatio, tt.wantRateLimit)
			}
			if recorded := s.set&hasConcurrency != 0; recorded != !math.IsNaN(tt.wantConcurrency) || recorded && !near(s.Concurrency, tt.wantConcurrency) {
				t.Errorf("concurrency %v (recorded %v), want %v", s.Concurrency, recorded, tt.wantConcurrency)
			}
		})
	}
}

// TestAdaptiveConcurrencyScore covers the at-capacity sub-scores, which
// Plan reaches only when ordering waitable candidates.
func TestAdaptiveConcurrencyScore(t *testing.T) {
	tests := []struct {
		name string
		c    Candidate
		want float64
	}{
		{name: "idle", c: Candidate{MaxConcurrency: 10}, want: 100},
		{name: "one below capacity", c: Candidate{MaxConcurrency: 10, InFlight: 9}, want: 37},
		{name: "bounded queue empty", c: Candidate{MaxConcurrency: 2, InFlight: 2, QueueEnabled: true, QueueMax: 4}, want: 30},
		{name: "bounded queue a quarter full", c: Candidate{MaxConcurrency: 2, InFlight: 2, QueueEnabled: true, QueueMax: 4, QueueDepth: 1}, want: 22.5},
		{name: "bounded queue full", c: Candidate{MaxConcurrency: 2, InFlight: 2, QueueEnabled: true, QueueMax: 4, QueueDepth: 4}, want: -10000},
		{name: "unbounded queue decays steeply", c: Candidate{MaxConcurrency: 2, InFlight: 3, QueueEnabled: true, QueueDepth: 2}, want: 10},
		{name: "full without queue", c: Candidate{MaxConcurrency: 2, InFlight: 2}, want: -10000},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := concurrencyScore(&tt.c); !near(got, tt.want) {
				t.Errorf("concurrencyScore = %v, want %v", got, tt.want)
			}
		})
	}

	t.Run("waitable ordered by queue room", func(t *testing.T) {
		full := func(name string, depth int) Candidate {
			return Candidate{Name: name, Weight: 1, Active: true, MaxConcurrency: 2, InFlight: 2, QueueEnabled: true, QueueMax: 4, QueueDepth: depth}
		}
		p := adaptivePlan(t, Request{K: 1}, []Candidate{full("w3", 3), full("w0", 0), full("wfull", 4), full("w1", 1)}, testEpoch)
		if want := []string{"w0", "w1", "w3", "wfull"}; !slices.Equal(p.Waitable, want) {
			t.Errorf("Waitable = %v, want %v", p.Waitable, want)
		}
	})
}

// TestAdaptiveFallback: an exhausted or cooling upstream sorts last in its
// tier but stays in the plan; it is the pick only when nothing else is left.
func TestAdaptiveFallback(t *testing.T) {
	cooling := Candidate{Name: "cooling", Weight: 100, Active: true, RateLimited: true, RateLimitReason: "429, retry after 30s"}
	exhausted := Candidate{Name: "exhausted", Weight: 100, Active: true, RPMUsed: 60, RPMLimit: 60}
	slowBroken := Candidate{Name: "bad", Weight: 1, Active: true, LatencyEWMA: 9000, ConsecutiveFailures: 9, LastFailure: testEpoch, WindowRequests: 1000}
	tests := []struct {
		name  string
		req   Request
		cands []Candidate
		want  []string
	}{
		{name: "cooling last", req: Request{K: 3}, cands: []Candidate{cooling, up("a", 0, 1), slowBroken}, want: []string{"a", "bad", "cooling"}},
		{name: "exhausted last", req: Request{K: 3}, cands: []Candidate{exhausted, slowBroken, up("a", 0, 1)}, want: []string{"a", "bad", "exhausted"}},
		{name: "not in a short plan", req: Request{K: 1}, cands: []Candidate{cooling, exhausted, up("a", 0, 1)}, want: []string{"a"}},
		{name: "the pick when alone", req: Request{K: 2}, cands: []Candidate{cooling}, want: []string{"cooling"}},
		{name: "a healthy later tier goes before a fallback", req: Request{K: 3}, cands: []Candidate{up("b", 1, 1), cooling, up("a", 0, 1)}, want: []string{"a", "b", "cooling"}},
		{name: "K=1 with a cooling tier 0 picks tier 1", req: Request{K: 1}, cands: []Candidate{up("b", 1, 1), cooling}, want: []string{"b"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := adaptivePlan(t, tt.req, tt.cands, testEpoch)
			if !slices.Equal(p.Order, tt.want) {
				t.Errorf("Order = %v, want %v", p.Order, tt.want)
			}
		})
	}
	p := adaptivePlan(t, Request{K: 2}, []Candidate{cooling, up("a", 0, 1)}, testEpoch)
	r, _, _ := record(p.Decision, "cooling")
	if r.Filter != "" || !r.Fallback || r.Scores.RateLimitAware != -10000 || r.ReasonText() != "rate limited: 429, retry after 30s, kept as a fallback" {
		t.Errorf("record = %+v, reason %q", r, r.ReasonText())
	}
}

// TestAdaptiveTopK checks that the partial selection returns exactly the k
// highest totals of a large tier, in order.
func TestAdaptiveTopK(t *testing.T) {
	gen := rand.New(rand.NewPCG(8, 9))
	b := newStrategyBalancer(t, StrategyAdaptive, 4, stepClock(time.Second))
	for iter := range 200 {
		cands := make([]Candidate, 50+gen.IntN(200))
		for i := range cands {
			cands[i] = Candidate{
				Name: fmt.Sprint("u", i), Weight: 1 + gen.IntN(100), Active: true,
				WindowRequests: int64(gen.IntN(500)), LatencyEWMA: float64(gen.IntN(3000)),
				RPMUsed: int64(gen.IntN(60)), RPMLimit: 60,
			}
		}
		k := 1 + gen.IntN(8)
		p := b.Plan(Request{K: k}, cands)
		totals := make([]float64, len(cands))
		for i, r := range p.Decision.Candidates {
			totals[i] = r.Scores.Total
		}
		slices.Sort(totals)
		slices.Reverse(totals)
		for i, n := range p.Order {
			if r, _, _ := record(p.Decision, n); r.Scores.Total != totals[i] {
				t.Fatalf("iter %d: Order[%d] = %s with total %v, want the %d-th best %v", iter, i, n, r.Scores.Total, i+1, totals[i])
			}
		}
	}
}
