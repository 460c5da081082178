package admin_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"switchyard/internal/admin"
	"switchyard/internal/affinity"
	"switchyard/internal/balancer"
	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/store"
	"switchyard/internal/store/sqlite"
)

// fakeBackend is an admin.Service over a real in-memory SQLite store and a
// fake gateway. The store holds upstreams "a" and "b", key "team", route
// gpt-4o and the request logs of usageLogs.
type fakeBackend struct {
	*fakeGateway
	st    *sqlite.Store
	svc   *admin.Service
	clock *clock.Fake
}

// fakeGateway is an in-memory admin.Gateway. It records what it was asked.
type fakeGateway struct {
	mu             sync.Mutex // guards every field
	decisionsLimit int
	explainQuery   admin.ExplainQuery
	stateOf        []string // the upstreams State was given
	stateQuery     admin.StateQuery
	reloads        int
	forgotten      []string // ForgetUpstream's names
}

var _ admin.Gateway = (*fakeGateway)(nil)

// upstreamSecret is the api_key of the fake's upstream "a"; it must never
// appear in an admin answer.
const upstreamSecret = "sk-live-SECRETabcd1234"

// teamSecret is the plaintext of the fake's key "team".
const teamSecret = "sk-team-plaintext-0001"

// fakeNow is the fake's clock reading.
var fakeNow = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// aPrice is the price of upstream "a".
var aPrice = config.Price{InputPerMTok: 2.5, OutputPerMTok: 10}

func newFakeBackend(t testing.TB) *fakeBackend {
	t.Helper()
	ctx := context.Background()
	st, err := sqlite.Open(ctx, ":memory:")
	if err != nil {
		t.Fatalf("opening the store: %v", err)
	}
	t.Cleanup(func() { _ = st.Close() })
	a := config.DefaultUpstream()
	a.Name, a.Provider, a.BaseURL, a.APIKey, a.Models = "a", config.ProviderOpenAI, "https://api.example.com/v1", upstreamSecret, []string{"gpt-4o"}
	a.Weight, a.Price = 3, aPrice
	b := config.DefaultUpstream()
	b.Name, b.Provider, b.BaseURL, b.Models, b.Priority = "b", config.ProviderOpenAICompatible, "http://10.0.0.2/v1", []string{"gpt-4o"}, 1
	k := config.DefaultKey()
	k.Name, k.KeySHA256 = "team", config.HashKey(teamSecret)
	d := config.Default().Defaults
	r := config.Route{Model: "gpt-4o", RouteSettings: d}
	r.Retries = 1
	for _, err := range []error{
		st.UpsertUpstream(ctx, a), st.UpsertUpstream(ctx, b), st.UpsertKey(ctx, k), st.UpsertRoute(ctx, r),
		st.InsertRequestLogs(ctx, usageLogs()),
	} {
		if err != nil {
			t.Fatalf("seeding the store: %v", err)
		}
	}
	f := &fakeBackend{fakeGateway: &fakeGateway{}, st: st, clock: clock.NewFake(fakeNow)}
	f.svc = admin.NewService(admin.Options{Store: st, Gateway: f.fakeGateway, Clock: f.clock, Defaults: d, Affinity: config.Default().Affinity})
	return f
}

// The costs the fake's request logs of upstream "a" recorded when they
// were served: not what "a"'s price gives today.
const usdA1, usdA2 = 0.25, 0.5

// usageLogs are the fake's request logs: by upstream, "a" has 2 requests
// (30 input and 48 output tokens, 1 error; one for gpt-4o, one for
// gpt-4o-mini) in the last 24 hours, "b" 1 at 100 minutes ago and 1 more
// 30 hours ago (both gpt-4o), and 1 request no upstream served (nor key
// made, naming no model) an hour ago.
func usageLogs() []store.RequestLog {
	ago := func(d time.Duration) time.Time { return fakeNow.Add(-d) }
	return []store.RequestLog{
		{ID: "1", Time: ago(time.Hour), Key: "team", Model: "gpt-4o", Upstream: "a", Status: 200, InputTokens: 10, OutputTokens: 16,
			CacheReadTokens: 4, CacheWriteTokens: 2, CostUSD: usdA1},
		{ID: "2", Time: ago(2 * time.Hour), Key: "team", Model: "gpt-4o-mini", Upstream: "a", Status: 502, InputTokens: 20, OutputTokens: 32, ErrorClass: "server_error",
			CostUSD: usdA2},
		{ID: "3", Time: ago(time.Hour), Status: 401, ErrorClass: "unauthorized"},
		{ID: "4", Time: ago(100 * time.Minute), Key: "team", Model: "gpt-4o", Upstream: "b", Status: 200, InputTokens: 5, OutputTokens: 5, Unpriced: true},
		{ID: "5", Time: ago(30 * time.Hour), Key: "team", Model: "gpt-4o", Upstream: "b", Status: 200, InputTokens: 7, OutputTokens: 1, Unpriced: true},
	}
}

// upstream returns the stored upstream called name.
func (f *fakeBackend) upstream(name string) (config.Upstream, bool) {
	ups, err := f.st.ListUpstreams(context.Background())
	if err != nil {
		panic(err)
	}
	i := slices.IndexFunc(ups, func(u config.Upstream) bool { return u.Name == name })
	if i < 0 {
		return config.Upstream{}, false
	}
	return ups[i], true
}

