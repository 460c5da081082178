package metrics

import (
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// Request records one answered client request: upstream is the upstream
// that served its last attempt ("" when none was reached), model the client
// model name, status the status sent to the client and dur the time from
// arrival to the last byte. It increments switchyard_requests_total and
// observes switchyard_request_duration_seconds.
func (m *Metrics) Request(upstream, model string, status int, stream bool, dur time.Duration) {
	u, s := m.bound(upstreamLabel, upstream), boolLabel(stream)
	m.requestsC.get([4]string{u, m.bound(modelLabel, model), codeClass(status), s}).Inc()
	m.durationC.get([2]string{u, s}).Observe(dur.Seconds())
}

// Attempt records one attempt sent to upstream and its outcome class: one of
// the Outcome constants (the names of outcome.Class); anything else is
// recorded as "other".
func (m *Metrics) Attempt(upstream, outcome string) {
	m.attemptsC.get([2]string{m.bound(upstreamLabel, upstream), outcomeLabel(outcome)}).Inc()
}

// Retry records one attempt after the first within a client request, for
// route (the configured route or model name).
func (m *Metrics) Retry(route string) {
	m.retriesC.get([1]string{m.bound(routeLabel, route)}).Inc()
}

// Hedge results of switchyard_hedges_total.
const (
	HedgeWon           = "won"
	HedgeLost          = "lost"
	HedgeSkippedBudget = "skipped_budget"
	HedgeSkippedLimits = "skipped_limits"
)

// Hedge records one hedge of route by result: one of the Hedge constants.
func (m *Metrics) Hedge(route, result string) {
	m.hedgesC.get([2]string{m.bound(routeLabel, route), result}).Inc()
}

// ClientDisconnect records one client request whose client went away.
func (m *Metrics) ClientDisconnect() { m.disconnects.Inc() }

// UpstreamError records one failure of upstream by class: one of the Error
// constants; anything else is recorded as "other".
func (m *Metrics) UpstreamError(upstream, class string) {
	m.upErrorsC.get([2]string{m.bound(upstreamLabel, upstream), errorClassLabel(class)}).Inc()
}

// RateLimited records one 429 from upstream and the limit it reports:
// LimitRequests, LimitTokens or LimitUnknown ("" counts as LimitUnknown,
// anything else as "other").
func (m *Metrics) RateLimited(upstream, limitType string) {
	m.rateLimitedC.get([2]string{m.bound(upstreamLabel, upstream), limitTypeLabel(limitType)}).Inc()
}

// TTFT observes the time to first token of one attempt on upstream.
func (m *Metrics) TTFT(upstream string, d time.Duration) {
	m.ttftC.get([1]string{m.bound(upstreamLabel, upstream)}).Observe(d.Seconds())
}

// Tokens adds the tokens an upstream reported for one request of the
// client model: input (the prompt cache's included), output, and the
// parts of input read from and written to the prompt cache. Counts of 0
// or less are ignored.
func (m *Metrics) Tokens(upstream, model string, in, out, cacheRead, cacheWrite int64) {
	if in <= 0 && out <= 0 {
		return
	}
	p := m.tokensC.get([2]string{m.bound(upstreamLabel, upstream), m.bound(modelLabel, model)})
	for _, c := range [...]struct {
		n int64
		c prometheus.Counter
	}{{in, p.in}, {out, p.out}, {cacheRead, p.cacheRead}, {cacheWrite, p.cacheWrite}} {
		if c.n > 0 {
			c.c.Add(float64(c.n))
		}
	}
}

// Cost adds the USD cost of one request of the client model served by
// upstream for key to switchyard_cost_usd_total. A cost of 0 or less (an
// unpriced request), NaN or +Inf is ignored.
func (m *Metrics) Cost(upstream, model, key string, usd float64) {
	if !(usd > 0) || math.IsInf(usd, 1) {
		return
	}
	m.costC.get([3]string{m.bound(upstreamLabel, upstream), m.bound(modelLabel, model), m.bound(keyLabel, key)}).Add(usd)
}

// Spend adds the cost in US dollars of one request served by upstream for
// the client key named key (its configured name, never its secret; see
// WithKeys). A cost that is not a positive finite number is ignored.
func (m *Metrics) Spend(upstream, key string, usd float64) {
	if !(usd > 0) || math.IsInf(usd, 1) {
		return
	}
	m.spendC.get([2]string{m.bound(upstreamLabel, upstream), m.bound(keyLabel, key)}).Add(usd)
}

// Selection records one routing decision for route that placed upstream
// first.
func (m *Metrics) Selection(route, upstream string) {
	m.selectionsC.get([2]string{m.bound(routeLabel, route), m.bound(upstreamLabel, upstream)}).Inc()
}

// Affinity records one session-affinity lookup by result: one of the
// Affinity constants; anything else is recorded as "other".
func (m *Metrics) Affinity(result string) {
	m.affinity[affinityIndex(result)].Inc()
}

// DroppedLogs adds n request logs dropped because the store's write queue was
// full. It adds to the value of the SetDroppedLogs hook, if any; a gateway
// uses one or the other.
func (m *Metrics) DroppedLogs(n uint64) { m.dropped.Add(n) }
