package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"

	"switchyard/internal/balancer"
	"switchyard/internal/config"
	"switchyard/internal/mock"
)

// End-to-end tests of stateful calls pinned to their account
// (docs/routing.md#stateful-calls-pinned-not-sticky): every Responses answer's
// id, and its conversation, is recorded with the upstream that produced it, and
// a request that refers to one goes to that upstream only, or gets 503
// previous_response_unavailable naming it. The mocks behave like real accounts:
// a response another account issued is a 404 previous_response_not_found, so
// without the pins about two turns in three of a chain over three accounts
// would fail.

// pinPool is three OpenAI mocks serving gpt-4o as equal upstreams (one
// tier, weight 1, weighted-random), each of which can be stopped.
type pinPool struct {
	names     []string
	mocks     map[string]*mock.Server
	stop      map[string]context.CancelFunc
	upstreams []config.Upstream
}

func newPinPool(t testing.TB) *pinPool {
	t.Helper()
	p := &pinPool{names: []string{"acct-a", "acct-b", "acct-c"}, mocks: map[string]*mock.Server{}, stop: map[string]context.CancelFunc{}}
	for _, n := range p.names {
		ctx, cancel := context.WithCancel(context.Background())
		t.Cleanup(cancel)
		srv, url, err := mock.Start(ctx, "127.0.0.1:0", mock.Options{Name: n, Seed: 42, Behavior: mock.Behavior{CompletionTokens: 4}})
		if err != nil {
			t.Fatal(err)
		}
		p.mocks[n], p.stop[n] = srv, cancel
		p.upstreams = append(p.upstreams, upstreamAt(n, config.ProviderOpenAI, url, 0, "gpt-4o"))
	}
	return p
}

// requests returns how many Responses requests each mock has answered.
func (p *pinPool) requests() map[string]int64 {
	out := map[string]int64{}
	for n, m := range p.mocks {
		out[n] = m.Stats().Requests
	}
	return out
}

// respTurn is one answered Responses request.
type respTurn struct {
	id, upstream, requestID string
}

// sendTurn sends one Responses turn through c, continuing prev (a new chain
// when ""), streamed or not, and returns the new response's id and who
// served it. hdr are extra header name/value pairs.
func sendTurn(ctx context.Context, c openai.Client, prev string, stream bool, edit ...func(*responses.ResponseNewParams)) (respTurn, error) {
	p := responses.ResponseNewParams{
		Model: "gpt-4o",
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("next turn")},
	}
	if prev != "" {
		p.PreviousResponseID = openai.String(prev)
	}
	for _, e := range edit {
		e(&p)
	}
	var raw *http.Response
	var tr respTurn
	if !stream {
		r, err := c.Responses.New(ctx, p, option.WithResponseInto(&raw))
		if err != nil {
			return tr, err
		}
		tr.id = r.ID
	} else {
		s := c.Responses.NewStreaming(ctx, p, option.WithResponseInto(&raw))
		created := ""
		for s.Next() {
			switch ev := s.Current(); ev.Type {
			case "response.created":
				created = ev.Response.ID
			case "response.completed":
				tr.id = ev.Response.ID
			}
		}
		if err := s.Err(); err != nil {
			return tr, err
		}
		if tr.id == "" || tr.id != created {
			return tr, fmt.Errorf("stream created %q and completed %q", created, tr.id)
		}
	}
	if raw != nil {
		tr.upstream, tr.requestID = raw.Header.Get("X-Switchyard-Upstream"), raw.Header.Get("X-Request-Id")
	}
	if tr.id == "" || (prev != "" && tr.id == prev) {
		return tr, fmt.Errorf("answer has id %q continuing %q", tr.id, prev)
	}
	return tr, nil
}

// streamedTurn says which turns of a chain are streamed: a few.
func streamedTurn(i int) bool { return i%5 == 2 }

// wantUnavailable checks err is the gateway's 503
// previous_response_unavailable naming holder, in OpenAI's error shape.
func wantUnavailable(t testing.TB, what string, err error, holder string) {
	t.Helper()
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("%s: %v, want 503 previous_response_unavailable", what, err)
	}
	if apiErr.StatusCode != http.StatusServiceUnavailable || apiErr.Code != "previous_response_unavailable" ||
		apiErr.Type != "upstream_error" || !strings.Contains(apiErr.Message, "upstream "+holder) {
		t.Fatalf("%s: %d %s/%s %q, want 503 upstream_error/previous_response_unavailable naming %s",
			what, apiErr.StatusCode, apiErr.Type, apiErr.Code, apiErr.Message, holder)
	}
	if ra := apiErr.Response.Header.Get("Retry-After"); ra == "" {
		t.Errorf("%s: no Retry-After", what)
	}
}

