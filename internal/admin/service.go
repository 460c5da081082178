package admin

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"switchyard/internal/affinity"
	"switchyard/internal/balancer"
	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/store"
)

// Store is what the admin API needs from the store: the configuration it
// edits and the usage it reports. store.Store implements it.
type Store interface {
	ConfigStore
	// UsageTotals is store.Store's: request-log sums per (upstream, key,
	// model, day) since a time, added up by the database.
	UsageTotals(ctx context.Context, since time.Time) ([]store.UsageTotal, error)
	// RequestLog is store.Store's: the newest request log with an id,
	// store.ErrNotFound when none (or not yet written).
	RequestLog(ctx context.Context, id string) (store.RequestLog, error)
}

// ConfigStore reads and writes the stored upstreams, client keys and routes,
// as store.Store documents: lists ordered by id, deletes answering
// store.ErrNotFound for an absent id, keys stored as their hash only.
type ConfigStore interface {
	ListUpstreams(ctx context.Context) ([]config.Upstream, error)
	UpsertUpstream(ctx context.Context, u config.Upstream) error
	DeleteUpstream(ctx context.Context, name string) error
	ListKeys(ctx context.Context) ([]config.Key, error)
	UpsertKey(ctx context.Context, k config.Key) error
	DeleteKey(ctx context.Context, name string) error
	ListRoutes(ctx context.Context) ([]config.Route, error)
	UpsertRoute(ctx context.Context, r config.Route) error
	DeleteRoute(ctx context.Context, model string) error
}

// Gateway is what the admin API needs from the running gateway: to apply a
// stored change, to observe routing, and to see and drop sticky sessions.
// The gateway implements it; tests use a fake. Every method may be called
// concurrently.
type Gateway interface {
	Router
	Observer
	Sessions
}

// Router applies stored configuration changes to routing.
type Router interface {
	// Reload rebuilds routing from the store. The Service calls it after
	// every change it stored, with its edit lock held: the next request
	// sees the change, requests in flight finish on what they started with.
	Reload(ctx context.Context) error
	// ForgetUpstream drops what the gateway keeps about a deleted upstream
	// beyond the routing table (its breaker, its live statistics). It is
	// called after the Reload that removed the upstream.
	ForgetUpstream(name string)
	// ForgetKey drops what the gateway keeps for a deleted client key
	// beyond the routing table: the Responses conversations it kept for it
	// (docs/routing.md#responses-chains-the-gateway-keeps). It is called
	// after the Reload that removed the key.
	ForgetKey(name string)
}

// Observer reports live routing state. Nothing it does changes routing.
type Observer interface {
	// State returns the live state of ups, the stored upstreams, with
	// each upstream's attempts per client model (UpstreamState.Models, their
	// History as q asks); rates, shares and the grouping by route are
	// filled in by the admin package.
	State(ups []config.Upstream, q StateQuery) State
	// Explain computes, without sending anything, the routing decision a
	// request would get now. ErrNotFound for a model no upstream serves or
	// an unknown key; ErrInvalid for a model the key may not use.
	Explain(q ExplainQuery) (*balancer.Decision, error)
	// Decisions returns up to limit of the latest routing decisions, newest first.
	Decisions(limit int) []*balancer.Decision
	// RequestDecisions returns the decisions still kept for request id,
	// oldest first; none once they left the ring of recent decisions.
	RequestDecisions(id string) []*balancer.Decision
}

// Sessions reads and drops sticky-session bindings.
type Sessions interface {
	// Bindings returns the live bindings of session, across client keys
	// and routes.
	Bindings(session string) []affinity.Binding
	// ForgetSession removes every binding of session, so that its next
	// request is routed afresh, and returns how many it removed.
	ForgetSession(session string) int
}

// Options configure a Service.
type Options struct {
	// Store holds the configuration and the request logs. Required.
	Store Store
	// Gateway is the running gateway. Required.
	Gateway Gateway
	// Clock gives the time GET /usage?since=24h counts back from. Default: the wall clock.
	Clock clock.Clock
	// Defaults are the route settings from the file that a route inherits
	// what it does not set.
	Defaults config.RouteSettings
	// Affinity is the file's affinity block; with Defaults it completes the
	// stored configuration that a change is validated in.
	Affinity config.Affinity
}

// Service is the admin domain: the configuration CRUD over the store (one
// change at a time: read, validate the whole configuration with the change
// in place, write, reload routing), the mapping of the store's and the
// validator's errors to the API's, usage totals, and the live views the
// Gateway supplies. New serves it over HTTP. Its methods are safe for
// concurrent use.
type Service struct {
	st       Store
	gw       Gateway
	clock    clock.Clock
	defaults config.RouteSettings
	affinity config.Affinity

	editMu sync.Mutex // serialises changes: read the store, validate, write, Reload
}

// NewService returns the admin domain over o.Store and o.Gateway. A gateway
// has one Service, so that every change made through it is serialised.
func NewService(o Options) *Service {
	if o.Clock == nil {
		o.Clock = clock.Real{}
	}
	return &Service{st: o.Store, gw: o.Gateway, clock: o.Clock, defaults: o.Defaults, affinity: o.Affinity}
}

// RouteDefaults returns the `defaults` a route inherits what it does not set.
func (s *Service) RouteDefaults() config.RouteSettings { return s.defaults }

// State returns every stored upstream's live state, ordered by tier, then
// name, with its rates and shares, and the same grouped by route.
func (s *Service) State(ctx context.Context, q StateQuery) (State, error) {
	ups, err := s.st.ListUpstreams(ctx)
	if err != nil {
		return State{}, fmt.Errorf("loading upstreams: %w", err)
	}
	st := s.gw.State(ups, q)
	if st.Upstreams == nil {
		st.Upstreams = []UpstreamState{}
	}
	sort.SliceStable(st.Upstreams, func(i, j int) bool {
		a, b := st.Upstreams[i], st.Upstreams[j]
		if a.Tier != b.Tier {
			return a.Tier < b.Tier
		}
		return a.Name < b.Name
	})
	for i := range st.Upstreams {
		if st.Upstreams[i].Models == nil {
			st.Upstreams[i].Models = []ModelTraffic{}
		}
	}
	fillDerived(st.Upstreams)
	st.Routes = groupRoutes(ups, st.Upstreams)
	if q.History > 0 {
		end := HistoryEnd(st.At)
		st.HistoryStepSeconds, st.HistoryEnd = int(q.History/time.Second), &end
	}
	return st, nil
}

// Explain is Observer.Explain of the gateway.
func (s *Service) Explain(q ExplainQuery) (*balancer.Decision, error) { return s.gw.Explain(q) }

// Decisions is Observer.Decisions of the gateway.
func (s *Service) Decisions(limit int) []*balancer.Decision { return s.gw.Decisions(limit) }

// Affinity returns the live sticky-session bindings of session, across
// client keys and routes.
func (s *Service) Affinity(session string) []affinity.Binding { return s.gw.Bindings(session) }

// DeleteAffinity drops every binding of session and returns how many it dropped.
func (s *Service) DeleteAffinity(session string) int { return s.gw.ForgetSession(session) }
