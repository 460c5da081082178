package gateway_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/http/httputil"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/openai/openai-go/v3/responses"
	"github.com/redis/go-redis/v9"
	"github.com/tidwall/gjson"

	"switchyard/internal/config"
	"switchyard/internal/mock"
)

// End-to-end tests of the Responses chains the gateway keeps itself
// (docs/routing.md#responses-chains-the-gateway-keeps): a turn answered by an
// upstream of another family gets an id the gateway made, and the next turn,
// wherever it lands, gets the whole conversation instead of that id.

// chainFamily is one upstream of a chain test: its name, its tap and where
// its request's messages are.
type chainFamily struct {
	name string
	tap  *upstreamTap
	// messages is the JSON path of the conversation in its requests.
	messages string
}

// chainUpstreams starts an OpenAI, an Anthropic and a Bedrock mock, each
// behind a tap, serving claude-sonnet-4 at one priority.
func chainUpstreams(t *testing.T) ([]config.Upstream, map[string]chainFamily) {
	t.Helper()
	_, oaURL := startMock(t, "oa", mock.Behavior{CompletionTokens: 3})
	_, anURL := startMock(t, "an", mock.Behavior{CompletionTokens: 3})
	_, brURL := startBedrockMock(t, "br", mock.Behavior{CompletionTokens: 3})
	fams := map[string]chainFamily{
		"oa": {name: "oa", tap: startUpstreamTap(t, oaURL), messages: "input"},
		"an": {name: "an", tap: startUpstreamTap(t, anURL), messages: "messages"},
		"br": {name: "br", tap: startUpstreamTap(t, brURL), messages: "messages"},
	}
	// Bedrock signs the Host: the tap keeps the gateway's.
	rw := fams["br"].tap.proxy.Rewrite
	fams["br"].tap.proxy.Rewrite = func(r *httputil.ProxyRequest) { rw(r); r.Out.Host = r.In.Host }
	ups := []config.Upstream{
		upstreamAt("oa", config.ProviderOpenAI, fams["oa"].tap.URL, 0, bedrockModel),
		upstreamAt("an", config.ProviderAnthropic, fams["an"].tap.URL, 0, bedrockModel),
		bedrockUpstreamAt("br", fams["br"].tap.URL, bedrockSecret, 0),
	}
	return ups, fams
}

// chainStep is one turn of a chain: the upstream it must land on, and
// whether it is streamed.
type chainStep struct {
	upstream string
	stream   bool
}

// chainAnswer is what the client saw of one turn.
type chainAnswer struct {
	id, upstream, text string
}

// chainTurn sends one Responses turn of claude-sonnet-4 with input text,
// continuing prev, under X-Request-Id reqID.
func chainTurn(ctx context.Context, c openai.Client, prev, text, reqID string, stream bool, edit ...func(*responses.ResponseNewParams)) (chainAnswer, error) {
	p := responses.ResponseNewParams{
		Model: bedrockModel,
		Input: responses.ResponseNewParamsInputUnion{OfString: openai.String(text)},
	}
	if prev != "" {
		p.PreviousResponseID = openai.String(prev)
	}
	for _, e := range edit {
		e(&p)
	}
	var raw *http.Response
	opts := []option.RequestOption{option.WithResponseInto(&raw), option.WithHeader("X-Request-Id", reqID)}
	var a chainAnswer
	if !stream {
		r, err := c.Responses.New(ctx, p, opts...)
		if err != nil {
			return a, err
		}
		a.id, a.text = r.ID, r.OutputText()
	} else {
		s := c.Responses.NewStreaming(ctx, p, opts...)
		for s.Next() {
			if ev := s.Current(); ev.Type == "response.completed" {
				a.id, a.text = ev.Response.ID, ev.Response.OutputText()
			}
		}
		if err := s.Err(); err != nil {
			return a, err
		}
	}
	if raw != nil {
		a.upstream = raw.Header.Get("X-Switchyard-Upstream")
	}
	if a.id == "" || a.text == "" {
		return a, fmt.Errorf("answer has id %q and text %q", a.id, a.text)
	}
	return a, nil
}

// conversationTexts is the texts of the messages at path of an upstream
// request, in order: a string content, or its parts' texts joined.
func conversationTexts(body []byte, path string) []string {
	var out []string
	gjson.GetBytes(body, path).ForEach(func(_, m gjson.Result) bool {
		c := m.Get("content")
		if c.Type == gjson.String {
			out = append(out, c.Str)
			return true
		}
		var parts []string
		c.ForEach(func(_, p gjson.Result) bool {
			if t := p.Get("text"); t.Type == gjson.String {
				parts = append(parts, t.Str)
			}
			return true
		})
		out = append(out, strings.Join(parts, ""))
		return true
	})
	return out
}