// TestResponsesChainPinned: a 20-turn chain (a few turns streamed) over
// three equal accounts is answered every time, every turn by the account of
// the first; the decisions show the others filtered as pinned elsewhere
// (not a session binding: each turn's previous_response_id is a new session
// id, a miss).
func TestResponsesChainPinned(t *testing.T) {
	p := newPinPool(t)
	e := startGateway(t, spec{upstreams: p.upstreams})
	c := e.openAI(testKey)
	ctx := context.Background()
	const turns = 20
	var chain []respTurn
	prev := ""
	for i := range turns {
		tr, err := sendTurn(ctx, c, prev, streamedTurn(i))
		if err != nil {
			t.Fatalf("turn %d (streamed %v) continuing %s: %v", i, streamedTurn(i), prev, err)
		}
		chain = append(chain, tr)
		prev = tr.id
	}
	home := chain[0].upstream
	for i, tr := range chain {
		if tr.upstream != home {
			t.Fatalf("turn %d served by %s, want %s (the first turn's)", i, tr.upstream, home)
		}
		if i == 0 {
			continue
		}
		d := decisionFor(t, e, tr.requestID)
		wantAffinity(t, fmt.Sprintf("turn %d", i), d, balancer.AffinityRecord{
			Session: chain[i-1].id, Source: "body:previous_response_id", Result: balancer.AffinityMiss,
		})
		if !slices.Equal(d.Order, []string{home}) {
			t.Fatalf("turn %d: order %v, want only %s", i, d.Order, home)
		}
		for _, r := range d.Candidates {
			want := "pinned: previous response " + chain[i-1].id + " is held by " + home
			if r.Name != home && (r.Filter != balancer.FilterPinnedElsewhere || r.ReasonText() != want) {
				t.Fatalf("turn %d: %s filtered %q (%q), want %q", i, r.Name, r.Filter, r.ReasonText(), want)
			}
		}
	}
	if got := p.requests(); got[home] != turns || got["acct-a"]+got["acct-b"]+got["acct-c"] != turns {
		t.Fatalf("mock requests %v, want all %d on %s", got, turns, home)
	}
}

// TestResponsesFanOutPinned: twenty requests continuing the same response
// (retries, branches) all go to its account; previous_response_id is also
// the session id, which binds to that account on the first and hits after.
func TestResponsesFanOutPinned(t *testing.T) {
	p := newPinPool(t)
	e := startGateway(t, spec{upstreams: p.upstreams})
	c := e.openAI(testKey)
	ctx := context.Background()
	root, err := sendTurn(ctx, c, "", false)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 20 {
		tr, err := sendTurn(ctx, c, root.id, i%4 == 3)
		if err != nil {
			t.Fatalf("branch %d: %v", i, err)
		}
		if tr.upstream != root.upstream {
			t.Fatalf("branch %d served by %s, want %s", i, tr.upstream, root.upstream)
		}
		want := balancer.AffinityRecord{Session: root.id, Source: "body:previous_response_id", Result: balancer.AffinityMiss}
		if i > 0 {
			want.Result, want.Bound = balancer.AffinityHit, root.upstream
		}
		wantAffinity(t, fmt.Sprintf("branch %d", i), decisionFor(t, e, tr.requestID), want)
	}
	boundTo(t, e, root.id, root.upstream)
}

// TestResponsesConversationPinned: a conversation the gateway has seen
// answered goes back to its account, given as an id or as an object, with
// no previous_response_id.
func TestResponsesConversationPinned(t *testing.T) {
	p := newPinPool(t)
	e := startGateway(t, spec{upstreams: p.upstreams})
	c := e.openAI(testKey)
	ctx := context.Background()
	byID := func(p *responses.ResponseNewParams) {
		p.Conversation = responses.ResponseNewParamsConversationUnion{OfString: openai.String("conv_pin_1")}
	}
	byObject := func(p *responses.ResponseNewParams) {
		p.Conversation = responses.ResponseNewParamsConversationUnion{OfConversationObject: &responses.ResponseConversationParam{ID: "conv_pin_1"}}
	}
	first, err := sendTurn(ctx, c, "", false, byID)
	if err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		edit := byID
		if i%2 == 1 {
			edit = byObject
		}
		tr, err := sendTurn(ctx, c, "", i%3 == 2, edit)
		if err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		if tr.upstream != first.upstream {
			t.Fatalf("turn %d of conversation conv_pin_1 served by %s, want %s", i, tr.upstream, first.upstream)
		}
		for _, r := range decisionFor(t, e, tr.requestID).Candidates {
			if r.Name != first.upstream && !strings.HasPrefix(r.ReasonText(), "pinned: conversation conv_pin_1 is held by ") {
				t.Fatalf("turn %d: %s reason %q", i, r.Name, r.ReasonText())
			}
		}
	}
}

