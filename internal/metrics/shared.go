package metrics

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"
)

// Shared-state operations, the op label of the state families (state.Op*).
var stateOps = []string{"admit", "settle", "affinity", "sync", "lease", "tenant"}

// sharedState holds the families of state.driver: redis.
type sharedState struct {
	up         prometheus.Gauge
	fallbacks  map[string]prometheus.Counter
	roundTrips map[string]prometheus.Counter
}

// SharedStateMetrics are the families of state.driver: redis, absent until
// Enable. Metrics.Shared returns them; every method is safe for concurrent
// use and does nothing before Enable.
type SharedStateMetrics struct {
	reg *prometheus.Registry
	p   atomic.Pointer[sharedState]
}

// Shared returns the shared-state families.
func (m *Metrics) Shared() *SharedStateMetrics { return &m.shared }

// Enable registers the families of state.driver: redis:
// switchyard_state_redis_up, switchyard_state_fallbacks_total and
// switchyard_state_redis_round_trips_total. Call it once, before traffic;
// with the memory driver they are absent.
func (m *SharedStateMetrics) Enable() {
	s := &sharedState{
		up: prometheus.NewGauge(prometheus.GaugeOpts{Name: "switchyard_state_redis_up",
			Help: "1 while Redis answers and routing state is shared, 0 while this instance routes on its local state."}),
		fallbacks: map[string]prometheus.Counter{}, roundTrips: map[string]prometheus.Counter{},
	}
	fb := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_state_fallbacks_total",
		Help: "Shared-state operations served from local state because Redis failed or was down, by operation."}, []string{"op"})
	rt := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "switchyard_state_redis_round_trips_total",
		Help: "Round trips to Redis, by operation."}, []string{"op"})
	for _, op := range stateOps {
		s.fallbacks[op], s.roundTrips[op] = fb.WithLabelValues(op), rt.WithLabelValues(op)
	}
	s.up.Set(1)
	m.reg.MustRegister(s.up, fb, rt)
	m.p.Store(s)
}

// RedisUp sets switchyard_state_redis_up.
func (m *SharedStateMetrics) RedisUp(up bool) {
	if s := m.p.Load(); s != nil {
		v := 0.0
		if up {
			v = 1
		}
		s.up.Set(v)
	}
}

// Fallback counts one operation served from local state.
func (m *SharedStateMetrics) Fallback(op string) {
	if s := m.p.Load(); s != nil {
		if c := s.fallbacks[op]; c != nil {
			c.Inc()
		}
	}
}

// RoundTrip counts one round trip to Redis.
func (m *SharedStateMetrics) RoundTrip(op string) {
	if s := m.p.Load(); s != nil {
		if c := s.roundTrips[op]; c != nil {
			c.Inc()
		}
	}
}
