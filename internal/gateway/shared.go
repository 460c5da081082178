package gateway

import (
	"context"

	"switchyard/internal/config"
	"switchyard/internal/limits"
	"switchyard/internal/state"
)

// openShared connects the Redis shared state when state.driver is redis;
// nil for memory. Redis being down is not an error: the instance starts on
// local state and switches when Redis answers.
func (g *Gateway) openShared() error {
	if g.cfg.State.Driver != "redis" {
		return nil
	}
	r, err := state.NewRedis(g.cfg.State, g.cfg.Circuit, state.RedisOptions{
		Clock: g.clock, Logger: g.log,
		OnRoundTrip:  func(op string) { g.metrics.Shared().RoundTrip(op) },
		OnFallback:   func(op string) { g.metrics.Shared().Fallback(op) },
		OnUp:         func(up bool) { g.metrics.Shared().RedisUp(up) },
		OnTransition: func(upstream, to, reason string) { g.ops.breaker(upstream, "", to, reason, true) },
	})
	if err != nil {
		return err
	}
	g.shared = r
	return nil
}

// runShared keeps the shared view, the leases and the spend totals fresh
// until ctx ends.
func (g *Gateway) runShared(ctx context.Context) {
	if g.shared == nil {
		return
	}
	g.bg.Add(1)
	go func() {
		defer g.bg.Done()
		g.shared.Run(ctx, func(scope, name string, day, month float64) {
			g.spend.Raise(limits.Scope(scope), name, day, month)
		})
	}()
}

// watchShared tells the sync loop what the catalog just built holds: its
// upstreams, and the keys and teams whose spend limits read the shared
// totals.
func (g *Gateway) watchShared(ups []config.Upstream, keys []config.Key, teams []config.Team) {
	if g.shared == nil {
		return
	}
	w := state.Watch{}
	for _, u := range ups {
		w.Upstreams = append(w.Upstreams, u.Name)
	}
	for _, k := range keys {
		if k.SpendLimit.USD > 0 {
			w.SpendKeys = append(w.SpendKeys, k.Name)
		}
	}
	for _, tm := range teams {
		if tm.SpendLimit.USD > 0 {
			w.SpendTeams = append(w.SpendTeams, tm.Name)
		}
	}
	g.shared.SetWatch(w)
}

// readiness is /readyz's body when the instance is ready: with
// state.driver: redis, also whether the routing state is shared or, while
// Redis does not answer (a Sentinel failover, a cluster node restarting),
// routed on this instance's local state, and the last outage. An instance
// on local state is still ready: it serves under its own limits
// (docs/scale-out.md#what-the-log-and-readyz-say).
func (g *Gateway) readiness() any {
	if g.shared == nil {
		return map[string]string{"status": "ready"}
	}
	return struct {
		Status string       `json:"status"`
		State  state.Status `json:"state"`
	}{"ready", g.shared.Status()}
}
