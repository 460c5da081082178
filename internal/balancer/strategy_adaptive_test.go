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

// TestAdaptiveWRR checks the weighted share component on small tiers: the
// share ratio (share of the window's requests over share of the effective
// weights) and 150 / (1 + ratio²), the same at any scale of weights.
func TestAdaptiveWRR(t *testing.T) {
	tests := []struct {
		name      string
		cands     []Candidate // "a" is checked
		wantRatio float64
		want      float64
	}{
		{name: "empty window", cands: []Candidate{{Name: "a", Weight: 2}, {Name: "b", Weight: 1}}, wantRatio: 0, want: 150},
		{name: "on target at 2:1", cands: []Candidate{{Name: "a", Weight: 2, WindowRequests: 20}, {Name: "b", Weight: 1, WindowRequests: 10}}, wantRatio: 1, want: 75},
		{name: "on target at 100:50", cands: []Candidate{{Name: "a", Weight: 100, WindowRequests: 20}, {Name: "b", Weight: 50, WindowRequests: 10}}, wantRatio: 1, want: 75},
		{name: "twice its share", cands: []Candidate{{Name: "a", Weight: 1, WindowRequests: 10}, {Name: "b", Weight: 1}}, wantRatio: 2, want: 30},
		{name: "half its share", cands: []Candidate{{Name: "a", Weight: 1, WindowRequests: 5}, {Name: "b", Weight: 1, WindowRequests: 15}}, wantRatio: 0.5, want: 120},
		{name: "idle while others are busy", cands: []Candidate{{Name: "a", Weight: 80}, {Name: "b", Weight: 20, WindowRequests: 500}}, wantRatio: 0, want: 150},
		{name: "weight 0 counts as 1", cands: []Candidate{{Name: "a", WindowRequests: 10}, {Name: "b", Weight: 1, WindowRequests: 10}}, wantRatio: 1, want: 75},
		{name: "negative weight counts as 1", cands: []Candidate{{Name: "a", Weight: -5, WindowRequests: 10}, {Name: "b", Weight: 1, WindowRequests: 30}}, wantRatio: 0.5, want: 120},
		{name: "slow start halves the weight", cands: []Candidate{{Name: "a", Weight: 2, SlowStart: 0.5, WindowRequests: 10}, {Name: "b", Weight: 1, WindowRequests: 10}}, wantRatio: 1, want: 75},
		{name: "alone", cands: []Candidate{{Name: "a", Weight: 7, WindowRequests: 300}}, wantRatio: 1, want: 75},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for i := range tt.cands {
				tt.cands[i].Active = true
			}
			r, _, _ := record(adaptivePlan(t, Request{K: 2}, tt.cands, testEpoch).Decision, "a")
			if !near(r.Scores.ShareRatio, tt.wantRatio) || !near(r.Scores.WRR, tt.want) {
				t.Errorf("share_ratio %v wrr %v, want %v and %v", r.Scores.ShareRatio, r.Scores.WRR, tt.wantRatio, tt.want)
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

// TestAdaptiveErrorRecovery: an upstream with 3 recent consecutive failures,
// slightly below its share, drops below a healthy one of lower weight, and
// its error score recovers linearly over 5 minutes (200 − 130 × cooldown).
func TestAdaptiveErrorRecovery(t *testing.T) {
	failedAt := testEpoch
	cands := []Candidate{
		{Name: "heavy", Weight: 80, WindowRequests: 78, ConsecutiveFailures: 3, LastFailure: failedAt, Active: true},
		{Name: "light", Weight: 20, WindowRequests: 22, Active: true},
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
		{4*time.Minute + 50*time.Second, 200 - 130.0/30, "heavy"},
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

// TestAdaptiveTrickle: the error penalty is waived, and recorded as
// error_waived, only for an upstream below a tenth of its share of a
// non-empty window.
func TestAdaptiveTrickle(t *testing.T) {
	broken := func(requests int64) Candidate {
		return Candidate{Name: "broken", Weight: 1, Active: true, WindowRequests: requests, ConsecutiveFailures: 6, LastFailure: testEpoch}
	}
	healthy := func(requests int64) Candidate {
		return Candidate{Name: "ok", Weight: 1, Active: true, WindowRequests: requests}
	}
	tests := []struct {
		name       string
		cands      []Candidate
		wantFirst  string
		wantError  float64
		wantWaived float64 // NaN: not recorded
	}{
		{name: "idle: waived", cands: []Candidate{broken(0), healthy(100)}, wantFirst: "broken", wantError: 200, wantWaived: 200},
		{name: "just below a tenth", cands: []Candidate{broken(4), healthy(96)}, wantFirst: "broken", wantError: 200, wantWaived: 200},
		{name: "a tenth of its share", cands: []Candidate{broken(5), healthy(95)}, wantFirst: "ok", wantError: 0, wantWaived: math.NaN()},
		{name: "empty window: no waiver", cands: []Candidate{broken(0), healthy(0)}, wantFirst: "ok", wantError: 0, wantWaived: math.NaN()},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := adaptivePlan(t, Request{K: 2}, tt.cands, testEpoch)
			r, _, _ := record(p.Decision, "broken")
			s := r.Scores
			if p.Order[0] != tt.wantFirst || !near(s.ErrorAware, tt.wantError) {
				t.Errorf("Order %v error_aware %v, want %s first and %v", p.Order, s.ErrorAware, tt.wantFirst, tt.wantError)
			}
			if recorded := s.set&hasErrorWaived != 0; recorded != !math.IsNaN(tt.wantWaived) || recorded && !near(s.ErrorWaived, tt.wantWaived) {
				t.Errorf("error_waived %v (recorded %v), want %v", s.ErrorWaived, recorded, tt.wantWaived)
			}
		})
	}
}

// TestAdaptiveRecoveryShare: three upstreams of weight 1 at 10 picks a
// second; "back" had 10 consecutive failures just before the run and
// nothing in the window, the others shared the last minute. Over the next
// five minutes (3,000 picks, 60 s window), an upstream that answers again
// gets its share back despite the seed's five-minute cooldown (≥ 25%; its
// first success ends the streak, and the 40-point recent-failure penalty
// fades), while one that still fails gets only a trickle, between 1% and
// 4% (a tenth of a third is 3.3%), each pick extending its streak.
func TestAdaptiveRecoveryShare(t *testing.T) {
	tests := []struct {
		name     string
		answers  bool
		min, max float64 // percent
	}{
		{name: "recovered", answers: true, min: 25, max: 40},
		{name: "still failing", answers: false, min: 1, max: 4},
	}
	const picks, window, step = 3000, 600, 100 * time.Millisecond
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			now := testEpoch
			b := newStrategyBalancer(t, StrategyAdaptive, 3, func() time.Time { return now })
			cands := []Candidate{
				{Name: "a", Weight: 1, Active: true, LatencyEWMA: 800, WindowRequests: window / 2},
				{Name: "b", Weight: 1, Active: true, LatencyEWMA: 800, WindowRequests: window / 2},
				{Name: "back", Weight: 1, Active: true, LatencyEWMA: 800, ConsecutiveFailures: 10, LastFailure: testEpoch},
			}
			// The window before the run alternates a and b.
			picked := make([]int, 0, window+picks)
			for i := range window {
				picked = append(picked, i%2)
			}
			back := 0
			for i := range picks {
				cands[picked[i]].WindowRequests--
				p := b.Plan(Request{K: 2}, cands)
				u := slices.IndexFunc(cands, func(c Candidate) bool { return c.Name == p.Order[0] })
				cands[u].WindowRequests++
				picked = append(picked, u)
				if u == 2 {
					back++
					if tt.answers {
						cands[2].ConsecutiveFailures = 0
					} else {
						cands[2].ConsecutiveFailures++
						cands[2].LastFailure = now
					}
				}
				now = now.Add(step)
			}
			if got := 100 * float64(back) / picks; got < tt.min || got > tt.max {
				t.Errorf("back got %.2f%% of the picks, want %.0f–%.0f%%", got, tt.min, tt.max)
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
		{name: "half the slots: no penalty yet", c: Candidate{MaxConcurrency: 4, InFlight: 2}, wantRatio: 0, wantRateLimit: 100, wantConcurrency: 100},
		{name: "three quarters of the slots", c: Candidate{MaxConcurrency: 8, InFlight: 6}, wantRatio: 0, wantRateLimit: 65, wantConcurrency: 65},
		{name: "ratio below concurrency", c: Candidate{MaxConcurrency: 4, InFlight: 3, RPMUsed: 30, RPMLimit: 60}, wantRatio: 0.5, wantRateLimit: 50, wantConcurrency: 65},
		{name: "last slot", c: Candidate{MaxConcurrency: 4, InFlight: 3, RPMUsed: 6, RPMLimit: 60}, wantRatio: 0.1, wantRateLimit: 65, wantConcurrency: 65},
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
		{name: "half taken", c: Candidate{MaxConcurrency: 10, InFlight: 5}, want: 100},
		{name: "just past half", c: Candidate{MaxConcurrency: 10, InFlight: 6}, want: 86},
		{name: "one below capacity", c: Candidate{MaxConcurrency: 10, InFlight: 9}, want: 44},
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
