package codec

import (
	"encoding/json"
	"testing"
)

// agPtr returns a pointer to v.
func agPtr[T any](v T) *T { return &v }

// agRaw is s as raw JSON.
func agRaw(s string) json.RawMessage { return json.RawMessage(s) }

// agEphemeral is Anthropic's usual cache_control.
var agEphemeral = agRaw(`{"type":"ephemeral"}`)

func TestAnthropicDecodeRequest(t *testing.T) {
	tests := []struct {
		name string
		body string
		want *Request
	}{
		{
			name: "string system and content",
			body: `{"model":"claude-sonnet-4-5","max_tokens":100,"system":"Be brief.","messages":[{"role":"user","content":"Hi"}]}`,
			want: &Request{Model: "claude-sonnet-4-5", MaxTokens: 100,
				System:   []Part{{Kind: PartText, Text: "Be brief."}},
				Messages: []Message{{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: "Hi"}}}}},
		},
		{
			name: "system blocks keep cache_control",
			body: `{"max_tokens":1,"system":[{"type":"text","text":"A"},{"type":"text","text":"B","cache_control":{"type":"ephemeral"}}],"messages":[]}`,
			want: &Request{MaxTokens: 1, System: []Part{{Kind: PartText, Text: "A"}, {Kind: PartText, Text: "B", CacheControl: agEphemeral}}},
		},
		{
			name: "images by data and by URL",
			body: `{"max_tokens":1,"messages":[{"role":"user","content":[
				{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBORw0KGgo="}},
				{"type":"image","source":{"type":"url","url":"https://example.com/cat.jpg"}},
				{"type":"text","text":"What are these?","cache_control":{"type":"ephemeral"}}]}]}`,
			want: &Request{MaxTokens: 1,
				Messages: []Message{{Role: RoleUser, Parts: []Part{
					{Kind: PartImage, MediaType: "image/png", Data: "iVBORw0KGgo="},
					{Kind: PartImage, URL: "https://example.com/cat.jpg"},
					{Kind: PartText, Text: "What are these?", CacheControl: agEphemeral},
				}}},
				Needs: []Feature{{Name: "image_url", Protocols: []string{"openai-chat", "openai-responses", "anthropic"}}}},
		},
		{
			name: "a tool loop with thinking",
			body: `{"max_tokens":1,"messages":[
				{"role":"user","content":"Weather?"},
				{"role":"assistant","content":[
					{"type":"thinking","thinking":"Call it.","signature":"c2ln"},
					{"type":"redacted_thinking","data":"EmwKAhgB"},
					{"type":"text","text":"Checking."},
					{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{"city":"Paris"}}]},
				{"role":"user","content":[
					{"type":"tool_result","tool_use_id":"toolu_1","content":"18C"},
					{"type":"tool_result","tool_use_id":"toolu_2","is_error":true,"content":[{"type":"text","text":"no"},{"type":"image","source":{"type":"base64","media_type":"image/gif","data":"R0lG"}}]},
					{"type":"tool_result","tool_use_id":"toolu_3"}]}]}`,
			want: &Request{MaxTokens: 1, Messages: []Message{
				{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: "Weather?"}}},
				{Role: RoleAssistant, Parts: []Part{
					{Kind: PartThinking, Text: "Call it.", Signature: "c2ln"},
					{Kind: PartRedactedThinking, Data: "EmwKAhgB"},
					{Kind: PartText, Text: "Checking."},
					{Kind: PartToolCall, ID: "toolu_1", Name: "get_weather", Arguments: agRaw(`{"city":"Paris"}`)},
				}},
				{Role: RoleUser, Parts: []Part{
					{Kind: PartToolResult, ID: "toolu_1", Content: []Part{{Kind: PartText, Text: "18C"}}},
					{Kind: PartToolResult, ID: "toolu_2", IsError: true, Content: []Part{{Kind: PartText, Text: "no"}, {Kind: PartImage, MediaType: "image/gif", Data: "R0lG"}}},
					{Kind: PartToolResult, ID: "toolu_3"},
				}},
			}},
		},
		{
			name: "tools, a named choice and no parallel calls",
			body: `{"max_tokens":1,"messages":[],"tools":[
				{"name":"get_weather","description":"Weather now.","input_schema":{"type":"object","properties":{"city":{"type":"string"}}},"cache_control":{"type":"ephemeral"}},
				{"type":"custom","name":"noop","input_schema":{"type":"object"}},
				{"type":"web_search_20250305","name":"web_search","max_uses":3}],
				"tool_choice":{"type":"tool","name":"get_weather","disable_parallel_tool_use":true}}`,
			want: &Request{MaxTokens: 1,
				Tools: []Tool{
					{Name: "get_weather", Description: "Weather now.", Schema: agRaw(`{"type":"object","properties":{"city":{"type":"string"}}}`), CacheControl: agEphemeral},
					{Name: "noop", Schema: agRaw(`{"type":"object"}`)},
				},
				ToolChoice:        ToolChoice{Mode: ToolNamed, Name: "get_weather"},
				ParallelToolCalls: agPtr(false),
				Needs:             []Feature{{Name: "tool:web_search_20250305", Protocols: []string{"anthropic"}}}},
		},
		{
			name: "tool choice any allowing parallel calls",
			body: `{"max_tokens":1,"messages":[],"tool_choice":{"type":"any","disable_parallel_tool_use":false}}`,
			want: &Request{MaxTokens: 1, ToolChoice: ToolChoice{Mode: ToolAny}, ParallelToolCalls: agPtr(true)},
		},
		{
			name: "sampling, stop, stream, thinking and user",
			body: `{"max_tokens":2048,"messages":[],"temperature":0.5,"top_p":0.9,"top_k":40,"stop_sequences":["END","STOP"],
				"stream":true,"thinking":{"type":"enabled","budget_tokens":1024},"metadata":{"user_id":"u-42"},"service_tier":"auto","temperature_unused":null}`,
			want: &Request{MaxTokens: 2048, Temperature: agPtr(0.5), TopP: agPtr(0.9), TopK: agPtr(int64(40)), Stop: []string{"END", "STOP"},
				Stream: true, Thinking: &Thinking{BudgetTokens: 1024}, User: "u-42"},
		},
		{
			name: "thinking disabled and null fields",
			body: `{"max_tokens":1,"messages":[],"thinking":{"type":"disabled"},"temperature":null,"system":null}`,
			want: &Request{MaxTokens: 1},
		},
		{
			name: "what only tunes Anthropic is dropped, not needed",
			body: `{"max_tokens":1,"messages":[],"context_management":{"edits":[{"type":"clear_tool_uses_20250919"}]},"service_tier":"auto","speed":"fast","cache_control":{"type":"ephemeral"},"inference_geo":"us"}`,
			want: &Request{MaxTokens: 1},
		},
		{
			name: "adaptive thinking takes output_config's effort",
			body: `{"max_tokens":1,"messages":[],"thinking":{"type":"adaptive"},"output_config":{"effort":"low"}}`,
			want: &Request{MaxTokens: 1, Thinking: &Thinking{Effort: "low"}},
		},
		{
			name: "adaptive thinking defaults to high effort",
			body: `{"output_config":{},"max_tokens":1,"messages":[],"thinking":{"type":"adaptive"}}`,
			want: &Request{MaxTokens: 1, Thinking: &Thinking{Effort: "high"}},
		},
		{
			name: "what only Anthropic can say",
			body: `{"max_tokens":1,"container":"c1","mcp_servers":[{"type":"url","url":"https://mcp"}],"output_config":{"format":{"type":"json_schema"}},
				"messages":[{"role":"user","content":[
					{"type":"document","source":{"type":"text","media_type":"text/plain","data":"doc"}},
					{"type":"search_result","source":"s","title":"t","content":[]},
					{"type":"image","source":{"type":"file","file_id":"file_1"}},
					{"type":"text","text":"Summarise."}]}]}`,
			want: &Request{MaxTokens: 1,
				Messages: []Message{{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: "Summarise."}}}},
				Needs: []Feature{
					{Name: "container", Protocols: []string{"anthropic"}},
					{Name: "mcp_servers", Protocols: []string{"anthropic"}},
					{Name: "output_format", Protocols: []string{"anthropic"}},
					{Name: "document", Protocols: []string{"anthropic"}},
					{Name: "search_result", Protocols: []string{"anthropic"}},
					{Name: "file_id", Protocols: []string{"anthropic"}},
				}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Anthropic.(Translator).DecodeRequest([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			agEqual(t, got, tt.want)
		})
	}
}

