package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/redis/go-redis/v9"

	"switchyard/internal/affinity"
	"switchyard/internal/balancer"
	"switchyard/internal/config"
	"switchyard/internal/gateway"
	"switchyard/internal/mock"
	"switchyard/internal/proxy"
)

// End-to-end tests of prefix-cache affinity
// (docs/routing.md#prefix-cache-affinity), through a served gateway with the
// default affinity.prefix settings (min_tokens 1024: 4096 bytes of prompt,
// max_share 0.5) unless a test says otherwise.

// prefixSystem is a system prompt of about 5,000 bytes: long enough, alone,
// for a prefix binding under the default min_tokens.
var prefixSystem = strings.Repeat("You are the support assistant of a hardware shop; answer briefly and cite the manual. ", 60)

// prefixChat is a raw OpenAI chat request with prefixSystem and the user's
// question q.
func prefixChat(q string) string {
	return fmt.Sprintf(`{"model":"gpt-4o","messages":[{"role":"system","content":%q},{"role":"user","content":%q}]}`, prefixSystem, q)
}

// prefixSessionOf returns the prefix id a decision was made under, failing
// the test unless it is a prefix binding's.
func prefixSessionOf(t testing.TB, d *balancer.Decision) string {
	t.Helper()
	if !affinity.IsPrefixID(d.Affinity.Session) || d.Affinity.Source != affinity.PrefixSource || d.Session != d.Affinity.Session {
		t.Fatalf("decision affinity %+v (session %q), want a prefix binding", d.Affinity, d.Session)
	}
	return d.Affinity.Session
}

// TestPrefixAffinityLandsOnOneUpstream: 24 requests without a session id
// that share a long system prompt (their questions, and for one client
// their temperature, differ) all land on the upstream the first one
// picked, of three equal ones, for the OpenAI and the Anthropic SDK; the
// decisions show the prefix binding (miss, then hits) and the binding is
// listed under its id. 24 short prompts spread over all three.
func TestPrefixAffinityLandsOnOneUpstream(t *testing.T) {
	ctx := context.Background()
	tests := []struct {
		name, provider, model string
		long                  bool
		send                  func(t *testing.T, e *env, i int) http.Header
	}{
		{
			name: "openai sdk, system message", provider: config.ProviderOpenAI, model: "gpt-4o", long: true,
			send: func(t *testing.T, e *env, i int) http.Header {
				var raw *http.Response
				c := e.openAI(testKey)
				p := openai.ChatCompletionNewParams{Model: "gpt-4o", Messages: []openai.ChatCompletionMessageParamUnion{
					openai.SystemMessage(prefixSystem), openai.UserMessage(fmt.Sprintf("question %d", i))}}
				if i%2 == 1 {
					p.Temperature = openai.Float(0.3)
				}
				if _, err := c.Chat.Completions.New(ctx, p, option.WithResponseInto(&raw)); err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				return raw.Header
			},
		},
		{
			name: "anthropic sdk, system and tools", provider: config.ProviderAnthropic, model: "claude-3-5-haiku", long: true,
			send: func(t *testing.T, e *env, i int) http.Header {
				var raw *http.Response
				c := e.anthropic(testKey)
				_, err := c.Messages.New(ctx, anthropic.MessageNewParams{
					Model: "claude-3-5-haiku", MaxTokens: int64(16 + i),
					System: []anthropic.TextBlockParam{{Text: prefixSystem}},
					Tools: []anthropic.ToolUnionParam{{OfTool: &anthropic.ToolParam{Name: "manual_lookup",
						InputSchema: anthropic.ToolInputSchemaParam{Properties: map[string]any{"page": map[string]any{"type": "integer"}}}}}},
					Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(fmt.Sprintf("question %d", i)))},
				}, aoption.WithResponseInto(&raw))
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				return raw.Header
			},
		},
		{
			name: "control: short prompts spread", provider: config.ProviderOpenAI, model: "gpt-4o",
			send: func(t *testing.T, e *env, i int) http.Header {
				body := fmt.Sprintf(`{"model":"gpt-4o","messages":[{"role":"system","content":"be brief"},{"role":"user","content":"question %d"}]}`, i)
				return turnOf(e.post(t, "/v1/chat/completions", body)).mustOK(t, "request "+strconv.Itoa(i)).header()
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newPool(t, tc.provider, tc.model, "up-a", "up-b", "up-c")
			e := startGateway(t, spec{upstreams: p.upstreams})
			const n = 24
			served := map[string]int{}
			first, id := "", ""
			for i := range n {
				h := tc.send(t, e, i)
				up := h.Get("X-Switchyard-Upstream")
				served[up]++
				d := decisionFor(t, e, h.Get("X-Request-Id"))
				what := "request " + strconv.Itoa(i)
				switch {
				case !tc.long:
					wantAffinity(t, what, d, balancer.AffinityRecord{})
				case i == 0:
					first, id = up, prefixSessionOf(t, d)
					wantAffinity(t, what, d, balancer.AffinityRecord{Session: id, Source: "prefix", Result: balancer.AffinityMiss})
				default:
					wantAffinity(t, what, d, balancer.AffinityRecord{Session: id, Source: "prefix", Bound: first, Result: balancer.AffinityHit})
				}
			}
			if !tc.long {
				if len(served) != 3 {
					t.Fatalf("%d short prompts went to %v, want all three upstreams", n, served)
				}
				return
			}
			if got := p.requests(); served[first] != n || got[first] != n {
				t.Fatalf("served %v (mock requests %v), want all %d on %s", served, got, n, first)
			}
			if b := boundTo(t, e, id, first); b.APIKey != "e2e" || b.Route != "*" {
				t.Errorf("binding key %+v, want key e2e on the default route *", b.Key)
			}
			d, err := e.G.Explain(ctx, proxy.ExplainRequest{Model: tc.model, Key: "e2e", Session: id})
			if err != nil {
				t.Fatal(err)
			}
			wantAffinity(t, "explain", d, balancer.AffinityRecord{Session: id, Source: "prefix", Bound: first, Result: balancer.AffinityHit})
		})
	}
}

