package codec

import (
	"encoding/json"
	"testing"

	"github.com/openai/openai-go/v3/responses"
)

func TestOpenAIResponsesDecodeRequest(t *testing.T) {
	respOnly := func(name string) Feature { return Feature{Name: name, Protocols: []string{"openai-responses"}} }
	tests := []struct {
		name string
		body string
		want Request
	}{
		{
			name: "string input and instructions",
			body: `{"model":"gpt-4.1","instructions":"Be brief.","input":"hi","max_output_tokens":100,"stream":true,"store":true}`,
			want: Request{Model: "gpt-4.1", System: []Part{{Kind: PartText, Text: "Be brief."}}, MaxTokens: 100, Stream: true,
				Messages: []Message{{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: "hi"}}}}},
		},
		{
			name: "messages with parts; developer messages join the system prompt",
			body: `{"model":"m","input":[
				{"role":"developer","content":"Use French."},
				{"type":"message","role":"user","content":[{"type":"input_text","text":"what is this?"},
					{"type":"input_image","image_url":"data:image/webp;base64,UklGR","detail":"auto"},
					{"type":"input_image","image_url":"https://example.com/x.png"}]},
				{"type":"message","role":"assistant","content":[{"type":"output_text","text":"A cat.","annotations":[]}]},
				{"role":"user","content":"thanks"}]}`,
			want: Request{
				Model:  "m",
				System: []Part{{Kind: PartText, Text: "Use French."}},
				Messages: []Message{
					{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: "what is this?"}, {Kind: PartImage, MediaType: "image/webp", Data: "UklGR"}, {Kind: PartImage, URL: "https://example.com/x.png"}}},
					{Role: RoleAssistant, Parts: []Part{{Kind: PartText, Text: "A cat."}}},
					{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: "thanks"}}},
				},
				Needs: []Feature{{Name: "image_url", Protocols: []string{"openai-chat", "openai-responses", "anthropic"}}},
			},
		},
		{
			name: "a turn of reasoning, calls and outputs",
			body: `{"model":"m","input":[
				{"role":"user","content":"weather in Paris and Rome?"},
				{"type":"reasoning","id":"rs_1","summary":[{"type":"summary_text","text":"two"},{"type":"summary_text","text":"cities"}],"encrypted_content":"gAAA"},
				{"type":"function_call","id":"fc_1","call_id":"call_1","name":"weather","arguments":"{\"city\":\"Paris\"}","status":"completed"},
				{"type":"function_call","call_id":"call_2","name":"weather","arguments":"{\"city\":\"Rome\"}"},
				{"type":"function_call_output","call_id":"call_1","output":"18C"},
				{"type":"function_call_output","call_id":"call_2","output":[{"type":"input_text","text":"22C"},{"type":"input_image","image_url":"data:image/png;base64,AA"}]}]}`,
			want: Request{Model: "m", Messages: []Message{
				{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: "weather in Paris and Rome?"}}},
				{Role: RoleAssistant, Parts: []Part{
					{Kind: PartThinking, Text: "two\n\ncities"},
					{Kind: PartRedactedThinking, Data: "gAAA"},
					{Kind: PartToolCall, ID: "call_1", Name: "weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
					{Kind: PartToolCall, ID: "call_2", Name: "weather", Arguments: json.RawMessage(`{"city":"Rome"}`)},
				}},
				{Role: RoleUser, Parts: []Part{
					{Kind: PartToolResult, ID: "call_1", Name: "weather", Content: []Part{{Kind: PartText, Text: "18C"}}},
					{Kind: PartToolResult, ID: "call_2", Name: "weather", Content: []Part{{Kind: PartText, Text: "22C"}, {Kind: PartImage, MediaType: "image/png", Data: "AA"}}},
				}},
			}},
		},
		{
			name: "tools, named choice and settings",
			body: `{"model":"m","input":[],"tools":[{"type":"function","name":"weather","description":"d","parameters":{"type":"object"},"strict":true}],
				"tool_choice":{"type":"function","name":"weather"},"parallel_tool_calls":false,"temperature":0.3,"top_p":0.8,
				"reasoning":{"effort":"low","summary":"auto"},"user":"u","text":{"format":{"type":"text"}}}`,
			want: Request{Model: "m", Tools: []Tool{{Name: "weather", Description: "d", Schema: json.RawMessage(`{"type":"object"}`)}},
				ToolChoice: ToolChoice{Mode: ToolNamed, Name: "weather"}, ParallelToolCalls: oaiPtr(false), Temperature: oaiPtr(0.3), TopP: oaiPtr(0.8),
				Thinking: &Thinking{Effort: "low"}, User: "u"},
		},
		{
			name: "features only the Responses API can express",
			body: `{"model":"m","previous_response_id":"resp_1","conversation":"conv_1","background":true,
				"text":{"format":{"type":"json_schema","name":"x","schema":{}}},"top_logprobs":2,"prompt":{"id":"pmpt_1"},
				"tools":[{"type":"web_search"},{"type":"file_search","vector_store_ids":["vs_1"]},{"type":"code_interpreter","container":{"type":"auto"}},
					{"type":"computer_use_preview"},{"type":"mcp","server_label":"x"},{"type":"image_generation"}],
				"tool_choice":{"type":"allowed_tools","mode":"auto","tools":[]},
				"input":[{"type":"item_reference","id":"msg_1"},{"type":"web_search_call","id":"ws_1"},
					{"role":"user","content":[{"type":"input_image","file_id":"file-1"},{"type":"input_file","file_id":"file-2"}]}]}`,
			want: Request{Model: "m", Needs: []Feature{
				respOnly("previous_response_id"), respOnly("conversation"), respOnly("background"),
				{Name: "response_format", Protocols: []string{"openai-responses"}},
				{Name: "logprobs", Protocols: []string{"openai-responses"}},
				respOnly("prompt"), respOnly("item:item_reference"), respOnly("item:web_search_call"), respOnly("file_id"), respOnly("input_file"),
				respOnly("tool:web_search"), respOnly("tool:file_search"), respOnly("tool:code_interpreter"),
				respOnly("tool:computer_use_preview"), respOnly("tool:mcp"), respOnly("tool:image_generation"),
				respOnly("tool_choice:allowed_tools"),
			}},
		},
		{
			name: "background false and an empty previous_response_id need nothing",
			body: `{"model":"m","input":"x","background":false,"previous_response_id":null,"store":false,"tool_choice":"required"}`,
			want: Request{Model: "m", Messages: []Message{{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: "x"}}}}, ToolChoice: ToolChoice{Mode: ToolAny}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := OpenAIResponses.(Translator).DecodeRequest([]byte(tt.body))
			if err != nil {
				t.Fatalf("DecodeRequest: %v", err)
			}
			oaiSameValue(t, "request", *got, tt.want)
		})
	}
}

