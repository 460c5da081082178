package codec

import (
	"encoding/json"
	"testing"
)

func TestOpenAIChatDecodeRequest(t *testing.T) {
	needImageURL := Feature{Name: "image_url", Protocols: []string{"openai-chat", "openai-responses", "anthropic"}}
	tests := []struct {
		name string
		body string
		want Request
	}{
		{
			name: "minimal",
			body: `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`,
			want: Request{Model: "gpt-4o", Messages: []Message{{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: "hi"}}}}},
		},
		{
			name: "system and developer in order, as text parts",
			body: `{"model":"m","messages":[{"role":"system","content":"a"},{"role":"developer","content":[{"type":"text","text":"b"},{"type":"text","text":"c"}]},{"role":"user","content":"hi"}]}`,
			want: Request{
				Model:    "m",
				System:   []Part{{Kind: PartText, Text: "a"}, {Kind: PartText, Text: "b"}, {Kind: PartText, Text: "c"}},
				Messages: []Message{{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: "hi"}}}},
			},
		},
		{
			name: "user parts: text, data URL image, http image",
			body: `{"model":"m","messages":[{"role":"user","content":[
				{"type":"text","text":"what is this?"},
				{"type":"image_url","image_url":{"url":"data:image/png;base64,iVBORw0K","detail":"high"}},
				{"type":"image_url","image_url":{"url":"https://example.com/cat.jpg"}}]}]}`,
			want: Request{
				Model: "m",
				Messages: []Message{{Role: RoleUser, Parts: []Part{
					{Kind: PartText, Text: "what is this?"},
					{Kind: PartImage, MediaType: "image/png", Data: "iVBORw0K"},
					{Kind: PartImage, URL: "https://example.com/cat.jpg"},
				}}},
				Needs: []Feature{needImageURL},
			},
		},
		{
			name: "tool round trip: reasoning, calls, consecutive tool results in one user message",
			body: `{"model":"m","messages":[
				{"role":"user","content":"weather in Paris and Rome?"},
				{"role":"assistant","content":null,"reasoning_content":"two cities","tool_calls":[
					{"id":"call_1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}},
					{"id":"call_2","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Rome\"}"}}]},
				{"role":"tool","tool_call_id":"call_1","content":"18C"},
				{"role":"tool","tool_call_id":"call_2","content":[{"type":"text","text":"22C"}]},
				{"role":"user","content":"thanks"}]}`,
			want: Request{
				Model: "m",
				Messages: []Message{
					{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: "weather in Paris and Rome?"}}},
					{Role: RoleAssistant, Parts: []Part{
						{Kind: PartThinking, Text: "two cities"},
						{Kind: PartToolCall, ID: "call_1", Name: "weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
						{Kind: PartToolCall, ID: "call_2", Name: "weather", Arguments: json.RawMessage(`{"city":"Rome"}`)},
					}},
					{Role: RoleUser, Parts: []Part{
						{Kind: PartToolResult, ID: "call_1", Name: "weather", Content: []Part{{Kind: PartText, Text: "18C"}}},
						{Kind: PartToolResult, ID: "call_2", Name: "weather", Content: []Part{{Kind: PartText, Text: "22C"}}},
					}},
					{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: "thanks"}}},
				},
			},
		},
		{
			name: "assistant text, refusal and empty-argument call",
			body: `{"model":"m","messages":[{"role":"assistant","content":[{"type":"text","text":"a"},{"type":"refusal","refusal":"no"}],"tool_calls":[{"id":"c","type":"function","function":{"name":"now","arguments":""}}]}]}`,
			want: Request{Model: "m", Messages: []Message{{Role: RoleAssistant, Parts: []Part{
				{Kind: PartText, Text: "a"}, {Kind: PartText, Text: "no"},
				{Kind: PartToolCall, ID: "c", Name: "now", Arguments: json.RawMessage(`{}`)},
			}}}},
		},
		{
			name: "settings",
			body: `{"model":"m","messages":[],"max_tokens":10,"max_completion_tokens":300,"temperature":0.2,"top_p":0.9,
				"stop":"END","stream":true,"stream_options":{"include_usage":true},"reasoning_effort":"high","user":"u-1",
				"parallel_tool_calls":false,"presence_penalty":0.5,"frequency_penalty":0.1,"seed":7,"store":true}`,
			want: Request{
				Model: "m", MaxTokens: 300, Temperature: oaiPtr(0.2), TopP: oaiPtr(0.9), Stop: []string{"END"},
				Stream: true, IncludeUsage: true, Thinking: &Thinking{Effort: "high"}, User: "u-1", ParallelToolCalls: oaiPtr(false),
			},
		},
		{
			name: "max_tokens alone, stop array",
			body: `{"model":"m","messages":[],"max_tokens":64,"stop":["a","b"]}`,
			want: Request{Model: "m", MaxTokens: 64, Stop: []string{"a", "b"}},
		},
		{
			name: "tools and named tool_choice; other tool types are needs",
			body: `{"model":"m","messages":[],"tools":[
				{"type":"function","function":{"name":"weather","description":"Get weather","parameters":{"type":"object","properties":{"city":{"type":"string"}}},"strict":true}},
				{"type":"function","function":{"name":"now"}},
				{"type":"custom","custom":{"name":"grammar"}}],
				"tool_choice":{"type":"function","function":{"name":"weather"}}}`,
			want: Request{
				Model: "m",
				Tools: []Tool{
					{Name: "weather", Description: "Get weather", Schema: json.RawMessage(`{"type":"object","properties":{"city":{"type":"string"}}}`)},
					{Name: "now"},
				},
				ToolChoice: ToolChoice{Mode: ToolNamed, Name: "weather"},
				Needs:      []Feature{{Name: "tool:custom", Protocols: []string{"openai-chat"}}},
			},
		},
		{
			name: "tool_choice required",
			body: `{"model":"m","messages":[],"tool_choice":"required"}`,
			want: Request{Model: "m", ToolChoice: ToolChoice{Mode: ToolAny}},
		},
		{
			name: "tool_choice none",
			body: `{"model":"m","messages":[],"tool_choice":"none"}`,
			want: Request{Model: "m", ToolChoice: ToolChoice{Mode: ToolNone}},
		},
		{
			name: "features only chat can express",
			body: `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"x"},{"type":"input_audio","input_audio":{"data":"AAA","format":"wav"}}]}],
				"n":2,"logprobs":true,"top_logprobs":3,"response_format":{"type":"json_schema","json_schema":{"name":"x","schema":{}}},
				"modalities":["text","audio"],"logit_bias":{"50256":-100}}`,
			want: Request{
				Model:    "m",
				Messages: []Message{{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: "x"}}}},
				Needs: []Feature{
					{Name: "n", Protocols: []string{"openai-chat"}},
					{Name: "logprobs", Protocols: []string{"openai-chat"}},
					{Name: "response_format", Protocols: []string{"openai-chat"}},
					{Name: "audio", Protocols: []string{"openai-chat"}},
					{Name: "logit_bias", Protocols: []string{"openai-chat"}},
				},
			},
		},
		{
			name: "n 1, response_format text and empty logit_bias need nothing",
			body: `{"model":"m","messages":[],"n":1,"response_format":{"type":"text"},"logit_bias":{}}`,
			want: Request{Model: "m"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := OpenAIChat.(Translator).DecodeRequest([]byte(tt.body))
			if err != nil {
				t.Fatalf("DecodeRequest: %v", err)
			}
			oaiSameValue(t, "request", *got, tt.want)
		})
	}
}