// TestPrefixAffinitySessionWins: a request with a session id is bound by
// its session, never by its prompt's prefix, even when the prefix is bound
// elsewhere: sessions whose first turn normal selection sends away from
// the prefix's upstream stay on their own home, and their requests neither
// use nor move the prefix binding.
func TestPrefixAffinitySessionWins(t *testing.T) {
	p := newPool(t, config.ProviderOpenAI, "gpt-4o", "up-a", "up-b", "up-c")
	e := startGateway(t, spec{upstreams: p.upstreams})
	tr := turnOf(e.post(t, "/v1/chat/completions", prefixChat("no session"))).mustOK(t, "the prefix's first request")
	home, id := tr.upstream, prefixSessionOf(t, decisionFor(t, e, tr.requestID))

	away := 0
	for s := range 10 {
		session := "sess-" + strconv.Itoa(s)
		var sessHome string
		for turn := range 3 {
			tr := turnOf(e.post(t, "/v1/chat/completions", prefixChat(fmt.Sprintf("turn %d", turn)), "x-session-id", session)).
				mustOK(t, session)
			d := decisionFor(t, e, tr.requestID)
			want := balancer.AffinityRecord{Session: session, Source: "header:x-session-id", Result: balancer.AffinityMiss}
			if turn == 0 {
				sessHome = tr.upstream
			} else {
				want.Result, want.Bound = balancer.AffinityHit, sessHome
			}
			wantAffinity(t, session+" turn "+strconv.Itoa(turn), d, want)
			if tr.upstream != sessHome {
				t.Fatalf("%s turn %d served by %s, want its home %s", session, turn, tr.upstream, sessHome)
			}
		}
		if sessHome != home {
			away++
		}
	}
	if away == 0 {
		t.Fatalf("every session's first turn went to the prefix's upstream %s: the test proves nothing", home)
	}
	boundTo(t, e, id, home)
}

