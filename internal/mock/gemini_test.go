package mock

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"switchyard/internal/clock"
)

const geminiBody = `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`

// geminiKey is the header every Gemini request of these tests carries.
var geminiKey = []string{"x-goog-api-key", "g-key"}

func TestGeminiPaths(t *testing.T) {
	s, url := newServed(t, Options{Name: "gem", Models: []string{"gemini-2.0-flash", "gpt-4o"}})
	tests := []struct {
		name, method, path, body string
		header                   []string
		want                     int
		check, wantValue         string // a gjson path of the answer and its value
	}{
		{"v1beta", "POST", "/v1beta/models/gemini-2.0-flash:generateContent", geminiBody, geminiKey, 200, "modelVersion", "gemini-2.0-flash"},
		{"no prefix", "POST", "/models/gemini-2.0-flash:generateContent", geminiBody, geminiKey, 404, "error.status", "NOT_FOUND"},
		{"v1", "POST", "/v1/models/gemini-2.0-flash:generateContent", geminiBody, geminiKey, 404, "error.status", "NOT_FOUND"},
		{"escaped model", "POST", "/v1beta/models/my%20model:generateContent", geminiBody, geminiKey, 200, "modelVersion", "my model"},
		{"count tokens", "POST", "/v1beta/models/g:countTokens", geminiBody, geminiKey, 200, "totalTokens", "13"}, // 54 bytes / 4
		{"count tokens of a request", "POST", "/v1beta/models/g:countTokens", `{"generateContentRequest":` + geminiBody + `}`, geminiKey, 200, "promptTokensDetails.0.modality", "TEXT"},
		{"count tokens of nothing", "POST", "/v1beta/models/g:countTokens", `{}`, geminiKey, 400, "error.status", "INVALID_ARGUMENT"},
		{"embed", "POST", "/v1beta/models/e:embedContent", `{"content":{"parts":[{"text":"a"}]},"outputDimensionality":4}`, geminiKey, 200, "embedding.values.#", "4"},
		{"embed without content", "POST", "/v1beta/models/e:embedContent", `{}`, geminiKey, 400, "error.status", "INVALID_ARGUMENT"},
		{"embed bad dimensions", "POST", "/v1beta/models/e:embedContent", `{"content":{"parts":[{"text":"a"}]},"outputDimensionality":0}`, geminiKey, 400, "error.code", "400"},
		{"batch embed", "POST", "/v1beta/models/e:batchEmbedContents", `{"requests":[{"model":"models/e","content":{"parts":[{"text":"a"}]}},{"model":"models/e","content":{"parts":[{"text":"b"}]}}]}`, geminiKey, 200, "embeddings.#", "2"},
		{"batch embed of nothing", "POST", "/v1beta/models/e:batchEmbedContents", `{"requests":[]}`, geminiKey, 400, "error.status", "INVALID_ARGUMENT"},
		{"list", "GET", "/v1beta/models", "", geminiKey, 200, "models.0.name", "models/gemini-2.0-flash"},
		{"list without prefix by key", "GET", "/models", "", geminiKey, 404, "error.status", "NOT_FOUND"},
		{"list with the key in the query", "GET", "/v1beta/models?key=g-key", "", nil, 200, "models.1.name", "models/gpt-4o"},
		{"list without prefix, key in the query", "GET", "/models?key=g-key", "", nil, 404, "error.status", "NOT_FOUND"},
		{"list under /v1", "GET", "/v1/models", "", geminiKey, 404, "error.status", "NOT_FOUND"},
		{"supported methods", "GET", "/v1beta/models", "", geminiKey, 200, "models.0.supportedGenerationMethods.0", "generateContent"},
		{"get", "GET", "/v1beta/models/gemini-2.0-flash", "", geminiKey, 200, "outputTokenLimit", "65536"},
		{"get unknown", "GET", "/v1beta/models/gemini-9", "", geminiKey, 404, "error.status", "NOT_FOUND"},
		{"unknown method", "POST", "/v1beta/models/g:predict", geminiBody, geminiKey, 404, "error.status", "NOT_FOUND"},
		{"wrong method", "GET", "/v1beta/models/g:generateContent", "", geminiKey, 405, "error.status", "UNIMPLEMENTED"},
		{"no key", "POST", "/v1beta/models/g:generateContent", geminiBody, nil, 403, "error.status", "PERMISSION_DENIED"},
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
			if res.header.Get(HeaderUpstream) != "gem" || res.header.Get("x-request-id") != "" {
				t.Errorf("headers = %v", res.header)
			}
		})
	}
	if st := s.Stats(); st.ByEndpoint[epGenerate] != 4 || st.ByEndpoint[epCountTokens] != 3 || st.ByEndpoint[epBatchEmbed] != 2 || st.ByEndpoint[epUnknown] != 6 {
		t.Errorf("by endpoint = %v", st.ByEndpoint)
	}
}

