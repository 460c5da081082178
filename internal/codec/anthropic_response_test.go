package codec

import (
	"context"
	"net/http"
	"net/http/httptest"
	"testing"

	asdk "github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
)

// agAnthropicMessage is the canonical form of testdata/anthropic-message.json
// (and of testdata/anthropic-stream.sse, the same answer streamed).
var agAnthropicMessage = &Response{
	ID:    "msg_01XFDUDYJgAACzvnptvVoYEL",
	Model: "claude-sonnet-4-5-20250929",
	Parts: []Part{
		{Kind: PartThinking, Text: "The user wants the weather in Paris and London. Two independent lookups: call get_weather for each city in parallel.",
			Signature: "0lqGQ8IV5QBI3fTEyZOZDeGMv/I1I3tEy8WzHrhEsAzuBzfs1j1lgsrauInOJfWZQF/55WPrX1X7CxxnIdvZ5S1xFkK3JrBEAWJ8qfusMvXIUw+xkDzE2wIlhxeSGkiB"},
		{Kind: PartText, Text: "I'll check the weather in both cities — \"Paris\" & <London>."},
		{Kind: PartToolCall, ID: "toolu_01A09q90qw90lq917835lq9", Name: "get_weather", Arguments: agRaw(`{"location":"Paris, France","unit":"celsius"}`)},
		{Kind: PartToolCall, ID: "toolu_01B7zqXkP3mG2hVwYtR8sLcN", Name: "get_weather", Arguments: agRaw(`{"location":"London, UK","unit":"celsius"}`)},
	},
	StopReason: StopToolUse,
	Usage:      Usage{Input: 472 + 128 + 2048, Output: 187, CacheRead: 2048, CacheWrite: 128},
}