// TestPrefixAffinityMaxShare: with requests held in flight (the mocks hang
// until the client leaves), a prefix binding yields to normal selection
// exactly while its upstream carries more than affinity.prefix.max_share of
// the route's in-flight requests: every decision's result agrees with the
// in-flight counts it records, some requests yield and reach the other
// upstreams, and the binding stays where it was. With max_share 1 every
// held request goes to the bound upstream.
func TestPrefixAffinityMaxShare(t *testing.T) {
	tests := []struct {
		name      string
		share     float64
		wantYield bool
	}{
		{"max_share 0.5 yields", 0.5, true},
		{"max_share 1 never yields", 1, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newPool(t, config.ProviderOpenAI, "gpt-4o", "up-a", "up-b", "up-c")
			e := startGateway(t, spec{upstreams: p.upstreams, edit: func(c *config.Config) { c.Affinity.Prefix.MaxShare = tc.share }})
			tr := turnOf(e.post(t, "/v1/chat/completions", prefixChat("bind"))).mustOK(t, "the binding request")
			home, id := tr.upstream, prefixSessionOf(t, decisionFor(t, e, tr.requestID))
			for _, m := range p.mocks {
				m.SetBehavior(mock.Behavior{Hang: true})
			}

			const held = 8
			ctx, cancel := context.WithCancel(context.Background())
			var wg sync.WaitGroup
			defer func() { cancel(); wg.Wait() }()
			ids := make([]string, held)
			for i := range held {
				ids[i] = fmt.Sprintf("held-%s-%d", strings.ReplaceAll(tc.name, " ", "-"), i)
				req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL+"/v1/chat/completions", strings.NewReader(prefixChat("held "+strconv.Itoa(i))))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Authorization", "Bearer "+testKey)
				req.Header.Set("Content-Type", "application/json")
				req.Header.Set("X-Request-Id", ids[i])
				wg.Add(1)
				go func() {
					defer wg.Done()
					if resp, err := http.DefaultClient.Do(req); err == nil {
						resp.Body.Close()
					}
				}()
				// Hold it in flight before the next one is planned.
				if !waitFor(10*time.Second, func() bool { return inFlight(p) == int64(i+1) }) {
					t.Fatalf("request %d: %d in flight at the mocks, want %d", i, inFlight(p), i+1)
				}
			}
			perUpstream := map[string]int64{}
			for n, m := range p.mocks {
				perUpstream[n] = m.Stats().InFlight
			}
			cancel()
			wg.Wait()

			yields := 0
			for i, rid := range ids {
				var d *balancer.Decision
				if !waitFor(10*time.Second, func() bool { ds := gateway.RequestDecisions(e.G, rid); d = lastOf(ds); return d != nil }) {
					t.Fatalf("no decision recorded for held request %d", i)
				}
				var bound, total int64
				for _, r := range d.Candidates {
					total += r.InFlight
					if r.Name == home {
						bound = r.InFlight
					}
				}
				want := balancer.AffinityRecord{Session: id, Source: "prefix", Bound: home, Result: balancer.AffinityHit}
				// The route's in-flight requests count at least one per
				// candidate (docs/routing.md#prefix-cache-affinity).
				if float64(bound) > tc.share*float64(max(total, int64(len(d.Candidates)))) {
					want.Result, want.Reason = balancer.AffinityYielded, balancer.ReasonMaxShare
					yields++
				}
				wantAffinity(t, fmt.Sprintf("held request %d (%d of %d in flight on %s)", i, bound, total, home), d, want)
				if want.Result == balancer.AffinityHit && d.Chosen != home {
					t.Fatalf("held request %d: chosen %s, want the bound %s", i, d.Chosen, home)
				}
			}
			switch {
			case tc.wantYield && (yields == 0 || perUpstream[home] == held):
				t.Fatalf("%d yields, in flight per upstream %v: want some requests moved off %s", yields, perUpstream, home)
			case !tc.wantYield && (yields != 0 || perUpstream[home] != held):
				t.Fatalf("%d yields, in flight per upstream %v: want all %d on %s", yields, perUpstream, held, home)
			}
			boundTo(t, e, id, home)
		})
	}
}

// inFlight is the number of requests the pool's mocks are answering now.
func inFlight(p *pool) int64 {
	var n int64
	for _, m := range p.mocks {
		n += m.Stats().InFlight
	}
	return n
}

// lastOf returns the last of ds, or nil.
func lastOf(ds []*balancer.Decision) *balancer.Decision {
	if len(ds) == 0 {
		return nil
	}
	return ds[len(ds)-1]
}

