package mock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/anthropics/anthropic-sdk-go/v2"
	"github.com/openai/openai-go/v3"
	"github.com/tidwall/gjson"
)

// faultRequest is one request of the fault tests: an endpoint, streamed or
// not.
type faultRequest struct {
	name, path, body string
	stream           bool
}

// faultRequests are a plain and a streamed request of every SSE family.
var faultRequests = []faultRequest{
	{"chat", "/v1/chat/completions", chatBody, false},
	{"chat stream", "/v1/chat/completions", `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"x"}]}`, true},
	{"responses", "/v1/responses", `{"model":"gpt-4o","input":"x"}`, false},
	{"responses stream", "/v1/responses", `{"model":"gpt-4o","stream":true,"input":"x"}`, true},
	{"messages", "/v1/messages", messagesBody, false},
	{"messages stream", "/v1/messages", `{"model":"c","stream":true,"max_tokens":50,"messages":[{"role":"user","content":"x"}]}`, true},
	{"gemini", "/v1beta/models/g:generateContent?key=k", `{"contents":[{"parts":[{"text":"x"}]}]}`, false},
	{"gemini stream", "/v1beta/models/g:streamGenerateContent?alt=sse&key=k", `{"contents":[{"parts":[{"text":"x"}]}]}`, true},
}

func TestEmptyBody(t *testing.T) {
	s, url := newServed(t, Options{Behavior: Behavior{EmptyBody: true}})
	for _, tt := range faultRequests {
		t.Run(tt.name, func(t *testing.T) {
			res := do(t, http.MethodPost, url+tt.path, tt.body)
			wantType := "application/json"
			if tt.stream {
				wantType = "text/event-stream"
			}
			if res.status != http.StatusOK || len(res.body) != 0 || !strings.HasPrefix(res.header.Get("Content-Type"), wantType) {
				t.Errorf("status %d, Content-Type %q, body %q; want 200, %s, empty", res.status, res.header.Get("Content-Type"), res.body, wantType)
			}
		})
	}
	if got := s.Stats().ByStatus[http.StatusOK]; got != int64(len(faultRequests)) {
		t.Errorf("%d answers counted 200, want %d", got, len(faultRequests))
	}
	t.Run("the openai sdk rejects it", func(t *testing.T) {
		oc := openAIClient(url)
		_, err := oc.Chat.Completions.New(context.Background(), openai.ChatCompletionNewParams{
			Model: "gpt-4o", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")},
		})
		if err == nil {
			t.Error("no error for an empty 200")
		}
	})
}

func TestStallAfterHeaders(t *testing.T) {
	for _, tt := range []faultRequest{faultRequests[0], faultRequests[1], faultRequests[5], faultRequests[7]} {
		t.Run(tt.name, func(t *testing.T) {
			s := New(Options{Behavior: Behavior{StallAfterHeaders: true}})
			stalled := make(chan struct{}, 1)
			done := make(chan struct{}, 1)
			s.hangHook = func() { stalled <- struct{}{} }
			s.doneHook = func() { done <- struct{}{} }
			url := serve(t, s)

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+tt.path, strings.NewReader(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			resp, err := http.DefaultClient.Do(req) // returns with the headers
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			<-stalled
			wantType := "application/json"
			if tt.stream {
				wantType = "text/event-stream"
			}
			if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), wantType) {
				t.Errorf("status %d, Content-Type %q; want 200 and %s", resp.StatusCode, resp.Header.Get("Content-Type"), wantType)
			}
			read := make(chan error, 1)
			go func() {
				b, err := io.ReadAll(resp.Body)
				if len(b) > 0 {
					err = errors.New("read " + string(b))
				}
				read <- err
			}()
			select {
			case err := <-read:
				t.Fatalf("the body ended while stalled: %v", err)
			default:
			}
			cancel()
			if err := <-read; !errors.Is(err, context.Canceled) {
				t.Errorf("body read = %v, want context.Canceled and no bytes", err)
			}
			<-done // the handler returns once the client is gone
			if st := s.Stats(); st.InFlight != 0 || st.Canceled != 1 {
				t.Errorf("stats = %+v, want the request finished and counted canceled", st)
			}
		})
	}
}

