package metrics

import (
	"github.com/prometheus/client_golang/prometheus"
)

// queueWaitBuckets are the buckets of switchyard_queue_wait_seconds: a
// queue's wait spans one slot's turn to queue.timeout (default 5 s).
var queueWaitBuckets = []float64{0.01, 0.05, 0.1, 0.25, 0.5, 1, 2, 5, 10, 30}

// TenantMetrics are the series of tenants (docs/metrics.md): queue waits
// and sheds by class, team limit refusals. Metrics.Tenants returns them.
type TenantMetrics struct {
	queueWait   *prometheus.HistogramVec
	shed        *prometheus.CounterVec
	teamLimited *prometheus.CounterVec
}

// newTenantMetrics registers the tenant series on reg.
func newTenantMetrics(reg *prometheus.Registry) TenantMetrics {
	t := TenantMetrics{
		queueWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "switchyard_queue_wait_seconds",
			Help:    "Time requests waited in an upstream's queue before being handed a slot, by class (critical, interactive, batch).",
			Buckets: queueWaitBuckets}, []string{"class"}),
		shed: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_shed_total",
			Help: "Requests not queued on a full upstream to leave its queue to others (shed: batch), by class."}, []string{"class"}),
		teamLimited: prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_team_limited_total",
			Help: "Client requests refused by a team limit (429 team_*_exceeded), by team and limit: rpm, tpm, concurrency or spend."},
			[]string{"team", "limit"}),
	}
	reg.MustRegister(t.queueWait, t.shed, t.teamLimited)
	return t
}

// Tenants returns the tenant series.
func (m *Metrics) Tenants() *TenantMetrics { return &m.tenants }

// QueueWait records that a request of class waited seconds in a queue
// before it had a slot.
func (t *TenantMetrics) QueueWait(class string, seconds float64) {
	t.queueWait.WithLabelValues(class).Observe(seconds)
}

// Shed records a request of class not queued (shed: batch).
func (t *TenantMetrics) Shed(class string) { t.shed.WithLabelValues(class).Inc() }

// TeamLimited records a request of team refused by its limit (rpm, tpm,
// concurrency or spend). team is a configured team's name.
func (t *TenantMetrics) TeamLimited(team, limit string) {
	t.teamLimited.WithLabelValues(validLabel(team), limit).Inc()
}
