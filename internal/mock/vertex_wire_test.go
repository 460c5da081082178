package mock

import (
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

func TestVertexPaths(t *testing.T) {
	s, base := vertexServed(t, Options{Name: "vtx", Models: []string{"gemini-2.5-flash", "my-tuned"}, Behavior: Behavior{CompletionTokens: 3}}, nil)
	auth := []string{"Authorization", "Bearer " + vertexToken(t, base)}
	claude := vertexPrefix + "anthropic/models/claude-sonnet-4@20250514"
	gemini := vertexPrefix + "google/models/gemini-2.5-flash"
	tests := []struct {
		name, method, path, body string
		status                   int
		check, want              string // a gjson path of the answer and its value
		sse                      string // the last event of a stream ("" = not a stream)
	}{
		{"generateContent", "POST", gemini + ":generateContent", geminiBody, 200, "modelVersion", "gemini-2.5-flash", ""},
		{"v1beta1", "POST", "/v1beta1/projects/p1/locations/global/publishers/google/models/gemini-2.5-flash:generateContent", geminiBody, 200, "candidates.0.finishReason", "STOP", ""},
		{"streamGenerateContent", "POST", gemini + ":streamGenerateContent?alt=sse", geminiBody, 200, "", "", `"finishReason":"STOP"`},
		{"countTokens", "POST", gemini + ":countTokens", geminiBody, 200, "totalTokens", "13", ""},
		{"a content without its role", "POST", gemini + ":generateContent", `{"contents":[{"parts":[{"text":"hi"}]}]}`, 400, "error.message", "Please use a valid role: user, model.", ""},
		{"rawPredict", "POST", claude + ":rawPredict", vertexClaudeBody, 200, "model", "claude-sonnet-4@20250514", ""},
		{"rawPredict answers usage", "POST", claude + ":rawPredict", vertexClaudeBody, 200, "usage.output_tokens", "3", ""},
		{"streamRawPredict", "POST", claude + ":streamRawPredict", strings.Replace(vertexClaudeBody, `{`, `{"stream":true,`, 1), 200, "", "", `{"type":"message_stop"}`},
		{"a model in the body", "POST", claude + ":rawPredict", strings.Replace(vertexClaudeBody, `{`, `{"model":"claude-sonnet-4",`, 1), 400, "error.message", "model: Extra inputs are not permitted", ""},
		{"no anthropic_version", "POST", claude + ":rawPredict", `{"max_tokens":8,"messages":[{"role":"user","content":"hi"}]}`, 400, "error.message", "anthropic_version: Field required", ""},
		{"the first-party version", "POST", claude + ":rawPredict", strings.Replace(vertexClaudeBody, "vertex-2023-10-16", "2023-06-01", 1), 400, "error.type", "invalid_request_error", ""},
		{"rawPredict does not stream", "POST", claude + ":rawPredict", strings.Replace(vertexClaudeBody, `{`, `{"stream":true,`, 1), 400, "type", "error", ""},
		{"streamRawPredict must stream", "POST", claude + ":streamRawPredict", vertexClaudeBody, 400, "error.message", `streamRawPredict requires "stream": true`, ""},
		{"count-tokens", "POST", vertexPrefix + "anthropic/models/count-tokens:rawPredict", `{"model":"claude-sonnet-4@20250514","messages":[{"role":"user","content":"hi"}]}`, 200, "input_tokens", "20", ""},
		{"count-tokens with the version", "POST", vertexPrefix + "anthropic/models/count-tokens:rawPredict", `{"anthropic_version":"vertex-2023-10-16","model":"claude-sonnet-4@20250514","messages":[{"role":"user","content":"hi"}]}`, 200, "input_tokens", "30", ""},
		{"count-tokens without a model", "POST", vertexPrefix + "anthropic/models/count-tokens:rawPredict", `{"messages":[{"role":"user","content":"hi"}]}`, 400, "error.message", "model: Field required", ""},
		{"count-tokens without messages", "POST", vertexPrefix + "anthropic/models/count-tokens:rawPredict", `{"model":"claude-sonnet-4@20250514"}`, 400, "error.type", "invalid_request_error", ""},
		{"publisher model", "GET", "/v1/publishers/google/models/gemini-2.5-flash", "", 200, "name", "publishers/google/models/gemini-2.5-flash", ""},
		{"listed model", "GET", "/v1/publishers/google/models/my-tuned", "", 200, "launchStage", "GA", ""},
		{"claude publisher model", "GET", "/v1/publishers/anthropic/models/claude-sonnet-4@20250514", "", 200, "name", "publishers/anthropic/models/claude-sonnet-4@20250514", ""},
		{"a Gemini model is not Anthropic's", "GET", "/v1/publishers/anthropic/models/gemini-2.5-flash", "", 404, "error.status", "NOT_FOUND", ""},
		{"unknown publisher model", "GET", "/v1/publishers/google/models/llama-3", "", 404, "error.status", "NOT_FOUND", ""},
		{"unknown method", "POST", claude + ":predict", vertexClaudeBody, 404, "error.status", "NOT_FOUND", ""},
		{"unknown publisher", "POST", vertexPrefix + "meta/models/llama:rawPredict", vertexClaudeBody, 404, "error.status", "NOT_FOUND", ""},
		{"no version", "POST", strings.TrimPrefix(gemini, "/v1") + ":generateContent", geminiBody, 404, "error.status", "NOT_FOUND", ""},
		{"claude without the version", "POST", strings.TrimPrefix(claude, "/v1") + ":rawPredict", vertexClaudeBody, 404, "error.status", "NOT_FOUND", ""},
		{"publisher model without the version", "GET", "/publishers/google/models/gemini-2.5-flash", "", 404, "error.status", "NOT_FOUND", ""},
		{"malformed path", "POST", "/v1/projects/p1/models/gemini-2.5-flash:generateContent", geminiBody, 404, "error.code", "404", ""},
		{"wrong method", "GET", claude + ":rawPredict", "", 405, "error.status", "UNIMPLEMENTED", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			res := do(t, tt.method, base+tt.path, tt.body, auth...)
			if res.status != tt.status {
				t.Fatalf("status = %d, want %d: %s", res.status, tt.status, res.body)
			}
			if tt.sse != "" {
				frames := parseSSE(t, res.body)
				if len(frames) < 2 || !strings.Contains(frames[len(frames)-1].data, tt.sse) {
					t.Errorf("stream ends with %+v, want %s", frames[len(frames)-1], tt.sse)
				}
			} else if got := res.get(tt.check).String(); got != tt.want {
				t.Errorf("%s = %q, want %q in %s", tt.check, got, tt.want, res.body)
			}
			if res.header.Get(HeaderUpstream) != "vtx" || res.header.Get("request-id") != "" || res.header.Get("x-ratelimit-limit-requests") != "" {
				t.Errorf("headers = %v", res.header)
			}
		})
	}
	if got := s.Stats().ByEndpoint; got[epMessages] != 9 || got[epClaudeCountTokens] != 4 || got[epPublisherModel] != 5 || got[epStreamGenerate] != 1 {
		t.Errorf("by endpoint = %v", got)
	}
}

