package balancer

import (
	"math/rand/v2"
	"time"
)

// adaptive reproduces seed 001 (AxonHub's default adaptive load balancer;
// docs/reference.md#strategies): each candidate's score is the sum of four
// components and the tier is ordered by it, highest first, ties at random:
//
//   - error-aware, 0–200: 200 − (consecutiveFailures × 30 + 40) × cooldown,
//     floored at 0, where cooldown = 1 − minutesSinceLastFailure/5 falls
//     linearly from 1 to 0 over the five minutes after the last failure; no
//     penalty once they have passed or if the upstream never failed. Successes
//     earn nothing, so a healthy record never monopolises traffic.
//   - weighted round robin, (0,150]: 150 / (1 + normalized/150) with
//     normalized = windowRequests / (weight × slowStart / 100), a weight of 0
//     or less counting as 100: every upstream starts at 150 and a heavier one
//     absorbs more requests before its score falls, so over the sliding window
//     traffic splits in proportion to weight (80/50/20/10 → 50/31.25/12.5/6.25%).
//   - latency-aware, 0–80: streaming 80 × (0.7 × clamp(1 − ttft/3000) + 0.3 ×
//     clamp((tps − 5)/95)), non-streaming 80 × clamp(1 − latency/3000), both
//     on EWMAs (α = 0.3) and clamped to [0,1]; 40 (neutral) without data (for
//     streaming, without TTFT data).
//   - rate-limit aware, −10000 or at most 100: 100 × (1 − the highest RPM/TPM
//     used/limit ratio), capped by a concurrency sub-score when the upstream
//     has slots: 100 − 70 × inflight/capacity below capacity (in [30,100]);
//     at or over it, 30 × (1 − depth/max) with a bounded queue, 30/(1 + depth)
//     with an unbounded one. −10000 when the upstream is RateLimited (exhausted
//     or cooling down after a 429), a ratio reaches 1, the bounded queue is
//     full or there is no queue: more than every positive score together, so
//     it sorts last but stays in the plan as a fallback. Hence adaptive
//     implements rateLimitScorer and Plan does not filter RateLimited ones.
//
// Only the best k are selected (selectTop, K = 1 + retries), not the whole
// tier sorted.
type adaptive struct {
	rng *rand.Rand
	r   ranker // guarded by the Balancer's mutex
}

var (
	_ Strategy        = (*adaptive)(nil)
	_ rateLimitScorer = (*adaptive)(nil)
)

func newAdaptive(env strategyEnv) Strategy { return &adaptive{rng: env.rand} }

// Name returns "adaptive".
func (*adaptive) Name() string { return StrategyAdaptive }

func (*adaptive) scoresRateLimits() {}

// Seed 001's constants.
const (
	errorBase           = 200.0
	errorPerFailure     = 30.0
	errorRecentFailure  = 40.0
	errorCooldown       = 5 * time.Minute
	wrrMax              = 150.0
	wrrDefaultWeight    = 100.0
	latencyMax          = 80.0
	latencyNeutral      = 40.0
	latencyRefMs        = 3000.0
	ttftShare           = 0.7
	tpsMin, tpsMax      = 5.0, 100.0
	rateLimitMax        = 100.0
	rateLimitExhausted  = -10000.0
	concurrencyFloor    = 70.0 // 100 − 70 = 30 at capacity
	concurrencyQueueMax = 30.0
)

// Order returns the k candidates with the highest total score. It records
// every component (error_aware, wrr, latency_aware, rate_limit_aware, with
// usage_ratio and, for an upstream with slots, concurrency), slow_start,
// effective_weight (adaptive's weight × slow start) and total.
func (s *adaptive) Order(t *Tier, k int) []*Candidate {
	items := s.r.reset(len(t.Candidates))
	for i, c := range t.Candidates {
		sc := adaptiveScores(c, t.Now, t.Stream)
		t.Scores[i] = sc
		items[i] = rankItem{key: -sc.Total, tie: s.rng.Uint64(), c: c}
	}
	selectTop(items, k)
	return s.r.take(t.Candidates, k)
}

