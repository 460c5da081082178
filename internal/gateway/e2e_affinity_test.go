package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"switchyard/internal/affinity"
	"switchyard/internal/balancer"
	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/gateway"
	"switchyard/internal/mock"
	"switchyard/internal/proxy"
)

// End-to-end tests of session affinity
// (docs/routing.md#2-candidates-and-session-affinity): real loopback HTTP from
// the official SDKs or raw requests, through a served gateway, to mock
// upstreams. Where time matters the gateway runs on a clock.Fake; nothing
// sleeps. The upstream that served a request is read from
// X-Switchyard-Upstream, its routing decision from RecentDecisions by
// X-Request-Id.

// affEpoch is where the affinity tests' fake clocks start.
var affEpoch = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

// affChatBody is the chat request of the raw affinity requests (79 bytes).
const affChatBody = `{"model":"gpt-4o","messages":[{"role":"user","content":"continue the story"}]}`

// affSessionUUID is the session UUID of the Anthropic metadata.user_id cases.
const affSessionUUID = "0b9c6f3e-5d2a-4c1b-9e8f-7a6b5c4d3e2f"

// pool is a set of upstreams, each on its own mock, all in one tier with
// weight 1 unless the caller changes them.
type pool struct {
	names     []string
	upstreams []config.Upstream
	mocks     map[string]*mock.Server
}

// newPool starts one mock per name and describes an upstream of provider
// serving model at each.
func newPool(t testing.TB, provider, model string, names ...string) *pool {
	t.Helper()
	p := &pool{names: names, mocks: map[string]*mock.Server{}}
	for _, n := range names {
		srv, url := startMock(t, n, mock.Behavior{CompletionTokens: 2})
		p.mocks[n] = srv
		p.upstreams = append(p.upstreams, upstreamAt(n, provider, url, 0, model))
	}
	return p
}

// requests returns how many API requests each mock has received.
func (p *pool) requests() map[string]int64 {
	out := map[string]int64{}
	for n, m := range p.mocks {
		out[n] = m.Stats().Requests
	}
	return out
}

// turn is one answered request as the client saw it.
type turn struct {
	status    int
	upstream  string // X-Switchyard-Upstream
	attempts  string // X-Switchyard-Attempts
	requestID string // X-Request-Id
	body      string
}

// chatTurn posts affChatBody with the session in x-session-id (none when "").
func chatTurn(t testing.TB, e *env, session string) turn {
	t.Helper()
	var hdr []string
	if session != "" {
		hdr = []string{"x-session-id", session}
	}
	return turnOf(e.post(t, "/v1/chat/completions", affChatBody, hdr...))
}

func turnOf(r result) turn {
	return turn{
		status: r.status, upstream: r.header.Get("X-Switchyard-Upstream"), attempts: r.header.Get("X-Switchyard-Attempts"),
		requestID: r.header.Get("X-Request-Id"), body: string(r.body),
	}
}

// mustOK fails the test unless the turn was answered 200 by some upstream.
func (tr turn) mustOK(t testing.TB, what string) turn {
	t.Helper()
	if tr.status != http.StatusOK || tr.upstream == "" {
		t.Fatalf("%s: status %d from %q, want 200 from an upstream: %s", what, tr.status, tr.upstream, tr.body)
	}
	return tr
}

// decisionFor returns the routing decision recorded for a request.
func decisionFor(t testing.TB, e *env, requestID string) *balancer.Decision {
	t.Helper()
	if requestID == "" {
		t.Fatal("the response carries no X-Request-Id")
	}
	for _, d := range e.G.RecentDecisions(0) {
		if d.RequestID == requestID {
			return d
		}
	}
	t.Fatalf("no routing decision recorded for request %s", requestID)
	return nil
}

// wantAffinity checks a decision's affinity record; an empty field of want
// is not checked, except that want.Result "" requires no session at all.
func wantAffinity(t testing.TB, what string, d *balancer.Decision, want balancer.AffinityRecord) {
	t.Helper()
	got := d.Affinity
	if want.Result == "" {
		if got != (balancer.AffinityRecord{}) || d.Session != "" {
			t.Fatalf("%s: decision has session %q and affinity %+v, want none", what, d.Session, got)
		}
		return
	}
	if got.Result != want.Result || (want.Session != "" && (got.Session != want.Session || d.Session != want.Session)) ||
		(want.Source != "" && got.Source != want.Source) || (want.Bound != "" && got.Bound != want.Bound) ||
		(want.Reason != "" && got.Reason != want.Reason) {
		t.Fatalf("%s: affinity %+v (decision session %q), want %+v", what, got, d.Session, want)
	}
}

// boundTo fails the test unless the session has exactly one live binding,
// to upstream, and returns it.
func boundTo(t testing.TB, e *env, session, upstream string) affinity.Binding {
	t.Helper()
	bs := gateway.SessionBindings(e.G, context.Background(), session)
	if len(bs) != 1 || bs[0].Upstream != upstream {
		t.Fatalf("bindings of %q: %+v, want one to %s", session, bs, upstream)
	}
	return bs[0]
}