func TestAnthropicDecodeResponse(t *testing.T) {
	tests := []struct {
		name string
		body string
		want *Response
	}{
		{name: "recorded answer", body: string(agFixture(t, "anthropic-message.json")), want: agAnthropicMessage},
		{
			name: "server tool blocks dropped, missing input is {}",
			body: `{"id":"msg_1","content":[{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{"query":"q"}},
				{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]},{"type":"text","text":"Found."},
				{"type":"tool_use","id":"toolu_1","name":"f"},{"type":"redacted_thinking","data":"EmwK"}],
				"stop_reason":"stop_sequence","stop_sequence":"END","usage":{"input_tokens":5,"output_tokens":2}}`,
			want: &Response{ID: "msg_1", Parts: []Part{
				{Kind: PartText, Text: "Found."},
				{Kind: PartToolCall, ID: "toolu_1", Name: "f", Arguments: agRaw(`{}`)},
				{Kind: PartRedactedThinking, Data: "EmwK"},
			}, StopReason: StopSequence, StopSequence: "END", Usage: Usage{Input: 5, Output: 2}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Anthropic.(Translator).DecodeResponse([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			agEqual(t, agCompactArgs(got), tt.want)
		})
	}
	for _, body := range []string{`{"content":`, `{"type":"message"}`, `[]`} {
		if _, err := Anthropic.(Translator).DecodeResponse([]byte(body)); err == nil {
			t.Errorf("DecodeResponse(%s) took it", body)
		}
	}
}

func TestAnthropicStopReasons(t *testing.T) {
	tests := []struct {
		wire      string
		canonical StopReason
		back      string
	}{
		{"end_turn", StopEnd, "end_turn"},
		{"max_tokens", StopMaxTokens, "max_tokens"},
		{"model_context_window_exceeded", StopMaxTokens, "max_tokens"},
		{"stop_sequence", StopSequence, "stop_sequence"},
		{"tool_use", StopToolUse, "tool_use"},
		{"refusal", StopRefusal, "refusal"},
		{"pause_turn", StopPause, "pause_turn"},
		{"something_new", StopEnd, "end_turn"},
	}
	for _, tt := range tests {
		t.Run(tt.wire, func(t *testing.T) {
			if got := anthropicStop(tt.wire); got != tt.canonical {
				t.Errorf("anthropicStop(%q) = %d, want %d", tt.wire, got, tt.canonical)
			}
			if got := anthropicStopName(tt.canonical); got != tt.back {
				t.Errorf("anthropicStopName(%d) = %q, want %q", tt.canonical, got, tt.back)
			}
		})
	}
	if got := anthropicStopName(StopContentFilter); got != "refusal" {
		t.Errorf("a content filter is %q, want refusal", got)
	}
}

func TestAnthropicEncodeResponse(t *testing.T) {
	tests := []struct {
		name string
		resp Response
		want string
	}{
		{
			name: "the id gets msg_, input excludes the cache, stop sequence",
			resp: Response{ID: "chatcmpl-9", Model: "gpt-5", Parts: []Part{{Kind: PartText, Text: "Hi"}}, StopReason: StopSequence, StopSequence: "END",
				Usage: Usage{Input: 100, Output: 7, CacheRead: 60, CacheWrite: 10}},
			want: `{"id":"msg_chatcmpl-9","type":"message","role":"assistant","model":"gpt-5","content":[{"type":"text","text":"Hi"}],
				"stop_reason":"stop_sequence","stop_sequence":"END",
				"usage":{"input_tokens":30,"cache_creation_input_tokens":10,"cache_read_input_tokens":60,"output_tokens":7}}`,
		},
		{
			name: "an id with msg_ is kept; input never negative; tool calls keep their ids",
			resp: Response{ID: "msg_1", Parts: []Part{
				{Kind: PartThinking, Text: "hmm"},
				{Kind: PartImage, URL: "https://x"},
				{Kind: PartToolCall, ID: "call_abc", Name: "f", Arguments: agRaw(`[1]`)},
				{Kind: PartRedactedThinking, Data: "EmwK"},
			}, StopReason: StopContentFilter, Usage: Usage{Input: 5, CacheRead: 9}},
			want: `{"id":"msg_1","type":"message","role":"assistant","model":"","content":[
				{"type":"thinking","thinking":"hmm","signature":""},
				{"type":"tool_use","id":"call_abc","name":"f","input":{"value":[1]}},
				{"type":"redacted_thinking","data":"EmwK"}],
				"stop_reason":"refusal","stop_sequence":null,
				"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":9,"output_tokens":0}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			agJSONEqual(t, Anthropic.(Translator).EncodeResponse(&tt.resp), []byte(tt.want))
		})
	}
}

// agAnthropicView is what a client sees of an Anthropic answer.
type agAnthropicView struct {
	ID, Model, StopReason, StopSequence  string
	Input, CacheWrite, CacheRead, Output int64
	Blocks                               []agAnthropicBlock
}

type agAnthropicBlock struct {
	Type, Text, ID, Name, Input, Thinking, Signature, Data string
}

func agViewAnthropic(m *asdk.Message) agAnthropicView {
	v := agAnthropicView{
		ID: m.ID, Model: string(m.Model), StopReason: string(m.StopReason), StopSequence: m.StopSequence,
		Input: m.Usage.InputTokens, CacheWrite: m.Usage.CacheCreationInputTokens, CacheRead: m.Usage.CacheReadInputTokens, Output: m.Usage.OutputTokens,
	}
	for _, b := range m.Content {
		blk := agAnthropicBlock{Type: b.Type, Text: b.Text, ID: b.ID, Name: b.Name, Thinking: b.Thinking, Signature: b.Signature, Data: b.Data}
		if len(b.Input) > 0 {
			blk.Input = string(agCompact(b.Input))
		}
		v.Blocks = append(v.Blocks, blk)
	}
	return v
}

// agServeBody serves body with contentType to every request.
func agServeBody(t testing.TB, contentType string, body []byte) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", contentType)
		_, _ = w.Write(body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

func agAnthropicClient(url string) asdk.Client {
	return asdk.NewClient(aoption.WithBaseURL(url), aoption.WithAPIKey("sk-ant-test"), aoption.WithMaxRetries(0))
}

var agAnthropicParams = asdk.MessageNewParams{
	Model: "claude-sonnet-4-5", MaxTokens: 100,
	Messages: []asdk.MessageParam{asdk.NewUserMessage(asdk.NewTextBlock("Weather?"))},
}

// agAnthropicSDKMessage is body as the Anthropic SDK reads a whole answer.
func agAnthropicSDKMessage(t *testing.T, body []byte) agAnthropicView {
	t.Helper()
	c := agAnthropicClient(agServeBody(t, "application/json", body))
	m, err := c.Messages.New(context.Background(), agAnthropicParams)
	if err != nil {
		t.Fatalf("the SDK refuses the answer: %v\n%s", err, body)
	}
	return agViewAnthropic(m)
}

// TestAnthropicResponseSDK: the recorded answer, decoded and encoded again,
// reads in the SDK as the recorded answer itself.
func TestAnthropicResponseSDK(t *testing.T) {
	recorded := agFixture(t, "anthropic-message.json")
	r, err := Anthropic.(Translator).DecodeResponse(recorded)
	if err != nil {
		t.Fatal(err)
	}
	got := agAnthropicSDKMessage(t, Anthropic.(Translator).EncodeResponse(r))
	agEqual(t, got, agAnthropicSDKMessage(t, recorded))
}

func TestAnthropicDecodeError(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   Error
	}{
		{"invalid request", 400, `{"type":"error","error":{"type":"invalid_request_error","message":"max_tokens: field required"}}`,
			Error{Status: 400, Type: "invalid_request_error", Code: "invalid_request_error", Message: "max_tokens: field required"}},
		{"too large", 413, `{"type":"error","error":{"type":"request_too_large","message":"big"}}`,
			Error{Status: 413, Type: "invalid_request_error", Code: "request_too_large", Message: "big"}},
		{"auth", 401, `{"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}`,
			Error{Status: 401, Type: "authentication_error", Code: "authentication_error", Message: "invalid x-api-key"}},
		{"rate limit", 429, `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`,
			Error{Status: 429, Type: "rate_limit_error", Code: "rate_limit_error", Message: "slow down"}},
		{"overloaded", 529, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			Error{Status: 529, Type: "server_error", Code: "overloaded_error", Message: "Overloaded"}},
		{"billing", 402, `{"type":"error","error":{"type":"billing_error","message":"pay"}}`,
			Error{Status: 402, Type: "insufficient_quota", Code: "billing_error", Message: "pay"}},
		{"in a stream: status from the type", 0, `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`,
			Error{Status: 529, Type: "server_error", Code: "overloaded_error", Message: "Overloaded"}},
		{"in a stream: api_error", 0, `{"type":"error","error":{"type":"api_error","message":"boom"}}`,
			Error{Status: 500, Type: "server_error", Code: "api_error", Message: "boom"}},
		{"not Anthropic's shape", 502, "<html>Bad Gateway</html>\n",
			Error{Status: 502, Type: "server_error", Message: "<html>Bad Gateway</html>"}},
		{"not Anthropic's shape, a client status", 404, "no such route",
			Error{Status: 404, Type: "not_found_error", Message: "no such route"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			agEqual(t, Anthropic.(Translator).DecodeError(tt.status, []byte(tt.body)), tt.want)
		})
	}
}