// adaptiveScores computes every component of c's adaptive score at now.
func adaptiveScores(c *Candidate, now time.Time, stream bool) Scores {
	f := slowStartFactor(c.SlowStart)
	w := wrrDefaultWeight
	if c.Weight > 0 {
		w = float64(c.Weight)
	}
	w *= f
	sc := Scores{
		SlowStart:       f,
		EffectiveWeight: w,
		ErrorAware:      errorAwareScore(c.ConsecutiveFailures, c.LastFailure, now),
		WRR:             wrrScore(c.WindowRequests, w),
		LatencyAware:    latencyAwareScore(c, stream),
		set: hasSlowStart | hasEffectiveWeight | hasErrorAware | hasWRR | hasLatencyAware |
			hasUsageRatio | hasRateLimitAware | hasTotal,
	}
	sc.UsageRatio = max(usage(c.RPMUsed, c.RPMLimit), usage(c.TPMUsed, c.TPMLimit))
	sc.RateLimitAware = rateLimitMax * (1 - sc.UsageRatio)
	if c.MaxConcurrency > 0 {
		sc.Concurrency = concurrencyScore(c)
		sc.set |= hasConcurrency
		sc.RateLimitAware = min(sc.RateLimitAware, sc.Concurrency)
	}
	if c.RateLimited || sc.UsageRatio >= 1 {
		sc.RateLimitAware = rateLimitExhausted
	}
	sc.Total = sc.ErrorAware + sc.WRR + sc.LatencyAware + sc.RateLimitAware
	return sc
}

// errorAwareScore is seed 001's ErrorAwareStrategy.
func errorAwareScore(failures int, last, now time.Time) float64 {
	if last.IsZero() {
		return errorBase
	}
	since := max(now.Sub(last), 0)
	if since >= errorCooldown {
		return errorBase
	}
	cooldown := 1 - since.Minutes()/errorCooldown.Minutes()
	penalty := (float64(max(failures, 0))*errorPerFailure + errorRecentFailure) * cooldown
	return max(errorBase-penalty, 0)
}

// wrrScore is seed 001's WeightRoundRobinStrategy for an effective weight
// w > 0.
func wrrScore(requests int64, w float64) float64 {
	normalized := float64(max(requests, 0)) / (w / 100)
	return wrrMax / (1 + normalized/wrrMax)
}

// latencyAwareScore is seed 001's LatencyAwareStrategy.
func latencyAwareScore(c *Candidate, stream bool) float64 {
	if stream {
		ttft := positive(c.TTFTEWMA)
		if ttft == 0 {
			return latencyNeutral
		}
		ttftC := clamp01(1 - ttft/latencyRefMs)
		tpsC := clamp01((positive(c.TPSEWMA) - tpsMin) / (tpsMax - tpsMin))
		return latencyMax * (ttftShare*ttftC + (1-ttftShare)*tpsC)
	}
	lat := positive(c.LatencyEWMA)
	if lat == 0 {
		return latencyNeutral
	}
	return latencyMax * clamp01(1-lat/latencyRefMs)
}

// usage returns used/limit, or 0 when the limit is unknown.
func usage(used, limit int64) float64 {
	if limit <= 0 {
		return 0
	}
	return float64(max(used, 0)) / float64(limit)
}

// concurrencyScore is seed 001's scoreConcurrency for an upstream with
// MaxConcurrency > 0.
func concurrencyScore(c *Candidate) float64 {
	inflight, capacity := float64(max(c.InFlight, 0)), float64(c.MaxConcurrency)
	if inflight < capacity {
		return rateLimitMax - concurrencyFloor*inflight/capacity
	}
	depth := float64(max(c.QueueDepth, 0))
	switch {
	case !c.QueueEnabled:
		return rateLimitExhausted
	case c.QueueMax <= 0:
		return concurrencyQueueMax / (1 + depth)
	case c.QueueDepth >= c.QueueMax:
		return rateLimitExhausted
	}
	return concurrencyQueueMax * (1 - depth/float64(c.QueueMax))
}

func clamp01(x float64) float64 { return min(max(x, 0), 1) }
