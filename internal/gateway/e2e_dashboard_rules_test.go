package gateway_test

import (
	"testing"
	"time"

	"switchyard/internal/config"
	"switchyard/internal/mock"
)

// TestDashboardRulesInBrowser: the route view lists a route's rules in
// order, each as "when → action", and the decisions table names the rule
// that applied to a request.
func TestDashboardRulesInBrowser(t *testing.T) {
	b := newBrowser(t, 60*time.Second)
	var ups []config.Upstream
	for _, name := range []string{"a", "b"} {
		_, url := startMock(t, name, mock.Behavior{})
		ups = append(ups, upstreamAt(name, config.ProviderOpenAI, url, 0, "gpt-4o"))
	}
	e := startGateway(t, spec{upstreams: ups, edit: func(c *config.Config) {
		withAdmin(c)
		yes := true
		r := config.Route{Model: "gpt-4o", RouteSettings: c.Defaults}
		r.Rules = []config.Rule{
			{When: config.RuleWhen{Header: map[string]string{"x-team": "research*"}}, Upstreams: []string{"b"}},
			{When: config.RuleWhen{MinInputTokens: 1000, Tools: &yes}, Exclude: []string{"a"}, Strategy: "failover"},
		}
		c.Routes = append(c.Routes, r)
	}})
	if r := e.post(t, "/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`, "X-Team", "research"); r.status != 200 {
		t.Fatalf("status %d: %s", r.status, r.body)
	}
	b.signIn(e.URL)
	b.wait("the route lists its two rules", `document.querySelectorAll('#routes .route[data-model="gpt-4o"] li[data-rule]').length === 2`)
	for _, c := range []struct{ sel, want string }{
		{`li[data-rule="routes[gpt-4o].rules[0]"]`, "header x-team=research* → only b"},
		{`li[data-rule="routes[gpt-4o].rules[1]"]`, "input ≥ 1000 tokens · tools → exclude a · strategy failover"},
	} {
		if got := b.eval(`document.querySelector('#routes .route[data-model="gpt-4o"] ` + c.sel + `').textContent`); got != c.want {
			t.Errorf("%s shows %q, want %q", c.sel, got, c.want)
		}
	}
	b.wait("the decision names the rule", `Array.from(document.querySelectorAll('#decisions td.rule')).some((td) => td.textContent === 'routes[gpt-4o].rules[0]')`)
	b.checkLayout(1280)
}
