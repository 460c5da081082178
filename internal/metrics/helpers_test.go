package metrics

import (
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
)

// nameList is a configurable, concurrency-safe name list for the callbacks;
// it counts how often it is read.
type nameList struct {
	mu    sync.Mutex // guards names and calls
	names []string
	calls int
}

func list(names ...string) *nameList { return &nameList{names: names} }

func (l *nameList) get() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.calls++
	return slices.Clone(l.names)
}

func (l *nameList) set(names ...string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.names = names
}

func (l *nameList) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.calls
}

// series returns the series of family name, keyed by its labels rendered as
// "k=v,k=v" in label-name order.
func series(t *testing.T, g prometheus.Gatherer, name string) map[string]*dto.Metric {
	t.Helper()
	fams, err := g.Gather()
	if err != nil {
		t.Fatalf("gathering: %v", err)
	}
	for _, f := range fams {
		if f.GetName() != name {
			continue
		}
		out := make(map[string]*dto.Metric, len(f.GetMetric()))
		for _, m := range f.GetMetric() {
			out[labelKey(m)] = m
		}
		return out
	}
	return nil
}

// labelKey renders a metric's labels as "k=v,k=v".
func labelKey(m *dto.Metric) string {
	parts := make([]string, 0, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		parts = append(parts, l.GetName()+"="+l.GetValue())
	}
	return strings.Join(parts, ",")
}

// value returns the value of a counter or gauge sample, or the sample count
// of a histogram.
func value(m *dto.Metric) float64 {
	switch {
	case m.GetCounter() != nil:
		return m.GetCounter().GetValue()
	case m.GetGauge() != nil:
		return m.GetGauge().GetValue()
	case m.GetHistogram() != nil:
		return float64(m.GetHistogram().GetSampleCount())
	}
	return -1
}

// values returns value of every series of family name.
func values(t *testing.T, g prometheus.Gatherer, name string) map[string]float64 {
	t.Helper()
	s := series(t, g, name)
	out := make(map[string]float64, len(s))
	for k, m := range s {
		out[k] = value(m)
	}
	return out
}

// equalValues fails unless got and want hold the same series and values.
func equalValues(t *testing.T, name string, got, want map[string]float64) {
	t.Helper()
	if !maps.Equal(got, want) {
		t.Errorf("%s:\n got  %v\n want %v", name, got, want)
	}
}
