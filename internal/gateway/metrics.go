package gateway

import (
	"sort"
	"strings"

	"switchyard/internal/config"
	"switchyard/internal/metrics"
)

// catalogNames are the configured names metrics labels are bounded to.
type catalogNames struct {
	upstreams, models, keys, routes []string
}

// setNames records the names of the catalog just built.
func (g *Gateway) setNames(ups []config.Upstream, keys []config.Key, routes []config.Route) {
	n := &catalogNames{}
	models := map[string]bool{}
	for _, u := range ups {
		n.upstreams = append(n.upstreams, u.Name)
		for _, m := range u.Models {
			if !strings.ContainsAny(m, "*?[") {
				models[m] = true
			}
		}
	}
	for _, k := range keys {
		n.keys = append(n.keys, k.Name)
	}
	for _, r := range routes {
		n.routes = append(n.routes, r.Model)
		if !strings.ContainsAny(r.Model, "*?[") {
			models[r.Model] = true
		}
	}
	n.routes = append(n.routes, "*") // requests on the defaults
	for m := range models {
		n.models = append(n.models, m)
	}
	sort.Strings(n.models)
	g.names.Store(n)
	if g.metrics != nil {
		g.metrics.Refresh()
	}
}

// newMetrics builds the gateway's collectors, bounded to its configured names.
func (g *Gateway) newMetrics() *metrics.Metrics {
	pick := func(f func(*catalogNames) []string) func() []string {
		return func() []string {
			if n := g.names.Load(); n != nil {
				return f(n)
			}
			return nil
		}
	}
	m := metrics.New(
		pick(func(n *catalogNames) []string { return n.upstreams }),
		pick(func(n *catalogNames) []string { return n.models }),
		metrics.WithClock(g.clock),
		metrics.WithKeys(pick(func(n *catalogNames) []string { return n.keys })),
		metrics.WithRoutes(pick(func(n *catalogNames) []string { return n.routes })),
	)
	m.SetStateSource(g)
	m.SetDroppedLogs(g.DroppedLogs)
	return m
}

// UpstreamStates reports the live gauges of every configured upstream
// (metrics.StateSource).
func (g *Gateway) UpstreamStates() []metrics.UpstreamState {
	n := g.names.Load()
	if n == nil {
		return nil
	}
	out := make([]metrics.UpstreamState, len(n.upstreams))
	for i, name := range n.upstreams {
		v := g.state.Upstream(name, 0)
		// In-flight and queue depth are this instance's, so that a sum over
		// instances is right; breaker and cooldown are the merged state.
		out[i] = metrics.UpstreamState{
			Name:         name,
			InFlight:     v.InFlightHere,
			QueueDepth:   v.QueueDepthHere,
			BreakerState: v.Breaker.State.String(),
			CoolingDown:  !v.Limits.CoolingUntil.IsZero(),
		}
	}
	return out
}