// TestResponsesUnknownPreviousRoutesNormally: an id the gateway never saw
// is routed as usual (no candidate filtered), and the account that gets it
// answers its own 404, passed through.
func TestResponsesUnknownPreviousRoutesNormally(t *testing.T) {
	p := newPinPool(t)
	e := startGateway(t, spec{upstreams: p.upstreams})
	var raw *http.Response
	c := e.openAI(testKey)
	_, err := c.Responses.New(context.Background(), responses.ResponseNewParams{
		Model: "gpt-4o", Input: responses.ResponseNewParamsInputUnion{OfString: openai.String("hi")},
		PreviousResponseID: openai.String("resp_never_issued"),
	}, option.WithResponseInto(&raw))
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusNotFound || apiErr.Code != "previous_response_not_found" {
		t.Fatalf("unknown previous response: %v, want the account's 404 previous_response_not_found", err)
	}
	d := decisionFor(t, e, apiErr.Response.Header.Get("X-Request-Id"))
	for _, r := range d.Candidates {
		if r.Filter != "" {
			t.Fatalf("%s filtered %q, want every candidate available", r.Name, r.ReasonText())
		}
	}
	if n := apiErr.Response.Header.Get("X-Switchyard-Attempts"); n != "1" {
		t.Fatalf("attempts %q, want 1: a 404 is the client's, not failed over", n)
	}
}

// TestResponsesHomeDown: when the account holding a chain's last response
// is down — its mock stopped, then its breaker open — the next turn gets
// 503 previous_response_unavailable naming it, never another account's
// 404; the other accounts get nothing, and new chains still go to them.
func TestResponsesHomeDown(t *testing.T) {
	p := newPinPool(t)
	e := startGateway(t, spec{upstreams: p.upstreams, edit: func(c *config.Config) { c.Circuit.FailureThreshold = 2 }})
	c := e.openAI(testKey)
	ctx := context.Background()
	prev := ""
	var home string
	for i := range 3 {
		tr, err := sendTurn(ctx, c, prev, i == 1)
		if err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		prev, home = tr.id, tr.upstream
	}
	before := p.requests()
	p.stop[home]()
	reasons := []string{"connection error", "connection error", "breaker open"}
	for i, reason := range reasons {
		for _, stream := range []bool{false, true} {
			_, err := sendTurn(ctx, c, prev, stream)
			what := fmt.Sprintf("turn after the stop %d (streamed %v)", i, stream)
			wantUnavailable(t, what, err, home)
			var apiErr *openai.Error
			errors.As(err, &apiErr)
			t.Logf("%s: %s", what, apiErr.Message)
			if !strings.Contains(apiErr.Message, "previous response "+prev) {
				t.Errorf("%s: message %q does not name the response", what, apiErr.Message)
			}
			if i == len(reasons)-1 && !strings.Contains(apiErr.Message, reason) {
				t.Errorf("%s: message %q, want the reason %q", what, apiErr.Message, reason)
			}
		}
	}
	after := p.requests()
	for _, n := range p.names {
		if n != home && after[n] != before[n] {
			t.Fatalf("%s got %d requests while %s was down, want none", n, after[n]-before[n], home)
		}
	}
	tr, err := sendTurn(ctx, c, "", false)
	if err != nil || tr.upstream == home {
		t.Fatalf("a new chain while %s is down: %+v, %v; want served by another account", home, tr, err)
	}
}

