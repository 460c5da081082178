package metrics

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"switchyard/internal/clock"
)

// DefaultRefreshInterval is the least time between two refreshes of the
// configured names triggered by recording calls that meet an unknown name.
const DefaultRefreshInterval = 5 * time.Second

// Histogram buckets, in seconds. Request durations span quick embeddings to
// long streamed generations; time to first token spans cached prompts to
// saturated upstreams. Longer observations land in the +Inf bucket (the
// default timeout is 300 s, first_byte_timeout 60 s). docs/metrics.md lists them.
var (
	latencyBuckets = []float64{0.05, 0.1, 0.25, 0.5, 1, 2, 4, 8, 15, 30, 60, 120}
	ttftBuckets    = []float64{0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30}
)

// Metrics holds the gateway's collectors on a private registry. Create it
// with New; every method is safe for concurrent use.
type Metrics struct {
	reg *prometheus.Registry

	upstreamsFn, modelsFn, routesFn, keysFn func() []string
	clk                                     clock.Clock
	refreshEvery                            time.Duration

	refreshMu   sync.Mutex                    // serialises Refresh: guards reading the callbacks and swapping names
	names       atomic.Pointer[names]         // the current label sets; replaced whole, never mutated
	nextRefresh atomic.Int64                  // unix nanoseconds before which a miss does not refresh
	source      atomic.Pointer[source]        // the StateSource, or nil
	droppedFn   atomic.Pointer[func() uint64] // the SetDroppedLogs hook, or nil
	dropped     atomic.Uint64                 // dropped request logs counted by DroppedLogs
	shared      SharedStateMetrics            // the state.driver: redis families, once enabled

	requests    *prometheus.CounterVec
	duration    *prometheus.HistogramVec
	attempts    *prometheus.CounterVec
	retries     *prometheus.CounterVec
	upErrors    *prometheus.CounterVec
	rateLimited *prometheus.CounterVec
	ttft        *prometheus.HistogramVec
	tokens      *prometheus.CounterVec
	spend       *prometheus.CounterVec
	cost        *prometheus.CounterVec
	selections  *prometheus.CounterVec
	affinity    [len(affinityResults)]prometheus.Counter
	hedges      *prometheus.CounterVec
	disconnects prometheus.Counter

	// Children caches, keyed by the label values in the vector's order.
	requestsC    *children[[4]string, prometheus.Counter]  // upstream, model, code_class, stream
	durationC    *children[[2]string, prometheus.Observer] // upstream, stream
	attemptsC    *children[[2]string, prometheus.Counter]  // upstream, outcome
	retriesC     *children[[1]string, prometheus.Counter]  // route
	upErrorsC    *children[[2]string, prometheus.Counter]  // upstream, class
	rateLimitedC *children[[2]string, prometheus.Counter]  // upstream, limit_type
	ttftC        *children[[1]string, prometheus.Observer] // upstream
	tokensC      *children[[2]string, tokenSet]            // upstream, model
	spendC       *children[[2]string, prometheus.Counter]  // upstream, key
	costC        *children[[3]string, prometheus.Counter]  // upstream, model, key
	selectionsC  *children[[2]string, prometheus.Counter]  // route, upstream
	hedgesC      *children[[2]string, prometheus.Counter]  // route, result

	tenants TenantMetrics
}

// tokenSet holds the children of one upstream and model, one a direction.
type tokenSet struct{ in, out, cacheRead, cacheWrite prometheus.Counter }

// An Option configures New.
type Option func(*Metrics)

// WithClock sets the clock that paces refreshes triggered by unknown names.
// Default clock.Real{}.
func WithClock(c clock.Clock) Option { return func(m *Metrics) { m.clk = c } }

// WithRefreshInterval sets the least time between two refreshes triggered by
// recording calls that meet an unknown name. Default DefaultRefreshInterval;
// 0 or less turns such refreshes off (Refresh and scrapes still refresh).
func WithRefreshInterval(d time.Duration) Option {
	return func(m *Metrics) { m.refreshEvery = d }
}

// WithKeys bounds the key label of switchyard_spend_usd_total to the names
// keys returns (the configured client key names); others become "other".
// Without it any non-empty key name is recorded as given, so the caller must
// pass configured key names only, never a secret or a per-request value.
func WithKeys(keys func() []string) Option { return func(m *Metrics) { m.keysFn = keys } }

// WithRoutes adds the names routes returns (configured route names, globs
// included) to the values the route label may take. The route label always
// accepts the configured model names.
func WithRoutes(routes func() []string) Option { return func(m *Metrics) { m.routesFn = routes } }