func TestMalformedStream(t *testing.T) {
	_, url := newServed(t, Options{Behavior: Behavior{MalformedStream: true}})
	for _, tt := range faultRequests {
		t.Run(tt.name, func(t *testing.T) {
			res := do(t, http.MethodPost, url+tt.path, tt.body)
			if res.status != http.StatusOK {
				t.Fatalf("status %d: %s", res.status, res.body)
			}
			if !tt.stream {
				if !json.Valid(res.body) {
					t.Errorf("a plain answer changed: %s", res.body)
				}
				return
			}
			first, rest, ok := strings.Cut(string(res.body), "\n\n")
			if !ok || !json.Valid([]byte(first)) || strings.Contains(first, "\n") {
				t.Fatalf("first block %q, want one line of bare JSON", first)
			}
			events := parseSSE(t, []byte(rest)) // the rest is well-formed SSE
			if len(events) == 0 || !gjson.Valid(events[len(events)-1].data) && events[len(events)-1].data != "[DONE]" {
				t.Errorf("the stream after the first line is not the usual answer: %s", rest)
			}
		})
	}
	t.Run("gemini array stream unchanged", func(t *testing.T) {
		res := do(t, http.MethodPost, url+"/v1beta/models/g:streamGenerateContent?key=k", `{"contents":[{"parts":[{"text":"x"}]}]}`)
		if !gjson.ValidBytes(res.body) || !gjson.ParseBytes(res.body).IsArray() {
			t.Errorf("body %s, want a JSON array", res.body)
		}
	})
}

func TestStreamError(t *testing.T) {
	chat, responses, messages, gemini := faultRequests[1], faultRequests[3], faultRequests[5], faultRequests[7]
	tests := []struct {
		name   string
		req    faultRequest
		b      Behavior
		events int // before the error; -1: no error event
		check  func(ev sseFrame) bool
	}{
		{"chat first", chat, Behavior{StreamError: 500}, 0, func(ev sseFrame) bool {
			return ev.event == "" && gjson.Get(ev.data, "error.type").Str == "server_error" && gjson.Get(ev.data, "error.message").Str != ""
		}},
		{"chat after two", chat, Behavior{StreamError: 429, StreamErrorAfter: 2}, 2, func(ev sseFrame) bool {
			return gjson.Get(ev.data, "error.code").Str == "rate_limit_exceeded"
		}},
		{"chat after the end: none", chat, Behavior{StreamError: 500, StreamErrorAfter: 1000}, -1, nil},
		{"responses first", responses, Behavior{StreamError: 500}, 0, func(ev sseFrame) bool {
			return ev.event == "error" && gjson.Get(ev.data, "type").Str == "error" && gjson.Get(ev.data, "code").Str == "server_error" &&
				gjson.Get(ev.data, "sequence_number").Int() == 0
		}},
		{"responses after three", responses, Behavior{StreamError: 429, StreamErrorAfter: 3}, 3, func(ev sseFrame) bool {
			return ev.event == "error" && gjson.Get(ev.data, "code").Str == "rate_limit_exceeded" && gjson.Get(ev.data, "sequence_number").Int() == 3
		}},
		{"messages overloaded first", messages, Behavior{StreamError: 529}, 0, func(ev sseFrame) bool {
			return ev.event == "error" && gjson.Get(ev.data, "type").Str == "error" &&
				gjson.Get(ev.data, "error.type").Str == "overloaded_error" && gjson.Get(ev.data, "error.message").Str == "Overloaded"
		}},
		{"messages after the start", messages, Behavior{StreamError: 500, StreamErrorAfter: 1}, 1, func(ev sseFrame) bool {
			return ev.event == "error" && gjson.Get(ev.data, "error.type").Str == "api_error"
		}},
		{"gemini first", gemini, Behavior{StreamError: 503}, 0, func(ev sseFrame) bool {
			return ev.event == "" && gjson.Get(ev.data, "error.code").Int() == 503 && gjson.Get(ev.data, "error.status").Str == "UNAVAILABLE"
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, url := newServed(t, Options{Behavior: tt.b})
			res := do(t, http.MethodPost, url+tt.req.path, tt.req.body)
			if res.status != http.StatusOK {
				t.Fatalf("status %d, want 200: %s", res.status, res.body)
			}
			events := parseSSE(t, res.body)
			if tt.events < 0 {
				for _, ev := range events {
					if ev.event == "error" || gjson.Get(ev.data, "error").Exists() {
						t.Errorf("an error event in a stream shorter than stream_error_after: %s", res.body)
					}
				}
				return
			}
			if len(events) != tt.events+1 || !tt.check(events[tt.events]) {
				t.Errorf("events %+v, want %d then the error event", events, tt.events)
			}
		})
	}
	t.Run("sdks report it", func(t *testing.T) {
		_, url := newServed(t, Options{Behavior: Behavior{StreamError: 529}})
		ac, oc := anthropicClient(url), openAIClient(url)
		as := ac.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{
			Model: "c", MaxTokens: 50, Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("x"))},
		})
		for as.Next() {
		}
		if err := as.Err(); err == nil || !strings.Contains(err.Error(), "overloaded_error") {
			t.Errorf("anthropic stream error %v, want overloaded_error", err)
		}
		os := oc.Chat.Completions.NewStreaming(context.Background(), openai.ChatCompletionNewParams{
			Model: "gpt-4o", Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage("x")},
		})
		for os.Next() {
		}
		if os.Err() == nil {
			t.Error("openai stream: no error")
		}
	})
}