// TestAffinitySticksPerSource: 20 requests carrying the same session id,
// found by each extraction rule, over three equal upstreams (one tier,
// weight 1, weighted-random) all land on the upstream the first one picked;
// the control without a session spreads over them.
func TestAffinitySticksPerSource(t *testing.T) {
	ctx := context.Background()
	userID := "user_abc_account__session_" + affSessionUUID
	tests := []struct {
		name, provider, model string
		wantSession           string // "" for the control without a session
		wantSource            string
		// send makes request i and returns the response's headers.
		send func(t *testing.T, e *env, i int) http.Header
	}{
		{
			name: "header x-session-id (openai sdk)", provider: config.ProviderOpenAI, model: "gpt-4o",
			wantSession: "sess-header-1", wantSource: "header:x-session-id",
			send: func(t *testing.T, e *env, i int) http.Header {
				var raw *http.Response
				c := e.openAI(testKey)
				if _, err := c.Chat.Completions.New(ctx, chatParams("gpt-4o", fmt.Sprintf("turn %d", i)),
					option.WithHeader("x-session-id", "sess-header-1"), option.WithResponseInto(&raw)); err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				return raw.Header
			},
		},
		{
			name: "body prompt_cache_key (openai sdk)", provider: config.ProviderOpenAI, model: "gpt-4o",
			wantSession: "pck-42", wantSource: "body:prompt_cache_key",
			send: func(t *testing.T, e *env, i int) http.Header {
				var raw *http.Response
				p := chatParams("gpt-4o", fmt.Sprintf("turn %d", i))
				p.PromptCacheKey = openai.String("pck-42")
				c := e.openAI(testKey)
				if _, err := c.Chat.Completions.New(ctx, p, option.WithResponseInto(&raw)); err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				return raw.Header
			},
		},
		{
			name: "anthropic metadata.user_id (anthropic sdk)", provider: config.ProviderAnthropic, model: "claude-3-5-haiku",
			wantSession: affSessionUUID, wantSource: "body:metadata.user_id",
			send: func(t *testing.T, e *env, i int) http.Header {
				var raw *http.Response
				c := e.anthropic(testKey)
				msg, err := c.Messages.New(ctx, anthropic.MessageNewParams{
					Model: "claude-3-5-haiku", MaxTokens: 16,
					Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(fmt.Sprintf("turn %d", i)))},
					Metadata: anthropic.MetadataParam{UserID: anthropic.String(userID)},
				}, aoption.WithResponseInto(&raw))
				if err != nil {
					t.Fatalf("request %d: %v", i, err)
				}
				if len(msg.Content) == 0 || msg.Content[0].Text == "" {
					t.Fatalf("request %d: empty message %s", i, msg.RawJSON())
				}
				return raw.Header
			},
		},
		{
			name: "anthropic metadata.user_id (raw)", provider: config.ProviderAnthropic, model: "claude-3-5-haiku",
			wantSession: affSessionUUID, wantSource: "body:metadata.user_id",
			send: func(t *testing.T, e *env, i int) http.Header {
				body := fmt.Sprintf(`{"model":"claude-3-5-haiku","max_tokens":16,"metadata":{"user_id":%q},`+
					`"messages":[{"role":"user","content":"turn %d"}]}`, userID, i)
				return turnOf(e.post(t, "/v1/messages", body, "anthropic-version", "2023-06-01")).mustOK(t, "request "+strconv.Itoa(i)).header()
			},
		},
		{
			name: "trace header x-trace-id (raw)", provider: config.ProviderOpenAI, model: "gpt-4o",
			wantSession: "trace-7f3a", wantSource: "header:x-trace-id",
			send: func(t *testing.T, e *env, i int) http.Header {
				return turnOf(e.post(t, "/v1/chat/completions", affChatBody, "x-trace-id", "trace-7f3a")).mustOK(t, "request "+strconv.Itoa(i)).header()
			},
		},
		{
			name: "control: no session spreads", provider: config.ProviderOpenAI, model: "gpt-4o",
			send: func(t *testing.T, e *env, i int) http.Header {
				return turnOf(e.post(t, "/v1/chat/completions", affChatBody)).mustOK(t, "request "+strconv.Itoa(i)).header()
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newPool(t, tc.provider, tc.model, "up-a", "up-b", "up-c")
			e := startGateway(t, spec{upstreams: p.upstreams})
			const n = 20
			served := map[string]int{}
			first := ""
			for i := range n {
				h := tc.send(t, e, i)
				up := h.Get("X-Switchyard-Upstream")
				if !slices.Contains(p.names, up) {
					t.Fatalf("request %d: served by %q", i, up)
				}
				served[up]++
				d := decisionFor(t, e, h.Get("X-Request-Id"))
				what := "request " + strconv.Itoa(i)
				switch {
				case tc.wantSession == "":
					wantAffinity(t, what, d, balancer.AffinityRecord{})
				case i == 0:
					first = up
					wantAffinity(t, what, d, balancer.AffinityRecord{Session: tc.wantSession, Source: tc.wantSource, Result: balancer.AffinityMiss})
				default:
					wantAffinity(t, what, d, balancer.AffinityRecord{Session: tc.wantSession, Source: tc.wantSource, Bound: first, Result: balancer.AffinityHit})
				}
			}
			if tc.wantSession == "" {
				if len(served) < 2 {
					t.Fatalf("without a session %d requests all went to one upstream %v: the sticky cases prove nothing", n, served)
				}
				return
			}
			if served[first] != n {
				t.Fatalf("served %v, want all %d by %s", served, n, first)
			}
			if got := p.requests(); got[first] != n || got["up-a"]+got["up-b"]+got["up-c"] != n {
				t.Errorf("mock requests %v, want %d on %s only", got, n, first)
			}
			b := boundTo(t, e, tc.wantSession, first)
			if b.APIKey != "e2e" || b.Route != "*" {
				t.Errorf("binding key %+v, want key e2e on the default route *", b.Key)
			}
		})
	}
}

