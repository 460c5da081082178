package gateway_test

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"
	"google.golang.org/genai"

	"switchyard/internal/config"
	"switchyard/internal/metrics"
	"switchyard/internal/mock"
	"switchyard/internal/provider"
)

// End-to-end tests of the bedrock provider: the gateway's clients (OpenAI,
// Anthropic and Gemini SDKs) served by Bedrock mocks that verify the
// gateway's SigV4 signatures, and Bedrock's failures (a wrong secret,
// throttling, an exception as a stream's first frame) failed over.

const (
	// bedrockKeyID and bedrockSecret are the AWS keys the mocks accept.
	bedrockKeyID  = "AKIDE2EBEDROCK"
	bedrockSecret = "e2e-bedrock-secret"
	// bedrockModel is the client's model name, bedrockModelID Bedrock's.
	bedrockModel   = "claude-sonnet-4"
	bedrockModelID = "us.anthropic.claude-sonnet-4-20250514-v1:0"
)

// startBedrockMock starts a mock that accepts only SigV4 signatures made
// with bedrockKeyID and bedrockSecret.
func startBedrockMock(t testing.TB, name string, b mock.Behavior) (*mock.Server, string) {
	t.Helper()
	return startMockWith(t, mock.Options{Name: name, Behavior: b, AWSAccessKeyID: bedrockKeyID, AWSSecretAccessKey: bedrockSecret})
}

// bedrockUpstreamAt is a bedrock upstream on a mock, signing with secret.
func bedrockUpstreamAt(name, mockURL, secret string, priority int) config.Upstream {
	u := config.DefaultUpstream()
	u.Name, u.Provider, u.BaseURL, u.Priority = name, config.ProviderBedrock, mockURL, priority
	u.Models = []string{bedrockModel}
	u.ModelMap = map[string]string{bedrockModel: bedrockModelID}
	u.Bedrock = &provider.BedrockSettings{Region: "us-east-1", AccessKeyID: bedrockKeyID, SecretAccessKey: secret}
	return u
}

