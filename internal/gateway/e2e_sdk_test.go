package gateway_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"switchyard/internal/config"
	"switchyard/internal/mock"
)

// promptMarker is in every prompt; it must never reach the request log.
const promptMarker = "PROMPT-MARKER-7f3a9c"

// sdkCall is what one SDK call through the gateway produced.
type sdkCall struct {
	raw    *http.Response // the HTTP response the SDK received
	answer string         // the text the SDK assembled ("" for embeddings)
}

// TestSDKTrafficThroughGateway sends each kind of request the official SDKs
// make through the gateway over loopback, checks the answers, the gateway
// headers, and the request log the gateway persisted for each.
func TestSDKTrafficThroughGateway(t *testing.T) {
	oaMock, oaURL := startMock(t, "mock-openai", mock.Behavior{CompletionTokens: 9})
	antMock, antURL := startMock(t, "mock-anthropic", mock.Behavior{CompletionTokens: 7})
	e := startGateway(t, spec{upstreams: []config.Upstream{
		upstreamAt("openai-a", config.ProviderOpenAI, oaURL, 0, "gpt-4o-mini", "text-embedding-3-small"),
		upstreamAt("anthropic-a", config.ProviderAnthropic, antURL, 0, "claude-3-5-haiku"),
	}})
	oa, ant := e.openAI(testKey), e.anthropic(testKey)
	ctx := context.Background()
	prompt := "Say hello. " + promptMarker

	tests := []struct {
		name       string
		model      string
		upstream   string
		stream     bool
		wantOutput bool // the upstream reports output tokens
		call       func(t *testing.T) sdkCall
	}{
		{
			name: "openai chat completion", model: "gpt-4o-mini", upstream: "openai-a", wantOutput: true,
			call: func(t *testing.T) sdkCall {
				var raw *http.Response
				got, err := oa.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
					Model:    "gpt-4o-mini",
					Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
				}, option.WithResponseInto(&raw))
				if err != nil {
					t.Fatal(err)
				}
				if len(got.Choices) != 1 || got.Choices[0].Message.Content == "" || got.Model != "gpt-4o-mini" {
					t.Fatalf("completion %s", got.RawJSON())
				}
				if got.Usage.PromptTokens <= 0 || got.Usage.CompletionTokens != 9 {
					t.Errorf("usage %+v, want prompt > 0 and 9 completion tokens", got.Usage)
				}
				return sdkCall{raw: raw, answer: got.Choices[0].Message.Content}
			},
		},
		{
			name: "openai chat stream with usage", model: "gpt-4o-mini", upstream: "openai-a", stream: true, wantOutput: true,
			call: func(t *testing.T) sdkCall {
				var raw *http.Response
				stream := oa.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
					Model:         "gpt-4o-mini",
					Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
					StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
				}, option.WithResponseInto(&raw))
				var acc openai.ChatCompletionAccumulator
				chunks := 0
				for stream.Next() {
					chunks++
					if !acc.AddChunk(stream.Current()) {
						t.Fatalf("accumulator rejected chunk %s", stream.Current().RawJSON())
					}
				}
				if err := stream.Err(); err != nil {
					t.Fatal(err)
				}
				if len(acc.Choices) != 1 || acc.Choices[0].Message.Content == "" || acc.Choices[0].FinishReason != "stop" {
					t.Fatalf("accumulated %+v after %d chunks", acc.Choices, chunks)
				}
				if acc.Usage.PromptTokens <= 0 || acc.Usage.CompletionTokens != 9 {
					t.Errorf("streamed usage %+v, want prompt > 0 and 9 completion tokens", acc.Usage)
				}
				return sdkCall{raw: raw, answer: acc.Choices[0].Message.Content}
			},
		},
		{
			name: "openai embeddings", model: "text-embedding-3-small", upstream: "openai-a",
			call: func(t *testing.T) sdkCall {
				var raw *http.Response
				got, err := oa.Embeddings.New(ctx, openai.EmbeddingNewParams{
					Model: "text-embedding-3-small",
					Input: openai.EmbeddingNewParamsInputUnion{OfArrayOfStrings: []string{prompt, "second " + promptMarker}},
				}, option.WithResponseInto(&raw))
				if err != nil {
					t.Fatal(err)
				}
				if len(got.Data) != 2 || len(got.Data[0].Embedding) == 0 || got.Usage.PromptTokens <= 0 {
					t.Fatalf("embeddings %s", got.RawJSON())
				}
				return sdkCall{raw: raw}
			},
		},
		{
			name: "anthropic message", model: "claude-3-5-haiku", upstream: "anthropic-a", wantOutput: true,
			call: func(t *testing.T) sdkCall {
				var raw *http.Response
				msg, err := ant.Messages.New(ctx, anthropic.MessageNewParams{
					Model:     "claude-3-5-haiku",
					MaxTokens: 256,
					Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))},
				}, aoption.WithResponseInto(&raw))
				if err != nil {
					t.Fatal(err)
				}
				if len(msg.Content) != 1 || msg.Content[0].Text == "" || msg.StopReason != anthropic.StopReasonEndTurn {
					t.Fatalf("message %s", msg.RawJSON())
				}
				if msg.Usage.InputTokens <= 0 || msg.Usage.OutputTokens != 7 {
					t.Errorf("usage %+v, want input > 0 and 7 output tokens", msg.Usage)
				}
				return sdkCall{raw: raw, answer: msg.Content[0].Text}
			},
		},
		{
			name: "anthropic message stream", model: "claude-3-5-haiku", upstream: "anthropic-a", stream: true, wantOutput: true,
			call: func(t *testing.T) sdkCall {
				var raw *http.Response
				stream := ant.Messages.NewStreaming(ctx, anthropic.MessageNewParams{
					Model:     "claude-3-5-haiku",
					MaxTokens: 256,
					Messages:  []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock(prompt))},
				}, aoption.WithResponseInto(&raw))
				var acc anthropic.Message
				var types []string
				for stream.Next() {
					ev := stream.Current()
					types = append(types, ev.Type)
					if err := acc.Accumulate(ev); err != nil {
						t.Fatal(err)
					}
				}
				if err := stream.Err(); err != nil {
					t.Fatal(err)
				}
				if len(types) == 0 || types[len(types)-1] != "message_stop" {
					t.Fatalf("event types %v, want the last to be message_stop", types)
				}
				if len(acc.Content) != 1 || acc.Content[0].Text == "" || acc.Usage.OutputTokens != 7 {
					t.Fatalf("accumulated %s", acc.RawJSON())
				}
				return sdkCall{raw: raw, answer: acc.Content[0].Text}
			},
		},
	}

	type expectation struct {
		model, upstream    string
		stream, wantOutput bool
	}
	want := map[string]expectation{} // by request id
	var answers []string
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := tc.call(t)
			if got.raw == nil {
				t.Fatal("the SDK exposed no HTTP response")
			}
			h := got.raw.Header
			if up := h.Get("X-Switchyard-Upstream"); up != tc.upstream {
				t.Errorf("X-Switchyard-Upstream = %q, want %q", up, tc.upstream)
			}
			if n := h.Get("X-Switchyard-Attempts"); n != "1" {
				t.Errorf("X-Switchyard-Attempts = %q, want 1", n)
			}
			id := h.Get("X-Request-Id")
			if id == "" {
				t.Fatal("no X-Request-Id")
			}
			if _, dup := want[id]; dup {
				t.Fatalf("request id %q reused", id)
			}
			want[id] = expectation{tc.model, tc.upstream, tc.stream, tc.wantOutput}
			if got.answer != "" {
				answers = append(answers, got.answer)
			}
		})
	}

	t.Run("raw request keeps the client's request id", func(t *testing.T) {
		const id = "e2e-raw-request-1"
		r := e.post(t, "/v1/chat/completions",
			`{"model":"gpt-4o-mini","messages":[{"role":"user","content":"raw `+promptMarker+`"}]}`, "X-Request-Id", id)
		if r.status != http.StatusOK {
			t.Fatalf("status %d: %s", r.status, r.body)
		}
		for name, v := range map[string]string{"X-Switchyard-Upstream": "openai-a", "X-Switchyard-Attempts": "1", "X-Request-Id": id} {
			if got := r.header.Get(name); got != v {
				t.Errorf("%s = %q, want %q", name, got, v)
			}
		}
		if r.header.Get(mock.HeaderUpstream) != "mock-openai" {
			t.Errorf("the upstream's own headers were not passed through: %v", r.header)
		}
		answer := gjson.GetBytes(r.body, "choices.0.message.content").String()
		if answer == "" {
			t.Fatalf("no content in %s", r.body)
		}
		want[id] = expectation{"gpt-4o-mini", "openai-a", false, true}
		answers = append(answers, answer)
	})

	t.Run("upstream auth replaces the client key", func(t *testing.T) {
		tests := []struct {
			m            *mock.Server
			header, want string
		}{
			{oaMock, "Authorization", "Bearer sk-upstream-openai-a"},
			{antMock, "X-Api-Key", "sk-upstream-anthropic-a"},
		}
		for _, tc := range tests {
			h := tc.m.Stats().LastHeaders
			if got := h.Get(tc.header); got != tc.want {
				t.Errorf("%s received %s = %q, want %q", tc.m.Name(), tc.header, got, tc.want)
			}
			for name, vs := range h {
				if strings.Contains(strings.Join(vs, " "), testKey) {
					t.Errorf("%s received the client key in %s", tc.m.Name(), name)
				}
			}
		}
	})

	t.Run("request log", func(t *testing.T) {
		logs := e.RequestLogs()
		if len(logs) != len(want) {
			t.Fatalf("%d request logs, want %d: %+v", len(logs), len(want), logs)
		}
		for _, l := range logs {
			w, ok := want[l.ID]
			if !ok {
				t.Errorf("log for unknown request %q", l.ID)
				continue
			}
			if l.Key != "e2e" || l.Model != w.model || l.Upstream != w.upstream || l.Status != 200 ||
				l.Attempts != 1 || l.Stream != w.stream || l.ErrorClass != "" || l.Error != "" {
				t.Errorf("log %+v, want key e2e, model %s, upstream %s, status 200, 1 attempt, stream %v",
					l, w.model, w.upstream, w.stream)
			}
			if l.TTFT <= 0 || l.TTFT > l.Latency {
				t.Errorf("log %s: TTFT %v, latency %v: want 0 < TTFT ≤ latency", l.ID, l.TTFT, l.Latency)
			}
			if l.InputTokens <= 0 || (l.OutputTokens > 0) != w.wantOutput {
				t.Errorf("log %s: tokens in %d out %d", l.ID, l.InputTokens, l.OutputTokens)
			}
		}
		// No body text in the log nor anywhere in the database files.
		js, _ := json.Marshal(logs)
		dbFiles, _ := filepath.Glob(e.DSN + "*")
		if len(dbFiles) == 0 {
			t.Fatalf("no database file at %s", e.DSN)
		}
		needles := append([]string{promptMarker}, answers...)
		for _, needle := range needles {
			if strings.Contains(string(js), needle) {
				t.Errorf("request log holds body text %q", needle)
			}
			for _, f := range dbFiles {
				data, err := os.ReadFile(f)
				if err != nil {
					t.Fatal(err)
				}
				if strings.Contains(string(data), needle) {
					t.Errorf("database file %s holds body text %q", filepath.Base(f), needle)
				}
			}
		}
	})
}