func TestAPIKey(t *testing.T) {
	_, url := newServed(t, Options{APIKey: "sk-right-key-1234"})
	chat := chatBody
	tests := []struct {
		name, path, body string
		header           []string
		want             int
		check, value     string
	}{
		{"openai bearer", "/v1/chat/completions", chat, []string{"Authorization", "Bearer sk-right-key-1234"}, 200, "object", "chat.completion"},
		{"azure api-key", "/openai/deployments/d/chat/completions?api-version=2024-10-21", chat, []string{"api-key", "sk-right-key-1234"}, 200, "object", "chat.completion"},
		{"openai missing", "/v1/chat/completions", chat, nil, 401, "error.message", "You didn't provide an API key. You need to provide your API key in an Authorization header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY), or as the password field (with blank username) if you're accessing the API from your browser and are prompted for a username and password. You can obtain an API key from https://platform.openai.com/account/api-keys."},
		{"openai wrong", "/v1/chat/completions", chat, []string{"Authorization", "Bearer sk-wrong-key-9876"}, 401, "error.message", "Incorrect API key provided: sk-w*****9876. You can find your API key at https://platform.openai.com/account/api-keys."},
		{"openai models wrong", "/v1/models", "", []string{"Authorization", "Bearer nope"}, 401, "error.code", "invalid_api_key"},
		{"anthropic x-api-key", "/v1/messages", messagesBody, []string{"x-api-key", "sk-right-key-1234"}, 200, "type", "message"},
		{"anthropic bearer", "/v1/messages", messagesBody, []string{"Authorization", "Bearer sk-right-key-1234"}, 200, "type", "message"},
		{"anthropic missing", "/v1/messages", messagesBody, nil, 401, "error.message", "x-api-key header is required"},
		{"anthropic wrong", "/v1/messages", messagesBody, []string{"x-api-key", "nope"}, 401, "error.type", "authentication_error"},
		{"gemini header", "/v1beta/models/g:generateContent", geminiBody, []string{"x-goog-api-key", "sk-right-key-1234"}, 200, "candidates.0.finishReason", "STOP"},
		{"gemini query", "/v1beta/models/g:generateContent?key=sk-right-key-1234", geminiBody, nil, 200, "candidates.0.finishReason", "STOP"},
		{"gemini wrong", "/v1beta/models/g:generateContent", geminiBody, []string{"x-goog-api-key", "nope"}, 400, "error.details.0.reason", "API_KEY_INVALID"},
		{"gemini missing", "/v1beta/models/g:generateContent", geminiBody, nil, 403, "error.code", "403"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			method := http.MethodPost
			if tt.body == "" {
				method = http.MethodGet
			}
			res := do(t, method, url+tt.path, tt.body, tt.header...)
			if res.status != tt.want {
				t.Fatalf("status = %d, want %d: %s", res.status, tt.want, res.body)
			}
			if got := res.get(tt.check).String(); got != tt.value {
				t.Errorf("%s = %q, want %q", tt.check, got, tt.value)
			}
		})
	}
	t.Run("gemini wrong key is Google's answer", func(t *testing.T) {
		res := do(t, http.MethodPost, url+"/v1beta/models/g:generateContent", geminiBody, "x-goog-api-key", "nope")
		e := res.get("error")
		if e.Get("code").Int() != 400 || e.Get("status").String() != "INVALID_ARGUMENT" ||
			e.Get("message").String() != "API key not valid. Please pass a valid API key." ||
			e.Get("details.0.@type").String() != "type.googleapis.com/google.rpc.ErrorInfo" ||
			e.Get("details.0.metadata.service").String() != "generativelanguage.googleapis.com" {
			t.Errorf("error = %s", e.Raw)
		}
	})
}