// bedrockGenai is a Gemini SDK client for the gateway with the test key.
func bedrockGenai(t testing.TB, e *env) *genai.Client {
	t.Helper()
	c, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey: testKey, Backend: genai.BackendGeminiAPI,
		HTTPOptions: genai.HTTPOptions{BaseURL: e.URL, APIVersion: "v1beta"},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// bedrockServed is what one client's answer says, in common terms.
type bedrockServed struct {
	text     string
	in, out  int64
	header   http.Header
	finished string
}

// TestBedrockServesEveryClient: each client protocol, plain and streamed,
// reaches Claude on Bedrock translated, signed as the mock verifies; the
// answer's text and usage are the mock's, and the client's key never
// leaves the gateway.
func TestBedrockServesEveryClient(t *testing.T) {
	m, url := startBedrockMock(t, "bedrock-a", mock.Behavior{})
	e := startGateway(t, spec{upstreams: []config.Upstream{bedrockUpstreamAt("bedrock-a", url, bedrockSecret, 0)}})
	ctx := context.Background()
	const prompt = "Say something about trains."
	clients := []struct {
		name, protocol string
		ask            func(t *testing.T, stream bool) bedrockServed
	}{
		{"openai", "openai-chat", func(t *testing.T, stream bool) bedrockServed {
			c := e.openAI(testKey)
			var raw *http.Response
			if !stream {
				r, err := c.Chat.Completions.New(ctx, chatParams(bedrockModel, prompt), option.WithResponseInto(&raw))
				if err != nil {
					t.Fatal(err)
				}
				return bedrockServed{r.Choices[0].Message.Content, r.Usage.PromptTokens, r.Usage.CompletionTokens, raw.Header, r.Choices[0].FinishReason}
			}
			params := chatParams(bedrockModel, prompt)
			params.StreamOptions = openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)}
			s := c.Chat.Completions.NewStreaming(ctx, params, option.WithResponseInto(&raw))
			var acc openai.ChatCompletionAccumulator
			for s.Next() {
				acc.AddChunk(s.Current())
			}
			if err := s.Err(); err != nil {
				t.Fatal(err)
			}
			return bedrockServed{acc.Choices[0].Message.Content, acc.Usage.PromptTokens, acc.Usage.CompletionTokens, raw.Header, acc.Choices[0].FinishReason}
		}},
		{"anthropic", "anthropic", func(t *testing.T, stream bool) bedrockServed {
			c := e.anthropic(testKey)
			params := anthropic.MessageNewParams{Model: bedrockModel, MaxTokens: 256,
				Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))}}
			var raw *http.Response
			var msg anthropic.Message
			if !stream {
				r, err := c.Messages.New(ctx, params, aoption.WithResponseInto(&raw))
				if err != nil {
					t.Fatal(err)
				}
				msg = *r
			} else {
				s := c.Messages.NewStreaming(ctx, params, aoption.WithResponseInto(&raw))
				for s.Next() {
					if err := msg.Accumulate(s.Current()); err != nil {
						t.Fatal(err)
					}
				}
				if err := s.Err(); err != nil {
					t.Fatal(err)
				}
			}
			var text strings.Builder
			for _, b := range msg.Content {
				text.WriteString(b.Text)
			}
			return bedrockServed{text.String(), msg.Usage.InputTokens, msg.Usage.OutputTokens, raw.Header, string(msg.StopReason)}
		}},
		{"gemini", "gemini", func(t *testing.T, stream bool) bedrockServed {
			c := bedrockGenai(t, e)
			var got bedrockServed
			add := func(r *genai.GenerateContentResponse) {
				got.text += r.Text()
				if u := r.UsageMetadata; u != nil {
					got.in, got.out = int64(u.PromptTokenCount), int64(u.CandidatesTokenCount)
				}
				if r.SDKHTTPResponse != nil {
					got.header = r.SDKHTTPResponse.Headers
				}
				if fr := r.Candidates[0].FinishReason; fr != "" {
					got.finished = string(fr)
				}
			}
			if !stream {
				r, err := c.Models.GenerateContent(ctx, bedrockModel, genai.Text(prompt), nil)
				if err != nil {
					t.Fatal(err)
				}
				add(r)
				return got
			}
			for r, err := range c.Models.GenerateContentStream(ctx, bedrockModel, genai.Text(prompt), nil) {
				if err != nil {
					t.Fatal(err)
				}
				add(r)
			}
			return got
		}},
	}
	finish := map[string]string{"openai": "stop", "anthropic": "end_turn", "gemini": "STOP"}
	for _, c := range clients {
		for _, stream := range []bool{false, true} {
			name := c.name + "/plain"
			if stream {
				name = c.name + "/stream"
			}
			t.Run(name, func(t *testing.T) {
				got := c.ask(t, stream)
				st := m.Stats()
				wantIn := max(int64(len(st.LastBody))/4, 1) // the mock's prompt tokens
				if n := len(strings.Fields(got.text)); n != mock.DefaultCompletionTokens || got.out != mock.DefaultCompletionTokens || got.in != wantIn {
					t.Errorf("%d words, usage in %d out %d; want %d words, in %d", n, got.in, got.out, mock.DefaultCompletionTokens, wantIn)
				}
				if got.finished != finish[c.name] {
					t.Errorf("finished %q, want %q", got.finished, finish[c.name])
				}
				if got.header.Get("X-Switchyard-Upstream") != "bedrock-a" || got.header.Get("X-Switchyard-Translated") != c.protocol+"->bedrock" {
					t.Errorf("headers %v", got.header)
				}
				op := "converse"
				if stream {
					op = "converse-stream"
				}
				if want := "/model/" + bedrockModelID + "/" + op; st.LastPath != want {
					t.Errorf("upstream path %s, want %s", st.LastPath, want)
				}
				h := st.LastHeaders
				if auth := h.Get("Authorization"); !strings.HasPrefix(auth, "AWS4-HMAC-SHA256 Credential="+bedrockKeyID+"/") || strings.Contains(auth, testKey) ||
					h.Get("X-Api-Key") != "" || h.Get("X-Goog-Api-Key") != "" {
					t.Errorf("upstream credentials: %v", h)
				}
				if gjson.Get(st.LastBody, "messages.0.content.0.text").String() != prompt {
					t.Errorf("upstream body %s", st.LastBody)
				}
			})
		}
	}
}

// TestBedrockWrongSecretOpensBreaker: an upstream signing with a wrong
// secret gets 403 InvalidSignatureException; the gateway counts an auth
// error, opens that upstream's breaker at once and serves the request
// from the next; the next request does not try it.
func TestBedrockWrongSecretOpensBreaker(t *testing.T) {
	bad, badURL := startBedrockMock(t, "bad", mock.Behavior{})
	good, goodURL := startBedrockMock(t, "good", mock.Behavior{})
	e := startGateway(t, spec{upstreams: []config.Upstream{
		bedrockUpstreamAt("bad", badURL, "not-the-secret", 0),
		bedrockUpstreamAt("good", goodURL, bedrockSecret, 1),
	}})
	client := e.openAI(testKey)
	for i, wantAttempts := range []string{"2", "1"} {
		var raw *http.Response
		r, err := client.Chat.Completions.New(context.Background(), chatParams(bedrockModel, "hi"), option.WithResponseInto(&raw))
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		if up, n := raw.Header.Get("X-Switchyard-Upstream"), raw.Header.Get("X-Switchyard-Attempts"); up != "good" || n != wantAttempts || r.Choices[0].Message.Content == "" {
			t.Errorf("request %d bedrockServed by %s after %s attempts, want good after %s", i, up, n, wantAttempts)
		}
	}
	if st := bad.Stats(); st.Requests != 1 || st.ByStatus[http.StatusForbidden] != 1 {
		t.Errorf("the bad upstream saw %d requests, by status %v; want one 403", st.Requests, st.ByStatus)
	}
	if n := good.Stats().Requests; n != 2 {
		t.Errorf("the good upstream bedrockServed %d requests, want 2", n)
	}
	if s := bedrockUpstreamState(t, e, "bad"); s.BreakerState != "open" {
		t.Errorf("the bad upstream's breaker is %q, want open", s.BreakerState)
	}
	logs := e.RequestLogs()
	if len(logs) != 2 || logs[0].Upstream != "good" || logs[0].InputTokens == 0 || logs[0].OutputTokens != mock.DefaultCompletionTokens {
		t.Errorf("request logs %+v", logs)
	}
}