// header rebuilds the headers the sticky-source cases read.
func (tr turn) header() http.Header {
	h := http.Header{}
	h.Set("X-Switchyard-Upstream", tr.upstream)
	h.Set("X-Request-Id", tr.requestID)
	return h
}

// TestAffinitySpreadsSessionsAndKeepsTurns: the first turns of 300 distinct
// sessions spread over three equal upstreams within ±5 points of a third
// each (seeded: the gateway's seed is fixed and the requests are serial, so
// the draw is reproducible; at n = 300 one standard deviation is 2.7
// points), and every second turn lands where its session's first did.
func TestAffinitySpreadsSessionsAndKeepsTurns(t *testing.T) {
	p := newPool(t, config.ProviderOpenAI, "gpt-4o", "up-a", "up-b", "up-c")
	e := startGateway(t, spec{upstreams: p.upstreams})
	const sessions = 300
	session := func(i int) string { return fmt.Sprintf("conv-%03d", i) }
	first := make([]turn, sessions)
	count := map[string]int{}
	for i := range sessions {
		first[i] = chatTurn(t, e, session(i)).mustOK(t, "first turn of "+session(i))
		count[first[i].upstream]++
	}
	t.Logf("first turns per upstream: %v", count)
	for _, n := range p.names {
		share := 100 * float64(count[n]) / sessions
		if share < 100.0/3-5 || share > 100.0/3+5 {
			t.Errorf("%s got %d of %d first turns (%.1f%%), want 33.3%% ± 5 points; all: %v", n, count[n], sessions, share, count)
		}
	}
	second := make([]turn, sessions)
	for i := range sessions {
		second[i] = chatTurn(t, e, session(i)).mustOK(t, "second turn of "+session(i))
		if second[i].upstream != first[i].upstream {
			t.Errorf("second turn of %s served by %s, first by %s", session(i), second[i].upstream, first[i].upstream)
		}
	}
	byID := map[string]*balancer.Decision{}
	for _, d := range e.G.RecentDecisions(0) {
		byID[d.RequestID] = d
	}
	for i := range sessions {
		for k, tr := range []turn{first[i], second[i]} {
			d := byID[tr.requestID]
			want := balancer.AffinityRecord{Session: session(i), Source: "header:x-session-id", Result: balancer.AffinityMiss}
			if k == 1 {
				want.Result, want.Bound = balancer.AffinityHit, first[i].upstream
			}
			if d == nil {
				t.Fatalf("no decision for turn %d of %s", k+1, session(i))
			}
			wantAffinity(t, fmt.Sprintf("turn %d of %s", k+1, session(i)), d, want)
		}
	}
}