func TestOpenAIChatDecodeRequestErrors(t *testing.T) {
	tests := []struct {
		name, body, want string
	}{
		{"not JSON", `{"model":`, "request body is not valid JSON"},
		{"not an object", `[1]`, "request body must be a JSON object, got an array"},
		{"messages missing", `{"model":"m"}`, "messages: missing"},
		{"messages not an array", `{"model":"m","messages":{}}`, "messages: must be an array, got an object"},
		{"message not an object", `{"model":"m","messages":["hi"]}`, "messages[0]: must be an object, got a string"},
		{"unknown role", `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"robot","content":"b"}]}`, `messages[1].role: unknown role "robot"`},
		{"role missing", `{"model":"m","messages":[{"content":"b"}]}`, `messages[0].role: missing`},
		{"content of the wrong type", `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"user","content":"b"},{"role":"user","content":42}]}`, "messages[2].content: must be a string or an array of content parts, got a number"},
		{"user content missing", `{"model":"m","messages":[{"role":"user"}]}`, "messages[0].content: must be a string or an array of content parts, got null"},
		{"unknown part", `{"model":"m","messages":[{"role":"user","content":[{"type":"video","video":{}}]}]}`, `messages[0].content[0].type: unknown content part type "video"`},
		{"image in a system message", `{"model":"m","messages":[{"role":"system","content":[{"type":"image_url","image_url":{"url":"https://x"}}]}]}`, `messages[0].content[0].type: must be "text" here, got "image_url"`},
		{"text not a string", `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":1}]}]}`, "messages[0].content[0].text: must be a string, got a number"},
		{"bad data URL", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"data:image/png,abc"}}]}]}`, "messages[0].content[0].image_url.url: a data URL must be data:<media type>;base64,<data>"},
		{"image URL scheme", `{"model":"m","messages":[{"role":"user","content":[{"type":"image_url","image_url":{"url":"ftp://x/y.png"}}]}]}`, "messages[0].content[0].image_url.url: must be an http(s) URL or a base64 data URL"},
		{"arguments not JSON", `{"model":"m","messages":[{"role":"user","content":"a"},{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{oops"}}]}]}`, "messages[1].tool_calls[0].function.arguments: must be a JSON object encoded as a string"},
		{"arguments not an object", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"[1,2]"}}]}]}`, "messages[0].tool_calls[0].function.arguments: must be a JSON object encoded as a string"},
		{"tool call without id", `{"model":"m","messages":[{"role":"assistant","tool_calls":[{"type":"function","function":{"name":"f","arguments":"{}"}}]}]}`, "messages[0].tool_calls[0].id: must be a non-empty string"},
		{"tool message without id", `{"model":"m","messages":[{"role":"tool","content":"x"}]}`, "messages[0].tool_call_id: must be a non-empty string"},
		{"model not a string", `{"model":1,"messages":[]}`, "model: must be a string, got a number"},
		{"temperature not a number", `{"model":"m","messages":[],"temperature":"hot"}`, "temperature: must be a number, got a string"},
		{"negative max_tokens", `{"model":"m","messages":[],"max_tokens":-1}`, "max_tokens: must be a non-negative integer, got -1"},
		{"fractional max_completion_tokens", `{"model":"m","messages":[],"max_completion_tokens":1.5}`, "max_completion_tokens: must be a non-negative integer, got 1.5"},
		{"stop of numbers", `{"model":"m","messages":[],"stop":["a",2]}`, "stop[1]: must be a string, got a number"},
		{"stream not a boolean", `{"model":"m","messages":[],"stream":"yes"}`, "stream: must be a boolean, got a string"},
		{"tools not an array", `{"model":"m","messages":[],"tools":{}}`, "tools: must be an array, got an object"},
		{"tool without name", `{"model":"m","messages":[],"tools":[{"type":"function","function":{"parameters":{}}}]}`, "tools[0].function.name: must be a non-empty string"},
		{"tool parameters not an object", `{"model":"m","messages":[],"tools":[{"type":"function","function":{"name":"f","parameters":"x"}}]}`, "tools[0].function.parameters: must be a JSON Schema object, got a string"},
		{"tool_choice unknown string", `{"model":"m","messages":[],"tool_choice":"always"}`, `tool_choice: must be "auto", "none", "required" or an object, got "always"`},
		{"tool_choice without name", `{"model":"m","messages":[],"tool_choice":{"type":"function"}}`, "tool_choice.function.name: must be a non-empty string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := OpenAIChat.(Translator).DecodeRequest([]byte(tt.body))
			if err == nil || err.Error() != tt.want {
				t.Fatalf("DecodeRequest error = %v, want %q", err, tt.want)
			}
		})
	}
}

func TestOpenAIChatEncodeRequest(t *testing.T) {
	tests := []struct {
		name  string
		req   Request
		model string
		want  string
	}{
		{
			name:  "minimal, model replaced",
			req:   Request{Model: "alias", Messages: []Message{{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: "hi"}}}}},
			model: "gpt-4o-mini",
			want:  `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"hi"}]}`,
		},
		{
			name: "no model for an empty argument; system parts joined first",
			req: Request{
				System:   []Part{{Kind: PartText, Text: "Be brief.", CacheControl: json.RawMessage(`{"type":"ephemeral"}`)}, {Kind: PartText, Text: "Use French."}},
				Messages: []Message{{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: "hi"}}}},
			},
			want: `{"messages":[{"role":"system","content":"Be brief.\n\nUse French."},{"role":"user","content":"hi"}]}`,
		},
		{
			name: "images as parts",
			req: Request{Messages: []Message{{Role: RoleUser, Parts: []Part{
				{Kind: PartText, Text: "compare"},
				{Kind: PartImage, MediaType: "image/png", Data: "AAAA"},
				{Kind: PartImage, URL: "https://example.com/b.jpg"},
			}}}},
			model: "m",
			want: `{"model":"m","messages":[{"role":"user","content":[{"type":"text","text":"compare"},
				{"type":"image_url","image_url":{"url":"data:image/png;base64,AAAA"}},
				{"type":"image_url","image_url":{"url":"https://example.com/b.jpg"}}]}]}`,
		},
		{
			name: "tool turn: thinking dropped, results become tool messages before the user's text",
			req: Request{Messages: []Message{
				{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: "weather?"}}},
				{Role: RoleAssistant, Parts: []Part{
					{Kind: PartThinking, Text: "hmm", Signature: "sig"},
					{Kind: PartRedactedThinking, Data: "xx"},
					{Kind: PartText, Text: "Checking."},
					{Kind: PartToolCall, ID: "toolu_1", Name: "weather", Arguments: json.RawMessage(`{"city":"Paris"}`)},
					{Kind: PartToolCall, ID: "toolu_2", Name: "now"},
				}},
				{Role: RoleUser, Parts: []Part{
					{Kind: PartToolResult, ID: "toolu_1", Content: []Part{{Kind: PartText, Text: "18C"}, {Kind: PartImage, MediaType: "image/png", Data: "AA"}, {Kind: PartText, Text: "sunny"}}},
					{Kind: PartToolResult, ID: "toolu_2", IsError: true},
					{Kind: PartText, Text: "and tomorrow?"},
				}},
			}},
			model: "m",
			want: `{"model":"m","messages":[
				{"role":"user","content":"weather?"},
				{"role":"assistant","content":"Checking.","tool_calls":[
					{"id":"toolu_1","type":"function","function":{"name":"weather","arguments":"{\"city\":\"Paris\"}"}},
					{"id":"toolu_2","type":"function","function":{"name":"now","arguments":"{}"}}]},
				{"role":"tool","tool_call_id":"toolu_1","content":"18C\nsunny"},
				{"role":"tool","tool_call_id":"toolu_2","content":""},
				{"role":"user","content":"and tomorrow?"}]}`,
		},
		{
			name: "assistant with only tool calls has null content; only thinking is dropped whole",
			req: Request{Messages: []Message{
				{Role: RoleAssistant, Parts: []Part{{Kind: PartThinking, Text: "x"}}},
				{Role: RoleAssistant, Parts: []Part{{Kind: PartToolCall, ID: "c", Name: "f", Arguments: json.RawMessage(`{}`)}}},
			}},
			want: `{"messages":[{"role":"assistant","content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]}]}`,
		},
		{
			name: "tools, named choice, parallel, settings, stream with usage, budget to effort",
			req: Request{
				Messages: []Message{{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: "x"}}}},
				Tools: []Tool{
					{Name: "weather", Description: "Get weather", Schema: json.RawMessage("{\n  \"type\": \"object\"\n}")},
					{Name: "now"},
				},
				ToolChoice:        ToolChoice{Mode: ToolNamed, Name: "weather"},
				ParallelToolCalls: oaiPtr(false),
				MaxTokens:         512, Temperature: oaiPtr(0.5), TopP: oaiPtr(1.0), TopK: oaiPtr(int64(40)),
				Stop: []string{"END", "STOP"}, Stream: true, Thinking: &Thinking{BudgetTokens: 10000}, User: "u",
			},
			model: "m",
			want: `{"model":"m","messages":[{"role":"user","content":"x"}],
				"tools":[{"type":"function","function":{"name":"weather","description":"Get weather","parameters":{"type":"object"}}},
					{"type":"function","function":{"name":"now","parameters":{"type":"object"}}}],
				"tool_choice":{"type":"function","function":{"name":"weather"}},"parallel_tool_calls":false,
				"max_tokens":512,"temperature":0.5,"top_p":1,"stop":["END","STOP"],
				"stream":true,"stream_options":{"include_usage":true},"reasoning_effort":"medium","user":"u"}`,
		},
		{
			name: "tool_choice any, parallel without tools dropped",
			req:  Request{Tools: []Tool{{Name: "f"}}, ToolChoice: ToolChoice{Mode: ToolAny}},
			want: `{"messages":[],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"required"}`,
		},
		{
			name: "tool_choice none; no tools means no tool settings",
			req:  Request{Tools: []Tool{{Name: "f"}}, ToolChoice: ToolChoice{Mode: ToolNone}},
			want: `{"messages":[],"tools":[{"type":"function","function":{"name":"f","parameters":{"type":"object"}}}],"tool_choice":"none"}`,
		},
		{
			name: "parallel_tool_calls without tools is not sent",
			req:  Request{ParallelToolCalls: oaiPtr(true), ToolChoice: ToolChoice{Mode: ToolAny}},
			want: `{"messages":[]}`,
		},
		{
			name: "effort wins over budget",
			req:  Request{Thinking: &Thinking{BudgetTokens: 50000, Effort: "minimal"}},
			want: `{"messages":[],"reasoning_effort":"minimal"}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := OpenAIChat.(Translator).EncodeRequest(&tt.req, tt.model, EncodeOptions{DefaultMaxTokens: 4096})
			if err != nil {
				t.Fatalf("EncodeRequest: %v", err)
			}
			oaiSameJSON(t, got, []byte(tt.want))
		})
	}
}

func TestEffortForBudget(t *testing.T) {
	tests := []struct {
		thinking *Thinking
		want     string
	}{
		{nil, ""},
		{&Thinking{}, ""},
		{&Thinking{BudgetTokens: -1}, ""},
		{&Thinking{BudgetTokens: 1024}, "low"},
		{&Thinking{BudgetTokens: 2048}, "low"},
		{&Thinking{BudgetTokens: 2049}, "medium"},
		{&Thinking{BudgetTokens: 16384}, "medium"},
		{&Thinking{BudgetTokens: 16385}, "high"},
		{&Thinking{BudgetTokens: 16385, Effort: "low"}, "low"},
	}
	for _, tt := range tests {
		if got := effortForBudget(tt.thinking); got != tt.want {
			t.Errorf("effortForBudget(%+v) = %q, want %q", tt.thinking, got, tt.want)
		}
	}
}

// TestOpenAIChatRequestRoundTrip checks that a request decoded and encoded
// again is the same request (for what Chat carries both ways).
func TestOpenAIChatRequestRoundTrip(t *testing.T) {
	body := `{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/"}}]},
		{"role":"assistant","content":"b","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"ok"}],
		"tools":[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object","properties":{"x":{"type":"integer"}}}}}],
		"tool_choice":"required","parallel_tool_calls":true,"max_tokens":100,"temperature":0,"stop":["z"],"stream":true,"stream_options":{"include_usage":true},"reasoning_effort":"low","user":"me"}`
	c := OpenAIChat.(Translator)
	r, err := c.DecodeRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	out, err := c.EncodeRequest(r, "m", EncodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := `{"model":"m","messages":[{"role":"system","content":"s"},{"role":"user","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:image/jpeg;base64,/9j/"}}]},
		{"role":"assistant","content":"b","tool_calls":[{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}}]},
		{"role":"tool","tool_call_id":"c1","content":"ok"}],
		"tools":[{"type":"function","function":{"name":"f","description":"d","parameters":{"type":"object","properties":{"x":{"type":"integer"}}}}}],
		"tool_choice":"required","parallel_tool_calls":true,"max_tokens":100,"temperature":0,"stop":["z"],"stream":true,"stream_options":{"include_usage":true},"reasoning_effort":"low","user":"me"}`
	oaiSameJSON(t, out, []byte(want))
}

func TestForFamilyOpenAIIsChat(t *testing.T) {
	got := ForFamily(FamilyOpenAI)
	if got == nil || got.Name() != "openai-chat" || got != OpenAIChat.(Translator) {
		t.Fatalf("ForFamily(FamilyOpenAI) = %v, want OpenAIChat", got)
	}
	if _, ok := OpenAIResponses.(Translator); !ok {
		t.Fatal("OpenAIResponses is not a Translator")
	}
}
