package proxy

import (
	"bytes"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"switchyard/internal/balancer"
	"switchyard/internal/benchutil"
	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/health"
	"switchyard/internal/state"
)

func ptr[T any](v T) *T { return &v }

// TestRuleConditions evaluates one rule of each condition, and all of them
// together, against requests that meet it and requests that do not.
func TestRuleConditions(t *testing.T) {
	long := `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", 400) + `"}]}` // ≈ 110 tokens
	const short = `{"model":"m","messages":[{"role":"user","content":"hi"}]}`
	const tools = `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[{"type":"function","function":{"name":"f"}}]}`
	const noTools = `{"model":"m","messages":[{"role":"user","content":"hi"}],"tools":[]}`
	const chatImage = `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"image"},{"type":"image_url","image_url":{"url":"https://x/y.png"}}]}]}`
	const anthropicImage = `{"model":"m","messages":[{"role":"user","content":[{"type":"image","source":{"type":"base64","media_type":"image/png","data":"AA"}}]}]}`
	const responsesImage = `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":"https://x/y.png"}]}]}`
	const geminiImage = `{"contents":[{"role":"user","parts":[{"inlineData":{"mimeType":"image/png","data":"AA"}}]}]}`
	const geminiPDF = `{"contents":[{"role":"user","parts":[{"inlineData":{"mimeType":"application/pdf","data":"AA"}}]}]}`
	const textWord = `{"model":"m","messages":[{"role":"user","content":"the \"type\":\"image\" of it"}]}`
	const anthropicUser = `{"model":"m","metadata":{"user_id":"team-a-42"},"messages":[]}`
	const openAIUser = `{"model":"m","user":"team-a-7","messages":[]}`

	type req struct {
		body   string
		hdr    http.Header
		key    string
		tags   []string
		stream bool
	}
	tests := []struct {
		name string
		when config.RuleWhen
		req  req
		want bool
	}{
		{"no condition", config.RuleWhen{}, req{body: short}, true},
		{"header glob", config.RuleWhen{Header: map[string]string{"x-team": "research*"}}, req{body: short, hdr: http.Header{"X-Team": {"research-nlp"}}}, true},
		{"header name any case", config.RuleWhen{Header: map[string]string{"X-TEAM": "research"}}, req{body: short, hdr: http.Header{"X-Team": {"research"}}}, true},
		{"header value differs", config.RuleWhen{Header: map[string]string{"x-team": "research*"}}, req{body: short, hdr: http.Header{"X-Team": {"ops"}}}, false},
		{"header absent", config.RuleWhen{Header: map[string]string{"x-team": "*"}}, req{body: short}, false},
		{"header second value", config.RuleWhen{Header: map[string]string{"x-team": "ops"}}, req{body: short, hdr: http.Header{"X-Team": {"research", "ops"}}}, true},
		{"two headers, one missing", config.RuleWhen{Header: map[string]string{"x-team": "*", "x-env": "prod"}}, req{body: short, hdr: http.Header{"X-Team": {"a"}}}, false},
		{"min tokens met", config.RuleWhen{MinInputTokens: 100}, req{body: long}, true},
		{"min tokens not met", config.RuleWhen{MinInputTokens: 100}, req{body: short}, false},
		{"max tokens met", config.RuleWhen{MaxInputTokens: 100}, req{body: short}, true},
		{"max tokens exceeded", config.RuleWhen{MaxInputTokens: 100}, req{body: long}, false},
		{"key glob", config.RuleWhen{Key: []string{"svc-*", "batch-*"}}, req{body: short, key: "batch-7"}, true},
		{"key glob misses", config.RuleWhen{Key: []string{"svc-*", "batch-*"}}, req{body: short, key: "web"}, false},
		{"tags", config.RuleWhen{Tags: []string{"batch"}}, req{body: short, tags: []string{"eu", "batch"}}, true},
		{"tags miss", config.RuleWhen{Tags: []string{"batch"}}, req{body: short, tags: []string{"eu"}}, false},
		{"stream true", config.RuleWhen{Stream: ptr(true)}, req{body: short, stream: true}, true},
		{"stream false, streaming", config.RuleWhen{Stream: ptr(false)}, req{body: short, stream: true}, false},
		{"tools true", config.RuleWhen{Tools: ptr(true)}, req{body: tools}, true},
		{"tools true, none", config.RuleWhen{Tools: ptr(true)}, req{body: short}, false},
		{"tools true, empty list", config.RuleWhen{Tools: ptr(true)}, req{body: noTools}, false},
		{"tools false", config.RuleWhen{Tools: ptr(false)}, req{body: short}, true},
		{"images, chat", config.RuleWhen{Images: ptr(true)}, req{body: chatImage}, true},
		{"images, anthropic", config.RuleWhen{Images: ptr(true)}, req{body: anthropicImage}, true},
		{"images, responses", config.RuleWhen{Images: ptr(true)}, req{body: responsesImage}, true},
		{"images, gemini", config.RuleWhen{Images: ptr(true)}, req{body: geminiImage}, true},
		{"images, gemini pdf", config.RuleWhen{Images: ptr(true)}, req{body: geminiPDF}, false},
		{"images, the word in text", config.RuleWhen{Images: ptr(true)}, req{body: textWord}, false},
		{"images false", config.RuleWhen{Images: ptr(false)}, req{body: chatImage}, false},
		{"metadata.user_id", config.RuleWhen{Metadata: config.RuleMetadata{UserID: "team-a-*"}}, req{body: anthropicUser}, true},
		{"OpenAI user", config.RuleWhen{Metadata: config.RuleMetadata{UserID: "team-a-*"}}, req{body: openAIUser}, true},
		{"no user id", config.RuleWhen{Metadata: config.RuleMetadata{UserID: "*"}}, req{body: short}, false},
		{"all of them", config.RuleWhen{Header: map[string]string{"x-team": "r*"}, MaxInputTokens: 100, Key: []string{"k*"}, Tags: []string{"t"},
			Stream: ptr(false), Tools: ptr(true), Metadata: config.RuleMetadata{UserID: "u"}},
			req{body: `{"model":"m","user":"u","tools":[{}],"messages":[]}`, hdr: http.Header{"X-Team": {"r1"}}, key: "k1", tags: []string{"t"}}, true},
		{"all but one", config.RuleWhen{Header: map[string]string{"x-team": "r*"}, MaxInputTokens: 100, Key: []string{"k*"}, Tags: []string{"t"},
			Stream: ptr(false), Tools: ptr(true), Metadata: config.RuleMetadata{UserID: "u"}},
			req{body: `{"model":"m","user":"v","tools":[{}],"messages":[]}`, hdr: http.Header{"X-Team": {"r1"}}, key: "k1", tags: []string{"t"}}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rules, err := compileRules(config.Route{Model: "m", Rules: []config.Rule{{When: tt.when, Upstreams: []string{"u"}}}}, 1, balancer.Options{})
			if err != nil {
				t.Fatal(err)
			}
			hr := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
			for k, v := range tt.req.hdr {
				hr.Header[k] = v
			}
			q := &request{r: hr, body: []byte(tt.req.body), stream: tt.req.stream,
				key: &clientKey{cfg: config.Key{Name: cmpOr(tt.req.key, "k"), Tags: tt.req.tags}}}
			if got := q.matchRule(rules, false) != nil; got != tt.want {
				t.Errorf("holds = %v, want %v", got, tt.want)
			}
		})
	}
}

