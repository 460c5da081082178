package gateway_test

import (
	"bytes"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/tidwall/gjson"

	"switchyard/internal/config"
	"switchyard/internal/mock"
)

// seenRequests records what reaches a mock upstream: each body and whether
// the routing-preferences header came along.
type seenRequests struct {
	mu     sync.Mutex
	bodies []string
	header int // requests that carried X-Switchyard-Provider
}

func (s *seenRequests) wrap(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		r.Body = io.NopCloser(bytes.NewReader(b))
		s.mu.Lock()
		s.bodies = append(s.bodies, string(b))
		if r.Header.Get("X-Switchyard-Provider") != "" {
			s.header++
		}
		s.mu.Unlock()
		h.ServeHTTP(w, r)
	})
}

func (s *seenRequests) count() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.bodies)
}

// TestPricedRoutingEndToEnd: three mocks at different prices (cheap and mid
// speak OpenAI, dear Anthropic) behind one gateway whose default strategy is
// lowest-cost; a second model's route uses failover with dear weighted
// first. It checks lowest-cost and its fail-over, each preference, the
// header form from an Anthropic client, the errors, and that no upstream
// ever receives the provider field or header.
func TestPricedRoutingEndToEnd(t *testing.T) {
	seen := map[string]*seenRequests{}
	mocks := map[string]*mock.Server{}
	var ups []config.Upstream
	for _, u := range []struct {
		name, provider string
		in, out        float64
		weight         int
	}{
		{"cheap", config.ProviderOpenAI, 0.5, 1, 1},
		{"mid", config.ProviderOpenAI, 2, 8, 1},
		{"dear", config.ProviderAnthropic, 10, 30, 10},
	} {
		s := &seenRequests{}
		m, url := startMockOn(t, u.name, mock.Behavior{CompletionTokens: 3}, nil, s.wrap)
		seen[u.name], mocks[u.name] = s, m
		up := upstreamAt(u.name, u.provider, url, 0, "gpt-4o", "gpt-4o-failover")
		up.Price, up.Weight = config.Price{InputPerMTok: u.in, OutputPerMTok: u.out}, u.weight
		ups = append(ups, up)
	}
	strict := clientKey("strict", "sk-e2e-strict-key")
	strict.Preferences = false
	e := startGateway(t, spec{
		upstreams: ups,
		keys:      []config.Key{clientKey("e2e", testKey), strict},
		edit: func(c *config.Config) {
			c.Defaults.Strategy = "lowest-cost"
			r := config.Route{Model: "gpt-4o-failover", RouteSettings: c.Defaults}
			r.Strategy = "failover"
			c.Routes = append(c.Routes, r)
		},
	})
	chat := func(model, provider string) string {
		b := `{"model":"` + model + `","messages":[{"role":"user","content":"hello"}]`
		if provider != "" {
			b += `,"provider":` + provider
		}
		return b + "}"
	}
	const messages = `{"model":"gpt-4o","max_tokens":16,"messages":[{"role":"user","content":"hello"}]}`
	anthropicHdr := func(prefs string) []string {
		return []string{"X-Api-Key", testKey, "Anthropic-Version", "2023-06-01", "X-Switchyard-Provider", prefs}
	}

	tests := []struct {
		name     string
		path     string // default /v1/chat/completions
		body     string
		hdr      []string
		fail     string // a mock answering 500 for this request
		status   int
		upstream string // X-Switchyard-Upstream
		attempts string // X-Switchyard-Attempts, when checked
		errCode  string // error.code (OpenAI shape) or error.type (Anthropic shape)
		errMsg   string // substring of error.message
		untried  string // a mock that must not be reached
	}{
		{name: "lowest-cost picks the cheapest", body: chat("gpt-4o", ""), status: 200, upstream: "cheap", attempts: "1"},
		{name: "lowest-cost fails over to the next cheapest", body: chat("gpt-4o", ""), fail: "cheap", status: 200, upstream: "mid", attempts: "2", untried: "dear"},
		{name: "failover route without preferences", body: chat("gpt-4o-failover", ""), status: 200, upstream: "dear"},
		{name: "sort price replaces the route's strategy", body: chat("gpt-4o-failover", `{"sort":"price"}`), status: 200, upstream: "cheap"},
		{name: "only", body: chat("gpt-4o", `{"only":["dear"]}`), status: 200, upstream: "dear"},
		{name: "only by provider name", body: chat("gpt-4o", `{"only":["anthropic"]}`), status: 200, upstream: "dear"},
		{name: "ignore", body: chat("gpt-4o", `{"ignore":["cheap"]}`), status: 200, upstream: "mid"},
		{name: "order", body: chat("gpt-4o", `{"order":["dear","mid"]}`), status: 200, upstream: "dear"},
		{name: "allow_fallbacks false stays on order", body: chat("gpt-4o", `{"order":["cheap"],"allow_fallbacks":false}`), fail: "cheap",
			status: 502, untried: "mid"},
		// failover would put dear (weight 10) first: max_price drops it.
		{name: "max_price", body: chat("gpt-4o-failover", `{"max_price":{"prompt":3,"completion":8}}`), status: 200, upstream: "cheap"},
		{name: "max_price leaves nothing", body: chat("gpt-4o", `{"max_price":{"prompt":0.1}}`), status: 400,
			errCode: "no_upstream_matches_preferences", errMsg: "cheap (preferences: over max_price), dear (preferences: over max_price), mid (preferences: over max_price)"},
		{name: "header from an Anthropic client", path: "/v1/messages", body: messages, hdr: anthropicHdr(`{"only":["mid"]}`), status: 200, upstream: "mid"},
		{name: "malformed body field", body: chat("gpt-4o", `{"sort":"cheapest"}`), status: 400, errCode: "invalid_request", errMsg: "provider.sort"},
		{name: "malformed header, Anthropic shape", path: "/v1/messages", body: messages, hdr: anthropicHdr(`{"max_price":{"prompt":-1}}`), status: 400,
			errCode: "invalid_request_error", errMsg: "provider.max_price.prompt"},
		{name: "key without preferences", body: chat("gpt-4o", `{"sort":"price"}`), hdr: []string{"Authorization", "Bearer sk-e2e-strict-key"},
			status: 403, errCode: "preferences_not_allowed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.fail != "" {
				m := mocks[tt.fail]
				m.SetBehavior(mock.Behavior{ForceStatus: http.StatusInternalServerError})
				defer m.SetBehavior(mock.Behavior{CompletionTokens: 3})
			}
			before := 0
			if tt.untried != "" {
				before = seen[tt.untried].count()
			}
			path := tt.path
			if path == "" {
				path = "/v1/chat/completions"
			}
			res := e.post(t, path, tt.body, tt.hdr...)
			if res.status != tt.status {
				t.Fatalf("status %d, want %d: %s", res.status, tt.status, res.body)
			}
			if got := res.header.Get("X-Switchyard-Upstream"); tt.upstream != "" && got != tt.upstream {
				t.Errorf("served by %q, want %q", got, tt.upstream)
			}
			if got := res.header.Get("X-Switchyard-Attempts"); tt.attempts != "" && got != tt.attempts {
				t.Errorf("attempts %q, want %q", got, tt.attempts)
			}
			if tt.errCode != "" {
				code := gjson.GetBytes(res.body, "error.code").Str
				if strings.HasPrefix(path, "/v1/messages") {
					code = gjson.GetBytes(res.body, "error.type").Str
				}
				if msg := gjson.GetBytes(res.body, "error.message").Str; code != tt.errCode || !strings.Contains(msg, tt.errMsg) {
					t.Errorf("error %s, want %s with %q", res.body, tt.errCode, tt.errMsg)
				}
			}
			if tt.untried != "" && seen[tt.untried].count() != before {
				t.Errorf("%s was tried", tt.untried)
			}
		})
	}
	for name, s := range seen {
		s.mu.Lock()
		if s.header > 0 {
			t.Errorf("%s received X-Switchyard-Provider %d times", name, s.header)
		}
		for _, b := range s.bodies {
			if gjson.Get(b, "provider").Exists() {
				t.Errorf("%s received the provider field: %s", name, b)
			}
		}
		if len(s.bodies) == 0 {
			t.Errorf("%s received nothing: the check above proves nothing for it", name)
		}
		s.mu.Unlock()
	}
}
