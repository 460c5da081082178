package gateway_test

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"switchyard/internal/config"
	"switchyard/internal/mock"
)

// lockedBuffer is a log destination safe for the gateway's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// TestRulesAndDebugEndToEnd: a route with three upstreams balanced
// round-robin and two rules (a header rule keeping one upstream, a tools
// rule excluding one). A request carrying the header goes to its upstream
// only and its debug decision names rules[0] and why the others were left
// out; without the header the route balances over all three as before; a
// debug key's decision names every candidate and the request-view path,
// also on a stream; another key sending X-Switchyard-Debug gets none; the
// admin decisions name the rule; only debug requests log their decision.
func TestRulesAndDebugEndToEnd(t *testing.T) {
	var ups []config.Upstream
	for _, name := range []string{"u-a", "u-b", "u-research"} {
		_, url := startMock(t, name, mock.Behavior{CompletionTokens: 3})
		models := []string{"gpt-4o"}
		if name == "u-a" {
			models = append(models, "gpt-4o-mini")
		}
		ups = append(ups, upstreamAt(name, config.ProviderOpenAI, url, 0, models...))
	}
	debugKey := clientKey("e2e", testKey)
	debugKey.Debug = true
	const otherSecret = "sk-e2e-other-key"
	logs := &lockedBuffer{}
	e := startGateway(t, spec{
		upstreams: ups,
		keys:      []config.Key{debugKey, clientKey("other", otherSecret)},
		logger:    slog.New(slog.NewJSONHandler(logs, nil)),
		edit: func(c *config.Config) {
			withAdmin(c)
			yes := true
			r := config.Route{Model: "gpt-4o", RouteSettings: c.Defaults}
			r.Strategy = config.StrategyRoundRobin
			r.Rules = []config.Rule{
				{When: config.RuleWhen{Header: map[string]string{"x-team": "research*"}}, Upstreams: []string{"u-research"}},
				{When: config.RuleWhen{Tools: &yes}, Exclude: []string{"u-a"}},
				{When: config.RuleWhen{Header: map[string]string{"x-block": "1"}}, Exclude: []string{config.ProviderOpenAI}},
				{When: config.RuleWhen{Header: map[string]string{"x-size": "small"}}, Model: "gpt-4o-mini"},
			}
			c.Routes = append(c.Routes, r)
		},
	})
	const chat = `{"model":"gpt-4o","messages":[{"role":"user","content":"hello"}]}`
	const withTools = `{"model":"gpt-4o","messages":[{"role":"user","content":"hello"}],` +
		`"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}]}`
	debug := []string{"X-Switchyard-Debug", "1"}

	t.Run("header rule restricts the upstreams and the decision names it", func(t *testing.T) {
		for i := range 4 {
			res := e.post(t, "/v1/chat/completions", chat, append([]string{"X-Team", "research-nlp"}, debug...)...)
			if res.status != 200 || res.header.Get("X-Switchyard-Upstream") != "u-research" {
				t.Fatalf("request %d: %d from %q, want 200 from u-research: %s", i, res.status, res.header.Get("X-Switchyard-Upstream"), res.body)
			}
			d := res.header.Get("X-Switchyard-Decision")
			if !gjson.Valid(d) {
				t.Fatalf("X-Switchyard-Decision is not JSON: %q", d)
			}
			if got := gjson.Get(d, "rule").Str; got != "routes[gpt-4o].rules[0]" {
				t.Errorf("rule %q, want routes[gpt-4o].rules[0]: %s", got, d)
			}
			for _, name := range []string{"u-a", "u-b"} {
				c := gjson.Get(d, `candidates.#(name=="`+name+`")`)
				if c.Get("filter").Str != "rule" || c.Get("reason").Str != "rule: not in upstreams" {
					t.Errorf("%s: %s, want filtered by the rule: not in upstreams", name, c.Raw)
				}
			}
			if got := gjson.Get(d, "attempts").Raw; got != `[{"upstream":"u-research","outcome":"committed","won":true}]` {
				t.Errorf("attempts %s", got)
			}
		}
	})
	t.Run("without the header the route balances as before", func(t *testing.T) {
		served := map[string]int{}
		for range 6 {
			res := e.post(t, "/v1/chat/completions", chat)
			if res.status != 200 {
				t.Fatalf("status %d: %s", res.status, res.body)
			}
			if h := res.header.Get("X-Switchyard-Decision"); h != "" {
				t.Errorf("decision header without X-Switchyard-Debug: %s", h)
			}
			served[res.header.Get("X-Switchyard-Upstream")]++
		}
		if served["u-a"] != 2 || served["u-b"] != 2 || served["u-research"] != 2 {
			t.Errorf("served %v, want 2 each (round-robin over all three)", served)
		}
	})
	t.Run("tools rule excludes", func(t *testing.T) {
		served := map[string]int{}
		for range 4 {
			res := e.post(t, "/v1/chat/completions", withTools, debug...)
			served[res.header.Get("X-Switchyard-Upstream")]++
			if got := gjson.Get(res.header.Get("X-Switchyard-Decision"), "rule").Str; got != "routes[gpt-4o].rules[1]" {
				t.Errorf("rule %q, want routes[gpt-4o].rules[1]", got)
			}
		}
		if served["u-a"] != 0 || served["u-b"]+served["u-research"] != 4 {
			t.Errorf("served %v, want none on u-a", served)
		}
	})
	t.Run("debug key gets every candidate and the request view", func(t *testing.T) {
		res := e.post(t, "/v1/chat/completions", chat, debug...)
		d := res.header.Get("X-Switchyard-Decision")
		names := gjson.Get(d, "candidates.#.name").Raw
		if names != `["u-a","u-b","u-research"]` {
			t.Errorf("candidates %s, want all three: %s", names, d)
		}
		if gjson.Get(d, "rule").Exists() || gjson.Get(d, "strategy").Str != "round-robin" || len(d) > 8<<10 {
			t.Errorf("decision %s: want no rule, round-robin, ≤ 8 KB", d)
		}
		if got, want := res.header.Get("X-Switchyard-Request-View"), "/admin/api/requests/"+res.header.Get("X-Request-Id"); got != want {
			t.Errorf("request view %q, want %q", got, want)
		}
		view := rawRequest(t, "GET", e.URL+res.header.Get("X-Switchyard-Request-View"), nil, "Authorization", "Bearer "+adminToken)
		if view.status != 200 {
			t.Errorf("request view: %d %s", view.status, view.body)
		}
	})
	t.Run("stream carries the decision with its first bytes", func(t *testing.T) {
		res := e.post(t, "/v1/chat/completions", `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			append([]string{"X-Team", "research"}, debug...)...)
		d := res.header.Get("X-Switchyard-Decision")
		if res.status != 200 || gjson.Get(d, "rule").Str != "routes[gpt-4o].rules[0]" || gjson.Get(d, "attempts.0.outcome").Str != "committed" {
			t.Errorf("stream %d, decision %q", res.status, d)
		}
	})
	t.Run("a rule that leaves nothing: 503 with the decision", func(t *testing.T) {
		res := e.post(t, "/v1/chat/completions", chat, append([]string{"X-Block", "1"}, debug...)...)
		d := res.header.Get("X-Switchyard-Decision")
		if res.status != 503 || !strings.Contains(string(res.body), "u-a: skipped, rule (excluded)") {
			t.Errorf("status %d: %s", res.status, res.body)
		}
		if gjson.Get(d, "rule").Str != "routes[gpt-4o].rules[2]" || gjson.Get(d, `candidates.#(filter=="rule")#.name`).Raw != `["u-a","u-b","u-research"]` ||
			gjson.Get(d, "attempts").Raw != "[]" || res.header.Get("X-Switchyard-Request-View") == "" {
			t.Errorf("decision %s", d)
		}
	})
	t.Run("a rule re-routes to another model's route", func(t *testing.T) {
		res := e.post(t, "/v1/chat/completions", chat, append([]string{"X-Size", "small"}, debug...)...)
		d := res.header.Get("X-Switchyard-Decision")
		if res.status != 200 || res.header.Get("X-Switchyard-Upstream") != "u-a" || gjson.GetBytes(res.body, "model").Str != "gpt-4o-mini" {
			t.Errorf("%d from %q: %s", res.status, res.header.Get("X-Switchyard-Upstream"), res.body)
		}
		if gjson.Get(d, "model").Str != "gpt-4o-mini" || gjson.Get(d, "rerouted_by").Str != "routes[gpt-4o].rules[3]" || gjson.Get(d, "rule").Exists() {
			t.Errorf("decision %s", d)
		}
	})
	t.Run("another key's X-Switchyard-Debug is ignored", func(t *testing.T) {
		res := rawRequest(t, "POST", e.URL+"/v1/chat/completions", strings.NewReader(chat),
			"Authorization", "Bearer "+otherSecret, "X-Switchyard-Debug", "1", "X-Team", "research")
		if res.status != 200 || res.header.Get("X-Switchyard-Upstream") != "u-research" {
			t.Fatalf("%d from %q: %s", res.status, res.header.Get("X-Switchyard-Upstream"), res.body)
		}
		for _, h := range []string{"X-Switchyard-Decision", "X-Switchyard-Request-View"} {
			if v := res.header.Get(h); v != "" {
				t.Errorf("%s sent to a key without debug: %s", h, v)
			}
		}
	})
	t.Run("admin decisions name the rule", func(t *testing.T) {
		d := rawRequest(t, "GET", e.URL+"/admin/api/decisions?limit=1", nil, "Authorization", "Bearer "+adminToken)
		if got := gjson.GetBytes(d.body, "0.rule").Str; got != "routes[gpt-4o].rules[0]" {
			t.Errorf("last decision's rule %q: %s", got, d.body)
		}
	})
	// 4 + 4 + 1 + 1 + 1 + 1 debug requests logged their decision; the others did not.
	if n := strings.Count(logs.String(), `"msg":"routing decision"`); n != 12 {
		t.Errorf("%d decisions logged at info, want 12", n)
	}
}
