package sim

import (
	"time"

	"switchyard/internal/balancer"
	"switchyard/internal/health"
	"switchyard/internal/outcome"
)

// recorder keeps what the report needs and nothing per request beyond the
// latencies of successful requests (one float32 each, grouped by the time
// bucket the request started in), from which the percentiles are exact.
type recorder struct {
	width time.Duration
	n, nu int

	// per time bucket × upstream (index b*nu + u), by the attempt's send time
	attempts, served, r429, errs []int32
	// per time bucket, by the request's start
	requests, failed []int32
	lat, ttft        [][]float32 // ms of successful requests (TTFT: streams)
	// per time bucket, by the turn's start: sessions' successful turns
	// after their first, and those of them served warm (turnCache)
	turns, warm []int32

	ups      []upTotals
	labels   map[string]int64
	affinity AffinityCounts
	client   clientTotals
	states   [][]stateChange // per upstream, in time order
}

// upTotals are one upstream's totals over the run.
type upTotals struct {
	attempts, served, r429, errors, trips int64
	in, out                               int64
	cacheRead, cacheWrite                 int64
	cost                                  float64
}

// clientTotals are the totals the client sees.
type clientTotals struct {
	requests, succeeded, attempts, failovers, rescued int64
	hedges                                            int64
	cost                                              float64
}

// stateChange is a breaker transition seen at a simulated time.
type stateChange struct {
	at time.Duration
	to health.State
}

func newRecorder(sc *Scenario, ups []*upstreamSim) *recorder {
	n := int((sc.Duration + sc.Bucket - 1) / sc.Bucket)
	nu := len(ups)
	return &recorder{
		width: sc.Bucket, n: n, nu: nu,
		attempts: make([]int32, n*nu), served: make([]int32, n*nu), r429: make([]int32, n*nu), errs: make([]int32, n*nu),
		requests: make([]int32, n), failed: make([]int32, n),
		lat: make([][]float32, n), ttft: make([][]float32, n), turns: make([]int32, n), warm: make([]int32, n),
		ups: make([]upTotals, nu), labels: map[string]int64{}, states: make([][]stateChange, nu),
	}
}

// bucket returns the time bucket of t; later times fall in the last one.
func (r *recorder) bucket(t time.Duration) int { return min(int(t/r.width), r.n-1) }

// attempt counts one attempt on upstream u sent at sent, by its outcome.
func (r *recorder) attempt(u int, sent time.Duration, o outcome.Class) {
	i := r.bucket(sent)*r.nu + u
	r.attempts[i]++
	r.ups[u].attempts++
	switch o {
	case outcome.Success:
		r.served[i]++
	case outcome.RateLimited:
		r.r429[i]++
		r.ups[u].r429++
	case outcome.ServerError, outcome.AuthError:
		r.errs[i]++
		r.ups[u].errors++
	}
}

// usage adds an attempt's billed usage and cost to upstream u; served
// counts it as a success.
func (r *recorder) usage(u int, served bool, o *outcome.Outcome, cost float64) {
	t := &r.ups[u]
	if served {
		t.served++
	}
	t.in += o.InputTokens
	t.out += o.OutputTokens
	t.cacheRead += o.CacheReadTokens
	t.cacheWrite += o.CacheWriteTokens
	t.cost += cost
	r.client.cost += cost
}

// request records a client request's answer at now; ttft is a successful
// stream's time to its first event (0 otherwise).
func (r *recorder) request(q *request, now time.Duration, label string, ttft time.Duration) {
	b := r.bucket(q.start)
	r.requests[b]++
	r.labels[label]++
	c := &r.client
	c.requests++
	c.attempts += int64(q.log.Attempts)
	c.hedges += int64(q.hedges)
	failovers := q.log.Attempts - 1 - q.hedges // a hedge is no failover
	if failovers > 0 {
		c.failovers += int64(failovers)
	}
	if label != clientOK {
		r.failed[b]++
		return
	}
	c.succeeded++
	if failovers > 0 {
		c.rescued++
	}
	if q.sess != nil {
		r.sessionTurn(q, b, now)
	}
	r.lat[b] = append(r.lat[b], float32(ms(now-q.start)))
	if ttft > 0 {
		r.ttft[b] = append(r.ttft[b], float32(ms(ttft)))
	}
}

// plan counts a plan's affinity result ("" for a request without a session).
func (r *recorder) plan(result string) {
	a := &r.affinity
	switch result {
	case balancer.AffinityHit:
		a.Hit++
	case balancer.AffinityMiss:
		a.Miss++
	case balancer.AffinityFallthrough:
		a.Fallthrough++
	case balancer.AffinityMigrated:
		a.Migrated++
	}
}

// breaker records upstream u's breaker entering state to at now.
func (r *recorder) breaker(u int, now time.Duration, to health.State) {
	r.states[u] = append(r.states[u], stateChange{at: now, to: to})
	if to == health.Open {
		r.ups[u].trips++
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