// runChain sends the steps as one chain, turn i through clients[i %
// len(clients)], placing each on its upstream with place, and checks that
// every turn lands there and that its upstream receives the whole
// conversation so far — every earlier turn's input and answer, then its own
// input — and, an OpenAI upstream, no previous_response_id.
func runChain(t *testing.T, clients []openai.Client, fams map[string]chainFamily, steps []chainStep, place func(upstream string)) []chainAnswer {
	t.Helper()
	ctx := context.Background()
	var want []string
	var answers []chainAnswer
	prev := ""
	for i, st := range steps {
		place(st.upstream)
		text := fmt.Sprintf("turn %d of the chain", i+1)
		reqID := fmt.Sprintf("%s-turn-%d", t.Name(), i+1)
		a, err := chainTurn(ctx, clients[i%len(clients)], prev, text, reqID, st.stream)
		if err != nil {
			t.Fatalf("turn %d (%s, streamed %v) continuing %q: %v", i+1, st.upstream, st.stream, prev, err)
		}
		if a.upstream != st.upstream {
			t.Fatalf("turn %d served by %q, want %q", i+1, a.upstream, st.upstream)
		}
		f := fams[st.upstream]
		ex := f.tap.wait(t, reqID)
		want = append(want, text)
		if got := conversationTexts(ex.reqBody, f.messages); !slices.Equal(got, want) {
			t.Fatalf("turn %d: %s received the conversation %q, want %q", i+1, st.upstream, got, want)
		}
		if pr := gjson.GetBytes(ex.reqBody, "previous_response_id"); pr.Exists() {
			t.Fatalf("turn %d: %s received previous_response_id %s", i+1, st.upstream, pr.Raw)
		}
		want = append(want, a.text)
		answers = append(answers, a)
		prev = a.id
	}
	return answers
}

// TestResponsesChainAcrossFamilies: a six-turn Responses chain whose turns
// are placed in turn on Anthropic, OpenAI, Bedrock, OpenAI, Anthropic and
// Bedrock (the others marked inactive through the admin API), some
// streamed, completes turn after turn, and every turn's upstream receives
// the whole conversation; the OpenAI upstream, which would answer an id it
// did not issue 404, never sees one.
func TestResponsesChainAcrossFamilies(t *testing.T) {
	ups, fams := chainUpstreams(t)
	e := startGateway(t, spec{upstreams: ups, edit: withAdmin})
	place := func(on string) {
		for _, u := range ups {
			e.mustAdmin(t, http.MethodPatch, "/upstreams/"+u.Name, fmt.Sprintf(`{"active": %v}`, u.Name == on), http.StatusOK)
		}
	}
	steps := []chainStep{{"an", false}, {"oa", false}, {"br", true}, {"oa", true}, {"an", true}, {"br", false}}
	answers := runChain(t, []openai.Client{e.openAI(testKey)}, fams, steps, place)
	ids := map[string]bool{}
	for i, a := range answers {
		if ids[a.id] {
			t.Fatalf("turn %d's id %s was given before", i+1, a.id)
		}
		ids[a.id] = true
	}
}

// TestResponsesChainStoreFalse: a translated turn sent with store: false
// keeps nothing; continuing it is refused 400 previous_response_not_kept,
// in OpenAI's error shape, naming the id and why, and no upstream is asked.
func TestResponsesChainStoreFalse(t *testing.T) {
	ups, _ := chainUpstreams(t)
	e := startGateway(t, spec{upstreams: ups[1:2]}) // Anthropic only
	c := e.openAI(testKey)
	ctx := context.Background()
	a, err := chainTurn(ctx, c, "", "remember nothing", "store-false-1", false, func(p *responses.ResponseNewParams) {
		p.Store = openai.Bool(false)
	})
	if err != nil {
		t.Fatal(err)
	}
	_, err = chainTurn(ctx, c, a.id, "and now?", "store-false-2", false)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) {
		t.Fatalf("continuing %s: %v, want 400 previous_response_not_kept", a.id, err)
	}
	if apiErr.StatusCode != http.StatusBadRequest || apiErr.Code != "previous_response_not_kept" || apiErr.Type != "invalid_request_error" ||
		!strings.Contains(apiErr.Message, a.id) || !strings.Contains(apiErr.Message, "store: false") {
		t.Fatalf("continuing %s: %d %s/%s %q, want 400 invalid_request_error/previous_response_not_kept naming the id and store: false",
			a.id, apiErr.StatusCode, apiErr.Type, apiErr.Code, apiErr.Message)
	}
	if got := apiErr.Response.Header.Get("X-Switchyard-Upstream"); got != "" {
		t.Fatalf("the refusal came from upstream %s", got)
	}
}