func cmpOr(s, fallback string) string {
	if s == "" {
		return fallback
	}
	return s
}

// TestRuleOrderAndActions: the first rule that holds applies; a re-routing
// rule is passed over on a fallback model's route; priority overrides a
// tier by upstream or provider name; a strategy action plans with its own
// balancer.
func TestRuleOrderAndActions(t *testing.T) {
	r := config.Route{Model: "m", Rules: []config.Rule{
		{When: config.RuleWhen{Key: []string{"a"}}, Model: "other"},
		{When: config.RuleWhen{Key: []string{"a", "b"}}, Exclude: []string{"u1"}, Priority: map[string]int{"u2": 0, "anthropic": 7}, Strategy: "failover"},
		{Upstreams: []string{"u3"}},
	}}
	rules, err := compileRules(r, 1, balancer.Options{Now: clock.Real{}.Now})
	if err != nil {
		t.Fatal(err)
	}
	q := func(key string) *request {
		return &request{r: httptest.NewRequest(http.MethodPost, "/", nil), body: []byte(`{}`), key: &clientKey{cfg: config.Key{Name: key}}}
	}
	for _, tt := range []struct {
		key       string
		noReroute bool
		want      string
	}{
		{"a", false, "routes[m].rules[0]"},
		{"a", true, "routes[m].rules[1]"},
		{"b", false, "routes[m].rules[1]"},
		{"c", false, "routes[m].rules[2]"},
	} {
		if got := q(tt.key).matchRule(rules, tt.noReroute); got == nil || got.ref != tt.want {
			t.Errorf("key %s (noReroute %v): %v, want %s", tt.key, tt.noReroute, got, tt.want)
		}
	}
	cands := []balancer.Candidate{{Name: "u1", Priority: 3}, {Name: "u2", Priority: 3}, {Name: "u4", Priority: 1, Provider: "anthropic"}}
	var req balancer.Request
	route, _ := balancer.New(balancer.Options{Now: clock.Real{}.Now})
	if bal := rules[1].apply(&req, cands, route); bal == route || bal.Strategy() != "failover" {
		t.Errorf("strategy action planned with %v", bal.Strategy())
	}
	if req.Rule == nil || req.Rule.Ref != "routes[m].rules[1]" || len(req.Rule.Exclude) != 1 {
		t.Errorf("rule filter %+v", req.Rule)
	}
	if cands[0].Priority != 3 || cands[1].Priority != 0 || cands[2].Priority != 7 {
		t.Errorf("tiers %d %d %d, want 3 0 7", cands[0].Priority, cands[1].Priority, cands[2].Priority)
	}
}