// TestAffinityBreakerFallthroughKeepsBinding: the session's upstream starts
// failing (ForceStatus 500). Until its breaker trips, each turn is a hit
// that fails over to another upstream with no client error; once it is
// open, each turn falls through (reason breaker_open) and is served
// elsewhere, without trying it. The binding is kept throughout, and when the
// upstream recovers within the TTL the session returns to it.
//
// Behaviour asserted, and why:
// docs/routing.md#2-candidates-and-session-affinity keeps the binding of an
// unavailable upstream ("falls through … without deleting the binding") so that
// the session returns to it — and to its warm prompt cache — once it recovers.
// Rebinding on the success of the fall-through or failover attempt (the
// rule "a successful response (re)binds the session", read literally) would move the
// session to whichever upstream stood in for the first turn of the outage,
// making "without deleting" a dead letter and sending a session away from its
// cache for a single 429 or full slot. So a success elsewhere while the session
// holds a live binding to an upstream that is only unavailable does not rebind
// (internal/proxy/exchange.go, rebinds); a miss, a migration, or a binding to
// an upstream that no longer serves the model still (re)binds on success.
func TestAffinityBreakerFallthroughKeepsBinding(t *testing.T) {
	tests := []struct {
		name      string
		threshold int // circuit.failure_threshold: the failing turns before it trips
	}{
		{"trips on the first failure", 1},
		{"trips on the third failure", 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fc := clock.NewFake(affEpoch)
			p := newPool(t, config.ProviderOpenAI, "gpt-4o", "up-a", "up-b", "up-c")
			e := startGateway(t, spec{clock: fc, upstreams: p.upstreams, edit: func(c *config.Config) {
				c.Circuit.FailureThreshold = tc.threshold
				c.Circuit.OpenDuration = time.Minute
			}})
			const s = "sess-breaker"
			home := chatTurn(t, e, s).mustOK(t, "first turn").upstream
			boundTo(t, e, s, home)

			p.mocks[home].SetBehavior(mock.Behavior{ForceStatus: http.StatusInternalServerError})
			turnNo := 1
			next := func() (turn, *balancer.Decision) {
				t.Helper()
				turnNo++
				tr := chatTurn(t, e, s).mustOK(t, "turn "+strconv.Itoa(turnNo))
				return tr, decisionFor(t, e, tr.requestID)
			}
			// The bound upstream is tried first and fails; the client does not notice.
			for range tc.threshold {
				tr, d := next()
				wantAffinity(t, "failing turn", d, balancer.AffinityRecord{Bound: home, Result: balancer.AffinityHit})
				if tr.upstream == home || tr.attempts != "2" {
					t.Fatalf("turn %d served by %s after %s attempts, want another upstream after 2", turnNo, tr.upstream, tr.attempts)
				}
				boundTo(t, e, s, home)
			}
			// Its breaker is open: the turns fall through and never reach it.
			before := p.mocks[home].Stats().Requests
			if want := int64(1 + tc.threshold); before != want {
				t.Fatalf("the failing upstream saw %d requests, want %d", before, want)
			}
			for range 4 {
				tr, d := next()
				wantAffinity(t, "turn during the outage", d, balancer.AffinityRecord{
					Session: s, Bound: home, Result: balancer.AffinityStandIn, Reason: balancer.FilterBreakerOpen,
				})
				if tr.upstream == home || tr.attempts != "1" {
					t.Fatalf("turn %d served by %s after %s attempts, want another upstream at once", turnNo, tr.upstream, tr.attempts)
				}
				boundTo(t, e, s, home)
			}
			if got := p.mocks[home].Stats().Requests; got != before {
				t.Fatalf("the open upstream saw %d more requests", got-before)
			}
			// It recovers; a minute later (open_duration, well within the
			// 5 m sliding TTL) the next turn is its half-open probe, which
			// closes the breaker, and the session is home again.
			p.mocks[home].SetBehavior(mock.Behavior{CompletionTokens: 2})
			fc.Advance(time.Minute)
			for range 3 {
				tr, d := next()
				wantAffinity(t, "turn after recovery", d, balancer.AffinityRecord{Bound: home, Result: balancer.AffinityHit})
				if tr.upstream != home || tr.attempts != "1" {
					t.Fatalf("turn %d after recovery served by %s after %s attempts, want %s at once", turnNo, tr.upstream, tr.attempts, home)
				}
			}
			boundTo(t, e, s, home)
		})
	}
}

// TestAffinityBindingKeptWhenNothingSucceeds: when the bound upstream and
// every alternative fail, the client gets the error, the binding stays, and
// the next turn after recovery is a hit on the same upstream.
func TestAffinityBindingKeptWhenNothingSucceeds(t *testing.T) {
	tests := []struct {
		name string
		fail mock.Behavior
	}{
		{"server errors", mock.Behavior{ForceStatus: http.StatusInternalServerError}},
		{"service unavailable", mock.Behavior{ForceStatus: http.StatusServiceUnavailable}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newPool(t, config.ProviderOpenAI, "gpt-4o", "up-a", "up-b", "up-c")
			e := startGateway(t, spec{upstreams: p.upstreams, edit: func(c *config.Config) {
				c.Circuit.FailureThreshold = 100 // keep every breaker closed
			}})
			const s = "sess-all-down"
			home := chatTurn(t, e, s).mustOK(t, "first turn").upstream
			for _, m := range p.mocks {
				m.SetBehavior(tc.fail)
			}
			tr := chatTurn(t, e, s)
			if tr.status < 500 || tr.attempts != "3" {
				t.Fatalf("with every upstream failing: status %d after %s attempts, want a 5xx after 3: %s", tr.status, tr.attempts, tr.body)
			}
			wantAffinity(t, "failed turn", decisionFor(t, e, tr.requestID), balancer.AffinityRecord{Bound: home, Result: balancer.AffinityHit})
			boundTo(t, e, s, home)
			for _, m := range p.mocks {
				m.SetBehavior(mock.Behavior{})
			}
			tr = chatTurn(t, e, s).mustOK(t, "turn after recovery")
			if tr.upstream != home {
				t.Fatalf("after recovery served by %s, want %s", tr.upstream, home)
			}
			wantAffinity(t, "turn after recovery", decisionFor(t, e, tr.requestID), balancer.AffinityRecord{Bound: home, Result: balancer.AffinityHit})
		})
	}
}

