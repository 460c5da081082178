package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"switchyard/internal/admin"
	"switchyard/internal/affinity"
	"switchyard/internal/balancer"
	"switchyard/internal/config"
	"switchyard/internal/health"
	"switchyard/internal/limits"
	"switchyard/internal/outcome"
	"switchyard/internal/proxy"
	"switchyard/internal/state"
)

// AdminHandler returns the admin API and dashboard (package admin) over this
// gateway, or nil when admin.token is empty (the admin API is disabled).
// Handler mounts it under /admin/ unless admin.listen names a separate
// address, where Serve serves it instead.
func (g *Gateway) AdminHandler() http.Handler {
	if g.cfg.Admin.Token == "" {
		return nil
	}
	return admin.New(g.admin, g.cfg.Admin.Token, g.log)
}

// newAdminService returns the admin domain over the gateway's store and
// this gateway, seen through adminGateway.
func (g *Gateway) newAdminService() *admin.Service {
	return admin.NewService(admin.Options{
		Store: g.store, Gateway: adminGateway{g}, Clock: g.clock,
		Defaults: g.cfg.Defaults, Affinity: g.cfg.Affinity,
	})
}

// initState makes the live routing state: in-process breakers, limits,
// slots and statistics — the statistics wrapped so that every attempt,
// failure and 429 is also counted per upstream for the admin API's recent
// rates and shares — and, with state.driver redis, the shared driver over
// them.
func (g *Gateway) initState() {
	g.traffic = admin.NewTraffic(admin.DefaultTrafficWindow)
	g.local = state.NewLocal(state.LocalOptions{
		Clock: g.clock,
		Breakers: health.NewBreakers(g.cfg.Circuit, g.clock, health.WithOnTransition(func(name string, from, to health.State, reason string) {
			g.ops.breaker(name, from.String(), to.String(), reason, false)
		})),
		Stats:         &countingStats{Stats: state.NewMemory(state.DefaultWindow), traffic: g.traffic},
		Sessions:      g.sessions,
		Pins:          affinity.NewPinTable(affinity.DefaultMaxPins, g.cfg.Affinity.ResponseTTL, g.clock),
		Conversations: affinity.NewConversationTable(g.cfg.Affinity.MaxConversations, g.cfg.Affinity.ResponseTTL, g.clock),
	})
	g.state = g.local
	if g.shared != nil {
		g.state = state.NewRedisDriver(g.shared, g.local)
	}
}

// countingStats is a state.Stats that also counts attempts for
// admin.Traffic. The proxy calls Dispatched once per attempt sent and
// Observe once per attempt ended, so the counts are per attempt (a request
// that failed over counts on every upstream it tried), which request logs,
// naming only the last upstream, could not give.
type countingStats struct {
	state.Stats
	traffic *admin.Traffic
}

var _ state.Stats = (*countingStats)(nil)

// Dispatched counts an attempt and passes it on.
func (c *countingStats) Dispatched(upstream string, now time.Time) {
	c.Stats.Dispatched(upstream, now)
	c.traffic.Add(upstream, admin.Attempt, now)
}

// Observe counts a failed or rate-limited attempt and passes it on.
func (c *countingStats) Observe(upstream string, r outcome.Outcome, now time.Time) {
	c.Stats.Observe(upstream, r, now)
	switch {
	case r.Class.Failure():
		c.traffic.Add(upstream, admin.Failure, now)
	case r.Class == outcome.RateLimited:
		c.traffic.Add(upstream, admin.RateLimited, now)
	}
	if r.Hedge {
		c.traffic.Add(upstream, admin.Hedge, now)
		if r.Class == outcome.Success {
			c.traffic.Add(upstream, admin.HedgeWon, now)
		}
	}
}

// Forget drops the upstream's statistics and counts.
func (c *countingStats) Forget(upstream string) {
	c.Stats.Forget(upstream)
	c.traffic.Forget(upstream)
}

// serveAdminListener serves AdminHandler on admin.listen when both it and
// admin.token are set, until ctx ends or the returned stop is called; stop
// shuts it down gracefully (within grace) and waits. Without a separate
// admin address it does nothing.
func (g *Gateway) serveAdminListener(ctx context.Context, grace time.Duration) (stop func(), err error) {
	h := g.AdminHandler()
	if h == nil || g.cfg.Admin.Listen == "" {
		return func() {}, nil
	}
	ln, err := net.Listen("tcp", g.cfg.Admin.Listen)
	if err != nil {
		return nil, fmt.Errorf("listening for admin on %s: %w", g.cfg.Admin.Listen, err)
	}
	srv := &http.Server{
		Handler:           h,
		ReadHeaderTimeout: g.readHeaderTimeout,
		ReadTimeout:       g.readTimeout,
		IdleTimeout:       120 * time.Second,
		MaxHeaderBytes:    1 << 20,
		ErrorLog:          slog.NewLogLogger(g.log.Handler(), slog.LevelWarn),
	}
	g.log.Info("admin serving", "addr", ln.Addr().String())
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() { _ = srv.Serve(ln) }()
	go func() {
		defer close(done)
		<-ctx.Done()
		sctx, cancelShutdown := context.WithTimeout(context.Background(), grace)
		defer cancelShutdown()
		if err := srv.Shutdown(sctx); err != nil {
			_ = srv.Close()
		}
	}()
	return func() { cancel(); <-done }, nil
}

