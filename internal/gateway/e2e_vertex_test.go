package gateway_test

import (
	"context"
	"net/http"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"google.golang.org/genai"

	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/gateway"
	"switchyard/internal/mock"
	"switchyard/internal/provider"
	"switchyard/internal/store"
	"switchyard/internal/store/sqlite"
)

// Vertex end-to-end tests: the real gateway in front of mock Vertex AI
// upstreams whose token endpoint issues the access tokens. The gateway's
// token source refreshes by the wall clock: a token's refresh point is
// made deterministic by the lifetime the mock issues it with (a 5-minute
// token is due at once), and the mock's own expiry runs on a fake clock.

// The model names of these tests: the client's, and Vertex's for Claude.
const (
	vertexClaude       = "claude-sonnet-4"
	vertexClaudeID     = "claude-sonnet-4@20250514"
	vertexGemini       = "gemini-2.5-flash"
	vertexAnswerTokens = 4
)

// vertexAccount is the service account of every Vertex upstream here.
var vertexAccount = sync.OnceValue(func() *mock.ServiceAccount {
	sa, err := mock.NewServiceAccount("switchyard@p1.iam.gserviceaccount.com")
	if err != nil {
		panic(err)
	}
	return sa
})

// startVertexMock starts a mock Vertex upstream that trusts vertexAccount
// (unless opts names another account).
func startVertexMock(t *testing.T, name string, opts mock.Options) (*mock.Server, string) {
	t.Helper()
	opts.Name = name
	if opts.ServiceAccount == nil {
		opts.ServiceAccount = vertexAccount()
	}
	return startMockWith(t, opts)
}

// vertexUpstream is a vertex upstream at a mock, serving the Claude and
// Gemini models of these tests with vertexAccount's key.
func vertexUpstream(name, mockURL string, priority int) config.Upstream {
	u := config.DefaultUpstream()
	u.Name, u.Provider, u.BaseURL, u.Priority = name, config.ProviderVertex, mockURL+"/v1", priority
	u.Models = []string{vertexClaude, vertexGemini}
	u.ModelMap = map[string]string{vertexClaude: vertexClaudeID}
	u.Vertex = &provider.VertexSettings{Project: "p1", Location: "us-east5",
		CredentialsJSON: string(vertexAccount().JSON("p1", mock.TokenURI(mockURL)))}
	return u
}

// unwatchedStore hides its store's Watch: the gateway then builds its
// routing table once. Every rebuild (the watcher's first poll, an admin
// change) makes new provider endpoints, and so a new token source whose
// first request exchanges a token again; these tests count exchanges.
type unwatchedStore struct{ store.Store }

// startVertexGateway is startGateway on a store without a watcher.
func startVertexGateway(t *testing.T, s spec) *env {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "vertex.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = st.Close() })
	return startGatewayWith(t, s, gateway.Options{Store: unwatchedStore{st}})
}

