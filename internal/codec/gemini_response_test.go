package codec

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"testing"

	"google.golang.org/genai"
)

// agGeminiResponse is the canonical form of testdata/gemini-response.json
// (and of testdata/gemini-stream.sse, the same answer streamed).
var agGeminiResponse = &Response{
	ID:    "Ba3yaPKfN8WFmtkP8o2i0Qo",
	Model: "gemini-2.5-flash",
	Parts: []Part{
		{Kind: PartThinking, Text: "**Planning the lookup**\n\nThe user wants the weather in two cities. I will call get_weather for Paris and for London."},
		{Kind: PartText, Text: "Let me look up the weather in both cities — \"Paris\" & <London>."},
		{Kind: PartToolCall, ID: "call_1", Name: "get_weather", Arguments: agRaw(`{"location":"Paris, France","unit":"celsius"}`), Signature: "ot5irstrspgbwlm97LOLTkui1kAbs8046weWwMmhUn8SNA=="},
		{Kind: PartToolCall, ID: "call_2", Name: "get_weather", Arguments: agRaw(`{"location":"London, UK","unit":"celsius"}`)},
	},
	StopReason: StopToolUse,
	Usage:      Usage{Input: 1290, Output: 41 + 96, CacheRead: 1024, Reasoning: 96},
}