// adminGateway is the running gateway as the admin API sees it.
type adminGateway struct{ g *Gateway }

var _ admin.Gateway = adminGateway{}

// Reload implements admin.Router.
func (a adminGateway) Reload(ctx context.Context) error { return a.g.Reload(ctx) }

// ForgetUpstream implements admin.Router: a deleted upstream's breaker and
// statistics (and traffic counts) are dropped.
func (a adminGateway) ForgetUpstream(name string) { a.g.state.Forget(name) }

// ForgetKey implements admin.Router: a deleted key's kept Responses
// conversations go (state.Driver's Conversations).
func (a adminGateway) ForgetKey(name string) { a.g.state.ForgetKey(context.Background(), name) }

// State implements admin.Observer from the live state (the driver's one
// merged view), the prober, spend and traffic counts.
func (a adminGateway) State(ups []config.Upstream, q admin.StateQuery) admin.State {
	g := a.g
	now := g.clock.Now()
	out := make([]admin.UpstreamState, 0, len(ups))
	for _, u := range ups {
		v := g.state.Upstream(u.Name, 0)
		bv, lv, st := &v.Breaker, &v.Limits, &v.Stats
		tc := g.traffic.Counts(u.Name, now)
		s := admin.UpstreamState{
			Name: u.Name, Provider: u.Provider, Tier: u.Priority, Weight: u.Weight,
			SlowStart: bv.SlowStart, EffectiveWeight: float64(u.Weight) * bv.SlowStart, Active: u.Active,
			Breaker:  admin.BreakerState{State: bv.State.String(), Open: bv.Open, Reason: bv.Reason, Until: timeOrNil(bv.Until)},
			InFlight: v.InFlight, MaxConcurrency: u.MaxConcurrency, QueueDepth: v.QueueDepth,
			RPMUsed: lv.RPMUsed, RPMLimit: lv.RPMLimit, TPMUsed: lv.TPMUsed, TPMLimit: lv.TPMLimit,
			CooldownUntil: timeOrNil(lv.CoolingUntil), RateLimitReason: lv.Reason,
			LatencyMs: st.LatencyEWMA, TTFTMs: st.TTFTEWMA, TPS: st.TPSEWMA, ProbeLatencyMs: g.prober.LatencyMs(u.Name),
			Requests5m: tc.Attempts, Errors5m: tc.Failures, RateLimited5m: tc.RateLimited, RequestsTotal: tc.Total,
			Hedges5m: tc.Hedges, HedgesWon5m: tc.HedgesWon, Models: g.traffic.Models(u.Name, now, q.History),
			SpendTodayUSD: g.spend.Total(limits.ScopeUpstream, u.Name, limits.PeriodDay),
			SpendMonthUSD: g.spend.Total(limits.ScopeUpstream, u.Name, limits.PeriodMonth),
		}
		if u.Queue.Enabled {
			s.QueueMax = u.Queue.MaxLength
			s.QueueByClass, s.QueueByKey = g.waiting.Of(u.Name)
			s.QueueShareByKey = g.waiting.Shares(u.Name)
		}
		out = append(out, s)
	}
	return admin.State{At: now, WindowSeconds: int(g.traffic.Window() / time.Second), Upstreams: out}
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// Explain implements admin.Observer.
func (a adminGateway) Explain(q admin.ExplainQuery) (*balancer.Decision, error) {
	hdr, err := proxy.ExplainHeaders(q.Header)
	if err != nil {
		return nil, fmt.Errorf("%w: %s", admin.ErrInvalid, err.Error())
	}
	d, err := a.g.Explain(context.Background(), proxy.ExplainRequest{Model: q.Model, Key: q.Key, Session: q.Session, Stream: q.Stream,
		InputTokens: q.InputTokens, MaxTokens: q.MaxTokens, Provider: q.Provider, Header: hdr, Tools: q.Tools})
	switch {
	case err == nil:
		return d, nil
	case errors.Is(err, proxy.ErrUnauthorized), errors.Is(err, proxy.ErrModelNotFound):
		return nil, fmt.Errorf("%w: %s", admin.ErrNotFound, err.Error())
	case errors.Is(err, proxy.ErrModelNotAllowed), errors.Is(err, proxy.ErrInvalidRequest):
		return nil, fmt.Errorf("%w: %s", admin.ErrInvalid, err.Error())
	}
	return nil, err
}

// Decisions implements admin.Observer.
func (a adminGateway) Decisions(limit int) []*balancer.Decision { return a.g.RecentDecisions(limit) }

// RequestDecisions implements admin.Observer: the decisions still kept
// for request id, oldest first.
func (a adminGateway) RequestDecisions(id string) []*balancer.Decision {
	return a.g.recent.ByRequest(id)
}

// Bindings implements admin.Sessions: the session's live affinity
// bindings, across keys and routes.
func (a adminGateway) Bindings(session string) []affinity.Binding {
	return a.g.affinity.Lookup(context.Background(), session)
}

// ForgetSession implements admin.Sessions: it deletes every affinity
// binding of the session and returns how many there were; its next
// request is routed afresh.
func (a adminGateway) ForgetSession(session string) int {
	return a.g.affinity.DeleteSession(context.Background(), session)
}