func TestAnthropicDecodeRequestErrors(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"not JSON", `{"max_tokens":`, "request body: invalid JSON"},
		{"not an object", `[1]`, "request body: must be a JSON object"},
		{"no max_tokens", `{"model":"m","messages":[]}`, "max_tokens: field required"},
		{"zero max_tokens", `{"max_tokens":0,"messages":[]}`, "max_tokens: must be a positive integer"},
		{"max_tokens a string", `{"max_tokens":"10","messages":[]}`, "max_tokens: must be a positive integer"},
		{"no messages", `{"max_tokens":1}`, "messages: field required"},
		{"messages an object", `{"max_tokens":1,"messages":{}}`, "messages: must be an array"},
		{"model a number", `{"max_tokens":1,"messages":[],"model":3}`, "model: must be a string"},
		{"system role", `{"max_tokens":1,"messages":[{"role":"system","content":"x"}]}`, `messages[0].role: must be "user" or "assistant"`},
		{"message not an object", `{"max_tokens":1,"messages":["hi"]}`, "messages[0]: must be an object"},
		{"content a number", `{"max_tokens":1,"messages":[{"role":"user","content":1}]}`, "messages[0].content: must be a string or an array of content blocks"},
		{"block without type", `{"max_tokens":1,"messages":[{"role":"user","content":"a"},{"role":"assistant","content":[{"text":"x"}]}]}`, "messages[1].content[0].type: must be a string naming the block's type"},
		{"block not an object", `{"max_tokens":1,"messages":[{"role":"user","content":["x"]}]}`, "messages[0].content[0]: must be an object"},
		{"text not a string", `{"max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":5}]}]}`, "messages[0].content[0].text: must be a string"},
		{"image without source", `{"max_tokens":1,"messages":[{"role":"user","content":[{"type":"image"}]}]}`, "messages[0].content[0].source: must be an object"},
		{"image source of another type", `{"max_tokens":1,"messages":[{"role":"user","content":[{"type":"image","source":{"type":"ftp"}}]}]}`, `messages[0].content[0].source.type: must be "base64", "url" or "file"`},
		{"image without data", `{"max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":"a"},{"type":"image","source":{"type":"base64","media_type":"image/png"}}]}]}`, "messages[0].content[1].source.data: field required"},
		{"tool_use input a string", `{"max_tokens":1,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":"{}"}]}]}`, "messages[0].content[0].input: must be an object"},
		{"tool_use without id", `{"max_tokens":1,"messages":[{"role":"assistant","content":[{"type":"tool_use","name":"f","input":{}}]}]}`, "messages[0].content[0].id: field required"},
		{"tool_result without id", `{"max_tokens":1,"messages":[{"role":"user","content":[{"type":"tool_result","content":"x"}]}]}`, "messages[0].content[0].tool_use_id: field required"},
		{"tool_result content a number", `{"max_tokens":1,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":1}]}]}`, "messages[0].content[0].content: must be a string or an array of content blocks"},
		{"tool_result holding a tool_use", `{"max_tokens":1,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"tool_use","id":"a","name":"b","input":{}}]}]}]}`, "messages[0].content[0].content[0]: a tool result holds text and image blocks, not tool_call"},
		{"tool_result holding a bad block", `{"max_tokens":1,"messages":[{"role":"user","content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text"}]}]}]}`, "messages[0].content[0].content[0].text: field required"},
		{"thinking without text", `{"max_tokens":1,"messages":[{"role":"assistant","content":[{"type":"thinking","signature":"s"}]}]}`, "messages[0].content[0].thinking: field required"},
		{"system a number", `{"max_tokens":1,"messages":[],"system":1}`, "system: must be a string or an array of text blocks"},
		{"system an image", `{"max_tokens":1,"messages":[],"system":[{"type":"image"}]}`, `system[0]: must be a text block {"type":"text","text":…}`},
		{"tools an object", `{"max_tokens":1,"messages":[],"tools":{}}`, "tools: must be an array"},
		{"tool without name", `{"max_tokens":1,"messages":[],"tools":[{"input_schema":{}}]}`, "tools[0].name: field required"},
		{"tool without schema", `{"max_tokens":1,"messages":[],"tools":[{"name":"a","input_schema":{}},{"name":"f"}]}`, "tools[1].input_schema: must be an object (a JSON Schema)"},
		{"tool_choice a string", `{"max_tokens":1,"messages":[],"tool_choice":"auto"}`, "tool_choice: must be an object"},
		{"tool_choice of another type", `{"max_tokens":1,"messages":[],"tool_choice":{"type":"required"}}`, `tool_choice.type: must be "auto", "any", "tool" or "none"`},
		{"tool_choice tool without name", `{"max_tokens":1,"messages":[],"tool_choice":{"type":"tool"}}`, `tool_choice.name: field required when type is "tool"`},
		{"thinking without budget", `{"max_tokens":1,"messages":[],"thinking":{"type":"enabled"}}`, "thinking.budget_tokens: must be a positive integer"},
		{"thinking of another type", `{"max_tokens":1,"messages":[],"thinking":{"type":"on"}}`, `thinking.type: must be "enabled", "disabled" or "adaptive"`},
		{"temperature a string", `{"max_tokens":1,"messages":[],"temperature":"hot"}`, "temperature: must be a number"},
		{"top_k fractional", `{"max_tokens":1,"messages":[],"top_k":2.5}`, "top_k: must be a positive integer"},
		{"stop_sequences a string", `{"max_tokens":1,"messages":[],"stop_sequences":"END"}`, "stop_sequences: must be an array of strings"},
		{"stop_sequences of numbers", `{"max_tokens":1,"messages":[],"stop_sequences":["a",1]}`, "stop_sequences[1]: must be a string"},
		{"stream a string", `{"max_tokens":1,"messages":[],"stream":"yes"}`, "stream: must be a boolean"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Anthropic.(Translator).DecodeRequest([]byte(tt.body))
			if err == nil || err.Error() != tt.want {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

func TestAnthropicEncodeRequest(t *testing.T) {
	user := func(parts ...Part) Message { return Message{Role: RoleUser, Parts: parts} }
	assistant := func(parts ...Part) Message { return Message{Role: RoleAssistant, Parts: parts} }
	text := func(s string) Part { return Part{Kind: PartText, Text: s} }
	call := func(id, args string) Part {
		return Part{Kind: PartToolCall, ID: id, Name: "get_weather", Arguments: agRaw(args)}
	}
	result := func(id, s string) Part {
		return Part{Kind: PartToolResult, ID: id, Content: []Part{text(s)}}
	}
	weather := []Tool{{Name: "get_weather", Schema: agRaw(`{"type":"object"}`)}}
	tests := []struct {
		name  string
		req   Request
		model string
		opts  EncodeOptions
		want  string
	}{
		{
			name: "max_tokens defaults to 4096", req: Request{Messages: []Message{user(text("Hi"))}}, model: "claude-haiku-4-5",
			want: `{"model":"claude-haiku-4-5","max_tokens":4096,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}]}`,
		},
		{
			name: "max_tokens from the route", req: Request{Messages: []Message{user(text("Hi"))}}, opts: EncodeOptions{DefaultMaxTokens: 1000},
			want: `{"max_tokens":1000,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}]}`,
		},
		{
			name: "the client's max_tokens wins", req: Request{MaxTokens: 10, Messages: []Message{user(text("Hi"))}}, opts: EncodeOptions{DefaultMaxTokens: 1000},
			want: `{"max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}]}`,
		},
		{
			name: "turns merged, tool results first, unsigned thinking and empty text left out",
			req: Request{MaxTokens: 5, System: []Part{text("Be brief."), text(""), {Kind: PartText, Text: "Cached.", CacheControl: agEphemeral}}, Messages: []Message{
				user(text("Weather in Paris?")),
				user(text("And London.")),
				assistant(Part{Kind: PartThinking, Text: "from a chat model"}, text(""), call("call_1", `{"city":"Paris"}`), call("call.2", `"London"`), call("call_3", ``), call("call_4", `not json`)),
				assistant(Part{Kind: PartThinking, Text: "unsigned only"}),
				user(text("Thanks."), result("call_1", "18C"), Part{Kind: PartToolResult, ID: "call.2", IsError: true, Content: []Part{text("down"), {Kind: PartImage, Data: "R0lG", MediaType: "image/gif"}}}),
				user(result("call_3", ""), result("call_4", "ok")),
			}},
			want: `{"max_tokens":5,"system":[{"type":"text","text":"Be brief."},{"type":"text","text":"Cached.","cache_control":{"type":"ephemeral"}}],"messages":[
				{"role":"user","content":[{"type":"text","text":"Weather in Paris?"},{"type":"text","text":"And London."}]},
				{"role":"assistant","content":[
					{"type":"tool_use","id":"call_1","name":"get_weather","input":{"city":"Paris"}},
					{"type":"tool_use","id":"call_2","name":"get_weather","input":{"value":"London"}},
					{"type":"tool_use","id":"call_3","name":"get_weather","input":{}},
					{"type":"tool_use","id":"call_4","name":"get_weather","input":{"value":"not json"}}]},
				{"role":"user","content":[
					{"type":"tool_result","tool_use_id":"call_1","content":[{"type":"text","text":"18C"}]},
					{"type":"tool_result","tool_use_id":"call_2","content":[{"type":"text","text":"down"},{"type":"image","source":{"type":"base64","media_type":"image/gif","data":"R0lG"}}],"is_error":true},
					{"type":"tool_result","tool_use_id":"call_3"},
					{"type":"tool_result","tool_use_id":"call_4","content":[{"type":"text","text":"ok"}]},
					{"type":"text","text":"Thanks."}]}]}`,
		},
		{
			name: "a leading assistant turn is sent as it is",
			req:  Request{MaxTokens: 5, Messages: []Message{assistant(text("Hello!")), user(text("Hi"))}},
			want: `{"max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"text","text":"Hello!"}]},{"role":"user","content":[{"type":"text","text":"Hi"}]}]}`,
		},
		{
			name: "images by data, URL and data URL",
			req: Request{MaxTokens: 5, Messages: []Message{user(
				Part{Kind: PartImage, MediaType: "image/png", Data: "iVBOR"},
				Part{Kind: PartImage, URL: "https://example.com/a.png", CacheControl: agEphemeral},
				Part{Kind: PartImage, URL: "data:image/webp;base64,UklGR"},
				Part{Kind: PartImage},
			)}},
			want: `{"max_tokens":5,"messages":[{"role":"user","content":[
				{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBOR"}},
				{"type":"image","source":{"type":"url","url":"https://example.com/a.png"},"cache_control":{"type":"ephemeral"}},
				{"type":"image","source":{"type":"base64","media_type":"image/webp","data":"UklGR"}}]}]}`,
		},
		{
			name: "an effort becomes a budget; sampling is left out and max_tokens raised",
			req:  Request{MaxTokens: 1000, Temperature: agPtr(0.5), TopK: agPtr(int64(5)), Thinking: &Thinking{Effort: "medium"}, Messages: []Message{user(text("Think."))}},
			want: `{"max_tokens":9192,"messages":[{"role":"user","content":[{"type":"text","text":"Think."}]}],"thinking":{"type":"enabled","budget_tokens":8192}}`,
		},
		{
			name: "a budget under Anthropic's least is raised to it",
			req:  Request{MaxTokens: 4000, Thinking: &Thinking{BudgetTokens: 512}, Messages: []Message{user(text("Think."))}},
			want: `{"max_tokens":4000,"messages":[{"role":"user","content":[{"type":"text","text":"Think."}]}],"thinking":{"type":"enabled","budget_tokens":1024}}`,
		},
		{
			name: "effort none sends no thinking",
			req:  Request{MaxTokens: 10, Thinking: &Thinking{Effort: "none"}, Messages: []Message{user(text("Hi"))}},
			want: `{"max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}]}`,
		},
		{
			name: "a forced tool drops thinking",
			req:  Request{MaxTokens: 10, Tools: weather, ToolChoice: ToolChoice{Mode: ToolAny}, Thinking: &Thinking{BudgetTokens: 2000}, Messages: []Message{user(text("Hi"))}},
			want: `{"max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}],"tools":[{"name":"get_weather","input_schema":{"type":"object"}}],"tool_choice":{"type":"any"}}`,
		},
		{
			name: "a last tool turn without signed thinking drops thinking",
			req: Request{MaxTokens: 10, Tools: weather, Thinking: &Thinking{BudgetTokens: 2000}, Messages: []Message{
				user(text("Hi")), assistant(Part{Kind: PartThinking, Text: "no signature"}, call("c1", `{}`)), user(result("c1", "sunny"))}},
			want: `{"max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]},
				{"role":"assistant","content":[{"type":"tool_use","id":"c1","name":"get_weather","input":{}}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":[{"type":"text","text":"sunny"}]}]}],
				"tools":[{"name":"get_weather","input_schema":{"type":"object"}}]}`,
		},
		{
			name: "a last tool turn with signed thinking keeps thinking",
			req: Request{MaxTokens: 10, Tools: weather, Thinking: &Thinking{BudgetTokens: 2000}, Messages: []Message{
				user(text("Hi")), assistant(Part{Kind: PartThinking, Text: "signed", Signature: "c2ln"}, call("c1", `{}`)), user(result("c1", "sunny"))}},
			want: `{"max_tokens":2010,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]},
				{"role":"assistant","content":[{"type":"thinking","thinking":"signed","signature":"c2ln"},{"type":"tool_use","id":"c1","name":"get_weather","input":{}}]},
				{"role":"user","content":[{"type":"tool_result","tool_use_id":"c1","content":[{"type":"text","text":"sunny"}]}]}],
				"tools":[{"name":"get_weather","input_schema":{"type":"object"}}],"thinking":{"type":"enabled","budget_tokens":2000}}`,
		},
		{
			name: "no parallel calls with an automatic choice",
			req:  Request{MaxTokens: 1, Tools: []Tool{{Name: "f", Description: "Does f.", CacheControl: agEphemeral}}, ParallelToolCalls: agPtr(false), Messages: []Message{user(text("x"))}},
			want: `{"max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],
				"tools":[{"name":"f","description":"Does f.","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}}],
				"tool_choice":{"type":"auto","disable_parallel_tool_use":true}}`,
		},
		{
			name: "a named tool without parallel calls",
			req:  Request{MaxTokens: 1, Tools: weather, ToolChoice: ToolChoice{Mode: ToolNamed, Name: "get_weather"}, ParallelToolCalls: agPtr(false), Messages: []Message{user(text("x"))}},
			want: `{"max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"tools":[{"name":"get_weather","input_schema":{"type":"object"}}],
				"tool_choice":{"type":"tool","name":"get_weather","disable_parallel_tool_use":true}}`,
		},
		{
			name: "tool choice none",
			req:  Request{MaxTokens: 1, Tools: weather, ToolChoice: ToolChoice{Mode: ToolNone}, ParallelToolCalls: agPtr(true), Messages: []Message{user(text("x"))}},
			want: `{"max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"tools":[{"name":"get_weather","input_schema":{"type":"object"}}],"tool_choice":{"type":"none"}}`,
		},
		{
			name: "a tool choice without tools is not sent",
			req:  Request{MaxTokens: 1, ToolChoice: ToolChoice{Mode: ToolNone}, Messages: []Message{user(text("x"))}},
			want: `{"max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}]}`,
		},
		{
			name: "temperature capped at 1, top_p dropped beside it, stop, stream and user",
			req:  Request{MaxTokens: 1, Temperature: agPtr(1.7), TopP: agPtr(0.9), TopK: agPtr(int64(3)), Stop: []string{"END"}, Stream: true, User: "u-1", Messages: []Message{user(text("x"))}},
			want: `{"max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"temperature":1,"top_k":3,"stop_sequences":["END"],"stream":true,"metadata":{"user_id":"u-1"}}`,
		},
		{
			name: "top_p alone is sent",
			req:  Request{MaxTokens: 1, TopP: agPtr(0.25), Messages: []Message{user(text("x"))}},
			want: `{"max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":"x"}]}],"top_p":0.25}`,
		},
		{
			name: "text is escaped",
			req:  Request{MaxTokens: 1, Messages: []Message{user(text("a \"q\" \\ \n\t\x01 <b>&\u2028 é \xff"))}},
			want: `{"max_tokens":1,"messages":[{"role":"user","content":[{"type":"text","text":"a \"q\" \\ \n\t\u0001 <b>&\u2028 é \ufffd"}]}]}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Anthropic.(Translator).EncodeRequest(&tt.req, tt.model, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			agJSONEqual(t, got, []byte(tt.want))
		})
	}
}

// TestAnthropicRequestRoundTrip decodes requests that say nothing only
// Anthropic can, encodes them back, and expects the same request.
func TestAnthropicRequestRoundTrip(t *testing.T) {
	bodies := []string{
		`{"model":"m","max_tokens":3000,"system":[{"type":"text","text":"S","cache_control":{"type":"ephemeral"}}],
			"messages":[{"role":"user","content":[{"type":"text","text":"Hi"},{"type":"image","source":{"type":"base64","media_type":"image/png","data":"iVBOR"}}]},
			{"role":"assistant","content":[{"type":"thinking","thinking":"t","signature":"c2ln"},{"type":"tool_use","id":"toolu_1","name":"f","input":{"a":[1,2]}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_1","content":[{"type":"text","text":"ok"}],"is_error":true}]}],
			"tools":[{"name":"f","description":"F.","input_schema":{"type":"object"}}],"tool_choice":{"type":"auto","disable_parallel_tool_use":true},
			"stop_sequences":["x"],"stream":true,"thinking":{"type":"enabled","budget_tokens":2000},"metadata":{"user_id":"u"}}`,
		`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":[{"type":"text","text":"Hi"}]}],"temperature":0.2,"top_k":7}`,
	}
	for i, body := range bodies {
		t.Run(string(rune('a'+i)), func(t *testing.T) {
			tr := Anthropic.(Translator)
			r, err := tr.DecodeRequest([]byte(body))
			if err != nil {
				t.Fatal(err)
			}
			out, err := tr.EncodeRequest(r, r.Model, EncodeOptions{})
			if err != nil {
				t.Fatal(err)
			}
			r2, err := tr.DecodeRequest(out)
			if err != nil {
				t.Fatalf("%v: %s", err, out)
			}
			agEqual(t, r2, r)
		})
	}
}