// TestAffinityTTLThroughGateway: on a fake clock, a binding survives gaps
// shorter than the sliding TTL, expires after an idle sliding TTL, and,
// however often used, expires at the absolute TTL; after expiry the next
// turn is a miss and the session is bound afresh.
func TestAffinityTTLThroughGateway(t *testing.T) {
	repeat := func(n int, d time.Duration) []time.Duration {
		out := make([]time.Duration, n)
		for i := range out {
			out[i] = d
		}
		return out
	}
	hits := func(n int, last string) []string {
		return append(slices.Repeat([]string{balancer.AffinityHit}, n), last)
	}
	tests := []struct {
		name string
		edit func(*config.Config)
		gaps []time.Duration // clock advance before each turn after the first
		want []string        // the affinity result of each of those turns
	}{
		{
			name: "idle just under the 5m sliding TTL keeps it, 5m idle loses it",
			gaps: []time.Duration{5*time.Minute - time.Second, 5 * time.Minute},
			want: []string{balancer.AffinityHit, balancer.AffinityMiss},
		},
		{
			name: "used every minute it expires at the 30m absolute TTL",
			gaps: repeat(30, time.Minute),
			want: hits(29, balancer.AffinityMiss),
		},
		{
			name: "per-route sliding_ttl 1m",
			edit: func(c *config.Config) {
				c.Routes = []config.Route{{Model: "gpt-4o", RouteSettings: c.Defaults, Affinity: config.RouteAffinity{SlidingTTL: time.Minute}}}
			},
			gaps: []time.Duration{59 * time.Second, time.Minute},
			want: []string{balancer.AffinityHit, balancer.AffinityMiss},
		},
		{
			name: "per-route absolute_ttl 10m",
			edit: func(c *config.Config) {
				c.Routes = []config.Route{{Model: "gpt-4o", RouteSettings: c.Defaults, Affinity: config.RouteAffinity{AbsoluteTTL: 10 * time.Minute}}}
			},
			gaps: repeat(5, 2*time.Minute),
			want: hits(4, balancer.AffinityMiss),
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fc := clock.NewFake(affEpoch)
			p := newPool(t, config.ProviderOpenAI, "gpt-4o", "up-a", "up-b", "up-c")
			e := startGateway(t, spec{clock: fc, upstreams: p.upstreams, edit: tc.edit})
			const s = "sess-ttl"
			home := chatTurn(t, e, s).mustOK(t, "first turn").upstream
			created := boundTo(t, e, s, home).CreatedAt
			for i, gap := range tc.gaps {
				fc.Advance(gap)
				at := fc.Now().Sub(affEpoch)
				what := fmt.Sprintf("turn at +%s", at)
				if tc.want[i] == balancer.AffinityMiss {
					if bs := gateway.SessionBindings(e.G, context.Background(), s); len(bs) != 0 {
						t.Fatalf("%s: bindings %+v listed after expiry", what, bs)
					}
				}
				tr := chatTurn(t, e, s).mustOK(t, what)
				d := decisionFor(t, e, tr.requestID)
				switch tc.want[i] {
				case balancer.AffinityHit:
					wantAffinity(t, what, d, balancer.AffinityRecord{Bound: home, Result: balancer.AffinityHit})
					if tr.upstream != home {
						t.Fatalf("%s: served by %s, want %s", what, tr.upstream, home)
					}
					b := boundTo(t, e, s, home)
					if !b.CreatedAt.Equal(created) || !b.LastUsed.Equal(fc.Now()) {
						t.Fatalf("%s: binding created %s last used %s, want created %s and used now", what, b.CreatedAt, b.LastUsed, created)
					}
				default:
					wantAffinity(t, what, d, balancer.AffinityRecord{Session: s, Result: balancer.AffinityMiss})
					if d.Affinity.Bound != "" {
						t.Fatalf("%s: a miss names bound upstream %q", what, d.Affinity.Bound)
					}
					if b := boundTo(t, e, s, tr.upstream); !b.CreatedAt.Equal(fc.Now()) {
						t.Fatalf("%s: the new binding was created at %s, want now (%s)", what, b.CreatedAt, fc.Now())
					}
				}
			}
		})
	}
}