func TestGeminiDecodeResponse(t *testing.T) {
	tests := []struct {
		name string
		body string
		want *Response
	}{
		{name: "recorded answer", body: string(agFixture(t, "gemini-response.json")), want: agGeminiResponse},
		{
			name: "parts joined, ids kept, inline data and empty text dropped, MAX_TOKENS",
			body: `{"candidates":[{"content":{"role":"model","parts":[{"text":"a"},{"text":"b","thoughtSignature":"c2ln"},{"text":""},
				{"inlineData":{"mimeType":"image/png","data":"iVBOR"}},{"functionCall":{"id":"fc-1","name":"f"}},{"text":"c"}]},"finishReason":"MAX_TOKENS"}]}`,
			want: &Response{Parts: []Part{
				{Kind: PartText, Text: "ab", Signature: "c2ln"},
				{Kind: PartToolCall, ID: "fc-1", Name: "f", Arguments: agRaw(`{}`)},
				{Kind: PartText, Text: "c"},
			}, StopReason: StopMaxTokens},
		},
		{
			name: "a blocked prompt has no candidate",
			body: `{"promptFeedback":{"blockReason":"PROHIBITED_CONTENT"},"usageMetadata":{"promptTokenCount":9,"totalTokenCount":9}}`,
			want: &Response{StopReason: StopContentFilter, Usage: Usage{Input: 9}},
		},
		{
			name: "an empty answer",
			body: `{"modelVersion":"m"}`,
			want: &Response{Model: "m"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Gemini.(Translator).DecodeResponse([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			agEqual(t, agCompactArgs(got), tt.want)
		})
	}
	errs := []struct{ body, want string }{
		{`{"candidates":`, "decoding gemini answer: invalid JSON"},
		{`[]`, "decoding gemini answer: not a JSON object"},
		{`{"error":{"code":500,"message":"boom"}}`, "decoding gemini answer: it is an error: boom"},
	}
	for _, e := range errs {
		if _, err := Gemini.(Translator).DecodeResponse([]byte(e.body)); err == nil || err.Error() != e.want {
			t.Errorf("DecodeResponse(%s): error %v, want %q", e.body, err, e.want)
		}
	}
}

func TestGeminiFinishReasons(t *testing.T) {
	tests := []struct {
		wire  string
		calls bool
		want  StopReason
		back  string
	}{
		{"STOP", false, StopEnd, "STOP"},
		{"STOP", true, StopToolUse, "STOP"},
		{"MAX_TOKENS", true, StopMaxTokens, "MAX_TOKENS"},
		{"SAFETY", false, StopContentFilter, "SAFETY"},
		{"RECITATION", false, StopContentFilter, "SAFETY"},
		{"BLOCKLIST", false, StopContentFilter, "SAFETY"},
		{"PROHIBITED_CONTENT", false, StopContentFilter, "SAFETY"},
		{"SPII", false, StopContentFilter, "SAFETY"},
		{"MALFORMED_FUNCTION_CALL", false, StopEnd, "STOP"},
		{"OTHER", false, StopEnd, "STOP"},
	}
	for _, tt := range tests {
		t.Run(tt.wire, func(t *testing.T) {
			got := geminiStop(tt.wire, tt.calls)
			if got != tt.want {
				t.Errorf("geminiStop(%q, %v) = %d, want %d", tt.wire, tt.calls, got, tt.want)
			}
			if back := geminiFinishName(got); back != tt.back {
				t.Errorf("geminiFinishName(%d) = %q, want %q", got, back, tt.back)
			}
		})
	}
	for _, s := range []StopReason{StopSequence, StopPause} {
		if got := geminiFinishName(s); got != "STOP" {
			t.Errorf("geminiFinishName(%d) = %q, want STOP", s, got)
		}
	}
	if got := geminiFinishName(StopRefusal); got != "SAFETY" {
		t.Errorf("a refusal is %q, want SAFETY", got)
	}
}

func TestGeminiEncodeResponse(t *testing.T) {
	tests := []struct {
		name string
		resp Response
		want string
	}{
		{
			name: "text, thinking with a signature, a tool call; usage with cache and thoughts",
			resp: Response{ID: "msg_1", Model: "claude-sonnet-4-5", StopReason: StopToolUse, Parts: []Part{
				{Kind: PartThinking, Text: "hmm", Signature: "c2ln"},
				{Kind: PartText, Text: "Hi"},
				{Kind: PartImage, URL: "https://x"},
				{Kind: PartRedactedThinking, Data: "EmwK"},
				{Kind: PartToolCall, ID: "toolu_1", Name: "f", Arguments: agRaw(`{"a":1}`), Signature: "not base64!"},
			}, Usage: Usage{Input: 100, Output: 30, CacheRead: 40, CacheWrite: 5, Reasoning: 10}},
			want: `{"candidates":[{"content":{"role":"model","parts":[
				{"text":"hmm","thought":true,"thoughtSignature":"c2ln"},{"text":"Hi"},
				{"functionCall":{"id":"toolu_1","name":"f","args":{"a":1}}}]},"finishReason":"STOP","index":0}],
				"usageMetadata":{"promptTokenCount":100,"candidatesTokenCount":20,"totalTokenCount":130,"cachedContentTokenCount":40,"thoughtsTokenCount":10},
				"modelVersion":"claude-sonnet-4-5","responseId":"msg_1"}`,
		},
		{
			name: "a content filter, nothing else",
			resp: Response{StopReason: StopContentFilter},
			want: `{"candidates":[{"content":{"role":"model","parts":[]},"finishReason":"SAFETY","index":0}],
				"usageMetadata":{"promptTokenCount":0,"candidatesTokenCount":0,"totalTokenCount":0}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			agJSONEqual(t, Gemini.(Translator).EncodeResponse(&tt.resp), []byte(tt.want))
		})
	}
}

// agGeminiView is what a client sees of a Gemini answer: consecutive
// text parts (and thought parts) joined as Gemini's SDKs show them.
type agGeminiView struct {
	ResponseID, ModelVersion, FinishReason           string
	Prompt, Candidates, Cached, Thoughts, TotalCount int32
	Parts                                            []agGeminiPart
}

type agGeminiPart struct {
	Text      string
	Thought   bool
	Signature string
	Call      string
}

// add folds one answer, or one chunk of a stream, into v.
func (v *agGeminiView) add(t *testing.T, r *genai.GenerateContentResponse) {
	t.Helper()
	if r.ResponseID != "" {
		v.ResponseID = r.ResponseID
	}
	if r.ModelVersion != "" {
		v.ModelVersion = r.ModelVersion
	}
	if u := r.UsageMetadata; u != nil {
		v.Prompt, v.Candidates, v.Cached, v.Thoughts, v.TotalCount = u.PromptTokenCount, u.CandidatesTokenCount, u.CachedContentTokenCount, u.ThoughtsTokenCount, u.TotalTokenCount
	}
	if len(r.Candidates) == 0 {
		return
	}
	c := r.Candidates[0]
	if c.FinishReason != "" {
		v.FinishReason = string(c.FinishReason)
	}
	if c.Content == nil {
		return
	}
	for _, p := range c.Content.Parts {
		sig := base64.StdEncoding.EncodeToString(p.ThoughtSignature)
		if p.FunctionCall != nil {
			call, err := json.Marshal(p.FunctionCall)
			if err != nil {
				t.Fatal(err)
			}
			v.Parts = append(v.Parts, agGeminiPart{Call: string(call), Signature: sig})
			continue
		}
		if p.Text == "" && sig == "" {
			continue
		}
		if n := len(v.Parts); n > 0 && v.Parts[n-1].Call == "" && v.Parts[n-1].Thought == p.Thought {
			v.Parts[n-1].Text += p.Text
			if v.Parts[n-1].Signature == "" {
				v.Parts[n-1].Signature = sig
			}
			continue
		}
		v.Parts = append(v.Parts, agGeminiPart{Text: p.Text, Thought: p.Thought, Signature: sig})
	}
}

func agGeminiClient(t *testing.T, url string) *genai.Client {
	t.Helper()
	c, err := genai.NewClient(context.Background(), &genai.ClientConfig{
		APIKey: "test-key", Backend: genai.BackendGeminiAPI, HTTPOptions: genai.HTTPOptions{BaseURL: url},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// agGeminiSDKResponse is body as the genai SDK reads a whole answer.
func agGeminiSDKResponse(t *testing.T, body []byte) agGeminiView {
	t.Helper()
	c := agGeminiClient(t, agServeBody(t, "application/json", body))
	r, err := c.Models.GenerateContent(context.Background(), "gemini-2.5-flash", genai.Text("Weather?"), nil)
	if err != nil {
		t.Fatalf("the SDK refuses the answer: %v\n%s", err, body)
	}
	var v agGeminiView
	v.add(t, r)
	return v
}

// TestGeminiResponseSDK: the recorded answer, decoded and encoded again,
// reads in the genai SDK as the recorded answer itself, but for the ids
// the gateway gives calls that have none.
func TestGeminiResponseSDK(t *testing.T) {
	recorded := agFixture(t, "gemini-response.json")
	r, err := Gemini.(Translator).DecodeResponse(recorded)
	if err != nil {
		t.Fatal(err)
	}
	got := agGeminiSDKResponse(t, Gemini.(Translator).EncodeResponse(r))
	want := agGeminiSDKResponse(t, recorded)
	for i, id := range []string{"call_1", "call_2"} {
		want.Parts[2+i].Call = `{"id":"` + id + `",` + want.Parts[2+i].Call[1:]
	}
	agEqual(t, got, want)
}

func TestGeminiDecodeError(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   Error
	}{
		{"bad key", 400, `{"error":{"code":400,"message":"API key not valid. Please pass a valid API key.","status":"INVALID_ARGUMENT","details":[{"@type":"type.googleapis.com/google.rpc.ErrorInfo","reason":"API_KEY_INVALID"}]}}`,
			Error{Status: 400, Type: "invalid_request_error", Code: "INVALID_ARGUMENT", Message: "API key not valid. Please pass a valid API key."}},
		{"quota", 429, `{"error":{"code":429,"message":"Quota exceeded","status":"RESOURCE_EXHAUSTED","details":[{"@type":"type.googleapis.com/google.rpc.RetryInfo","retryDelay":"30s"}]}}`,
			Error{Status: 429, Type: "rate_limit_error", Code: "RESOURCE_EXHAUSTED", Message: "Quota exceeded"}},
		{"unauthenticated", 401, `{"error":{"code":401,"message":"no","status":"UNAUTHENTICATED"}}`,
			Error{Status: 401, Type: "authentication_error", Code: "UNAUTHENTICATED", Message: "no"}},
		{"permission", 403, `{"error":{"code":403,"message":"no","status":"PERMISSION_DENIED"}}`,
			Error{Status: 403, Type: "permission_error", Code: "PERMISSION_DENIED", Message: "no"}},
		{"not found", 404, `{"error":{"code":404,"message":"models/x is not found","status":"NOT_FOUND"}}`,
			Error{Status: 404, Type: "not_found_error", Code: "NOT_FOUND", Message: "models/x is not found"}},
		{"unavailable", 503, `{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`,
			Error{Status: 503, Type: "server_error", Code: "UNAVAILABLE", Message: "The model is overloaded."}},
		{"in an array", 500, `[{"error":{"code":500,"message":"Internal error","status":"INTERNAL"}}]`,
			Error{Status: 500, Type: "server_error", Code: "INTERNAL", Message: "Internal error"}},
		{"in a stream: the status is the code", 0, `{"error":{"code":429,"message":"slow","status":"RESOURCE_EXHAUSTED"}}`,
			Error{Status: 429, Type: "rate_limit_error", Code: "RESOURCE_EXHAUSTED", Message: "slow"}},
		{"in a stream without a code", 0, `{"error":{"message":"late","status":"DEADLINE_EXCEEDED"}}`,
			Error{Status: 504, Type: "server_error", Code: "DEADLINE_EXCEEDED", Message: "late"}},
		{"not Google's shape", 502, "upstream connect error", Error{Status: 502, Type: "server_error", Code: "INTERNAL", Message: "upstream connect error"}},
		{"not Google's shape, 404", 404, "Not Found", Error{Status: 404, Type: "not_found_error", Code: "NOT_FOUND", Message: "Not Found"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			agEqual(t, Gemini.(Translator).DecodeError(tt.status, []byte(tt.body)), tt.want)
		})
	}
}
