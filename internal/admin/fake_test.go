package admin_test

import (
	"context"
	"fmt"
	"sort"
	"sync"
	"time"

	"switchyard/internal/admin"
	"switchyard/internal/balancer"
	"switchyard/internal/config"
)

// fakeBackend is an in-memory admin.Backend. It keeps what the handler
// stores and records the queries it was asked.
type fakeBackend struct {
	mu        sync.Mutex // guards every field
	upstreams map[string]config.Upstream
	keys      map[string]config.Key
	routes    map[string]config.Route
	defaults  config.RouteSettings

	decisionsLimit int
	usageQuery     admin.UsageQuery
	explainQuery   admin.ExplainQuery
	changes        int
}

var _ admin.Backend = (*fakeBackend)(nil)

// upstreamSecret is the api_key of the fake's upstream "a"; it must never
// appear in an admin answer.
const upstreamSecret = "sk-live-SECRETabcd1234"

// teamSecret is the plaintext of the fake's key "team".
const teamSecret = "sk-team-plaintext-0001"

func newFakeBackend() *fakeBackend {
	a := config.DefaultUpstream()
	a.Name, a.Provider, a.BaseURL, a.APIKey, a.Models = "a", config.ProviderOpenAI, "https://api.example.com/v1", upstreamSecret, []string{"gpt-4o"}
	a.Weight = 3
	b := config.DefaultUpstream()
	b.Name, b.Provider, b.BaseURL, b.Models, b.Priority = "b", config.ProviderOpenAICompatible, "http://10.0.0.2/v1", []string{"gpt-4o"}, 1
	k := config.DefaultKey()
	k.Name, k.KeySHA256 = "team", config.HashKey(teamSecret)
	d := config.Default().Defaults
	r := config.Route{Model: "gpt-4o", RouteSettings: d}
	r.Retries = 1
	return &fakeBackend{
		upstreams: map[string]config.Upstream{"a": a, "b": b},
		keys:      map[string]config.Key{"team": k},
		routes:    map[string]config.Route{"gpt-4o": r},
		defaults:  d,
	}
}

func sortedValues[V any](m map[string]V) []V {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	out := make([]V, len(names))
	for i, n := range names {
		out[i] = m[n]
	}
	return out
}

func (f *fakeBackend) Upstreams(context.Context) ([]config.Upstream, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return sortedValues(f.upstreams), nil
}

func (f *fakeBackend) upstream(name string) (config.Upstream, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	u, ok := f.upstreams[name]
	return u, ok
}

func (f *fakeBackend) CreateUpstream(_ context.Context, u config.Upstream) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.upstreams[u.Name]; ok {
		return fmt.Errorf("upstream %q: %w", u.Name, admin.ErrConflict)
	}
	f.upstreams[u.Name] = u
	f.changes++
	return nil
}

func (f *fakeBackend) UpdateUpstream(_ context.Context, name string, edit func(config.Upstream) (config.Upstream, error)) (config.Upstream, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur, ok := f.upstreams[name]
	if !ok {
		return config.Upstream{}, fmt.Errorf("upstream %q: %w", name, admin.ErrNotFound)
	}
	u, err := edit(cur)
	if err != nil {
		return config.Upstream{}, err
	}
	f.upstreams[name] = u
	f.changes++
	return u, nil
}

func (f *fakeBackend) DeleteUpstream(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.upstreams[name]; !ok {
		return fmt.Errorf("upstream %q: %w", name, admin.ErrNotFound)
	}
	delete(f.upstreams, name)
	f.changes++
	return nil
}

func (f *fakeBackend) Keys(context.Context) ([]config.Key, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return sortedValues(f.keys), nil
}

func (f *fakeBackend) key(name string) (config.Key, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	k, ok := f.keys[name]
	return k, ok
}

func (f *fakeBackend) CreateKey(_ context.Context, k config.Key) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.keys[k.Name]; ok {
		return fmt.Errorf("key %q: %w", k.Name, admin.ErrConflict)
	}
	for name, other := range f.keys {
		if other.KeySHA256 == k.KeySHA256 {
			return config.Errors{{Path: "key", Msg: "same secret as key " + name}}
		}
	}
	f.keys[k.Name] = k
	f.changes++
	return nil
}

func (f *fakeBackend) UpdateKey(_ context.Context, name string, edit func(config.Key) (config.Key, error)) (config.Key, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	cur, ok := f.keys[name]
	if !ok {
		return config.Key{}, fmt.Errorf("key %q: %w", name, admin.ErrNotFound)
	}
	k, err := edit(cur)
	if err != nil {
		return config.Key{}, err
	}
	f.keys[name] = k
	f.changes++
	return k, nil
}

func (f *fakeBackend) DeleteKey(_ context.Context, name string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.keys[name]; !ok {
		return fmt.Errorf("key %q: %w", name, admin.ErrNotFound)
	}
	delete(f.keys, name)
	f.changes++
	return nil
}

func (f *fakeBackend) Routes(context.Context) ([]config.Route, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return sortedValues(f.routes), nil
}

func (f *fakeBackend) RouteDefaults() config.RouteSettings { return f.defaults }

func (f *fakeBackend) PutRoute(_ context.Context, r config.Route) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	_, existed := f.routes[r.Model]
	f.routes[r.Model] = r
	f.changes++
	return !existed, nil
}

func (f *fakeBackend) DeleteRoute(_ context.Context, model string) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.routes[model]; !ok {
		return fmt.Errorf("route %q: %w", model, admin.ErrNotFound)
	}
	delete(f.routes, model)
	f.changes++
	return nil
}

// fakeNow is the fake's clock reading.
var fakeNow = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

func (f *fakeBackend) State(context.Context) (admin.State, error) {
	until := fakeNow.Add(30 * time.Second)
	return admin.State{At: fakeNow, WindowSeconds: 300, Upstreams: []admin.UpstreamState{
		{Name: "c", Tier: 1, Weight: 1, Active: true, Requests5m: 0, Breaker: admin.BreakerState{State: "closed"}},
		{Name: "b", Tier: 0, Weight: 1, Active: true, Requests5m: 25, Errors5m: 5, RateLimited5m: 1, CooldownUntil: &until, Breaker: admin.BreakerState{State: "closed"}},
		{Name: "a", Tier: 0, Weight: 3, Active: true, Requests5m: 75, Breaker: admin.BreakerState{State: "open", Open: true, Reason: "5 failures within 30s"}},
		{Name: "d", Tier: 0, Weight: 5, Active: false, Breaker: admin.BreakerState{State: "closed"}},
	}}, nil
}

func (f *fakeBackend) Explain(q admin.ExplainQuery) (*balancer.Decision, error) {
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

func (f *fakeBackend) Decisions(limit int) []*balancer.Decision {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.decisionsLimit = limit
	return []*balancer.Decision{{RequestID: "req_1", Model: "gpt-4o", Order: []string{"a"}, Chosen: "a"}}
}

func (f *fakeBackend) Affinity(string) (any, error) { return nil, nil }

func (f *fakeBackend) DeleteAffinity(string) (int, error) { return 2, nil }

func (f *fakeBackend) Usage(_ context.Context, q admin.UsageQuery) ([]admin.UsageRow, bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.usageQuery = q
	rows := []admin.UsageRow{{Name: "a", Requests: 3, InputTokens: 30, OutputTokens: 48, USD: 0.001, Errors: 1}}
	return rows, q.By == "key", nil
}

func (f *fakeBackend) changed() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.changes
}