// TestAffinityMigration: a session bound to a tier-1 upstream while tier 0
// was down (503 → breaker open). Tier 0 recovers: after open_duration its
// breaker is half-open and the next request can be its probe. Whether the
// session moves depends on the tier-1 upstream's affinity_migration.
func TestAffinityMigration(t *testing.T) {
	bodyLen := int64(len(affChatBody))
	tests := []struct {
		name      string
		migration config.AffinityMigration
		migrates  bool
	}{
		{"never stays", config.AffinityMigration{Mode: affinity.MigrateNever}, false},
		{"cross_tier migrates", config.AffinityMigration{Mode: affinity.MigrateCrossTier}, true},
		{"cross_tier with max_content_length below the body stays", config.AffinityMigration{Mode: affinity.MigrateCrossTier, MaxContentLength: bodyLen / 2}, false},
		{"cross_tier with max_content_length equal to the body stays", config.AffinityMigration{Mode: affinity.MigrateCrossTier, MaxContentLength: bodyLen}, false},
		{"cross_tier with max_content_length above the body migrates", config.AffinityMigration{Mode: affinity.MigrateCrossTier, MaxContentLength: bodyLen + 1}, true},
		{"always migrates", config.AffinityMigration{Mode: affinity.MigrateAlways}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fc := clock.NewFake(affEpoch)
			primary, primaryURL := startMock(t, "primary", mock.Behavior{ForceStatus: http.StatusServiceUnavailable})
			backup, backupURL := startMock(t, "backup", mock.Behavior{})
			b := upstreamAt("backup", config.ProviderOpenAI, backupURL, 1, "gpt-4o")
			b.AffinityMigration = tc.migration
			e := startGateway(t, spec{
				clock:     fc,
				upstreams: []config.Upstream{upstreamAt("primary", config.ProviderOpenAI, primaryURL, 0, "gpt-4o"), b},
				edit: func(c *config.Config) {
					c.Circuit.FailureThreshold = 1
					c.Circuit.OpenDuration = time.Minute
				},
			})
			const s = "sess-migrate"
			// Tier 0 fails, its breaker opens, tier 1 serves and is bound.
			tr := chatTurn(t, e, s).mustOK(t, "turn while tier 0 is down")
			if tr.upstream != "backup" || tr.attempts != "2" {
				t.Fatalf("served by %s after %s attempts, want backup after 2", tr.upstream, tr.attempts)
			}
			wantAffinity(t, "turn while tier 0 is down", decisionFor(t, e, tr.requestID), balancer.AffinityRecord{Session: s, Result: balancer.AffinityMiss})
			boundTo(t, e, s, "backup")
			tr = chatTurn(t, e, s).mustOK(t, "turn while tier 0 is open")
			if tr.upstream != "backup" || tr.attempts != "1" {
				t.Fatalf("served by %s after %s attempts while tier 0 is open, want backup at once", tr.upstream, tr.attempts)
			}
			// Nothing better is available: the binding holds (always re-selects
			// even so, and normal selection finds only tier 1).
			open := balancer.AffinityHit
			if tc.migration.Mode == affinity.MigrateAlways {
				open = balancer.AffinityMigrated
			}
			wantAffinity(t, "turn while tier 0 is open", decisionFor(t, e, tr.requestID), balancer.AffinityRecord{Bound: "backup", Result: open})

			primary.SetBehavior(mock.Behavior{})
			fc.Advance(time.Minute) // the open period is over: tier 0 is half-open, its probe due
			want, result := "backup", balancer.AffinityHit
			if tc.migrates {
				want, result = "primary", balancer.AffinityMigrated
			}
			for i := range 2 {
				what := fmt.Sprintf("turn %d after tier 0 recovered", i+1)
				tr = chatTurn(t, e, s).mustOK(t, what)
				if tr.upstream != want {
					t.Fatalf("%s: served by %s, want %s", what, tr.upstream, want)
				}
				d := decisionFor(t, e, tr.requestID)
				switch {
				case i == 0 || !tc.migrates:
					wantAffinity(t, what, d, balancer.AffinityRecord{Bound: "backup", Result: result})
				default: // the migration rebound it to tier 0, whose own mode (never) keeps it
					wantAffinity(t, what, d, balancer.AffinityRecord{Bound: "primary", Result: balancer.AffinityHit})
				}
				boundTo(t, e, s, want)
			}
			wantPrimary, wantBackup := int64(0), int64(4)
			if tc.migrates {
				wantPrimary, wantBackup = 2, 2
			}
			if n := primary.Stats().ByStatus[http.StatusOK]; n != wantPrimary {
				t.Errorf("tier 0 answered %d requests with 200 after recovering, want %d", n, wantPrimary)
			}
			if n := backup.Stats().Requests; n != wantBackup {
				t.Errorf("tier 1 saw %d requests, want %d", n, wantBackup)
			}
		})
	}
}

// TestAffinityDisabled: a route's affinity.enabled overrides the global
// affinity.enabled. Where it is off, a session id is not even extracted
// (the decision has none), nothing is bound and the same session spreads.
func TestAffinityDisabled(t *testing.T) {
	off, on := false, true
	route := func(enabled *bool) func(*config.Config) {
		return func(c *config.Config) {
			c.Routes = []config.Route{{Model: "gpt-4o", RouteSettings: c.Defaults, Affinity: config.RouteAffinity{Enabled: enabled}}}
		}
	}
	tests := []struct {
		name    string
		edit    func(*config.Config)
		enabled bool
	}{
		{"default on", nil, true},
		{"route affinity enabled false", route(&off), false},
		{"global affinity enabled false", func(c *config.Config) { c.Affinity.Enabled = false }, false},
		{"global off, route on", func(c *config.Config) { c.Affinity.Enabled = false; route(&on)(c) }, true},
		{"global off, route inherits", func(c *config.Config) { c.Affinity.Enabled = false; route(nil)(c) }, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newPool(t, config.ProviderOpenAI, "gpt-4o", "up-a", "up-b", "up-c")
			e := startGateway(t, spec{upstreams: p.upstreams, edit: tc.edit})
			const s, n = "sess-switch", 20
			served := map[string]int{}
			for i := range n {
				tr := chatTurn(t, e, s).mustOK(t, "request "+strconv.Itoa(i))
				served[tr.upstream]++
				d := decisionFor(t, e, tr.requestID)
				if !tc.enabled {
					wantAffinity(t, "request "+strconv.Itoa(i), d, balancer.AffinityRecord{})
				} else if d.Affinity.Session != s || d.Session != s {
					t.Fatalf("request %d: decision session %q affinity %+v, want session %s", i, d.Session, d.Affinity, s)
				}
			}
			bindings := gateway.SessionBindings(e.G, context.Background(), s)
			if tc.enabled {
				if len(served) != 1 || len(bindings) != 1 {
					t.Fatalf("affinity on: served %v, bindings %+v; want one upstream and one binding", served, bindings)
				}
				return
			}
			if len(bindings) != 0 {
				t.Errorf("affinity off: bindings %+v", bindings)
			}
			if len(served) < 2 {
				t.Errorf("affinity off: all %d requests of one session went to %v", n, served)
			}
		})
	}
}