// fiveRules are five rules of which only the last holds for benchRulesBody
// from key "k" with X-Team: research: each earlier one fails on its last
// condition, so that every condition is evaluated.
func fiveRules() []config.Rule {
	return []config.Rule{
		{When: config.RuleWhen{Key: []string{"batch-*"}}, Strategy: "lowest-cost"},
		{When: config.RuleWhen{MinInputTokens: 150000}, Exclude: []string{"u0"}},
		{When: config.RuleWhen{Header: map[string]string{"x-team": "ops*"}}, Upstreams: []string{"u1"}},
		{When: config.RuleWhen{Header: map[string]string{"x-team": "research*"}, Tools: ptr(true)}, Upstreams: []string{"u2"}},
		{When: config.RuleWhen{Header: map[string]string{"x-team": "research*"}, Key: []string{"k*"}, Stream: ptr(false)}, Exclude: []string{"u3"}},
	}
}

const benchRulesBody = `{"model":"gpt-4o","messages":[{"role":"user","content":"Hello, how are you today?"}],"max_tokens":64}`

// BenchmarkRules measures finding the rule that applies and applying it,
// for a route without rules and one with five whose last holds (the
// fourth reads the body for tools).
func BenchmarkRules(b *testing.B) {
	for _, c := range []struct {
		name  string
		rules []config.Rule
	}{{"none", nil}, {"five-rules", fiveRules()}} {
		b.Run(c.name, func(b *testing.B) {
			rules, err := compileRules(config.Route{Model: "gpt-4o", Rules: c.rules}, 1, balancer.Options{Now: clock.Real{}.Now})
			if err != nil {
				b.Fatal(err)
			}
			rt := &route{rules: rules}
			hr := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
			hr.Header.Set("X-Team", "research")
			cands := make([]balancer.Candidate, 4)
			for i := range cands {
				cands[i].Name = "u" + strconv.Itoa(i)
			}
			x := &exchange{request: request{r: hr, body: []byte(benchRulesBody), key: &clientKey{cfg: config.Key{Name: "k"}}}}
			b.ReportAllocs()
			for b.Loop() {
				x.ruled, x.rule, x.rerouted, x.facts = nil, nil, nil, 0
				var req balancer.Request
				if len(rt.rules) > 0 {
					if _, err := x.applyRules(rt); err != nil {
						b.Fatal(err)
					}
				}
				if ru := x.ruleFor(rt); ru != nil {
					ru.apply(&req, cands, nil)
				}
				if c.rules != nil && req.Rule.Ref != "routes[gpt-4o].rules[4]" {
					b.Fatalf("rule %v", req.Rule)
				}
			}
		})
	}
}

// BenchmarkServeHTTPRules is BenchmarkServeHTTP/10-upstreams on a route
// with fiveRules, the request meeting the last.
func BenchmarkServeHTTPRules(b *testing.B) {
	var ups []config.Upstream
	for i := range 10 {
		ups = append(ups, upstreamCfg("u"+strconv.Itoa(i), config.ProviderOpenAI, "http://upstream.invalid/v1", "gpt-4o"))
	}
	d := config.Default()
	r := config.Route{Model: "gpt-4o", RouteSettings: d.Defaults, Rules: fiveRules()}
	cat, err := NewCatalog(CatalogInput{Upstreams: ups, Keys: []config.Key{{Name: "k", Key: testKey}}, Routes: []config.Route{r},
		Defaults: d.Defaults, Affinity: d.Affinity, Seed: 1, Now: clock.Real{}.Now})
	if err != nil {
		b.Fatal(err)
	}
	srv := New(Options{Clock: clock.Real{}, State: state.NewLocal(state.LocalOptions{Clock: clock.Real{}, Breakers: health.NewBreakers(d.Circuit, clock.Real{})}),
		Transport: cannedTransport{body: []byte(`{"id":"chatcmpl-1","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hello!"},"finish_reason":"stop"}],"usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}`)},
		Logs:      discardLogs{}}, cat)
	body := []byte(benchRulesBody)
	b.ReportAllocs()
	cpu := benchutil.CPUNow()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", bytes.NewReader(body))
		req.Header.Set("Authorization", "Bearer "+testKey)
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Team", "research")
		w := httptest.NewRecorder()
		srv.ServeHTTP(w, req)
		if w.Code != 200 || w.Header().Get("X-Switchyard-Upstream") == "u3" {
			b.Fatalf("status %d from %s: %s", w.Code, w.Header().Get("X-Switchyard-Upstream"), w.Body)
		}
	}
	benchutil.ReportCPU(b, cpu)
}