func TestGeminiFaults(t *testing.T) {
	tests := []struct {
		name     string
		behavior Behavior
		status   int
		gstatus  string
		message  string
		retry    string // RetryInfo.retryDelay, "" = none
	}{
		{"forced 429", Behavior{ForceStatus: 429}, 429, "RESOURCE_EXHAUSTED", geminiQuotaMessage, "1s"},
		{"forced 429 naming no wait", Behavior{ForceStatus: 429, NoRetryAfter: true}, 429, "RESOURCE_EXHAUSTED", geminiQuotaMessage, ""},
		{"forced 503", Behavior{ForceStatus: 503}, 503, "UNAVAILABLE", "The model is overloaded. Please try again later.", ""},
		{"forced 500", Behavior{ForceStatus: 500}, 500, "INTERNAL", serverErrorMessage(protoGemini), ""},
		{"forced 504", Behavior{ForceStatus: 504}, 504, "DEADLINE_EXCEEDED", "", ""},
		{"error rate", Behavior{ErrorRate: 1}, 500, "INTERNAL", serverErrorMessage(protoGemini), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, url := newServed(t, Options{Behavior: tt.behavior})
			res := do(t, http.MethodPost, url+"/v1beta/models/g:generateContent", geminiBody, geminiKey...)
			if res.status != tt.status || res.get("error.code").Int() != int64(tt.status) || res.get("error.status").String() != tt.gstatus {
				t.Fatalf("%d %s", res.status, res.body)
			}
			if tt.message != "" && res.get("error.message").String() != tt.message {
				t.Errorf("message = %q", res.get("error.message"))
			}
			if got := res.get(`error.details.#(@type=="type.googleapis.com/google.rpc.RetryInfo").retryDelay`).String(); got != tt.retry {
				t.Errorf("retryDelay = %q, want %q", got, tt.retry)
			}
			if ra := res.header.Get("Retry-After"); ra != "" {
				t.Errorf("Retry-After = %q; Google sends none", ra)
			}
		})
	}
}

func TestGeminiRateLimits(t *testing.T) {
	tests := []struct {
		name     string
		behavior Behavior
		quota    string
		retry    string
	}{
		{"requests", Behavior{RPM: 2}, "GenerateRequestsPerMinutePerProjectPerModel", "45s"},
		{"tokens", Behavior{TPM: 2 * (promptTokens([]byte(geminiBody)) + DefaultCompletionTokens)}, "GenerateContentInputTokensPerModelPerMinute", "45s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := clock.NewFake(epoch)
			_, url := newServed(t, Options{Clock: fc, Behavior: tt.behavior})
			for range 2 {
				if res := do(t, http.MethodPost, url+"/v1beta/models/gemini-2.0-flash:generateContent", geminiBody, geminiKey...); res.status != 200 {
					t.Fatalf("status %d: %s", res.status, res.body)
				}
			}
			fc.Advance(15 * time.Second)
			res := do(t, http.MethodPost, url+"/v1beta/models/gemini-2.0-flash:generateContent", geminiBody, geminiKey...)
			if res.status != 429 || res.get("error.status").String() != "RESOURCE_EXHAUSTED" || res.header.Get("Retry-After") != "" {
				t.Fatalf("%d %v %s", res.status, res.header, res.body)
			}
			d := res.get("error.details")
			if got := d.Get(`#(@type=="type.googleapis.com/google.rpc.RetryInfo").retryDelay`).String(); got != tt.retry {
				t.Errorf("retryDelay = %q, want %q", got, tt.retry)
			}
			q := d.Get(`#(@type=="type.googleapis.com/google.rpc.QuotaFailure").violations.0`)
			if q.Get("quotaId").String() != tt.quota || q.Get("quotaDimensions.model").String() != "gemini-2.0-flash" {
				t.Errorf("quota violation = %s", q.Raw)
			}
			if !d.Get(`#(@type=="type.googleapis.com/google.rpc.Help")`).Exists() {
				t.Errorf("no Help detail in %s", d.Raw)
			}
		})
	}
}

