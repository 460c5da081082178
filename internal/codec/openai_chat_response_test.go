package codec

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
)

func TestOpenAIChatDecodeResponse(t *testing.T) {
	tests := []struct {
		name, body string
		want       Response
	}{
		{
			name: "text, cached and reasoning usage",
			body: `{"id":"chatcmpl-1","object":"chat.completion","created":1700000000,"model":"o3","choices":[{"index":0,"message":{"role":"assistant","content":"Hi"},"finish_reason":"stop"}],
				"usage":{"prompt_tokens":100,"completion_tokens":50,"total_tokens":150,"prompt_tokens_details":{"cached_tokens":64},"completion_tokens_details":{"reasoning_tokens":30}}}`,
			want: Response{ID: "chatcmpl-1", Model: "o3", Created: 1700000000, Parts: []Part{{Kind: PartText, Text: "Hi"}},
				StopReason: StopEnd, Usage: Usage{Input: 100, Output: 50, CacheRead: 64, Reasoning: 30}},
		},
		{
			name: "reasoning_content, text and tool calls",
			body: `{"id":"x","model":"m","choices":[{"message":{"content":"Let me look.","reasoning_content":"think","tool_calls":[
				{"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":1}"}},
				{"id":"call_2","type":"function","function":{"name":"g","arguments":""}}]},"finish_reason":"tool_calls"}]}`,
			want: Response{ID: "x", Model: "m", Parts: []Part{
				{Kind: PartThinking, Text: "think"},
				{Kind: PartText, Text: "Let me look."},
				{Kind: PartToolCall, ID: "call_1", Name: "f", Arguments: json.RawMessage(`{"a":1}`)},
				{Kind: PartToolCall, ID: "call_2", Name: "g", Arguments: json.RawMessage(`{}`)},
			}, StopReason: StopToolUse},
		},
		{
			name: "reasoning (vLLM) field, length",
			body: `{"id":"x","model":"m","choices":[{"message":{"content":"abc","reasoning":"r"},"finish_reason":"length"}]}`,
			want: Response{ID: "x", Model: "m", Parts: []Part{{Kind: PartThinking, Text: "r"}, {Kind: PartText, Text: "abc"}}, StopReason: StopMaxTokens},
		},
		{
			name: "refusal",
			body: `{"id":"x","model":"m","choices":[{"message":{"content":null,"refusal":"No."},"finish_reason":"stop"}]}`,
			want: Response{ID: "x", Model: "m", Parts: []Part{{Kind: PartText, Text: "No."}}, StopReason: StopRefusal},
		},
		{
			name: "content filter",
			body: `{"id":"x","model":"m","choices":[{"message":{"content":""},"finish_reason":"content_filter"}]}`,
			want: Response{ID: "x", Model: "m", StopReason: StopContentFilter},
		},
		{
			name: "arguments that are not a JSON object are kept as the model wrote them",
			body: `{"id":"x","model":"m","choices":[{"message":{"tool_calls":[{"id":"c","function":{"name":"f","arguments":"{\"a\":"}}]},"finish_reason":"tool_calls"}]}`,
			want: Response{ID: "x", Model: "m", Parts: []Part{{Kind: PartToolCall, ID: "c", Name: "f", Arguments: json.RawMessage(`{"a":`)}}, StopReason: StopToolUse},
		},
		{
			name: "legacy function_call finish, stop after tool calls",
			body: `{"id":"x","model":"m","choices":[{"message":{"tool_calls":[{"id":"c","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"stop"}]}`,
			want: Response{ID: "x", Model: "m", Parts: []Part{{Kind: PartToolCall, ID: "c", Name: "f", Arguments: json.RawMessage(`{}`)}}, StopReason: StopToolUse},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := OpenAIChat.(Translator).DecodeResponse([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			oaiSameValue(t, "response", *got, tt.want)
		})
	}
}

func TestOpenAIChatDecodeResponseErrors(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"not JSON", `<html>`, "chat completion answer is not valid JSON"},
		{"no choices", `{"id":"x","choices":[]}`, "chat completion answer has no choices[0]"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := OpenAIChat.(Translator).DecodeResponse([]byte(tt.body))
			if err == nil || err.Error() != tt.want {
				t.Fatalf("error = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestOpenAIChatEncodeResponse(t *testing.T) {
	usage := `"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15,"prompt_tokens_details":{"cached_tokens":4},"completion_tokens_details":{"reasoning_tokens":2}}`
	u := Usage{Input: 10, Output: 5, CacheRead: 4, CacheWrite: 3, Reasoning: 2}
	tests := []struct {
		name string
		resp Response
		want string
	}{
		{
			name: "text; a foreign id gets the chatcmpl- prefix",
			resp: Response{ID: "msg_01", Model: "claude", Created: 1700000000, Parts: []Part{{Kind: PartText, Text: "Hi"}, {Kind: PartText, Text: " there"}}, Usage: u},
			want: `{"id":"chatcmpl-msg_01","object":"chat.completion","created":1700000000,"model":"claude","choices":[{"index":0,
				"message":{"role":"assistant","content":"Hi there","refusal":null},"finish_reason":"stop","logprobs":null}],` + usage + `}`,
		},
		{
			name: "thinking and tool calls only: content null",
			resp: Response{ID: "chatcmpl-9", Model: "m", Created: 1, StopReason: StopToolUse, Usage: u, Parts: []Part{
				{Kind: PartThinking, Text: "plan", Signature: "s"},
				{Kind: PartToolCall, ID: "toolu_1", Name: "f", Arguments: json.RawMessage(`{"q":"x"}`)},
			}},
			want: `{"id":"chatcmpl-9","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,
				"message":{"role":"assistant","content":null,"refusal":null,"tool_calls":[{"id":"toolu_1","type":"function","function":{"name":"f","arguments":"{\"q\":\"x\"}"}}],
				"reasoning_content":"plan"},"finish_reason":"tool_calls","logprobs":null}],` + usage + `}`,
		},
		{
			name: "max tokens",
			resp: Response{ID: "a", Model: "m", Created: 1, StopReason: StopMaxTokens, Usage: u, Parts: []Part{{Kind: PartText, Text: "cut"}}},
			want: `{"id":"chatcmpl-a","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,
				"message":{"role":"assistant","content":"cut","refusal":null},"finish_reason":"length","logprobs":null}],` + usage + `}`,
		},
		{
			name: "content filter and refusal",
			resp: Response{ID: "a", Model: "m", Created: 1, StopReason: StopContentFilter, Usage: u},
			want: `{"id":"chatcmpl-a","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,
				"message":{"role":"assistant","content":null,"refusal":null},"finish_reason":"content_filter","logprobs":null}],` + usage + `}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := OpenAIChat.(Translator).EncodeResponse(&tt.resp)
			oaiSameJSON(t, got, []byte(tt.want))
			var sdk openai.ChatCompletion
			if err := json.Unmarshal(got, &sdk); err != nil {
				t.Fatalf("the SDK cannot read it: %v", err)
			}
			if sdk.ID == "" || len(sdk.Choices) != 1 || sdk.Usage.TotalTokens != 15 {
				t.Fatalf("the SDK read %+v", sdk)
			}
		})
	}
}

func TestOpenAIChatEncodeResponseCreatedNow(t *testing.T) {
	before := time.Now().Unix()
	got := OpenAIChat.(Translator).EncodeResponse(&Response{ID: "x"})
	after := time.Now().Unix()
	var sdk openai.ChatCompletion
	if err := json.Unmarshal(got, &sdk); err != nil {
		t.Fatal(err)
	}
	if sdk.Created < before || sdk.Created > after {
		t.Fatalf("created %d, want the current time in [%d, %d]", sdk.Created, before, after)
	}
}

func TestOpenAIDecodeError(t *testing.T) {
	long := strings.Repeat("é", 300) // 600 bytes
	tests := []struct {
		name   string
		status int
		body   string
		want   Error
	}{
		{"OpenAI shape", 429, `{"error":{"message":"Rate limit reached","type":"requests","param":null,"code":"rate_limit_exceeded"}}`,
			Error{Status: 429, Type: "requests", Code: "rate_limit_exceeded", Message: "Rate limit reached"}},
		{"numeric code", 500, `{"error":{"message":"boom","type":"server_error","code":500}}`, Error{Status: 500, Type: "server_error", Code: "500", Message: "boom"}},
		{"string error", 400, `{"error":"model not loaded"}`, Error{Status: 400, Message: "model not loaded"}},
		{"HTML", 502, "<html>Bad Gateway</html>\n", Error{Status: 502, Message: "<html>Bad Gateway</html>"}},
		{"empty error object", 503, `{"error":{}}`, Error{Status: 503, Message: `{"error":{}}`}},
		{"long body cut on a rune boundary", 500, long, Error{Status: 500, Message: strings.Repeat("é", 256)}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, c := range []Translator{OpenAIChat.(Translator), OpenAIResponses.(Translator)} {
				oaiSameValue(t, c.Name(), c.DecodeError(tt.status, []byte(tt.body)), tt.want)
			}
		})
	}
}
