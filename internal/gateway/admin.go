package gateway

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"switchyard/internal/admin"
	"switchyard/internal/balancer"
	"switchyard/internal/config"
	"switchyard/internal/limits"
	"switchyard/internal/outcome"
	"switchyard/internal/proxy"
	"switchyard/internal/state"
	"switchyard/internal/store"
)

// usageLogLimit bounds the request logs GET /admin/api/usage reads: the
// newest 100,000. Older requests within the period asked for are left out,
// and the answer says so (X-Switchyard-Truncated: true).
const usageLogLimit = 100_000

// elementRef matches a reference to a list element in a validation message.
var elementRef = regexp.MustCompile(`\b(upstreams|keys|routes)\[(\d+)\]`)

// AdminHandler returns the admin API and dashboard (package admin) over this
// gateway, or nil when admin.token is empty (the admin API is disabled).
// Handler mounts it under /admin/ unless admin.listen names a separate
// address, where Serve serves it instead.
func (g *Gateway) AdminHandler() http.Handler {
	if g.cfg.Admin.Token == "" {
		return nil
	}
	return admin.New(adminBackend{g}, g.cfg.Admin.Token, g.log)
}

// initTraffic makes the live statistics the proxy records into: in-process
// stats wrapped so that every attempt, failure and 429 is also counted per
// upstream for the admin API's recent rates and shares.
func (g *Gateway) initTraffic() {
	g.traffic = admin.NewTraffic(admin.DefaultTrafficWindow)
	var base state.Stats = state.NewMemory(state.DefaultWindow)
	if g.shared != nil {
		base = g.shared
	}
	g.stats = &countingStats{Stats: base, traffic: g.traffic}
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

// adminBackend is the gateway as the admin API sees it. Changes go to the
// store first and then into routing through Reload, under editMu so that
// concurrent changes never lose one another.
type adminBackend struct{ g *Gateway }

var _ admin.Backend = adminBackend{}

// loadConfig reads what the store holds, under the file's defaults and
// affinity settings.
func (g *Gateway) loadConfig(ctx context.Context) (config.Config, error) {
	c := config.Config{Defaults: g.cfg.Defaults, Affinity: g.cfg.Affinity}
	var err error
	if c.Upstreams, err = g.store.ListUpstreams(ctx); err != nil {
		return config.Config{}, fmt.Errorf("loading upstreams: %w", err)
	}
	if c.Keys, err = g.store.ListKeys(ctx); err != nil {
		return config.Config{}, fmt.Errorf("loading keys: %w", err)
	}
	if c.Routes, err = g.store.ListRoutes(ctx); err != nil {
		return config.Config{}, fmt.Errorf("loading routes: %w", err)
	}
	return c, nil
}

// fitErrors validates c, the configuration the store would hold after a
// change, and returns the problems of the changed element, the one at prefix
// ("upstreams[3]"), with paths relative to it: a duplicate secret, an
// allowed upstream that does not exist, a fallback model nobody serves.
// Problems of other elements are not the change's and are left out.
func fitErrors(c config.Config, prefix string) error {
	ups, keys, routes := c.Upstreams, c.Keys, c.Routes
	// Messages name other elements by index ("same secret as keys[0]"),
	// which means nothing to an API client: name them instead.
	name := func(ref string) string {
		m := elementRef.FindStringSubmatch(ref)
		i, _ := strconv.Atoi(m[2])
		switch {
		case m[1] == "upstreams" && i < len(ups):
			return fmt.Sprintf("upstream %q", ups[i].Name)
		case m[1] == "keys" && i < len(keys):
			return fmt.Sprintf("key %q", keys[i].Name)
		case m[1] == "routes" && i < len(routes):
			return fmt.Sprintf("route %q", routes[i].Model)
		}
		return ref
	}
	var out config.Errors
	for _, e := range c.Validate() {
		rest, ok := strings.CutPrefix(e.Path, prefix)
		if ok && (rest == "" || rest[0] == '.' || rest[0] == '[') {
			out = append(out, config.FieldError{Path: strings.TrimPrefix(rest, "."), Msg: elementRef.ReplaceAllStringFunc(e.Msg, name)})
		}
	}
	if len(out) > 0 {
		return out
	}
	return nil
}

// applied reloads routing after a stored change.
func (g *Gateway) applied(ctx context.Context, what string) error {
	if err := g.Reload(ctx); err != nil {
		return fmt.Errorf("reloading routing after changing %s: %w", what, err)
	}
	return nil
}

// notFound turns the store's ErrNotFound into the admin API's.
func notFound(err error, what string) error {
	if errors.Is(err, store.ErrNotFound) {
		return fmt.Errorf("%s: %w", what, admin.ErrNotFound)
	}
	return fmt.Errorf("deleting %s: %w", what, err)
}

// elementKind describes one kind of configuration element (upstream, key,
// route) to the admin API's shared edit flow: putElement, createElement,
// updateElement and deleteElement.
type elementKind[T any] struct {
	noun   string                                           // "upstream", in messages
	one    string                                           // "an upstream", in messages
	list   string                                           // "upstreams", the list in validation paths
	id     func(T) string                                   // the element's natural id (its name or model)
	elems  func(*config.Config) *[]T                        // the kind's list in a configuration
	upsert func(store.Store, context.Context, T) error      // stores an element
	remove func(store.Store, context.Context, string) error // deletes an element by id
	// forget, when set, drops what the gateway keeps about a deleted
	// element beyond the routing table. It is called with editMu held.
	forget func(g *Gateway, id string)
}

var (
	upstreamKind = elementKind[config.Upstream]{
		noun: "upstream", one: "an upstream", list: "upstreams",
		id:     func(u config.Upstream) string { return u.Name },
		elems:  func(c *config.Config) *[]config.Upstream { return &c.Upstreams },
		upsert: store.Store.UpsertUpstream, remove: store.Store.DeleteUpstream,
		forget: func(g *Gateway, name string) {
			g.breakers.Forget(name)
			g.stats.Forget(name)
		},
	}
	keyKind = elementKind[config.Key]{
		noun: "key", one: "a key", list: "keys",
		id:     func(k config.Key) string { return k.Name },
		elems:  func(c *config.Config) *[]config.Key { return &c.Keys },
		upsert: store.Store.UpsertKey, remove: store.Store.DeleteKey,
	}
	routeKind = elementKind[config.Route]{
		noun: "route", one: "a route", list: "routes",
		id:     func(r config.Route) string { return r.Model },
		elems:  func(c *config.Config) *[]config.Route { return &c.Routes },
		upsert: store.Store.UpsertRoute, remove: store.Store.DeleteRoute,
	}
)

// putElement is the admin API's one write path. Under editMu it loads the
// stored configuration and finds the element of kind k whose id is id;
// change gets it (found false and a zero element when there is none) and
// returns the element to store, or an error to refuse the change. The new
// element takes the old one's place (or is appended), the whole
// configuration is validated with it in place, and it is stored and
// routing reloaded. created reports whether the element is new. A reload
// error is returned with the element, which is stored by then.
func putElement[T any](ctx context.Context, g *Gateway, k elementKind[T], id string, change func(old T, found bool) (T, error)) (e T, created bool, err error) {
	var zero T
	g.editMu.Lock()
	defer g.editMu.Unlock()
	c, err := g.loadConfig(ctx)
	if err != nil {
		return zero, false, err
	}
	elems := k.elems(&c)
	i := slices.IndexFunc(*elems, func(x T) bool { return k.id(x) == id })
	created = i < 0
	var old T
	if !created {
		old = (*elems)[i]
	}
	if e, err = change(old, !created); err != nil {
		return zero, false, err
	}
	if created {
		*elems = append(*elems, e)
		i = len(*elems) - 1
	} else {
		(*elems)[i] = e
	}
	if err := fitErrors(c, fmt.Sprintf("%s[%d]", k.list, i)); err != nil {
		return zero, false, err
	}
	if err := k.upsert(g.store, ctx, e); err != nil {
		return zero, false, fmt.Errorf("storing %s %s: %w", k.noun, id, err)
	}
	return e, created, g.applied(ctx, k.noun+" "+id)
}

// createElement stores e as a new element of kind k; admin.ErrConflict
// when one with its id exists.
func createElement[T any](ctx context.Context, g *Gateway, k elementKind[T], e T) error {
	id := k.id(e)
	_, _, err := putElement(ctx, g, k, id, func(_ T, found bool) (T, error) {
		if found {
			return e, fmt.Errorf("%s %q: %w", k.noun, id, admin.ErrConflict)
		}
		return e, nil
	})
	return err
}

// updateElement replaces the element of kind k called id by what edit
// makes of it; admin.ErrNotFound when there is none. The edit may not
// change the id.
func updateElement[T any](ctx context.Context, g *Gateway, k elementKind[T], id string, edit func(T) (T, error)) (T, error) {
	e, _, err := putElement(ctx, g, k, id, func(old T, found bool) (T, error) {
		if !found {
			return old, fmt.Errorf("%s %q: %w", k.noun, id, admin.ErrNotFound)
		}
		e, err := edit(old)
		if err != nil {
			return e, err
		}
		if k.id(e) != id {
			return e, config.Errors{{Path: "name", Msg: fmt.Sprintf("must be %q (%s cannot be renamed)", id, k.one)}}
		}
		return e, nil
	})
	return e, err
}

// deleteElement deletes the element of kind k called id under editMu,
// reloads routing and then forgets the element.
func deleteElement[T any](ctx context.Context, g *Gateway, k elementKind[T], id string) error {
	g.editMu.Lock()
	defer g.editMu.Unlock()
	if err := k.remove(g.store, ctx, id); err != nil {
		return notFound(err, fmt.Sprintf("%s %q", k.noun, id))
	}
	if err := g.applied(ctx, k.noun+" "+id); err != nil {
		return err
	}
	if k.forget != nil {
		k.forget(g, id)
	}
	return nil
}

// Upstreams implements admin.UpstreamEditor.
func (a adminBackend) Upstreams(ctx context.Context) ([]config.Upstream, error) {
	return a.g.store.ListUpstreams(ctx)
}

// CreateUpstream implements admin.UpstreamEditor.
func (a adminBackend) CreateUpstream(ctx context.Context, u config.Upstream) error {
	return createElement(ctx, a.g, upstreamKind, u)
}

// UpdateUpstream implements admin.UpstreamEditor.
func (a adminBackend) UpdateUpstream(ctx context.Context, name string, edit func(config.Upstream) (config.Upstream, error)) (config.Upstream, error) {
	return updateElement(ctx, a.g, upstreamKind, name, edit)
}

// DeleteUpstream implements admin.UpstreamEditor. The upstream's breaker
// and statistics are forgotten; a key's allowed_upstreams naming it is left
// as it is (the key simply cannot reach it).
func (a adminBackend) DeleteUpstream(ctx context.Context, name string) error {
	return deleteElement(ctx, a.g, upstreamKind, name)
}

// Keys implements admin.KeyEditor.
func (a adminBackend) Keys(ctx context.Context) ([]config.Key, error) {
	return a.g.store.ListKeys(ctx)
}

// CreateKey implements admin.KeyEditor.
func (a adminBackend) CreateKey(ctx context.Context, k config.Key) error {
	return createElement(ctx, a.g, keyKind, k)
}

// UpdateKey implements admin.KeyEditor.
func (a adminBackend) UpdateKey(ctx context.Context, name string, edit func(config.Key) (config.Key, error)) (config.Key, error) {
	return updateElement(ctx, a.g, keyKind, name, edit)
}

// DeleteKey implements admin.KeyEditor.
func (a adminBackend) DeleteKey(ctx context.Context, name string) error {
	return deleteElement(ctx, a.g, keyKind, name)
}

// Routes implements admin.RouteEditor.
func (a adminBackend) Routes(ctx context.Context) ([]config.Route, error) {
	return a.g.store.ListRoutes(ctx)
}

// RouteDefaults implements admin.RouteEditor.
func (a adminBackend) RouteDefaults() config.RouteSettings { return a.g.cfg.Defaults }

// PutRoute implements admin.RouteEditor.
func (a adminBackend) PutRoute(ctx context.Context, r config.Route) (bool, error) {
	_, created, err := putElement(ctx, a.g, routeKind, r.Model, func(config.Route, bool) (config.Route, error) { return r, nil })
	return created, err
}

// DeleteRoute implements admin.RouteEditor.
func (a adminBackend) DeleteRoute(ctx context.Context, model string) error {
	return deleteElement(ctx, a.g, routeKind, model)
}

// State implements admin.Observer from the breakers, limiter, slots, live
// statistics, prober, spend and traffic counts.
func (a adminBackend) State(ctx context.Context) (admin.State, error) {
	g := a.g
	ups, err := g.store.ListUpstreams(ctx)
	if err != nil {
		return admin.State{}, fmt.Errorf("loading upstreams: %w", err)
	}
	now := g.clock.Now()
	out := make([]admin.UpstreamState, 0, len(ups))
	for _, u := range ups {
		bv := g.breakers.View(u.Name)
		lv := g.limiter.View(u.Name, 0)
		st := g.stats.Snapshot(u.Name, now)
		tc := g.traffic.Counts(u.Name, now)
		s := admin.UpstreamState{
			Name: u.Name, Provider: u.Provider, Tier: u.Priority, Weight: u.Weight,
			SlowStart: bv.SlowStart, EffectiveWeight: float64(u.Weight) * bv.SlowStart, Active: u.Active,
			Breaker:  admin.BreakerState{State: bv.State.String(), Open: bv.Open, Reason: bv.Reason, Until: timeOrNil(bv.Until)},
			InFlight: g.slots.InFlight(u.Name), MaxConcurrency: u.MaxConcurrency, QueueDepth: g.slots.QueueDepth(u.Name),
			RPMUsed: lv.RPMUsed, RPMLimit: lv.RPMLimit, TPMUsed: lv.TPMUsed, TPMLimit: lv.TPMLimit,
			CooldownUntil: timeOrNil(lv.CoolingUntil), RateLimitReason: lv.Reason,
			LatencyMs: st.LatencyEWMA, TTFTMs: st.TTFTEWMA, TPS: st.TPSEWMA, ProbeLatencyMs: g.prober.LatencyMs(u.Name),
			Requests5m: tc.Attempts, Errors5m: tc.Failures, RateLimited5m: tc.RateLimited, RequestsTotal: tc.Total,
			SpendTodayUSD: g.spend.Total(limits.ScopeUpstream, u.Name, limits.PeriodDay),
			SpendMonthUSD: g.spend.Total(limits.ScopeUpstream, u.Name, limits.PeriodMonth),
		}
		if sv, ok := g.sharedView(u.Name); ok {
			s.Breaker = admin.BreakerState{State: sv.Breaker, Open: !sv.Admits(now), Reason: sv.BreakerReason}
			if s.Breaker.Open {
				s.Breaker.Until = timeOrNil(sv.BreakerUntil)
			}
			s.InFlight, s.QueueDepth = max(s.InFlight, sv.InFlight), max(s.QueueDepth, int(sv.QueueDepth))
			s.RPMUsed, s.TPMUsed = max(s.RPMUsed, sv.RPMUsed), max(s.TPMUsed, sv.TPMUsed)
			if sv.CooldownUntil.After(lv.CoolingUntil) {
				s.CooldownUntil = timeOrNil(sv.CooldownUntil)
			}
		}
		if u.Queue.Enabled {
			s.QueueMax = u.Queue.MaxLength
		}
		out = append(out, s)
	}
	return admin.State{At: now, WindowSeconds: int(g.traffic.Window() / time.Second), Upstreams: out}, nil
}

func timeOrNil(t time.Time) *time.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

// Explain implements admin.Observer.
func (a adminBackend) Explain(q admin.ExplainQuery) (*balancer.Decision, error) {
	d, err := a.g.Explain(proxy.ExplainRequest{Model: q.Model, Key: q.Key, Session: q.Session, Stream: q.Stream})
	switch {
	case err == nil:
		return d, nil
	case errors.Is(err, proxy.ErrUnauthorized), errors.Is(err, proxy.ErrModelNotFound):
		return nil, fmt.Errorf("%w: %s", admin.ErrNotFound, err.Error())
	case errors.Is(err, proxy.ErrModelNotAllowed):
		return nil, fmt.Errorf("%w: %s", admin.ErrInvalid, err.Error())
	}
	return nil, err
}

// Decisions implements admin.Observer.
func (a adminBackend) Decisions(limit int) []*balancer.Decision { return a.g.RecentDecisions(limit) }

// Affinity implements admin.Observer: the live bindings of a session,
// across client keys and routes.
func (a adminBackend) Affinity(session string) (any, error) { return a.g.SessionBindings(session), nil }

// DeleteAffinity implements admin.Observer: it drops every binding of a
// session, so its next request is routed afresh.
func (a adminBackend) DeleteAffinity(session string) (int, error) {
	return a.g.ForgetSession(session), nil
}

// Usage implements admin.Observer by aggregating the newest usageLogLimit
// request logs in memory. Logs reach the store asynchronously, so the last
// second or so of requests may be missing.
func (a adminBackend) Usage(ctx context.Context, q admin.UsageQuery) ([]admin.UsageRow, bool, error) {
	g := a.g
	since := q.Since
	if since.IsZero() {
		since = g.clock.Now().Add(-q.Ago)
	}
	ups, err := g.store.ListUpstreams(ctx)
	if err != nil {
		return nil, false, fmt.Errorf("loading upstreams: %w", err)
	}
	prices := make(map[string]config.Price, len(ups))
	for _, u := range ups {
		prices[u.Name] = u.Price
	}
	logs, err := g.store.RecentRequestLogs(ctx, usageLogLimit)
	if err != nil {
		return nil, false, fmt.Errorf("reading request logs: %w", err)
	}
	rows := map[string]*admin.UsageRow{}
	truncated := len(logs) == usageLogLimit
	for _, l := range logs {
		if l.Time.Before(since) {
			truncated = false // the bound reached past the period's start: nothing is missing
			continue
		}
		name := l.Upstream
		if q.By == "key" {
			name = l.Key
		}
		if name == "" {
			name = "(none)"
		}
		r := rows[name]
		if r == nil {
			r = &admin.UsageRow{Name: name}
			rows[name] = r
		}
		r.Requests++
		r.InputTokens += l.InputTokens
		r.OutputTokens += l.OutputTokens
		r.USD += limits.Cost(l.InputTokens, l.OutputTokens, prices[l.Upstream])
		if l.ErrorClass != "" {
			r.Errors++
		}
	}
	out := make([]admin.UsageRow, 0, len(rows))
	for _, r := range rows {
		out = append(out, *r)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out, truncated, nil
}