func TestOpenAIResponsesDecodeRequestErrors(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"not JSON", `{`, "request body is not valid JSON"},
		{"input of the wrong type", `{"model":"m","input":5}`, "input: must be a string or an array of items, got a number"},
		{"item not an object", `{"model":"m","input":["hi"]}`, "input[0]: must be an object, got a string"},
		{"item without type or role", `{"model":"m","input":[{"content":"x"}]}`, "input[0]: an item needs a type or a role"},
		{"unknown role", `{"model":"m","input":[{"role":"user","content":"a"},{"role":"tool","content":"b"}]}`, `input[1].role: unknown role "tool"`},
		{"content of the wrong type", `{"model":"m","input":[{"role":"user","content":{"text":"a"}}]}`, "input[0].content: must be a string or an array of content parts, got an object"},
		{"unknown part", `{"model":"m","input":[{"role":"user","content":[{"type":"input_video"}]}]}`, `input[0].content[0].type: unknown content part type "input_video"`},
		{"image in instructions-like message", `{"model":"m","input":[{"role":"system","content":[{"type":"input_image","image_url":"https://x"}]}]}`, `input[0].content[0].type: must be "input_text" here, got "input_image"`},
		{"image_url not a string", `{"model":"m","input":[{"role":"user","content":[{"type":"input_image","image_url":{"url":"https://x"}}]}]}`, "input[0].content[0].image_url: must be a string, got an object"},
		{"bad arguments", `{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","arguments":"{"}]}`, "input[0].arguments: must be a JSON object encoded as a string"},
		{"arguments as an object", `{"model":"m","input":[{"type":"function_call","call_id":"c","name":"f","arguments":{}}]}`, "input[0].arguments: must be a JSON object encoded as a string"},
		{"call without call_id", `{"model":"m","input":[{"type":"function_call","name":"f","arguments":"{}"}]}`, "input[0].call_id: must be a non-empty string"},
		{"output without call_id", `{"model":"m","input":[{"type":"function_call_output","output":"x"}]}`, "input[0].call_id: must be a non-empty string"},
		{"output of the wrong type", `{"model":"m","input":[{"type":"function_call_output","call_id":"c","output":3}]}`, "input[0].output: must be a string or an array of content parts, got a number"},
		{"tool without name", `{"model":"m","tools":[{"type":"function","parameters":{}}]}`, "tools[0].name: must be a non-empty string"},
		{"tool_choice without name", `{"model":"m","tool_choice":{"type":"function"}}`, "tool_choice.name: must be a non-empty string"},
		{"reasoning not an object", `{"model":"m","reasoning":"high"}`, "reasoning: must be an object, got a string"},
		{"max_output_tokens negative", `{"model":"m","max_output_tokens":-5}`, "max_output_tokens: must be a non-negative integer, got -5"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := OpenAIResponses.(Translator).DecodeRequest([]byte(tt.body))
			if err == nil || err.Error() != tt.want {
				t.Fatalf("DecodeRequest error = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestOpenAIResponsesEncodeRequest(t *testing.T) {
	tests := []struct {
		name  string
		req   Request
		model string
		want  string
	}{
		{
			name:  "system as instructions, a tool turn, settings",
			model: "gpt-4.1",
			req: Request{
				System: []Part{{Kind: PartText, Text: "a"}, {Kind: PartText, Text: "b"}},
				Messages: []Message{
					{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: "look"}, {Kind: PartImage, MediaType: "image/png", Data: "AA"}}},
					{Role: RoleAssistant, Parts: []Part{{Kind: PartThinking, Text: "x"}, {Kind: PartText, Text: "ok"}, {Kind: PartToolCall, ID: "c1", Name: "f", Arguments: json.RawMessage(`{"a":1}`)}}},
					{Role: RoleUser, Parts: []Part{{Kind: PartToolResult, ID: "c1", Content: []Part{{Kind: PartText, Text: "done"}}}, {Kind: PartText, Text: "next"}}},
				},
				Tools:      []Tool{{Name: "f", Description: "d", Schema: json.RawMessage(`{"type":"object"}`)}},
				ToolChoice: ToolChoice{Mode: ToolNamed, Name: "f"}, ParallelToolCalls: oaiPtr(true),
				MaxTokens: 50, Temperature: oaiPtr(0.1), TopP: oaiPtr(0.5), TopK: oaiPtr(int64(3)), Stop: []string{"x"},
				Stream: true, Thinking: &Thinking{BudgetTokens: 1000}, User: "u",
			},
			want: `{"model":"gpt-4.1","instructions":"a\n\nb","input":[
				{"role":"user","content":[{"type":"input_text","text":"look"},{"type":"input_image","image_url":"data:image/png;base64,AA"}]},
				{"role":"assistant","content":"ok"},
				{"type":"function_call","call_id":"c1","name":"f","arguments":"{\"a\":1}"},
				{"type":"function_call_output","call_id":"c1","output":"done"},
				{"role":"user","content":[{"type":"input_text","text":"next"}]}],
				"tools":[{"type":"function","name":"f","description":"d","parameters":{"type":"object"},"strict":false}],
				"tool_choice":{"type":"function","name":"f"},"parallel_tool_calls":true,
				"max_output_tokens":50,"temperature":0.1,"top_p":0.5,"stream":true,"reasoning":{"effort":"low"},"user":"u"}`,
		},
		{
			name: "no model, choice modes",
			req:  Request{Tools: []Tool{{Name: "f"}}, ToolChoice: ToolChoice{Mode: ToolAny}},
			want: `{"input":[],"tools":[{"type":"function","name":"f","parameters":{"type":"object"},"strict":false}],"tool_choice":"required"}`,
		},
		{
			name: "tool_choice none",
			req:  Request{Tools: []Tool{{Name: "f"}}, ToolChoice: ToolChoice{Mode: ToolNone}},
			want: `{"input":[],"tools":[{"type":"function","name":"f","parameters":{"type":"object"},"strict":false}],"tool_choice":"none"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := OpenAIResponses.(Translator).EncodeRequest(&tt.req, tt.model, EncodeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			oaiSameJSON(t, got, []byte(tt.want))
			back, err := OpenAIResponses.(Translator).DecodeRequest(got)
			if err != nil {
				t.Fatalf("the encoded request does not decode: %v", err)
			}
			if len(back.Messages) == 0 && len(tt.req.Messages) > 0 {
				t.Fatal("the encoded request lost its messages")
			}
		})
	}
}

func TestOpenAIResponsesDecodeResponse(t *testing.T) {
	tests := []struct {
		name, body string
		want       Response
	}{
		{
			name: "refusal",
			body: `{"id":"resp_1","object":"response","created_at":5,"status":"completed","model":"m","output":[{"type":"message","id":"msg_1","content":[{"type":"refusal","refusal":"No."}]}]}`,
			want: Response{ID: "resp_1", Model: "m", Created: 5, Parts: []Part{{Kind: PartText, Text: "No."}}, StopReason: StopRefusal},
		},
		{
			name: "arguments that are not a JSON object are kept as the model wrote them",
			body: `{"id":"resp_1","status":"completed","model":"m","output":[{"type":"function_call","call_id":"c","name":"f","arguments":"[1]"}]}`,
			want: Response{ID: "resp_1", Model: "m", Parts: []Part{{Kind: PartToolCall, ID: "c", Name: "f", Arguments: json.RawMessage(`[1]`)}}, StopReason: StopToolUse},
		},
		{
			name: "content filter",
			body: `{"id":"resp_1","status":"incomplete","incomplete_details":{"reason":"content_filter"},"model":"m","output":[]}`,
			want: Response{ID: "resp_1", Model: "m", StopReason: StopContentFilter},
		},
		{
			name: "reasoning text of an open-weight model, unknown items skipped",
			body: `{"id":"resp_1","status":"completed","model":"gpt-oss","output":[{"type":"reasoning","summary":[],"content":[{"type":"reasoning_text","text":"think"}]},{"type":"web_search_call","id":"ws"},{"type":"message","content":[{"type":"output_text","text":"a"},{"type":"output_text","text":"b"}]}]}`,
			want: Response{ID: "resp_1", Model: "gpt-oss", Parts: []Part{{Kind: PartThinking, Text: "think"}, {Kind: PartText, Text: "a"}, {Kind: PartText, Text: "b"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := OpenAIResponses.(Translator).DecodeResponse([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			oaiSameValue(t, "response", *got, tt.want)
		})
	}
}

func TestOpenAIResponsesDecodeResponseErrors(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"not JSON", `nope`, "response answer is not valid JSON"},
		{"no output", `{"id":"resp_1"}`, "response answer has no output array"},
		{"failed", `{"id":"resp_1","status":"failed","error":{"code":"server_error","message":"boom"},"output":[]}`, "response failed: boom"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := OpenAIResponses.(Translator).DecodeResponse([]byte(tt.body))
			if err == nil || err.Error() != tt.want {
				t.Fatalf("error = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestOpenAIResponsesEncodeResponse(t *testing.T) {
	common := `"error":null,"instructions":null,"max_output_tokens":null,"parallel_tool_calls":true,"previous_response_id":null,
		"reasoning":{"effort":null,"summary":null},"store":false,"temperature":null,"text":{"format":{"type":"text"}},"tool_choice":"auto",
		"tools":[],"top_p":null,"truncation":"disabled","user":null,"metadata":{}`
	tests := []struct {
		name string
		resp Response
		want string
	}{
		{
			name: "every item kind; a foreign id gets the resp_ prefix",
			resp: Response{ID: "msg_01", Model: "claude", Created: 1700000000, StopReason: StopToolUse,
				Usage: Usage{Input: 10, Output: 20, CacheRead: 4, CacheWrite: 6, Reasoning: 5},
				Parts: []Part{
					{Kind: PartThinking, Text: "plan", Signature: "sig"},
					{Kind: PartRedactedThinking, Data: "opaque"},
					{Kind: PartText, Text: "Calling."},
					{Kind: PartToolCall, ID: "toolu_1", Name: "f", Arguments: json.RawMessage(`{"a":1}`)},
				}},
			want: `{"id":"resp_msg_01","object":"response","created_at":1700000000,"status":"completed","incomplete_details":null,"model":"claude",` + common + `,
				"output":[
					{"id":"rs_msg_01_0","type":"reasoning","summary":[{"type":"summary_text","text":"plan"}]},
					{"id":"rs_msg_01_1","type":"reasoning","summary":[],"encrypted_content":"opaque"},
					{"id":"msg_msg_01_2","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"Calling.","annotations":[],"logprobs":[]}]},
					{"id":"fc_msg_01_3","type":"function_call","status":"completed","call_id":"toolu_1","name":"f","arguments":"{\"a\":1}"}],
				"usage":{"input_tokens":10,"input_tokens_details":{"cached_tokens":4},"output_tokens":20,"output_tokens_details":{"reasoning_tokens":5},"total_tokens":30}}`,
		},
		{
			name: "max tokens is incomplete",
			resp: Response{ID: "resp_9", Model: "m", Created: 1, StopReason: StopMaxTokens, Parts: []Part{{Kind: PartText, Text: "cut"}}},
			want: `{"id":"resp_9","object":"response","created_at":1,"status":"incomplete","incomplete_details":{"reason":"max_output_tokens"},"model":"m",` + common + `,
				"output":[{"id":"msg_9_0","type":"message","status":"completed","role":"assistant","content":[{"type":"output_text","text":"cut","annotations":[],"logprobs":[]}]}],
				"usage":{"input_tokens":0,"input_tokens_details":{"cached_tokens":0},"output_tokens":0,"output_tokens_details":{"reasoning_tokens":0},"total_tokens":0}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := OpenAIResponses.(Translator).EncodeResponse(&tt.resp)
			oaiSameJSON(t, got, []byte(tt.want))
			var sdk responses.Response
			if err := json.Unmarshal(got, &sdk); err != nil {
				t.Fatalf("the SDK cannot read it: %v", err)
			}
			if sdk.ID != withPrefix("resp_", tt.resp.ID) || len(sdk.Output) != len(tt.resp.Parts) {
				t.Fatalf("the SDK read %s with %d items", sdk.ID, len(sdk.Output))
			}
		})
	}
}
