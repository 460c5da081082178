package proxy

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"switchyard/internal/balancer"
	"switchyard/internal/codec"
	"switchyard/internal/config"
	"switchyard/internal/outcome"
	"switchyard/internal/provider"
)

// fakeProvider is a provider the gateway does not ship: the model goes in
// the URL (/models/{model}/generate), the key in X-Fake-Token, and its
// probe is GET /ping. It exists only in this file: registering it is all a
// new provider takes.
type fakeProvider struct{}

func (fakeProvider) Name() string   { return "fake-llm" }
func (fakeProvider) System() string { return "_OTHER" }

func (fakeProvider) Check(u provider.Upstream) []provider.Problem { return nil }

func (fakeProvider) New(u provider.Upstream) provider.Endpoint {
	return &fakeEndpoint{base: strings.TrimRight(u.BaseURL, "/"), key: u.APIKey}
}

type fakeEndpoint struct{ base, key string }

func (e *fakeEndpoint) Family(string) codec.Family { return codec.FamilyOpenAI }
func (e *fakeEndpoint) OpenStreamEnd() bool        { return false }

func (e *fakeEndpoint) NewRequest(ctx context.Context, _, model string, body []byte, h http.Header) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.base+"/models/"+url.PathEscape(model)+"/generate", strings.NewReader(string(body)))
	if err != nil {
		return nil, err
	}
	req.Header = h
	req.Header.Set("X-Fake-Token", e.key)
	return req, nil
}

func (e *fakeEndpoint) ProbeRequest(ctx context.Context, _, _ string) (*http.Request, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, e.base+"/ping", nil)
	if err == nil {
		req.Header.Set("X-Fake-Token", e.key)
	}
	return req, err
}

func (e *fakeEndpoint) Classify(status int, _ http.Header, body []byte) outcome.Outcome {
	if status == http.StatusTeapot { // the fake's own way of saying "slow down"
		return outcome.Outcome{Class: outcome.RateLimited, Status: status}
	}
	return outcome.Outcome{Class: provider.ClassifyStatus(status), Status: status}
}

// A provider registered from outside internal/provider serves traffic,
// answers probes and shows in explain, with no other file touched.
func TestFakeProviderServesProbesAndExplains(t *testing.T) {
	var gen, pings atomic.Int64
	up := upstreamServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Fake-Token") != "sk-upstream-fake-secret" {
			w.WriteHeader(http.StatusUnauthorized)
			return
		}
		switch {
		case r.Method == http.MethodGet && r.URL.Path == "/ping":
			pings.Add(1)
		case r.Method == http.MethodPost && r.URL.Path == "/models/fake-model-v2/generate":
			gen.Add(1)
			w.Header().Set("Content-Type", "application/json")
			fmt.Fprint(w, `{"choices":[{"message":{"content":"hi"}}],"usage":{"prompt_tokens":7,"completion_tokens":3}}`)
		default:
			w.WriteHeader(http.StatusNotFound)
		}
	}))
	u := upstreamCfg("fake", "fake-llm", up, "m")
	u.ModelMap = map[string]string{"m": "fake-model-v2"}
	f := newFixture(t, []config.Upstream{u}, fixtureOpts{providers: provider.Builtin().With(fakeProvider{})})

	resp := f.post("/v1/chat/completions", `{"model":"m","messages":[]}`)
	body := readAll(t, resp)
	if resp.StatusCode != 200 || resp.Header.Get("X-Switchyard-Upstream") != "fake" || gen.Load() != 1 {
		t.Fatalf("status %d upstream %q generate calls %d: %s", resp.StatusCode, resp.Header.Get("X-Switchyard-Upstream"), gen.Load(), body)
	}
	if l := f.logs.next(t); l.InputTokens != 7 || l.OutputTokens != 3 {
		t.Fatalf("usage %d/%d, want 7/3", l.InputTokens, l.OutputTokens)
	}
	if err := f.srv.Probe(context.Background(), "fake", "models"); err != nil || pings.Load() != 1 {
		t.Fatalf("probe: %v, %d pings", err, pings.Load())
	}
	d, err := f.srv.Explain(context.Background(), ExplainRequest{Model: "m"})
	if err != nil || len(d.Order) != 1 || d.Order[0] != "fake" {
		t.Fatalf("explain: %v %+v", err, d)
	}
}

