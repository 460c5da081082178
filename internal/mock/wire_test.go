package mock

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// These tests read the raw bytes: SSE framing, headers, paths and errors.

func TestStreamFraming(t *testing.T) {
	_, url := newServed(t, Options{Name: "wire", Behavior: Behavior{CompletionTokens: 2}})
	tests := []struct {
		name       string
		path       string
		body       string
		header     []string
		wantEvents []string // event names ("" for OpenAI's data-only frames)
		wantLast   string   // data of the last frame, "" = JSON
	}{
		{
			name:       "chat with usage",
			path:       "/v1/chat/completions",
			body:       `{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`,
			wantEvents: []string{"", "", "", "", "", ""}, // role, 2 tokens, finish, usage, [DONE]
			wantLast:   "[DONE]",
		},
		{
			name:       "completions",
			path:       "/v1/completions",
			body:       `{"model":"gpt-3.5-turbo-instruct","stream":true,"prompt":"hi"}`,
			wantEvents: []string{"", "", "", ""}, // 2 tokens, finish, [DONE]
			wantLast:   "[DONE]",
		},
		{
			name: "messages",
			path: "/v1/messages",
			body: `{"model":"claude-3-5-haiku","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			wantEvents: []string{"message_start", "content_block_start", "ping", "content_block_delta", "content_block_delta",
				"content_block_stop", "message_delta", "message_stop"},
		},
		{
			name: "responses",
			path: "/v1/responses",
			body: `{"model":"gpt-4o","stream":true,"input":"hi"}`,
			wantEvents: []string{"response.created", "response.in_progress", "response.output_item.added",
				"response.content_part.added", "response.output_text.delta", "response.output_text.delta",
				"response.output_text.done", "response.content_part.done", "response.output_item.done", "response.completed"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := do(t, http.MethodPost, url+tt.path, tt.body, tt.header...)
			if res.status != http.StatusOK {
				t.Fatalf("status %d: %s", res.status, res.body)
			}
			if ct := res.header.Get("Content-Type"); !strings.HasPrefix(ct, "text/event-stream") {
				t.Errorf("Content-Type = %q", ct)
			}
			if cc := res.header.Get("Cache-Control"); cc != "no-cache" {
				t.Errorf("Cache-Control = %q", cc)
			}
			if h := res.header.Get(HeaderUpstream); h != "wire" {
				t.Errorf("%s = %q", HeaderUpstream, h)
			}
			frames := parseSSE(t, res.body)
			if len(frames) != len(tt.wantEvents) {
				t.Fatalf("%d frames, want %d:\n%s", len(frames), len(tt.wantEvents), res.body)
			}
			for i, f := range frames {
				if f.event != tt.wantEvents[i] {
					t.Errorf("frame %d event = %q, want %q", i, f.event, tt.wantEvents[i])
				}
				if i == len(frames)-1 && tt.wantLast != "" {
					if f.data != tt.wantLast {
						t.Errorf("last frame = %q, want %q", f.data, tt.wantLast)
					}
					continue
				}
				if !json.Valid([]byte(f.data)) {
					t.Errorf("frame %d data is not JSON: %q", i, f.data)
				}
				if f.event != "" && gjson.Get(f.data, "type").String() != f.event {
					t.Errorf("frame %d: data type %q ≠ event %q", i, gjson.Get(f.data, "type").String(), f.event)
				}
			}
		})
	}
}

func TestStreamUsageFields(t *testing.T) {
	_, url := newServed(t, Options{Behavior: Behavior{CompletionTokens: 3}})
	body := `{"model":"claude-3-5-haiku","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`
	frames := parseSSE(t, do(t, http.MethodPost, url+"/v1/messages", body).body)
	start, delta := frames[0].data, frames[len(frames)-2].data
	// Prompt tokens are the body's bytes / 4, not counting "stream":true.
	plain := func(body string) int64 { return int64(len(strings.Replace(body, `"stream":true,`, "", 1)) / 4) }
	if got := gjson.Get(start, "message.usage.input_tokens").Int(); got != plain(body) {
		t.Errorf("message_start input_tokens = %d, want %d", got, plain(body))
	}
	if got := gjson.Get(delta, "usage.output_tokens").Int(); got != 3 {
		t.Errorf("message_delta output_tokens = %d, want 3", got)
	}
	if got := gjson.Get(delta, "delta.stop_reason").String(); got != "end_turn" {
		t.Errorf("stop_reason = %q", got)
	}

	body = `{"model":"gpt-4o","stream":true,"input":"hi"}`
	frames = parseSSE(t, do(t, http.MethodPost, url+"/v1/responses", body).body)
	done := frames[len(frames)-1].data
	if got := gjson.Get(done, "response.usage.output_tokens").Int(); got != 3 {
		t.Errorf("response.completed output_tokens = %d", got)
	}
	if got := gjson.Get(done, "response.usage.input_tokens").Int(); got != plain(body) {
		t.Errorf("response.completed input_tokens = %d, want %d", got, plain(body))
	}
}

func TestPaths(t *testing.T) {
	s, url := newServed(t, Options{Name: "paths"})
	chat := `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`
	tests := []struct {
		name      string
		method    string
		path      string
		body      string
		header    []string
		want      int
		check     string // gjson path that must hold wantValue
		wantValue string
	}{
		{"chat with /v1", "POST", "/v1/chat/completions", chat, nil, 200, "object", "chat.completion"},
		{"chat without /v1", "POST", "/chat/completions", chat, nil, 404, "error.message", "Invalid URL (POST /chat/completions)"},
		{"trailing slash", "POST", "/v1/chat/completions/", chat, nil, 200, "object", "chat.completion"},
		{"azure deployment", "POST", "/openai/deployments/my-gpt/chat/completions?api-version=2024-10-21",
			`{"messages":[{"role":"user","content":"hi"}]}`, nil, 200, "model", "my-gpt"},
		{"azure body model wins", "POST", "/openai/deployments/my-gpt/chat/completions?api-version=2024-10-21",
			chat, nil, 200, "model", "gpt-4o"},
		{"azure v1", "POST", "/openai/v1/chat/completions", chat, nil, 200, "object", "chat.completion"},
		{"azure embeddings", "POST", "/openai/deployments/emb/embeddings?api-version=2024-10-21",
			`{"input":"x"}`, nil, 200, "model", "emb"},
		{"messages", "POST", "/v1/messages", `{"model":"claude-3-5-haiku","max_tokens":5,"messages":[]}`, nil, 200, "type", "message"},
		{"messages without /v1", "POST", "/messages", `{"model":"claude-3-5-haiku","max_tokens":5,"messages":[]}`,
			[]string{"anthropic-version", "2023-06-01"}, 404, "error.type", "not_found_error"},
		{"count_tokens without /v1", "POST", "/messages/count_tokens", `{"model":"claude-3-5-haiku","messages":[]}`,
			[]string{"anthropic-version", "2023-06-01"}, 404, "error.type", "not_found_error"},
		{"count_tokens", "POST", "/v1/messages/count_tokens", `{"model":"claude-3-5-haiku","messages":[{"role":"user","content":"hi"}]}`,
			[]string{"anthropic-version", "2023-06-01"}, 200, "input_tokens", "18"},
		{"models", "GET", "/v1/models", "", nil, 200, "object", "list"},
		{"models without /v1", "GET", "/models", "", nil, 404, "error.code", ""},
		{"embeddings without /v1", "POST", "/embeddings", `{"model":"e","input":"x"}`, nil, 404, "error.type", "invalid_request_error"},
		{"responses without /v1", "POST", "/responses", `{"model":"gpt-4o","input":"x"}`, nil, 404, "error.type", "invalid_request_error"},
		{"fine-tuned model by id", "GET", "/v1/models/ft:gpt-4o:org::abc", "", nil, 404, "error.code", "model_not_found"},
		{"azure without api-version", "POST", "/openai/deployments/my-gpt/chat/completions", chat, nil, 404, "error.type", "invalid_request_error"},
		{"azure under /v1", "POST", "/v1/openai/deployments/my-gpt/chat/completions?api-version=2024-10-21", chat, nil, 404, "error.type", "invalid_request_error"},
		{"azure responses", "POST", "/openai/responses?api-version=2025-04-01-preview", `{"model":"gpt-4o","input":"x"}`, nil, 200, "object", "response"},
		{"azure models", "GET", "/openai/models?api-version=2024-10-21", "", nil, 200, "object", "list"},
		{"model by id", "GET", "/v1/models/gpt-4o", "", nil, 200, "id", "gpt-4o"},
		{"anthropic models", "GET", "/v1/models", "", []string{"anthropic-version", "2023-06-01"}, 200, "data.0.type", "model"},
		{"anthropic model by id", "GET", "/v1/models/claude-3-5-haiku", "", []string{"anthropic-version", "2023-06-01"}, 200, "type", "model"},
		{"unknown path", "POST", "/v1/nope", chat, nil, 404, "error.type", "invalid_request_error"},
		{"unknown path anthropic", "POST", "/v1/nope", chat, []string{"anthropic-version", "2023-06-01"}, 404, "error.type", "not_found_error"},
		{"wrong method", "GET", "/v1/chat/completions", "", nil, 405, "error.type", "invalid_request_error"},
		{"models wrong method", "POST", "/v1/models", "{}", nil, 405, "error.type", "invalid_request_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := do(t, tt.method, url+tt.path, tt.body, tt.header...)
			if res.status != tt.want {
				t.Fatalf("status = %d, want %d: %s", res.status, tt.want, res.body)
			}
			if got := res.get(tt.check).String(); got != tt.wantValue {
				t.Errorf("%s = %q, want %q in %s", tt.check, got, tt.wantValue, res.body)
			}
			if h := res.header.Get(HeaderUpstream); h != "paths" {
				t.Errorf("%s = %q", HeaderUpstream, h)
			}
		})
	}
	st := s.Stats()
	if st.LastMethod != http.MethodPost && st.LastMethod != http.MethodGet {
		t.Errorf("last method = %q", st.LastMethod)
	}
	if st.ByEndpoint[epChat] != 6 || st.ByEndpoint[epModels] != 7 || st.ByEndpoint[epUnknown] != 10 {
		t.Errorf("by endpoint = %v", st.ByEndpoint)
	}
}

func TestAzureQueryRecorded(t *testing.T) {
	s, url := newServed(t, Options{})
	do(t, http.MethodPost, url+"/openai/deployments/d1/chat/completions?api-version=2024-10-21", `{"messages":[]}`, "api-key", "azure-secret")
	st := s.Stats()
	if st.LastPath != "/openai/deployments/d1/chat/completions" || st.LastQuery != "api-version=2024-10-21" ||
		st.LastHeaders.Get("api-key") != "azure-secret" {
		t.Errorf("last = %s ? %s %v", st.LastPath, st.LastQuery, st.LastHeaders)
	}
}

func TestValidation(t *testing.T) {
	_, url := newServed(t, Options{Name: "v"})
	tests := []struct {
		name     string
		path     string
		body     string
		want     int
		errPath  string // where the error type sits
		errType  string
		anthropc bool
	}{
		{name: "openai invalid json", path: "/v1/chat/completions", body: `{"model":`, want: 400, errPath: "error.type", errType: "invalid_request_error"},
		{name: "openai array body", path: "/v1/chat/completions", body: `[1,2]`, want: 400, errPath: "error.type", errType: "invalid_request_error"},
		{name: "openai missing model", path: "/v1/chat/completions", body: `{"messages":[]}`, want: 400, errPath: "error.type", errType: "invalid_request_error"},
		{name: "openai model not a string", path: "/v1/chat/completions", body: `{"model":4}`, want: 400, errPath: "error.type", errType: "invalid_request_error"},
		{name: "completions missing model", path: "/v1/completions", body: `{"prompt":"x"}`, want: 400, errPath: "error.type", errType: "invalid_request_error"},
		{name: "responses invalid json", path: "/v1/responses", body: `nope`, want: 400, errPath: "error.type", errType: "invalid_request_error"},
		{name: "embeddings missing input", path: "/v1/embeddings", body: `{"model":"e"}`, want: 400, errPath: "error.type", errType: "invalid_request_error"},
		{name: "embeddings empty input", path: "/v1/embeddings", body: `{"model":"e","input":[]}`, want: 400, errPath: "error.type", errType: "invalid_request_error"},
		{name: "embeddings bad dimensions", path: "/v1/embeddings", body: `{"model":"e","input":"x","dimensions":0}`, want: 400, errPath: "error.type", errType: "invalid_request_error"},
		{name: "anthropic invalid json", path: "/v1/messages", body: `{"model"`, want: 400, errPath: "error.type", errType: "invalid_request_error", anthropc: true},
		{name: "anthropic missing model", path: "/v1/messages", body: `{"max_tokens":10}`, want: 400, errPath: "error.type", errType: "invalid_request_error", anthropc: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := do(t, http.MethodPost, url+tt.path, tt.body)
			if res.status != tt.want {
				t.Fatalf("status = %d, want %d: %s", res.status, tt.want, res.body)
			}
			if got := res.get(tt.errPath).String(); got != tt.errType {
				t.Errorf("%s = %q, want %q: %s", tt.errPath, got, tt.errType, res.body)
			}
			if tt.anthropc {
				if res.get("type").String() != "error" || res.get("error.message").String() == "" {
					t.Errorf("not an Anthropic error: %s", res.body)
				}
			} else if !res.get("error.message").Exists() || !res.get("error.code").Exists() || !res.get("error.param").Exists() {
				t.Errorf("not an OpenAI error: %s", res.body)
			}
			if res.header.Get(HeaderUpstream) != "v" || !strings.HasPrefix(res.header.Get("Content-Type"), "application/json") {
				t.Errorf("headers = %v", res.header)
			}
		})
	}
}

func TestBodyTooLarge(t *testing.T) {
	s := New(Options{})
	rec := serveDirect(s, http.MethodPost, "/v1/chat/completions", `{"model":"m","pad":"`+strings.Repeat("x", maxBodyBytes)+`"}`)
	if rec.Code != http.StatusRequestEntityTooLarge {
		t.Errorf("status = %d, want 413", rec.Code)
	}
}

func TestEventTemplate(t *testing.T) {
	tmpl := newEventTemplate("x", obj{"a": slotPiece, "n": slotSeq, "z": []obj{{"q": 1}}})
	for i, piece := range []string{"plain", " spaced", `quote " and \ back`, "ctl\x00\n\t", "ünïcödé ✓", "<html>&"} {
		ev := tmpl.fill(piece, i)
		if ev.name != "x" || !json.Valid(ev.data) {
			t.Fatalf("fill(%q) = %s", piece, ev.data)
		}
		if got := gjson.GetBytes(ev.data, "a").String(); got != piece {
			t.Errorf("a = %q, want %q (%s)", got, piece, ev.data)
		}
		if got := gjson.GetBytes(ev.data, "n"); got.Type != gjson.Number || got.Int() != int64(i) {
			t.Errorf("n = %s, want %d", got.Raw, i)
		}
		if gjson.GetBytes(ev.data, "z.0.q").Int() != 1 {
			t.Errorf("the rest of the object was lost: %s", ev.data)
		}
	}
}
