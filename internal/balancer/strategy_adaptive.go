package balancer

import (
	"math/rand/v2"
	"time"
)

// adaptive follows seed 001 (AxonHub's default adaptive load balancer;
// docs/reference.md#strategies): each candidate's score is the sum of four
// components and the tier is ordered by it, highest first, ties at random.
// Two parts depart from the seed on purpose
// (docs/routing.md#adaptive-and-seed-001): the weighted share term compares
// shares, not raw counts, so neither the scale of the weights nor the traffic
// volume matters; and an upstream below a tenth of its share gets its error
// penalty waived, so a recovered upstream earns traffic back.
//
//   - error-aware, 0–200: 200 − (consecutiveFailures × 30 + 40) × cooldown,
//     floored at 0, where cooldown = 1 − minutesSinceLastFailure/5 falls
//     linearly from 1 to 0 over the five minutes after the last failure; no
//     penalty once they have passed or if the upstream never failed. Successes
//     earn nothing, so a healthy record never monopolises traffic. Waived
//     (200, the penalty recorded as error_waived) while the upstream's share
//     ratio is below 0.1 and the tier has requests in its window: a trickle
//     of about a tenth of its share still reaches it, and its first success
//     ends the failure streak (the seed's penalty would wait for a success
//     it never lets through).
//   - weighted share, (0,150]: 150 / (1 + ratio²) with ratio = (its share of
//     the tier's window requests) / (its share of the tier's effective
//     weights), effective weight = weight × slow start, a weight of 0 or less
//     counting as 1 (the config default); ratio 0 when the tier's window is
//     empty. On target it scores 75, idle 150, at twice its share 30: picks
//     go to whoever is furthest below its share, so traffic splits in
//     proportion to weight (80/50/20/10 → 50/31.25/12.5/6.25%), the same for
//     2:1 as for 100:50.
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

// Seed 001's constants, and ours (adaptiveDefaultWeight, trickleRatio).
const (
	adaptiveDefaultWeight = 1.0 // the config's default weight
	trickleRatio          = 0.1 // below this share ratio the error penalty is waived

	errorBase           = 200.0
	errorPerFailure     = 30.0
	errorRecentFailure  = 40.0
	errorCooldown       = 5 * time.Minute
	wrrMax              = 150.0
	latencyMax          = 80.0
	latencyNeutral      = 40.0
	latencyRefMs        = 3000.0
	ttftShare           = 0.7
	tpsMin, tpsMax      = 5.0, 100.0
	rateLimitMax        = 100.0
	rateLimitExhausted  = -10000.0
	concurrencyFloor    = 70.0 // 100 − 70 = 30 at capacity
	concurrencyKnee     = 0.5  // no penalty until half the slots are taken
	concurrencyQueueMax = 30.0
)

// Order returns the k candidates with the highest total score. It records
// every component (error_aware, wrr, latency_aware, rate_limit_aware, with
// share_ratio, usage_ratio, error_waived when it waived the penalty and, for
// an upstream with slots, concurrency), slow_start, effective_weight
// (adaptive's weight × slow start) and total.
func (s *adaptive) Order(t *Tier, k int) []*Candidate {
	sums := tierSumsOf(t.Candidates)
	items := s.r.reset(len(t.Candidates))
	for i, c := range t.Candidates {
		sc := adaptiveScores(c, sums, t.Now, t.Stream)
		t.Scores[i] = sc
		items[i] = rankItem{key: -sc.Total, tie: s.rng.Uint64(), c: c}
	}
	selectTop(items, k)
	return s.r.take(t.Candidates, k)
}

// tierSums are the totals a candidate's share is measured against: the
// window requests and effective weights of the candidates being ordered.
type tierSums struct {
	requests, weight float64
}

func tierSumsOf(cands []*Candidate) tierSums {
	var s tierSums
	for _, c := range cands {
		s.requests += float64(max(c.WindowRequests, 0))
		s.weight += adaptiveWeight(c)
	}
	return s
}

// adaptiveWeight is c's effective weight: weight × slow start, a weight of 0
// or less counting as 1.
func adaptiveWeight(c *Candidate) float64 {
	w := adaptiveDefaultWeight
	if c.Weight > 0 {
		w = float64(c.Weight)
	}
	return w * slowStartFactor(c.SlowStart)
}

// shareRatio is c's share of the tier's window requests over its share of
// the tier's effective weights; 0 when the window is empty.
func (s tierSums) shareRatio(c *Candidate, w float64) float64 {
	if s.requests <= 0 || s.weight <= 0 {
		return 0
	}
	return float64(max(c.WindowRequests, 0)) / s.requests * s.weight / w
}

// adaptiveScores computes every component of c's adaptive score at now.
func adaptiveScores(c *Candidate, sums tierSums, now time.Time, stream bool) Scores {
	w := adaptiveWeight(c)
	ratio := sums.shareRatio(c, w)
	sc := Scores{
		SlowStart:       slowStartFactor(c.SlowStart),
		EffectiveWeight: w,
		ErrorAware:      errorAwareScore(c.ConsecutiveFailures, c.LastFailure, now),
		ShareRatio:      ratio,
		WRR:             wrrScore(ratio),
		LatencyAware:    latencyAwareScore(c, stream),
		set: hasSlowStart | hasEffectiveWeight | hasErrorAware | hasShareRatio | hasWRR |
			hasLatencyAware | hasUsageRatio | hasRateLimitAware | hasTotal,
	}
	if sums.requests > 0 && ratio < trickleRatio && sc.ErrorAware < errorBase {
		sc.ErrorWaived = errorBase - sc.ErrorAware
		sc.ErrorAware = errorBase
		sc.set |= hasErrorWaived
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

// wrrScore is the weighted share component for a share ratio ≥ 0: 150 idle,
// 75 on target, falling steeply above it. Seed 001's 150 / (1 +
// normalized/150), normalized = requests / (weight/100), has the same shape
// in raw counts, which made it vanish at our weights and volumes
// (docs/routing.md#adaptive-and-seed-001).
func wrrScore(ratio float64) float64 {
	return wrrMax / (1 + ratio*ratio)
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
		knee := capacity * concurrencyKnee
		return rateLimitMax - concurrencyFloor*max(inflight-knee, 0)/(capacity-knee)
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