// TestVertexFaults: the platform's errors are Google's for both
// publishers (RESOURCE_EXHAUSTED with a RetryInfo, UNAVAILABLE), Claude's
// own are Anthropic's.
func TestVertexFaults(t *testing.T) {
	claude := vertexPrefix + "anthropic/models/claude-sonnet-4@20250514:rawPredict"
	gemini := vertexPrefix + "google/models/gemini-2.5-flash:generateContent"
	tests := []struct {
		name     string
		behavior Behavior
		path     string
		body     string
		second   bool // the second request is the one that fails (RPM 1)
		status   int
		check    string // a gjson path of the error and its value
		want     string
		retry    string // the RetryInfo delay, "" for none
	}{
		{"gemini forced 429", Behavior{ForceStatus: 429}, gemini, geminiBody, false, 429, "error.status", "RESOURCE_EXHAUSTED", "1s"},
		{"claude forced 429", Behavior{ForceStatus: 429}, claude, vertexClaudeBody, false, 429, "error.status", "RESOURCE_EXHAUSTED", "1s"},
		{"claude over RPM", Behavior{RPM: 1}, claude, vertexClaudeBody, true, 429, "error.details.0.violations.0.quotaMetric",
			"aiplatform.googleapis.com/generate_content_requests_per_minute_per_project_per_base_model", "60s"},
		{"gemini over RPM", Behavior{RPM: 1}, gemini, geminiBody, true, 429, "error.message", vertexQuotaMessage, "60s"},
		{"claude forced 429 naming no wait", Behavior{ForceStatus: 429, NoRetryAfter: true}, claude, vertexClaudeBody, false, 429, "error.status", "RESOURCE_EXHAUSTED", ""},
		{"claude over RPM naming no wait", Behavior{RPM: 1, NoRetryAfter: true}, claude, vertexClaudeBody, true, 429, "error.message", vertexQuotaMessage, ""},
		{"claude unavailable", Behavior{ForceStatus: 503}, claude, vertexClaudeBody, false, 503, "error.status", "UNAVAILABLE", ""},
		{"gemini unavailable", Behavior{ForceStatus: 503}, gemini, geminiBody, false, 503, "error.status", "UNAVAILABLE", ""},
		{"claude overloaded", Behavior{ForceStatus: 529}, claude, vertexClaudeBody, false, 529, "error.type", "overloaded_error", ""},
		{"claude internal error", Behavior{ForceStatus: 500}, claude, vertexClaudeBody, false, 500, "error.type", "api_error", ""},
		{"gemini internal error", Behavior{ForceStatus: 500}, gemini, geminiBody, false, 500, "error.status", "INTERNAL", ""},
		{"claude permission denied", Behavior{ForceStatus: 403}, claude, vertexClaudeBody, false, 403, "error.status", "PERMISSION_DENIED", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, base := vertexServed(t, Options{Behavior: tt.behavior}, nil)
			auth := []string{"Authorization", "Bearer " + vertexToken(t, base)}
			res := do(t, "POST", base+tt.path, tt.body, auth...)
			if tt.second {
				if res.status != 200 {
					t.Fatalf("first request: %d %s", res.status, res.body)
				}
				res = do(t, "POST", base+tt.path, tt.body, auth...)
			}
			if res.status != tt.status {
				t.Fatalf("status = %d, want %d: %s", res.status, tt.status, res.body)
			}
			if got := res.get(tt.check).String(); got != tt.want {
				t.Errorf("%s = %q, want %q in %s", tt.check, got, tt.want, res.body)
			}
			retry := res.get(`error.details.#(@type=="type.googleapis.com/google.rpc.RetryInfo").retryDelay`).String()
			if retry != tt.retry || res.header.Get("Retry-After") != "" {
				t.Errorf("retryDelay %q Retry-After %q, want %q and none: %s", retry, res.header.Get("Retry-After"), tt.retry, res.body)
			}
			if tt.status == 429 && !gjson.GetBytes(res.body, `error.details.#(@type=="type.googleapis.com/google.rpc.QuotaFailure")`).Exists() {
				t.Errorf("no QuotaFailure in %s", res.body)
			}
		})
	}
}