func TestGeminiStreamFraming(t *testing.T) {
	_, url := newServed(t, Options{Behavior: Behavior{CompletionTokens: 3}})
	const path = "/v1beta/models/gemini-2.0-flash:streamGenerateContent"
	t.Run("sse", func(t *testing.T) {
		res := do(t, http.MethodPost, url+path+"?alt=sse", geminiBody, geminiKey...)
		if res.status != 200 || !strings.HasPrefix(res.header.Get("Content-Type"), "text/event-stream") {
			t.Fatalf("%d %v", res.status, res.header)
		}
		frames := parseSSE(t, res.body)
		if len(frames) != 4 { // 3 pieces, then the finish
			t.Fatalf("%d frames:\n%s", len(frames), res.body)
		}
		for i, f := range frames {
			if f.event != "" || !json.Valid([]byte(f.data)) {
				t.Fatalf("frame %d: event %q data %s", i, f.event, f.data)
			}
			last := i == len(frames)-1
			if fr := gjson.Get(f.data, "candidates.0.finishReason").String(); (fr == "STOP") != last {
				t.Errorf("frame %d finishReason %q", i, fr)
			}
			if u := gjson.Get(f.data, "usageMetadata"); u.Get("promptTokenCount").Int() != 13 || u.Get("candidatesTokenCount").Exists() != last {
				t.Errorf("frame %d usage %s", i, u.Raw)
			}
		}
	})
	t.Run("json array without alt=sse", func(t *testing.T) {
		res := do(t, http.MethodPost, url+path, geminiBody, geminiKey...)
		var chunks []json.RawMessage
		if err := json.Unmarshal(res.body, &chunks); err != nil || len(chunks) != 4 {
			t.Fatalf("%v: %s", err, res.body)
		}
		if !strings.HasPrefix(res.header.Get("Content-Type"), "application/json") {
			t.Errorf("Content-Type = %q", res.header.Get("Content-Type"))
		}
		var chunkBytes [][]byte
		for _, c := range chunks {
			chunkBytes = append(chunkBytes, c)
		}
		plain := do(t, http.MethodPost, url+"/v1beta/models/gemini-2.0-flash:generateContent", geminiBody, geminiKey...)
		if a, b := geminiAnswer(t, chunkBytes), geminiAnswer(t, [][]byte{plain.body}); a.text != b.text || a.usage != b.usage {
			t.Errorf("array stream %+v, plain %+v", a, b)
		}
	})
}

func TestAnthropicPromptCache(t *testing.T) {
	_, url := newServed(t, Options{})
	system := `[{"type":"text","text":"` + strings.Repeat("rules ", 200) + `","cache_control":{"type":"ephemeral"}}]`
	body := func(question string) string {
		return `{"model":"claude-sonnet-4-5","max_tokens":100,"system":` + system + `,"messages":[{"role":"user","content":"` + question + `"}]}`
	}
	ask := func(b string, stream bool) gotUsage {
		t.Helper()
		if stream {
			b = `{"stream":true,` + b[1:]
		}
		res := do(t, http.MethodPost, url+"/v1/messages", b)
		if res.status != 200 {
			t.Fatalf("%d %s", res.status, res.body)
		}
		if stream {
			return messagesStreamAnswer(t, res.body).usage
		}
		return messagesAnswer(t, res.body).usage
	}
	part := int64(cachedPart(promptTokens([]byte(body("a")))))
	if part == 0 {
		t.Fatal("the prompt is too short to cache")
	}
	steps := []struct {
		name        string
		question    string
		stream      bool
		reset       bool
		read, write int64
	}{
		{name: "first request writes", question: "a", write: part},
		{name: "same prefix reads", question: "a", read: part},
		{name: "another question after the breakpoint reads", question: "b", read: part},
		{name: "streamed reads too", question: "a", stream: true, read: part},
		{name: "after a reset it writes again", question: "a", reset: true, write: part},
	}
	for _, st := range steps {
		if st.reset {
			do(t, http.MethodPost, url+"/_mock/reset", "")
		}
		u := ask(body(st.question), st.stream)
		if u.cacheRead != st.read || u.cacheWrite != st.write || u.in != int64(promptTokens([]byte(body(st.question)))) {
			t.Errorf("%s: usage %+v, want read %d write %d", st.name, u, st.read, st.write)
		}
	}
	other := strings.Replace(body("a"), "rules", "other", 1)
	if u := ask(other, false); u.cacheWrite != part {
		t.Errorf("another prefix: usage %+v, want a write", u)
	}
}