// TestH2CClient: a client speaking HTTP/2 without TLS (prior knowledge) gets
// JSON answers and event streams like an HTTP/1.1 client.
func TestH2CClient(t *testing.T) {
	_, url := startMock(t, "mock", mock.Behavior{CompletionTokens: 4})
	e := startGateway(t, spec{upstreams: []config.Upstream{upstreamAt("openai-a", config.ProviderOpenAI, url, 0, "gpt-4o")}})
	var protocols http.Protocols
	protocols.SetUnencryptedHTTP2(true)
	client := &http.Client{Transport: &http.Transport{Protocols: &protocols}}
	t.Cleanup(client.CloseIdleConnections) // before the gateway shuts down
	tests := []struct {
		name, body string
		check      func(t *testing.T, body []byte)
	}{
		{"json", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`, func(t *testing.T, body []byte) {
			if gjson.GetBytes(body, "choices.0.message.content").String() == "" {
				t.Errorf("no content in %s", body)
			}
		}},
		{"stream", `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}`, func(t *testing.T, body []byte) {
			events := parseSSE(body)
			if len(events) < 2 || events[len(events)-1].data != "[DONE]" {
				t.Errorf("stream %s, want events ending with [DONE]", body)
			}
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodPost, e.URL+"/v1/chat/completions", strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+testKey)
			resp, err := client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			if resp.ProtoMajor != 2 || resp.StatusCode != http.StatusOK || resp.Header.Get("X-Switchyard-Upstream") != "openai-a" {
				t.Fatalf("%s %d via %q: %s", resp.Proto, resp.StatusCode, resp.Header.Get("X-Switchyard-Upstream"), body)
			}
			tc.check(t, body)
		})
	}
}
