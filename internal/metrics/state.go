package metrics

import "github.com/prometheus/client_golang/prometheus"

// UpstreamState is the live state of one upstream, read at scrape time.
type UpstreamState struct {
	// Name is the upstream's configured name.
	Name string
	// InFlight is the number of attempts in progress on it.
	InFlight int64
	// QueueDepth is the number of requests waiting for one of its
	// concurrency slots.
	QueueDepth int
	// BreakerState is BreakerClosed, BreakerOpen or BreakerHalfOpen (the
	// names of health.State); "" is closed.
	BreakerState string
	// CoolingDown reports whether a 429 cooldown is in force.
	CoolingDown bool
}

// StateSource supplies the per-upstream gauges. The gateway implements it
// over internal/health and internal/limits.
//
// UpstreamStates is called once per scrape, from the scraping goroutine, and
// never from a recording method. It should report every configured upstream
// once, may take short locks, must not block on I/O for long (a scrape waits
// for it) and must not call back into Metrics. The returned slice is only
// read, and not kept after the call.
type StateSource interface {
	UpstreamStates() []UpstreamState
}

// source boxes a StateSource for an atomic pointer.
type source struct{ StateSource }

// SetStateSource sets the source of the per-upstream gauges; nil removes it
// and the gauges with it. It may be called at any time.
func (m *Metrics) SetStateSource(s StateSource) {
	if s == nil {
		m.source.Store(nil)
		return
	}
	m.source.Store(&source{s})
}

// SetDroppedLogs sets a hook that returns the total number of request logs
// dropped so far (a monotonic count), read at scrape time into
// switchyard_request_logs_dropped_total; nil removes it. Its value adds to
// the counts given to DroppedLogs.
func (m *Metrics) SetDroppedLogs(f func() uint64) {
	if f == nil {
		m.droppedFn.Store(nil)
		return
	}
	m.droppedFn.Store(&f)
}

// Descriptors of the metrics the stateCollector makes at scrape time.
var (
	inFlightDesc = prometheus.NewDesc("switchyard_upstream_in_flight",
		"Attempts in progress, by upstream.", []string{"upstream"}, nil)
	queueDepthDesc = prometheus.NewDesc("switchyard_upstream_queue_depth",
		"Requests waiting for a concurrency slot, by upstream.", []string{"upstream"}, nil)
	breakerDesc = prometheus.NewDesc("switchyard_upstream_breaker_state",
		"Circuit breaker state: 1 for the upstream's current state, 0 for the others (for \"other\", the number of unconfigured upstreams in each state).",
		[]string{"upstream", "state"}, nil)
	cooldownDesc = prometheus.NewDesc("switchyard_upstream_cooldown_active",
		"1 while a 429 cooldown is in force for the upstream, else 0 (for \"other\", the number cooling down).", []string{"upstream"}, nil)
	droppedDesc = prometheus.NewDesc("switchyard_request_logs_dropped_total",
		"Request logs dropped because the store's write queue was full.", nil, nil)
)

// stateCollector makes the per-upstream gauges from the StateSource and the
// dropped-logs counter at scrape time.
type stateCollector struct{ m *Metrics }

var _ prometheus.Collector = (*stateCollector)(nil)

// Describe sends the descriptors of every metric Collect may send.
func (c *stateCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- inFlightDesc
	ch <- queueDepthDesc
	ch <- breakerDesc
	ch <- cooldownDesc
	ch <- droppedDesc
}

// upstreamGauges accumulates the gauges of one upstream label. Upstreams
// that share a label ("other") are summed: their in-flight and queue depths,
// the number of them in each breaker state and the number cooling down.
type upstreamGauges struct {
	label    string
	inFlight int64
	queue    int64
	breaker  [len(breakerStates)]int
	cooling  int
}

// Collect reads the StateSource and the dropped-logs hook.
func (c *stateCollector) Collect(ch chan<- prometheus.Metric) {
	m := c.m
	dropped := m.dropped.Load()
	if f := m.droppedFn.Load(); f != nil {
		dropped += (*f)()
	}
	ch <- prometheus.MustNewConstMetric(droppedDesc, prometheus.CounterValue, float64(dropped))

	src := m.source.Load()
	if src == nil {
		return
	}
	states := src.UpstreamStates()
	set := m.names.Load().upstreams
	byLabel := make(map[string]int, len(states))
	gauges := make([]upstreamGauges, 0, len(states))
	for _, s := range states {
		label := s.Name
		if _, ok := set[label]; !ok {
			label = Other
			if s.Name == "" {
				label = None
			}
		}
		i, ok := byLabel[label]
		if !ok {
			i = len(gauges)
			byLabel[label] = i
			gauges = append(gauges, upstreamGauges{label: label})
		}
		g := &gauges[i]
		g.inFlight += s.InFlight
		g.queue += int64(s.QueueDepth)
		if b := breakerIndex(s.BreakerState); b >= 0 {
			g.breaker[b]++
		}
		if s.CoolingDown {
			g.cooling++
		}
	}
	for _, g := range gauges {
		ch <- prometheus.MustNewConstMetric(inFlightDesc, prometheus.GaugeValue, float64(g.inFlight), g.label)
		ch <- prometheus.MustNewConstMetric(queueDepthDesc, prometheus.GaugeValue, float64(g.queue), g.label)
		for b, st := range breakerStates {
			ch <- prometheus.MustNewConstMetric(breakerDesc, prometheus.GaugeValue, float64(g.breaker[b]), g.label, st)
		}
		ch <- prometheus.MustNewConstMetric(cooldownDesc, prometheus.GaugeValue, float64(g.cooling), g.label)
	}
}