// routes[].retry_budget is the route's own: a route that allows retries at
// 100% of its requests retries every one of 40 failovers, past the
// defaults' floor of 30 (it used to be ignored for the defaults' budget).
func TestRouteRetryBudget(t *testing.T) {
	var hits atomic.Int64
	bad := upstreamServer(t, status(500))
	good := upstreamServer(t, chatOK(&hits))
	a, b := upstreamCfg("a", config.ProviderOpenAI, bad, "m"), upstreamCfg("b", config.ProviderOpenAI, good, "m")
	a.Priority, b.Priority = 0, 1 // a first, always
	d := config.Default().Defaults
	d.RetryBudget = 0 // the floor only: 30 retries per 10 s
	rt := config.Route{Model: "m", RouteSettings: d}
	rt.RetryBudget = 1
	circuit := config.Default().Circuit
	circuit.FailureThreshold = 1000
	f := newFixture(t, []config.Upstream{a, b}, fixtureOpts{routes: []config.Route{rt}, defaults: &d, circuit: &circuit})
	for i := range 40 {
		resp := f.post("/v1/chat/completions", `{"model":"m"}`)
		if body := readAll(t, resp); resp.StatusCode != 200 {
			t.Fatalf("request %d: status %d: %s", i, resp.StatusCode, body)
		}
	}
	if hits.Load() != 40 {
		t.Fatalf("%d served by the fallback, want 40", hits.Load())
	}
}

// A reload keeps an unchanged route's balancer: smooth WRR goes on where it
// was (3:2 is A B A B A), and a route whose strategy changed gets a new
// balancer seeded apart from the first catalog's.
func TestReloadKeepsBalancers(t *testing.T) {
	ups := []config.Upstream{upstreamCfg("a", config.ProviderOpenAI, "http://a", "m"), upstreamCfg("b", config.ProviderOpenAI, "http://b", "m")}
	ups[0].Weight, ups[1].Weight = 3, 2
	d := config.Default().Defaults
	route := func(strategy string) []config.Route {
		r := config.Route{Model: "m", RouteSettings: d}
		r.Strategy = strategy
		return []config.Route{r}
	}
	build := func(prev *Catalog, routes []config.Route) *Catalog {
		c, err := NewCatalog(CatalogInput{Upstreams: ups, Routes: routes, Defaults: d, Seed: 7, Previous: prev, Now: time.Now})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	cands := []balancer.Candidate{{Name: "a", Weight: 3, Active: true, SlowStart: 1}, {Name: "b", Weight: 2, Active: true, SlowStart: 1}}
	pick := func(c *Catalog) string {
		return c.route("m").bal.Plan(balancer.Request{Model: "m", K: 1}, cands).Order[0]
	}
	c := build(nil, route(config.StrategySmoothWRR))
	var seq []string
	for range 2 {
		seq = append(seq, pick(c))
	}
	for range 3 {
		c = build(c, route(config.StrategySmoothWRR)) // a reload before every pick
		seq = append(seq, pick(c))
	}
	if got := strings.Join(seq, " "); got != "a b a b a" {
		t.Fatalf("smooth WRR across reloads: %s, want a b a b a", got)
	}

	first := build(nil, route(config.StrategyWeightedRandom))
	changed := build(build(nil, route(config.StrategyRoundRobin)), route(config.StrategyWeightedRandom))
	var a, b []string
	for range 32 {
		a, b = append(a, pick(first)), append(b, pick(changed))
	}
	if strings.Join(a, "") == strings.Join(b, "") {
		t.Fatalf("a rebuilt weighted-random balancer replays the first catalog's picks: %v", a)
	}
}

// A reload keeps an upstream's endpoint (and what it holds: a Vertex OAuth
// token) while its provider settings are unchanged, and builds a new one
// when they change.
func TestReloadKeepsEndpoints(t *testing.T) {
	a := upstreamCfg("a", config.ProviderOpenAI, "http://a.invalid/v1", "m")
	b := upstreamCfg("b", config.ProviderOpenAI, "http://b.invalid/v1", "m")
	d := config.Default()
	build := func(prev *Catalog, ups ...config.Upstream) *Catalog {
		c, err := NewCatalog(CatalogInput{Upstreams: ups, Defaults: d.Defaults, Seed: 1, Now: time.Now, Previous: prev})
		if err != nil {
			t.Fatal(err)
		}
		return c
	}
	first := build(nil, a, b)
	a2 := a
	a2.Weight = 7 // routing only: the endpoint stays
	b2 := b
	b2.APIKey = "sk-rotated"
	second := build(first, a2, b2)
	if second.byName["a"].ep != first.byName["a"].ep {
		t.Error("a weight change rebuilt the endpoint")
	}
	if second.byName["b"].ep == first.byName["b"].ep {
		t.Error("a rotated api_key kept the old endpoint")
	}
}