// key returns the stored key called name.
func (f *fakeBackend) key(name string) (config.Key, bool) {
	keys, err := f.st.ListKeys(context.Background())
	if err != nil {
		panic(err)
	}
	i := slices.IndexFunc(keys, func(k config.Key) bool { return k.Name == name })
	if i < 0 {
		return config.Key{}, false
	}
	return keys[i], true
}

// route returns the stored route for model.
func (f *fakeBackend) route(model string) (config.Route, bool) {
	routes, err := f.st.ListRoutes(context.Background())
	if err != nil {
		panic(err)
	}
	i := slices.IndexFunc(routes, func(r config.Route) bool { return r.Model == model })
	if i < 0 {
		return config.Route{}, false
	}
	return routes[i], true
}

// changed returns how many changes reached the gateway (its reloads).
func (f *fakeGateway) changed() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.reloads
}

func (f *fakeGateway) Reload(context.Context) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.reloads++
	return nil
}

func (f *fakeGateway) ForgetUpstream(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forgotten = append(f.forgotten, name)
}

// State answers a fixed state, whatever the upstreams, and records their
// names and the query. Upstream "a" was tried for gpt-4o (which it serves)
// and gpt-4o-mini (which the store says it does not), "b" for gpt-4o; with
// q.History, a's gpt-4o attempts have a history of three steps.
func (f *fakeGateway) State(ups []config.Upstream, q admin.StateQuery) admin.State {
	f.mu.Lock()
	f.stateOf = nil
	for _, u := range ups {
		f.stateOf = append(f.stateOf, u.Name)
	}
	f.stateQuery = q
	f.mu.Unlock()
	until := fakeNow.Add(30 * time.Second)
	aModels := []admin.ModelTraffic{{Model: "gpt-4o", Requests5m: 60, RequestsTotal: 90}, {Model: "gpt-4o-mini", Requests5m: 15, RequestsTotal: 15}}
	if q.History > 0 {
		aModels[0].History = []int64{20, 0, 40}
	}
	return admin.State{At: fakeNow.Add(500 * time.Millisecond), WindowSeconds: 300, Upstreams: []admin.UpstreamState{
		{Name: "c", Tier: 1, Weight: 1, Active: true, Requests5m: 0, Breaker: admin.BreakerState{State: "closed"}},
		{Name: "b", Tier: 0, Weight: 1, Active: true, Requests5m: 25, Errors5m: 5, RateLimited5m: 1, CooldownUntil: &until, Breaker: admin.BreakerState{State: "closed"},
			Models: []admin.ModelTraffic{{Model: "gpt-4o", Requests5m: 25, RequestsTotal: 30}}},
		{Name: "a", Tier: 0, Weight: 3, Active: true, Requests5m: 75, Breaker: admin.BreakerState{State: "open", Open: true, Reason: "5 failures within 30s"},
			Models: aModels},
		{Name: "d", Tier: 0, Weight: 5, Active: false, Breaker: admin.BreakerState{State: "closed"}},
	}}
}

func (f *fakeGateway) Explain(q admin.ExplainQuery) (*balancer.Decision, error) {
	f.mu.Lock()
	f.explainQuery = q
	f.mu.Unlock()
	switch {
	case q.Key != "" && q.Key != "team":
		return nil, fmt.Errorf("%w: no client key named %s", admin.ErrNotFound, q.Key)
	case q.Model != "gpt-4o":
		return nil, fmt.Errorf("%w: no upstream serves model %s", admin.ErrNotFound, q.Model)
	}
	return &balancer.Decision{RequestID: "explain", Model: q.Model, Session: q.Session, Stream: q.Stream,
		Order: []string{"a", "b"}, Chosen: "a"}, nil
}

func (f *fakeGateway) Decisions(limit int) []*balancer.Decision {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.decisionsLimit = limit
	return []*balancer.Decision{{RequestID: "req_1", Model: "gpt-4o", Order: []string{"a"}, Chosen: "a"}}
}

// requestDecisions are the decisions the fake keeps, by request id.
var requestDecisions = map[string][]*balancer.Decision{
	"req_1": {{RequestID: "req_1", Model: "gpt-4o", Order: []string{"a", "b"}, Chosen: "a",
		Tried: []balancer.TriedRecord{{Upstream: "a", Outcome: "server_error"}, {Upstream: "b", Outcome: "success", Won: true}}}},
	"unlogged": {{RequestID: "unlogged", Model: "gpt-4o", Order: []string{"a"}, Chosen: "a", TraceID: unloggedTrace}},
}

func (f *fakeGateway) RequestDecisions(id string) []*balancer.Decision { return requestDecisions[id] }

// boundSession is the one session the fake has bindings for.
const boundSession = "s-bound"

func (f *fakeGateway) Bindings(session string) []affinity.Binding {
	if session != boundSession {
		return nil
	}
	return []affinity.Binding{{
		Key:       affinity.Key{APIKey: "team", Route: "gpt-4o", Session: boundSession},
		Upstream:  "a",
		CreatedAt: fakeNow.Add(-time.Minute), LastUsed: fakeNow, ExpiresAt: fakeNow.Add(5 * time.Minute),
	}}
}

func (f *fakeGateway) ForgetSession(string) int { return 2 }

func (f *fakeGateway) ForgetKey(name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.forgotten = append(f.forgotten, "key:"+name)
}