// TestBedrockThrottlingCoolsDown: a ThrottlingException (429, no
// Retry-After) puts the upstream in cooldown without opening its breaker,
// and the client is bedrockServed by the next upstream without an error.
func TestBedrockThrottlingCoolsDown(t *testing.T) {
	throttled, throttledURL := startBedrockMock(t, "throttled", mock.Behavior{ForceStatus: http.StatusTooManyRequests})
	_, nextURL := startBedrockMock(t, "next", mock.Behavior{})
	e := startGateway(t, spec{upstreams: []config.Upstream{
		bedrockUpstreamAt("throttled", throttledURL, bedrockSecret, 0),
		bedrockUpstreamAt("next", nextURL, bedrockSecret, 1),
	}})
	client := e.anthropic(testKey)
	params := anthropic.MessageNewParams{Model: bedrockModel, MaxTokens: 100,
		Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("hi"))}}
	for i, wantAttempts := range []string{"2", "1"} {
		var raw *http.Response
		if _, err := client.Messages.New(context.Background(), params, aoption.WithResponseInto(&raw)); err != nil {
			t.Fatalf("request %d: the client saw %v", i, err)
		}
		if up, n := raw.Header.Get("X-Switchyard-Upstream"), raw.Header.Get("X-Switchyard-Attempts"); up != "next" || n != wantAttempts {
			t.Errorf("request %d bedrockServed by %s after %s attempts, want next after %s", i, up, n, wantAttempts)
		}
	}
	if st := throttled.Stats(); st.Requests != 1 || st.ByStatus[http.StatusTooManyRequests] != 1 {
		t.Errorf("the throttled upstream saw %d requests (%v), want one 429 and then a cooldown", st.Requests, st.ByStatus)
	}
	if s := bedrockUpstreamState(t, e, "throttled"); !s.CoolingDown || s.BreakerState == "open" {
		t.Errorf("the throttled upstream: cooling down %v, breaker %q", s.CoolingDown, s.BreakerState)
	}
}

// TestBedrockStreamExceptions: an exception as a ConverseStream's first
// frame fails over within the request, so the client streams the next
// upstream's answer; one after the stream has started ends the client's
// stream with its protocol's error event.
func TestBedrockStreamExceptions(t *testing.T) {
	first, firstURL := startBedrockMock(t, "first", mock.Behavior{StreamException: "serviceUnavailableException"})
	_, secondURL := startBedrockMock(t, "second", mock.Behavior{})
	e := startGateway(t, spec{upstreams: []config.Upstream{
		bedrockUpstreamAt("first", firstURL, bedrockSecret, 0),
		bedrockUpstreamAt("second", secondURL, bedrockSecret, 1),
	}})
	body := `{"model":"` + bedrockModel + `","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`

	resp := e.openStream(t, "/v1/chat/completions", body, "second")
	raw, _ := io.ReadAll(resp.Body)
	events := parseSSE(raw)
	if n := resp.Header.Get("X-Switchyard-Attempts"); n != "2" || len(events) < 3 || events[len(events)-1].data != "[DONE]" {
		t.Fatalf("after %s attempts the client got %s", n, raw)
	}
	usage := gjson.Get(events[len(events)-2].data, "usage")
	if usage.Get("completion_tokens").Int() != mock.DefaultCompletionTokens || usage.Get("prompt_tokens").Int() == 0 {
		t.Errorf("usage %s", usage.Raw)
	}
	if n := first.Stats().Requests; n != 1 {
		t.Errorf("the first upstream saw %d requests, want 1", n)
	}

	// Once the stream has reached the client it stays on its upstream.
	first.SetBehavior(mock.Behavior{})
	_, lateURL := startBedrockMock(t, "late", mock.Behavior{StreamException: "modelStreamErrorException", StreamExceptionAfter: 3})
	e2 := startGateway(t, spec{upstreams: []config.Upstream{bedrockUpstreamAt("late", lateURL, bedrockSecret, 0)}})
	resp = e2.openStream(t, "/v1/chat/completions", body, "late")
	raw, _ = io.ReadAll(resp.Body)
	events = parseSSE(raw)
	last := events[len(events)-1]
	if gjson.Get(events[0].data, "choices.0.delta.content").String() == "" && gjson.Get(events[1].data, "choices.0.delta.content").String() == "" {
		t.Errorf("no text reached the client before the exception: %s", raw)
	}
	if !gjson.Get(last.data, "error.message").Exists() || strings.Contains(string(raw), "[DONE]") {
		t.Errorf("the stream does not end with an error event: %s", raw)
	}
}

// bedrockUpstreamState is the live state of upstream name.
func bedrockUpstreamState(t testing.TB, e *env, name string) metrics.UpstreamState {
	t.Helper()
	for _, s := range e.G.UpstreamStates() {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no upstream %s in %+v", name, e.G.UpstreamStates())
	return metrics.UpstreamState{}
}
