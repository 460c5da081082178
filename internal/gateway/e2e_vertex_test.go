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
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	opts.Name, opts.Seed = name, 42
	if opts.ServiceAccount == nil {
		opts.ServiceAccount = vertexAccount()
	}
	srv, url, err := mock.Start(ctx, "127.0.0.1:0", opts)
	if err != nil {
		t.Fatal(err)
	}
	return srv, url
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
	header  http.Header // nil for streams
}

// vertexAsk sends "Hello" for model through the client of protocol proto
// ("openai", "anthropic", "gemini"), plain or streamed, and returns the
// answer; it fails the test on any error.
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
		st := client.Chat.Completions.NewStreaming(ctx, params)
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
		st := client.Messages.NewStreaming(ctx, params)
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
		s.in, s.out = msg.Usage.InputTokens, msg.Usage.OutputTokens
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