// New returns Metrics with every collector registered on a fresh private
// registry, along with the Go runtime and process collectors.
//
// upstreams returns the configured upstream names and models the configured
// client-facing model names; they bound the upstream and model labels (see
// the package doc). Either may be nil, which means no name is configured.
// The callbacks are called from New, Refresh, every scrape and, at most once
// per refresh interval, from a recording call that meets an unknown name, so
// they must be cheap, safe for concurrent use, must not call back into
// Metrics and must not wait on a lock that a caller of a recording method may
// hold.
func New(upstreams, models func() []string, opts ...Option) *Metrics {
	m := &Metrics{
		reg:          prometheus.NewRegistry(),
		upstreamsFn:  upstreams,
		modelsFn:     models,
		clk:          clock.Real{},
		refreshEvery: DefaultRefreshInterval,
	}
	for _, o := range opts {
		o(m)
	}

	counter := func(name, help string, labels ...string) *prometheus.CounterVec {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: name, Help: help}, labels)
		m.reg.MustRegister(v)
		return v
	}
	histogram := func(name, help string, buckets []float64, labels ...string) *prometheus.HistogramVec {
		v := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: name, Help: help, Buckets: buckets}, labels)
		m.reg.MustRegister(v)
		return v
	}

	m.requests = counter("switchyard_requests_total",
		"Client requests answered, by upstream that served the last attempt, client model, status class and streaming.",
		"upstream", "model", "code_class", "stream")
	m.duration = histogram("switchyard_request_duration_seconds",
		"Client request duration from arrival to the last byte of the answer, by upstream and streaming.",
		latencyBuckets, "upstream", "stream")
	m.attempts = counter("switchyard_upstream_attempts_total",
		"Attempts sent to upstreams, by upstream and outcome class.",
		"upstream", "outcome")
	m.retries = counter("switchyard_retries_total",
		"Attempts after the first within one client request, by route.",
		"route")
	m.upErrors = counter("switchyard_upstream_errors_total",
		"Upstream failures, by upstream and error class.",
		"upstream", "class")
	m.rateLimited = counter("switchyard_rate_limited_total",
		"429 answers from upstreams, by upstream and the limit they report.",
		"upstream", "limit_type")
	m.ttft = histogram("switchyard_ttft_seconds",
		"Time from sending an attempt to the first token (first SSE event, or the response headers when not streaming), by upstream.",
		ttftBuckets, "upstream")
	m.tokens = counter("switchyard_tokens_total",
		"Tokens reported by upstream usage (a stream cut before its usage: one output token per content event received), by upstream, client model and direction: input (every prompt token, the prompt cache's included), output, and cache_read and cache_write (the parts of input read from and written to the prompt cache).",
		"upstream", "model", "direction")
	m.cost = counter("switchyard_cost_usd_total",
		"Cost of served requests in US dollars (input, output, cache-read and cache-write tokens × the model's price on the upstream), by upstream, client model and client key. Unpriced requests add nothing.",
		"upstream", "model", "key")
	m.spend = counter("switchyard_spend_usd_total",
		"Cost of served requests in US dollars (tokens × configured price), by upstream and client key.",
		"upstream", "key")
	m.selections = counter("switchyard_selections_total",
		"Routing decisions, by route and the upstream placed first.",
		"route", "upstream")
	m.hedges = counter("switchyard_hedges_total",
		"Hedges (attempts raced alongside a slow one), by route and result: won, lost, skipped_budget (hedge.budget spent) or skipped_limits (no candidate with a free slot and room in its limits).",
		"route", "result")
	m.disconnects = prometheus.NewCounter(prometheus.CounterOpts{Name: "switchyard_client_disconnects_total",
		Help: "Client requests whose client disconnected before the answer was complete (logged as 499); their upstream attempts are cancelled."})
	m.reg.MustRegister(m.disconnects)
	aff := counter("switchyard_affinity_total",
		"Session affinity lookups, by result.",
		"result")
	for i, r := range affinityResults {
		m.affinity[i] = aff.WithLabelValues(r)
	}
	m.tenants = newTenantMetrics(m.reg)
	m.shared.reg = m.reg
	m.reg.MustRegister(&stateCollector{m: m},
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))

	m.requestsC = newChildren(func(k [4]string) prometheus.Counter { return m.requests.WithLabelValues(k[:]...) })
	m.durationC = newChildren(func(k [2]string) prometheus.Observer { return m.duration.WithLabelValues(k[:]...) })
	m.attemptsC = newChildren(func(k [2]string) prometheus.Counter { return m.attempts.WithLabelValues(k[:]...) })
	m.retriesC = newChildren(func(k [1]string) prometheus.Counter { return m.retries.WithLabelValues(k[:]...) })
	m.hedgesC = newChildren(func(k [2]string) prometheus.Counter { return m.hedges.WithLabelValues(k[:]...) })
	m.upErrorsC = newChildren(func(k [2]string) prometheus.Counter { return m.upErrors.WithLabelValues(k[:]...) })
	m.rateLimitedC = newChildren(func(k [2]string) prometheus.Counter { return m.rateLimited.WithLabelValues(k[:]...) })
	m.ttftC = newChildren(func(k [1]string) prometheus.Observer { return m.ttft.WithLabelValues(k[:]...) })
	m.tokensC = newChildren(func(k [2]string) tokenSet {
		return tokenSet{
			in:         m.tokens.WithLabelValues(k[0], k[1], "input"),
			out:        m.tokens.WithLabelValues(k[0], k[1], "output"),
			cacheRead:  m.tokens.WithLabelValues(k[0], k[1], "cache_read"),
			cacheWrite: m.tokens.WithLabelValues(k[0], k[1], "cache_write"),
		}
	})
	m.costC = newChildren(func(k [3]string) prometheus.Counter {
		return m.cost.WithLabelValues(k[0], k[1], validLabel(k[2]))
	})
	m.spendC = newChildren(func(k [2]string) prometheus.Counter {
		return m.spend.WithLabelValues(k[0], validLabel(k[1]))
	})
	m.selectionsC = newChildren(func(k [2]string) prometheus.Counter { return m.selections.WithLabelValues(k[:]...) })

	m.Refresh()
	return m
}