// TestPrefixAffinityShared: two gateways sharing Redis (state.driver:
// redis, the test's own key prefix) and three upstreams. The first request
// of a long prompt, through the first gateway, binds its prefix; the next
// ones, through either gateway, land on the same upstream, and the binding
// is in Redis under the prefix id with affinity.prefix.ttl as its TTL.
func TestPrefixAffinityShared(t *testing.T) {
	redisURL, keyPrefix := sharedRedis(t)
	const ttl = 7 * time.Minute
	p := newPool(t, config.ProviderOpenAI, "gpt-4o", "up-a", "up-b", "up-c")
	shared := func(c *config.Config) {
		c.State.Driver, c.State.RedisURL, c.State.RedisPrefix = "redis", redisURL, keyPrefix
		c.Affinity.Prefix.TTL = ttl
	}
	gws := []*env{startGateway(t, spec{upstreams: p.upstreams, edit: shared}), startGateway(t, spec{upstreams: p.upstreams, edit: shared})}
	tr := turnOf(gws[0].post(t, "/v1/chat/completions", prefixChat("first"))).mustOK(t, "the first request")
	home, id := tr.upstream, prefixSessionOf(t, decisionFor(t, gws[0], tr.requestID))
	const n = 12
	for i := range n {
		e := gws[(i+1)%2]
		tr := turnOf(e.post(t, "/v1/chat/completions", prefixChat("question "+strconv.Itoa(i)))).mustOK(t, "request "+strconv.Itoa(i))
		wantAffinity(t, "request "+strconv.Itoa(i), decisionFor(t, e, tr.requestID),
			balancer.AffinityRecord{Session: id, Source: "prefix", Bound: home, Result: balancer.AffinityHit})
		if tr.upstream != home {
			t.Fatalf("request %d through gateway %d served by %s, want %s", i, (i+1)%2+1, tr.upstream, home)
		}
	}
	if got := p.requests(); got[home] != n+1 {
		t.Fatalf("mock requests %v, want all %d on %s", got, n+1, home)
	}

	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	// The binding's key: the session's hash tag, then key, route and session.
	keys, err := rdb.Keys(context.Background(), keyPrefix+"aff:b:{*}e2e\x1f\\*\x1f"+id).Result()
	if err != nil || len(keys) != 1 {
		t.Fatalf("the binding's keys = %q, %v; want one", keys, err)
	}
	key := keys[0]
	if d, err := rdb.PTTL(context.Background(), key).Result(); err != nil || d <= ttl-time.Minute || d > ttl {
		t.Fatalf("PTTL %q = %v, %v; want about %v (affinity.prefix.ttl)", key, d, err, ttl)
	}
	for _, e := range gws {
		boundTo(t, e, id, home)
	}
}

// TestPrefixAffinitySettings: affinity.prefix.enabled, affinity.enabled and
// a route's affinity.prefix overrides decide whether a session-less request
// is bound by its prefix: the first two requests of one prompt show it (a
// miss then a hit, or no affinity at all).
func TestPrefixAffinitySettings(t *testing.T) {
	off := false
	short := `{"model":"gpt-4o","messages":[{"role":"system","content":"` + strings.Repeat("be brief. ", 20) + `"},{"role":"user","content":"hi"}]}`
	route := func(a config.RouteAffinity) func(*config.Config) {
		return func(c *config.Config) {
			c.Routes = []config.Route{{Model: "gpt-4o", RouteSettings: c.Defaults, Affinity: a}}
		}
	}
	tests := []struct {
		name  string
		edit  func(*config.Config)
		body  string
		bound bool
	}{
		{"defaults: a long prompt", nil, prefixChat("q"), true},
		{"defaults: a short prompt", nil, short, false},
		{"affinity.prefix.enabled false", func(c *config.Config) { c.Affinity.Prefix.Enabled = false }, prefixChat("q"), false},
		{"affinity.enabled false", func(c *config.Config) { c.Affinity.Enabled = false }, prefixChat("q"), false},
		{"route prefix off", route(config.RouteAffinity{Prefix: config.RoutePrefixAffinity{Enabled: &off}}), prefixChat("q"), false},
		{"route min_tokens 32: a short prompt", route(config.RouteAffinity{Prefix: config.RoutePrefixAffinity{MinTokens: 32}}), short, true},
		{"global min_tokens 4096: a long prompt", func(c *config.Config) { c.Affinity.Prefix.MinTokens = 4096 }, prefixChat("q"), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newPool(t, config.ProviderOpenAI, "gpt-4o", "up-a", "up-b", "up-c")
			e := startGateway(t, spec{upstreams: p.upstreams, edit: tc.edit})
			var first turn
			for i, want := range []string{balancer.AffinityMiss, balancer.AffinityHit} {
				tr := turnOf(e.post(t, "/v1/chat/completions", tc.body)).mustOK(t, "request "+strconv.Itoa(i))
				d := decisionFor(t, e, tr.requestID)
				if !tc.bound {
					wantAffinity(t, "request "+strconv.Itoa(i), d, balancer.AffinityRecord{})
					continue
				}
				if i == 0 {
					first = tr
				}
				wantAffinity(t, "request "+strconv.Itoa(i), d, balancer.AffinityRecord{Source: "prefix", Result: want})
				if tr.upstream != first.upstream {
					t.Fatalf("request %d served by %s, want %s", i, tr.upstream, first.upstream)
				}
			}
		})
	}
}
