package metrics

import (
	"testing"
)

// fakeSource reports a fixed list of upstream states.
type fakeSource []UpstreamState

var _ StateSource = fakeSource(nil)

func (f fakeSource) UpstreamStates() []UpstreamState { return f }

func TestStateGauges(t *testing.T) {
	m := newTest(t)
	reg := m.Registry()
	if got := series(t, reg, "switchyard_upstream_in_flight"); got != nil {
		t.Fatalf("gauges without a source: %v", got)
	}
	m.SetStateSource(fakeSource{
		{Name: "openai-main", InFlight: 4, QueueDepth: 2, BreakerState: BreakerClosed},
		{Name: "anthropic-a", InFlight: 0, BreakerState: BreakerOpen, CoolingDown: true},
		{Name: "gone-1", InFlight: 1, QueueDepth: 1, BreakerState: BreakerHalfOpen, CoolingDown: true},
		{Name: "gone-2", InFlight: 2, BreakerState: ""},
	})

	tests := []struct {
		family string
		want   map[string]float64
	}{
		{"switchyard_upstream_in_flight", map[string]float64{
			"upstream=openai-main": 4, "upstream=anthropic-a": 0, "upstream=other": 3,
		}},
		{"switchyard_upstream_queue_depth", map[string]float64{
			"upstream=openai-main": 2, "upstream=anthropic-a": 0, "upstream=other": 1,
		}},
		{"switchyard_upstream_breaker_state", map[string]float64{
			"state=closed,upstream=openai-main":    1,
			"state=open,upstream=openai-main":      0,
			"state=half_open,upstream=openai-main": 0,
			"state=closed,upstream=anthropic-a":    0,
			"state=open,upstream=anthropic-a":      1,
			"state=half_open,upstream=anthropic-a": 0,
			// two unconfigured upstreams share "other": one half-open, one closed
			"state=closed,upstream=other":    1,
			"state=open,upstream=other":      0,
			"state=half_open,upstream=other": 1,
		}},
		{"switchyard_upstream_cooldown_active", map[string]float64{
			"upstream=openai-main": 0, "upstream=anthropic-a": 1, "upstream=other": 1,
		}},
	}
	for _, tt := range tests {
		t.Run(tt.family, func(t *testing.T) {
			equalValues(t, tt.family, values(t, reg, tt.family), tt.want)
		})
	}

	t.Run("source removed", func(t *testing.T) {
		m.SetStateSource(nil)
		if got := series(t, reg, "switchyard_upstream_breaker_state"); got != nil {
			t.Errorf("gauges after SetStateSource(nil): %v", got)
		}
	})
}

func TestDroppedLogs(t *testing.T) {
	tests := []struct {
		name  string
		added uint64
		hook  func() uint64
		want  float64
	}{
		{"none", 0, nil, 0},
		{"counted", 5, nil, 5},
		{"hook", 0, func() uint64 { return 42 }, 42},
		{"both add", 5, func() uint64 { return 42 }, 47},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newTest(t)
			m.DroppedLogs(tt.added)
			m.SetDroppedLogs(tt.hook)
			equalValues(t, tt.name, values(t, m.Registry(), "switchyard_request_logs_dropped_total"),
				map[string]float64{"": tt.want})
		})
	}
}