// TestAffinityForgetSession: SessionBindings lists a session's bindings per
// (key name, route, session) with their upstream; ForgetSession deletes
// them all, and each key's next request is a miss that binds afresh.
func TestAffinityForgetSession(t *testing.T) {
	const otherKey = "sk-e2e-other-key"
	tests := []struct {
		name   string
		routes []string // routes[].model configured
		route  string   // the binding's Route
	}{
		{"default route", nil, "*"},
		{"glob route", []string{"gpt-4o*"}, "gpt-4o*"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := newPool(t, config.ProviderOpenAI, "gpt-4o*", "up-a", "up-b", "up-c")
			k1, k2 := config.DefaultKey(), config.DefaultKey()
			k1.Name, k1.Key = "e2e", testKey
			k2.Name, k2.Key = "other", otherKey
			e := startGateway(t, spec{upstreams: p.upstreams, keys: []config.Key{k1, k2}, edit: func(c *config.Config) {
				for _, m := range tc.routes {
					c.Routes = append(c.Routes, config.Route{Model: m, RouteSettings: c.Defaults})
				}
			}})
			body := strings.Replace(affChatBody, `"gpt-4o"`, `"gpt-4o-mini"`, 1)
			send := func(key string) turn {
				t.Helper()
				r := rawRequest(t, http.MethodPost, e.URL+"/v1/chat/completions", strings.NewReader(body),
					"Authorization", "Bearer "+key, "x-session-id", "sess-forget")
				return turnOf(r).mustOK(t, "request")
			}
			t1, t2 := send(testKey), send(otherKey)
			bs := gateway.SessionBindings(e.G, context.Background(), "sess-forget")
			want := []affinity.Key{
				{APIKey: "e2e", Route: tc.route, Session: "sess-forget"},
				{APIKey: "other", Route: tc.route, Session: "sess-forget"},
			}
			if len(bs) != 2 || bs[0].Key != want[0] || bs[1].Key != want[1] ||
				bs[0].Upstream != t1.upstream || bs[1].Upstream != t2.upstream {
				t.Fatalf("bindings %+v, want %v bound to %s and %s", bs, want, t1.upstream, t2.upstream)
			}
			if len(gateway.SessionBindings(e.G, context.Background(), "sess-other")) != 0 {
				t.Fatal("an unknown session has bindings")
			}
			if n := gateway.ForgetSession(e.G, context.Background(), "sess-forget"); n != 2 {
				t.Fatalf("ForgetSession removed %d bindings, want 2", n)
			}
			if bs := gateway.SessionBindings(e.G, context.Background(), "sess-forget"); len(bs) != 0 {
				t.Fatalf("bindings after ForgetSession: %+v", bs)
			}
			if n := gateway.ForgetSession(e.G, context.Background(), "sess-forget"); n != 0 {
				t.Fatalf("a second ForgetSession removed %d", n)
			}
			for _, key := range []string{testKey, otherKey} {
				tr := send(key)
				wantAffinity(t, "request after ForgetSession", decisionFor(t, e, tr.requestID),
					balancer.AffinityRecord{Session: "sess-forget", Result: balancer.AffinityMiss})
			}
			if bs := gateway.SessionBindings(e.G, context.Background(), "sess-forget"); len(bs) != 2 {
				t.Fatalf("the requests after ForgetSession bound %d times, want 2: %+v", len(bs), bs)
			}
		})
	}
}