// TestResponsesChainScaleOut: two gateways sharing one Redis prefix, A with
// only the Anthropic upstream and B with only the OpenAI one. A chain whose
// turns alternate A, B, A, B (some streamed) completes, every turn's
// upstream receiving the whole conversation: B expands the ids A made, and A
// those B kept. Each kept conversation is in Redis under the test's prefix
// for affinity.response_ttl.
func TestResponsesChainScaleOut(t *testing.T) {
	redisURL, prefix := sharedRedis(t)
	ups, fams := chainUpstreams(t)
	const ttl = 3 * time.Hour
	shared := func(c *config.Config) {
		c.State.Driver, c.State.RedisURL, c.State.RedisPrefix = "redis", redisURL, prefix
		c.Affinity.ResponseTTL = ttl
	}
	a := startGateway(t, spec{upstreams: ups[1:2], edit: shared}) // an
	b := startGateway(t, spec{upstreams: ups[0:1], edit: shared}) // oa
	steps := []chainStep{{"an", false}, {"oa", false}, {"an", true}, {"oa", true}, {"an", false}}
	answers := runChain(t, []openai.Client{a.openAI(testKey), b.openAI(testKey)}, fams, steps, func(string) {})

	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	ctx := context.Background()
	for i, ans := range answers {
		key := prefix + "conv:" + ans.id
		d, err := rdb.PTTL(ctx, key).Result()
		if err != nil || d <= ttl-time.Minute || d > ttl {
			t.Fatalf("turn %d: PTTL %s = %v, %v; want about %v", i+1, key, d, err, ttl)
		}
	}
}

// wantIncompatible checks err is the 400 of a previous_response_id the
// gateway does not keep for the key, which only an OpenAI upstream could
// take.
func wantIncompatible(t *testing.T, what string, err error) {
	t.Helper()
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || apiErr.Code != "incompatible_request" ||
		!strings.Contains(apiErr.Message, "previous_response_id") {
		t.Fatalf("%s: %v, want 400 incompatible_request about previous_response_id", what, err)
	}
}

// TestResponsesChainPerKey: a kept conversation belongs to the client key
// that made it: another key's request naming its id is not expanded (so
// only an OpenAI upstream could take it: 400 with only Anthropic), and
// deleting the key through the admin API deletes its conversations, so the
// key made again with the same secret cannot continue them either.
func TestResponsesChainPerKey(t *testing.T) {
	ups, _ := chainUpstreams(t)
	e := startGateway(t, spec{
		upstreams: ups[1:2], // Anthropic only
		keys:      []config.Key{clientKey("e2e", testKey), clientKey("k2", k2Secret)},
		edit:      withAdmin,
	})
	ctx := context.Background()
	k2, other := e.openAI(k2Secret), e.openAI(testKey)
	a1, err := chainTurn(ctx, k2, "", "first", "per-key-1", false)
	if err != nil {
		t.Fatal(err)
	}
	a2, err := chainTurn(ctx, k2, a1.id, "second", "per-key-2", false)
	if err != nil {
		t.Fatalf("k2 continuing its own %s: %v", a1.id, err)
	}
	_, err = chainTurn(ctx, other, a1.id, "not yours", "per-key-3", false)
	wantIncompatible(t, "another key continuing k2's "+a1.id, err)

	e.mustAdmin(t, http.MethodDelete, "/keys/k2", "", http.StatusNoContent)
	e.mustAdmin(t, http.MethodPost, "/keys", `{"name":"k2","key":"`+k2Secret+`"}`, http.StatusCreated)
	_, err = chainTurn(ctx, k2, a2.id, "third", "per-key-4", false)
	wantIncompatible(t, "k2, deleted and made again, continuing "+a2.id, err)
}

// TestResponsesChainTooLong: a conversation longer than
// affinity.conversation_max_bytes is not kept; continuing it is refused 400
// previous_response_not_kept naming the id and the bound.
func TestResponsesChainTooLong(t *testing.T) {
	ups, _ := chainUpstreams(t)
	e := startGateway(t, spec{upstreams: ups[1:2], edit: func(c *config.Config) { c.Affinity.ConversationMaxBytes = 1024 }})
	c := e.openAI(testKey)
	ctx := context.Background()
	a, err := chainTurn(ctx, c, "", strings.Repeat("long ", 300), "too-long-1", false)
	if err != nil {
		t.Fatal(err)
	}
	_, err = chainTurn(ctx, c, a.id, "and now?", "too-long-2", false)
	var apiErr *openai.Error
	if !errors.As(err, &apiErr) || apiErr.StatusCode != http.StatusBadRequest || apiErr.Code != "previous_response_not_kept" ||
		!strings.Contains(apiErr.Message, a.id) || !strings.Contains(apiErr.Message, "affinity.conversation_max_bytes (1024)") {
		t.Fatalf("continuing %s: %v, want 400 previous_response_not_kept naming the id and the bound", a.id, err)
	}
}