// Registry returns the private registry, for registering further
// collectors or gathering in tests. It is never the global default registry.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Refresh re-reads the configured names from the callbacks. When a set has
// changed, the series of names that left it are deleted and the children
// caches are reset. The gateway calls it after a configuration change; every
// scrape calls it too.
//
// A recording call racing with Refresh on a name that has just been removed
// may recreate that name's series; the next change of that set, or a restart,
// clears it.
func (m *Metrics) Refresh() {
	m.refreshMu.Lock()
	defer m.refreshMu.Unlock()
	next := &names{
		upstreams: newNameSet(call(m.upstreamsFn)),
		models:    newNameSet(call(m.modelsFn)),
		routes:    newNameSet(call(m.modelsFn), call(m.routesFn)),
	}
	if m.keysFn != nil {
		next.keys = newNameSet(call(m.keysFn))
	}
	old := m.names.Load()
	if old != nil && !next.changed(old) {
		return
	}
	m.names.Store(next)
	if old == nil {
		return
	}
	deleteSeries("upstream", old.upstreams.dropped(next.upstreams),
		m.requests, m.duration, m.attempts, m.upErrors, m.rateLimited, m.ttft, m.tokens, m.spend, m.cost, m.selections)
	deleteSeries("model", old.models.dropped(next.models), m.requests, m.tokens, m.cost)
	deleteSeries("route", old.routes.dropped(next.routes), m.retries, m.selections, m.hedges)
	if old.keys != nil && next.keys != nil {
		deleteSeries("key", old.keys.dropped(next.keys), m.spend, m.cost)
	}
	m.resetCaches()
}

// partialDeleter is the part of a metric vector Refresh uses.
type partialDeleter interface {
	DeletePartialMatch(labels prometheus.Labels) int
}

// deleteSeries deletes, from every vector, the series whose label has one of
// the values.
func deleteSeries(labelName string, values []string, vecs ...partialDeleter) {
	for _, v := range values {
		for _, vec := range vecs {
			vec.DeletePartialMatch(prometheus.Labels{labelName: v})
		}
	}
}

// resetCaches empties every children cache.
func (m *Metrics) resetCaches() {
	m.requestsC.reset()
	m.durationC.reset()
	m.attemptsC.reset()
	m.retriesC.reset()
	m.hedgesC.reset()
	m.upErrorsC.reset()
	m.rateLimitedC.reset()
	m.ttftC.reset()
	m.tokensC.reset()
	m.spendC.reset()
	m.costC.reset()
	m.selectionsC.reset()
}

// call returns f(), or nil when f is nil.
func call(f func() []string) []string {
	if f == nil {
		return nil
	}
	return f()
}

// missRefresh refreshes the names after a lookup missed, unless a refresh
// triggered this way happened less than the refresh interval ago. It reports
// whether it refreshed.
func (m *Metrics) missRefresh() bool {
	if m.refreshEvery <= 0 {
		return false
	}
	now := m.clk.Now().UnixNano()
	next := m.nextRefresh.Load()
	if now < next || !m.nextRefresh.CompareAndSwap(next, now+int64(m.refreshEvery)) {
		return false
	}
	m.Refresh()
	return true
}

// lookup bounds name against the set that pick selects from the current
// names: "" is None, a configured name is itself and any other name is
// Other, after at most one paced refresh.
func (m *Metrics) lookup(name string, pick func(*names) nameSet) string {
	if name == "" {
		return None
	}
	if _, ok := pick(m.names.Load())[name]; ok {
		return name
	}
	if m.missRefresh() {
		if _, ok := pick(m.names.Load())[name]; ok {
			return name
		}
	}
	return Other
}

// A label is a label bounded by the configured names (see the package doc).
type label int

const (
	upstreamLabel label = iota
	modelLabel
	routeLabel
	keyLabel // bounded only when WithKeys is set
)

// picks selects each label's set from the current names.
var picks = [...]func(*names) nameSet{
	upstreamLabel: func(n *names) nameSet { return n.upstreams },
	modelLabel:    func(n *names) nameSet { return n.models },
	routeLabel:    func(n *names) nameSet { return n.routes },
	keyLabel:      func(n *names) nameSet { return n.keys },
}

// bound returns the value of label l for name: lookup's, except that a key
// name is itself when no WithKeys bounds the keys ("" is still None).
func (m *Metrics) bound(l label, name string) string {
	if l == keyLabel && name != "" && m.names.Load().keys == nil {
		return name
	}
	return m.lookup(name, picks[l])
}