// TestResponsesHomeInactiveOrGone: the home account switched off, the
// next turn is 503 naming it; switched on again, the chain goes on there;
// removed, 503 again.
func TestResponsesHomeInactiveOrGone(t *testing.T) {
	p := newPinPool(t)
	e := startGateway(t, spec{upstreams: p.upstreams, edit: withAdmin})
	c := e.openAI(testKey)
	ctx := context.Background()
	first, err := sendTurn(ctx, c, "", false)
	if err != nil {
		t.Fatal(err)
	}
	home, prev := first.upstream, first.id
	steps := []struct {
		name, method, body string
		status             int
		want               string // the reason in the 503, "" for a served turn
	}{
		{"inactive", "PATCH", `{"active":false}`, http.StatusOK, home + ": upstream inactive"},
		{"active again", "PATCH", `{"active":true}`, http.StatusOK, ""},
		{"removed", "DELETE", "", http.StatusNoContent, home + ": not a candidate"},
	}
	for _, st := range steps {
		e.mustAdmin(t, st.method, "/upstreams/"+home, st.body, st.status)
		for _, stream := range []bool{false, true} {
			tr, err := sendTurn(ctx, c, prev, stream)
			what := fmt.Sprintf("%s (streamed %v)", st.name, stream)
			if st.want == "" {
				if err != nil || tr.upstream != home {
					t.Fatalf("%s: %+v, %v; want served by %s", what, tr, err, home)
				}
				prev = tr.id
				continue
			}
			wantUnavailable(t, what, err, home)
			var apiErr *openai.Error
			errors.As(err, &apiErr)
			if !strings.Contains(apiErr.Message, st.want) {
				t.Fatalf("%s: message %q, want %q", what, apiErr.Message, st.want)
			}
		}
	}
}

// TestResponsesTranslatedPrevious: a previous_response_id the gateway does
// not keep cannot be expressed to another family. Over Anthropic upstreams
// only, a request carrying an unknown one is 400 incompatible naming it,
// while one the gateway made translating is continued there
// (docs/routing.md#responses-chains-the-gateway-keeps); in a mixed pool a
// chain stays on its OpenAI account; and an answer translated from
// Anthropic is not pinned (no account holds it): continuing it is expanded,
// so that Anthropic is compatible with it.
func TestResponsesTranslatedPrevious(t *testing.T) {
	_, anthURL := startMock(t, "anth", mock.Behavior{CompletionTokens: 4})
	_, oaURL := startMock(t, "oa", mock.Behavior{CompletionTokens: 4})
	anth := upstreamAt("anth", config.ProviderAnthropic, anthURL, 0, "gpt-4o")
	oa := upstreamAt("oa", config.ProviderOpenAI, oaURL, 0, "gpt-4o")
	ctx := context.Background()

	t.Run("anthropic only", func(t *testing.T) {
		e := startGateway(t, spec{upstreams: []config.Upstream{anth}})
		c := e.openAI(testKey)
		first, err := sendTurn(ctx, c, "", false)
		if err != nil || first.upstream != "anth" {
			t.Fatalf("first turn: %+v, %v; want translated to anth", first, err)
		}
		if next, err := sendTurn(ctx, c, first.id, false); err != nil || next.upstream != "anth" {
			t.Fatalf("continuing the translated %s: %+v, %v; want served by anth", first.id, next, err)
		}
		for _, prev := range []string{"resp_never_issued"} {
			_, err := sendTurn(ctx, c, prev, false)
			var apiErr *openai.Error
			if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || apiErr.Code != "incompatible_request" ||
				!strings.Contains(apiErr.Message, "previous_response_id") {
				t.Fatalf("continuing %s: %v, want 400 incompatible_request naming previous_response_id", prev, err)
			}
		}
	})
	t.Run("mixed pool", func(t *testing.T) {
		e := startGateway(t, spec{upstreams: []config.Upstream{anth, oa}})
		c := e.openAI(testKey)
		// New chains land on either; keep one started on each.
		starts := map[string]respTurn{}
		for i := 0; len(starts) < 2; i++ {
			if i == 40 {
				t.Fatalf("40 new chains did not land on both upstreams: %v", starts)
			}
			tr, err := sendTurn(ctx, c, "", false)
			if err != nil {
				t.Fatalf("new chain %d: %v", i, err)
			}
			starts[tr.upstream] = tr
		}
		prev := starts["oa"].id
		for i := range 4 {
			tr, err := sendTurn(ctx, c, prev, i == 2)
			if err != nil || tr.upstream != "oa" {
				t.Fatalf("turn %d: %+v, %v; want served by oa", i, tr, err)
			}
			for _, r := range decisionFor(t, e, tr.requestID).Candidates {
				if r.Name == "anth" && r.Filter != balancer.FilterPinnedElsewhere {
					t.Fatalf("turn %d: anth filtered %q, want pinned_elsewhere", i, r.Filter)
				}
			}
			prev = tr.id
		}
		// The translated answer's id is no account's: nothing pins it, the
		// gateway expands it, and neither upstream is filtered.
		tr, err := sendTurn(ctx, c, starts["anth"].id, false)
		if err != nil {
			t.Fatalf("continuing the translated answer %s: %v", starts["anth"].id, err)
		}
		for _, r := range decisionFor(t, e, tr.requestID).Candidates {
			if r.Filter != "" {
				t.Fatalf("%s: %q, want no filter", r.Name, r.ReasonText())
			}
		}
	})
}