// TestAffinityExplainPeeks: Explain for a bound session shows the binding
// as a hit on its upstream, without touching it: its last use does not
// move, so the sliding TTL still runs from the last real request, and no
// decision is recorded as traffic.
func TestAffinityExplainPeeks(t *testing.T) {
	tests := []struct {
		name    string
		session string
		want    balancer.AffinityRecord // Bound "home" stands for the bound upstream
	}{
		{"bound session", "sess-explain", balancer.AffinityRecord{Session: "sess-explain", Source: "explain", Bound: "home", Result: balancer.AffinityHit}},
		{"unknown session", "sess-unknown", balancer.AffinityRecord{Session: "sess-unknown", Source: "explain", Result: balancer.AffinityMiss}},
	}
	fc := clock.NewFake(affEpoch)
	p := newPool(t, config.ProviderOpenAI, "gpt-4o", "up-a", "up-b", "up-c")
	e := startGateway(t, spec{clock: fc, upstreams: p.upstreams})
	home := chatTurn(t, e, "sess-explain").mustOK(t, "first turn").upstream
	before := boundTo(t, e, "sess-explain", home)
	fc.Advance(time.Minute)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			recorded := len(e.G.RecentDecisions(0))
			for range 3 {
				d, err := e.G.Explain(context.Background(), proxy.ExplainRequest{Model: "gpt-4o", Key: "e2e", Session: tc.session})
				if err != nil {
					t.Fatal(err)
				}
				want := tc.want
				if want.Bound == "home" {
					want.Bound = home
					if d.Chosen != home {
						t.Errorf("explain chose %s, want the bound %s", d.Chosen, home)
					}
				}
				if d.Affinity != want || d.Session != tc.session {
					t.Fatalf("explain: session %q affinity %+v, want %+v", d.Session, d.Affinity, want)
				}
			}
			if after := boundTo(t, e, "sess-explain", home); after != before {
				t.Fatalf("explain changed the binding: %+v, was %+v", after, before)
			}
			if bs := gateway.SessionBindings(e.G, context.Background(), "sess-unknown"); len(bs) != 0 {
				t.Fatalf("explain bound an unknown session: %+v", bs)
			}
			if n := len(e.G.RecentDecisions(0)); n != recorded {
				t.Fatalf("explain recorded %d decisions as traffic", n-recorded)
			}
		})
	}
	// Explain did not slide the TTL: 5 m after the first turn it has expired.
	fc.Advance(4 * time.Minute)
	tr := chatTurn(t, e, "sess-explain").mustOK(t, "turn 5m after the first")
	wantAffinity(t, "turn 5m after the first", decisionFor(t, e, tr.requestID),
		balancer.AffinityRecord{Session: "sess-explain", Result: balancer.AffinityMiss})
}

// BenchmarkProxyChatWithSession: BenchmarkProxyChat with an x-session-id on
// every request over three upstreams, so each request pays for extraction,
// the sticky-table lookup and the rebind. serial uses one session (all
// hits); parallel gives each goroutine its own.
func BenchmarkProxyChatWithSession(b *testing.B) {
	p := newPool(b, config.ProviderOpenAI, "gpt-4o", "bench-a", "bench-b", "bench-c")
	e := startGateway(b, spec{upstreams: p.upstreams})
	benchChat(b, e.URL+"/v1/chat/completions", testKey, func(worker int64) string {
		return "bench-session-" + strconv.FormatInt(worker, 10)
	})
}

// TestAffinityStandIn (docs/routing.md#2-candidates-and-session-affinity): a
// session's home answers 503 from turn 6 on; turns 6–15 all succeed and all go
// to one stand-in (the upstream that first served it), not scattered over the
// other three. When the home recovers (its breaker's open_duration passes), the
// next turn goes home with fail_back: true and stays on the stand-in with
// fail_back: false.
func TestAffinityStandIn(t *testing.T) {
	for _, failBack := range []bool{true, false} {
		t.Run("fail_back "+strconv.FormatBool(failBack), func(t *testing.T) {
			fc := clock.NewFake(affEpoch)
			p := newPool(t, config.ProviderOpenAI, "gpt-4o", "up-a", "up-b", "up-c", "up-d")
			e := startGateway(t, spec{clock: fc, upstreams: p.upstreams, edit: func(c *config.Config) {
				c.Circuit.FailureThreshold = 3
				c.Circuit.OpenDuration = time.Minute
				c.Affinity.FailBack = failBack
			}})
			const s = "sess-stand-in"
			home := chatTurn(t, e, s).mustOK(t, "turn 1").upstream
			for i := 2; i <= 5; i++ {
				if up := chatTurn(t, e, s).mustOK(t, "turn "+strconv.Itoa(i)).upstream; up != home {
					t.Fatalf("turn %d on %s, want its home %s", i, up, home)
				}
			}
			p.mocks[home].SetBehavior(mock.Behavior{ForceStatus: http.StatusServiceUnavailable})
			standIn := ""
			for i := 6; i <= 15; i++ {
				tr := chatTurn(t, e, s).mustOK(t, "turn "+strconv.Itoa(i))
				if standIn == "" {
					standIn = tr.upstream
				}
				if tr.upstream == home || tr.upstream != standIn {
					t.Fatalf("turn %d on %s, want every turn of the outage on one stand-in (%s)", i, tr.upstream, standIn)
				}
				d := decisionFor(t, e, tr.requestID)
				if failBack && d.Affinity.Bound != home {
					t.Fatalf("turn %d: decision bound to %q, want the home %s kept", i, d.Affinity.Bound, home)
				}
			}
			if failBack {
				b := boundTo(t, e, s, home)
				if b.StandIn != standIn {
					t.Fatalf("binding %+v, want home %s with stand-in %s", b, home, standIn)
				}
			} else {
				boundTo(t, e, s, standIn)
			}
			// The home recovers; a minute later its breaker lets a request through.
			p.mocks[home].SetBehavior(mock.Behavior{CompletionTokens: 2})
			fc.Advance(time.Minute)
			want := home
			if !failBack {
				want = standIn
			}
			for i := 16; i <= 18; i++ {
				if up := chatTurn(t, e, s).mustOK(t, "turn "+strconv.Itoa(i)).upstream; up != want {
					t.Fatalf("turn %d after the home recovered on %s, want %s", i, up, want)
				}
			}
			b := boundTo(t, e, s, want)
			if b.StandIn != "" {
				t.Fatalf("binding %+v after the session settled, want no stand-in", b)
			}
		})
	}
}