// geminiClient is a Gemini SDK client for the gateway with key.
func (e *env) geminiClient(t *testing.T, key string) *genai.Client {
	t.Helper()
	c, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey: key, Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: e.URL, APIVersion: "v1beta"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// served is what a client saw of one answer.
type served struct {
	text    string
	in, out int64
	header  http.Header
}

// vertexAsk sends "Hello" for model through the client of protocol proto
// ("openai", "anthropic", "gemini"), plain or streamed, and returns the
// answer and its headers; it fails the test on any error.
func vertexAsk(t *testing.T, e *env, proto, model string, stream bool) served {
	t.Helper()
	ctx := context.Background()
	var s served
	switch proto {
	case "openai":
		client := e.openAI(testKey)
		params := chatParams(model, "Hello")
		if !stream {
			var raw *http.Response
			got, err := client.Chat.Completions.New(ctx, params, option.WithResponseInto(&raw))
			if err != nil {
				t.Fatal(err)
			}
			return served{got.Choices[0].Message.Content, got.Usage.PromptTokens, got.Usage.CompletionTokens, raw.Header}
		}
		params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
		var raw *http.Response
		st := client.Chat.Completions.NewStreaming(ctx, params, option.WithResponseInto(&raw))
		for st.Next() {
			c := st.Current()
			if len(c.Choices) > 0 {
				s.text += c.Choices[0].Delta.Content
			}
			if c.Usage.TotalTokens > 0 {
				s.in, s.out = c.Usage.PromptTokens, c.Usage.CompletionTokens
			}
		}
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
		s.header = raw.Header
	case "anthropic":
		client := e.anthropic(testKey)
		params := anthropic.MessageNewParams{Model: anthropic.Model(model), MaxTokens: 64,
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))}}
		if !stream {
			var raw *http.Response
			msg, err := client.Messages.New(ctx, params, aoption.WithResponseInto(&raw))
			if err != nil {
				t.Fatal(err)
			}
			return served{msg.Content[0].Text, msg.Usage.InputTokens, msg.Usage.OutputTokens, raw.Header}
		}
		var raw *http.Response
		st := client.Messages.NewStreaming(ctx, params, aoption.WithResponseInto(&raw))
		var msg anthropic.Message
		for st.Next() {
			if err := msg.Accumulate(st.Current()); err != nil {
				t.Fatal(err)
			}
		}
		if err := st.Err(); err != nil {
			t.Fatal(err)
		}
		if len(msg.Content) > 0 {
			s.text = msg.Content[0].Text
		}
		s.in, s.out, s.header = msg.Usage.InputTokens, msg.Usage.OutputTokens, raw.Header
	case "gemini":
		client := e.geminiClient(t, testKey)
		contents := []*genai.Content{genai.NewContentFromText("Hello", genai.RoleUser)}
		if !stream {
			r, err := client.Models.GenerateContent(ctx, model, contents, nil)
			if err != nil {
				t.Fatal(err)
			}
			return served{r.Text(), int64(r.UsageMetadata.PromptTokenCount), int64(r.UsageMetadata.CandidatesTokenCount), r.SDKHTTPResponse.Headers}
		}
		for chunk, err := range client.Models.GenerateContentStream(ctx, model, contents, nil) {
			if err != nil {
				t.Fatal(err)
			}
			s.text += chunk.Text()
			if r := chunk.SDKHTTPResponse; r != nil {
				s.header = r.Headers
			}
			if u := chunk.UsageMetadata; u != nil && u.CandidatesTokenCount > 0 {
				s.in, s.out = int64(u.PromptTokenCount), int64(u.CandidatesTokenCount)
			}
		}
	}
	return s
}

// TestVertexServesEveryClient: OpenAI, Anthropic and Gemini SDK clients
// reach a Claude and a Gemini model on one vertex upstream, plain and
// streamed, with one token exchange for all of them and the usage the
// upstream reported.
func TestVertexServesEveryClient(t *testing.T) {
	m, url := startVertexMock(t, "vertex", mock.Options{Behavior: mock.Behavior{CompletionTokens: vertexAnswerTokens}})
	e := startVertexGateway(t, spec{upstreams: []config.Upstream{vertexUpstream("vertex-east", url, 0)}})
	tests := []struct {
		proto, model string
		translated   string // X-Switchyard-Translated, "" for a passthrough
		method       string // the Vertex method of a plain request, then of a streamed one
	}{
		{"openai", vertexClaude, "openai-chat->anthropic", "rawPredict streamRawPredict"},
		{"openai", vertexGemini, "openai-chat->gemini", "generateContent streamGenerateContent"},
		{"anthropic", vertexClaude, "", "rawPredict streamRawPredict"},
		{"anthropic", vertexGemini, "anthropic->gemini", "generateContent streamGenerateContent"},
		{"gemini", vertexGemini, "", "generateContent streamGenerateContent"},
		{"gemini", vertexClaude, "gemini->anthropic", "rawPredict streamRawPredict"},
	}
	for _, tc := range tests {
		t.Run(tc.proto+" "+tc.model, func(t *testing.T) {
			methods := strings.Fields(tc.method)
			var plain served
			for i, stream := range []bool{false, true} {
				got := vertexAsk(t, e, tc.proto, tc.model, stream)
				if n := len(strings.Fields(got.text)); n != vertexAnswerTokens || got.out != vertexAnswerTokens || got.in <= 0 {
					t.Errorf("stream %v: %d words %q, usage in %d out %d; want %d words and output tokens", stream, n, got.text, got.in, got.out, vertexAnswerTokens)
				}
				st := m.Stats()
				if !strings.HasSuffix(st.LastPath, ":"+methods[i]) || !strings.HasPrefix(st.LastPath, "/v1/projects/p1/locations/us-east5/publishers/") {
					t.Errorf("stream %v: the upstream was called at %s, want its %s", stream, st.LastPath, methods[i])
				}
				if tc.model == vertexClaude && (!strings.Contains(st.LastPath, vertexClaudeID) || strings.Contains(st.LastBody, `"model"`)) {
					t.Errorf("Claude request %s %s", st.LastPath, st.LastBody)
				}
				if !stream {
					plain = got
					if h := got.header; h.Get("X-Switchyard-Upstream") != "vertex-east" || h.Get("X-Switchyard-Translated") != tc.translated {
						t.Errorf("upstream %q translated %q, want vertex-east %q", h.Get("X-Switchyard-Upstream"), h.Get("X-Switchyard-Translated"), tc.translated)
					}
				} else if got.in != plain.in {
					t.Errorf("streamed input tokens %d, plain %d: the same prompt", got.in, plain.in)
				}
			}
		})
	}
	t.Run("anthropic count_tokens", func(t *testing.T) {
		client := e.anthropic(testKey)
		n, err := client.Messages.CountTokens(context.Background(), anthropic.MessageCountTokensParams{
			Model:    anthropic.Model(vertexClaude),
			Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("Hello"))},
		})
		if err != nil {
			t.Fatal(err)
		}
		st := m.Stats()
		if n.InputTokens <= 0 || !strings.HasSuffix(st.LastPath, "/publishers/anthropic/models/count-tokens:rawPredict") ||
			!strings.Contains(st.LastBody, `"model":"`+vertexClaudeID+`"`) {
			t.Errorf("%d input tokens; the upstream was asked at %s with %s", n.InputTokens, st.LastPath, st.LastBody)
		}
	})
	if st := m.Stats(); st.TokensIssued != 1 || st.TokensRefused != 0 {
		t.Errorf("%d tokens issued, %d refused for %d requests; want one exchange", st.TokensIssued, st.TokensRefused, st.Requests)
	}
}