// TestOmitDone: with omit_done, set over the control API, an OpenAI Chat
// or Completions stream ends with its last chunk (the finish_reason, or the
// usage one) and no [DONE], as some OpenAI-compatible servers end theirs;
// the other protocols' streams end as usual.
func TestOmitDone(t *testing.T) {
	_, url := newServed(t, Options{})
	tool := `"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],`
	tests := []struct {
		name, path, body string
		openAI           bool   // the stream ends with [DONE] unless omit_done
		field, want      string // of the last event before any [DONE]
	}{
		{"chat", "/v1/chat/completions", `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"x"}]}`,
			true, "choices.0.finish_reason", "stop"},
		{"chat tool call", "/v1/chat/completions", `{"model":"gpt-4o","stream":true,` + tool + `"messages":[{"role":"user","content":"x"}]}`,
			true, "choices.0.finish_reason", "tool_calls"},
		{"chat length with usage", "/v1/chat/completions",
			`{"model":"gpt-4o","stream":true,"max_tokens":2,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"x"}]}`,
			true, "usage.completion_tokens", "2"},
		{"completions", "/v1/completions", `{"model":"m","stream":true,"prompt":"x"}`, true, "choices.0.finish_reason", "stop"},
		{"messages", "/v1/messages", `{"model":"c","stream":true,"max_tokens":50,"messages":[{"role":"user","content":"x"}]}`,
			false, "type", "message_stop"},
		{"responses", "/v1/responses", `{"model":"gpt-4o","stream":true,"input":"x"}`, false, "type", "response.completed"},
	}
	for _, omit := range []bool{false, true} {
		patch := fmt.Sprintf(`{"omit_done":%v}`, omit)
		if res := do(t, http.MethodPatch, url+"/_mock/behavior", patch); res.status != http.StatusOK {
			t.Fatalf("PATCH %s: %d %s", patch, res.status, res.body)
		}
		for _, tt := range tests {
			t.Run(fmt.Sprintf("%s omit_done %v", tt.name, omit), func(t *testing.T) {
				events := parseSSE(t, do(t, http.MethodPost, url+tt.path, tt.body).body)
				if tt.openAI && !omit {
					if last := events[len(events)-1].data; last != "[DONE]" {
						t.Fatalf("last event %q, want [DONE]", last)
					}
					events = events[:len(events)-1]
				}
				if last := events[len(events)-1].data; gjson.Get(last, tt.field).String() != tt.want {
					t.Errorf("last event %s, want %s %s", last, tt.field, tt.want)
				}
			})
		}
	}
}