// TestVertexTokenExpiringUnderLoad: the first token is issued with five
// minutes to live, inside the gateway's refresh window, so the next
// request replaces it while 40 concurrent requests arrive: one exchange
// for all of them, no request fails, and the first token is refused once
// it expires at the upstream, by which time the gateway no longer sends it.
func TestVertexTokenExpiringUnderLoad(t *testing.T) {
	fc := clock.NewFake(time.Now())
	m, url := startVertexMock(t, "vertex", mock.Options{TokenLifetime: 5 * time.Minute, Now: fc.Now,
		Behavior: mock.Behavior{CompletionTokens: 2}})
	e := startVertexGateway(t, spec{upstreams: []config.Upstream{vertexUpstream("vertex-east", url, 0)}})
	vertexAsk(t, e, "anthropic", vertexClaude, false)
	first := m.Stats().LastHeaders.Get("Authorization")
	m.SetTokenLifetime(time.Hour)

	client := e.openAI(testKey)
	burst := func() {
		const n = 40
		errs := make(chan string, n)
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				model := vertexGemini
				if i%2 == 1 {
					model = vertexClaude
				}
				got, err := client.Chat.Completions.New(context.Background(), chatParams(model, "Hello "+strconv.Itoa(i)))
				if err != nil || len(got.Choices) == 0 {
					errs <- model + ": " + errString(err)
				}
			})
		}
		wg.Wait()
		close(errs)
		for msg := range errs {
			t.Errorf("request failed: %s", msg)
		}
	}
	burst()
	if got := m.Stats().TokensIssued; got != 2 {
		t.Errorf("%d exchanges, want 2: the first token and one replacement for the whole burst", got)
	}
	fc.Advance(5 * time.Minute) // the first token expires at the upstream
	burst()
	if st := m.Stats(); st.TokensIssued != 2 || st.LastHeaders.Get("Authorization") == first || st.ByStatus[http.StatusUnauthorized] != 0 {
		t.Errorf("after the first token expired: %d exchanges, %d answers 401, still sending it: %v",
			st.TokensIssued, st.ByStatus[http.StatusUnauthorized], st.LastHeaders.Get("Authorization") == first)
	}
	res := rawRequest(t, http.MethodGet, url+"/v1/publishers/google/models/"+vertexGemini, nil, "Authorization", first)
	if res.status != http.StatusUnauthorized {
		t.Errorf("the first token is still accepted (%d): the test proves nothing", res.status)
	}
}

// errString is err's message, or "no choices" for a nil error.
func errString(err error) string {
	if err == nil {
		return "no choices"
	}
	return err.Error()
}

// TestVertexTokenFailureFailsOver: when a vertex upstream's token
// exchange fails (the endpoint's 500, or invalid_grant for a key it does
// not trust), that upstream has an auth error (its breaker opens at once)
// and another upstream serves the request; the failing one is not tried
// again while its breaker is open.
func TestVertexTokenFailureFailsOver(t *testing.T) {
	stranger, err := mock.NewServiceAccount("stranger@p1.iam.gserviceaccount.com")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name string
		opts mock.Options
	}{
		{"token endpoint 500", mock.Options{Behavior: mock.Behavior{TokenStatus: http.StatusInternalServerError}}},
		{"invalid_grant", mock.Options{ServiceAccount: stranger}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			broken, brokenURL := startVertexMock(t, "broken", tc.opts)
			backup, backupURL := startVertexMock(t, "backup", mock.Options{})
			e := startVertexGateway(t, spec{upstreams: []config.Upstream{
				vertexUpstream("vertex-broken", brokenURL, 0), vertexUpstream("vertex-backup", backupURL, 1),
			}})
			for i, proto := range []string{"anthropic", "openai", "gemini"} {
				got := vertexAsk(t, e, proto, vertexClaude, false)
				wantAttempts := "1" // the broken upstream's breaker is open
				if i == 0 {
					wantAttempts = "2"
				}
				if up, n := got.header.Get("X-Switchyard-Upstream"), got.header.Get("X-Switchyard-Attempts"); up != "vertex-backup" || n != wantAttempts {
					t.Errorf("request %d (%s): served by %s after %s attempts, want vertex-backup after %s", i, proto, up, n, wantAttempts)
				}
			}
			if st := broken.Stats(); st.TokensRefused != 1 || st.Requests != 0 {
				t.Errorf("broken upstream: %d exchanges refused, %d API requests; want 1 and none", st.TokensRefused, st.Requests)
			}
			if st := backup.Stats(); st.TokensIssued != 1 || st.Requests != 3 {
				t.Errorf("backup upstream: %d tokens, %d requests; want 1 and 3", st.TokensIssued, st.Requests)
			}
			s := scrapeMetrics(t, e, "")
			for _, c := range []struct {
				name   string
				labels map[string]string
				want   float64
			}{
				{"switchyard_upstream_errors_total", map[string]string{"upstream": "vertex-broken", "class": "auth"}, 1},
				{"switchyard_upstream_errors_total", map[string]string{"upstream": "vertex-backup"}, 0},
				{"switchyard_upstream_breaker_state", map[string]string{"upstream": "vertex-broken", "state": "open"}, 1},
				{"switchyard_upstream_breaker_state", map[string]string{"upstream": "vertex-backup", "state": "open"}, 0},
			} {
				if got, _ := s.value(c.name, c.labels); got != c.want {
					t.Errorf("%s%v = %v, want %v", c.name, c.labels, got, c.want)
				}
			}
		})
	}
}

// TestVertexResourceExhausted: a 429 RESOURCE_EXHAUSTED whose RetryInfo
// asks for 60 s (the mock's RPM window, on the gateway's fake clock) cools
// the upstream down for exactly that long while the next upstream serves
// every request without a client error.
func TestVertexResourceExhausted(t *testing.T) {
	fc := clock.NewFake(time.Now())
	limited, limitedURL := startVertexMock(t, "limited", mock.Options{Clock: fc, Behavior: mock.Behavior{RPM: 1}})
	_, backupURL := startVertexMock(t, "backup", mock.Options{})
	e := startVertexGateway(t, spec{clock: fc, upstreams: []config.Upstream{
		vertexUpstream("vertex-limited", limitedURL, 0), vertexUpstream("vertex-backup", backupURL, 1),
	}})
	steps := []struct {
		advance  time.Duration
		upstream string
		attempts string
	}{
		{0, "vertex-limited", "1"},               // within its RPM
		{0, "vertex-backup", "2"},                // 429 RESOURCE_EXHAUSTED, retryDelay 60s: failover
		{59 * time.Second, "vertex-backup", "1"}, // cooling down: not tried
		{time.Second, "vertex-limited", "1"},     // the cooldown and the RPM window are over
	}
	for i, s := range steps {
		fc.Advance(s.advance)
		got := vertexAsk(t, e, "gemini", vertexGemini, false)
		if up, n := got.header.Get("X-Switchyard-Upstream"), got.header.Get("X-Switchyard-Attempts"); up != s.upstream || n != s.attempts {
			t.Errorf("step %d: served by %s after %s attempts, want %s after %s", i, up, n, s.upstream, s.attempts)
		}
	}
	if got := limited.Stats().ByStatus[http.StatusTooManyRequests]; got != 1 {
		t.Errorf("the limited upstream answered %d 429s, want 1", got)
	}
	if got, _ := scrapeMetrics(t, e, "").value("switchyard_rate_limited_total", map[string]string{"upstream": "vertex-limited"}); got != 1 {
		t.Errorf("switchyard_rate_limited_total{upstream=vertex-limited} = %v, want 1", got)
	}
}
