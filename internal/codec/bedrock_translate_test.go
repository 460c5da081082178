package codec

import (
	"strings"
	"testing"
)

func TestBedrockDecodeRequest(t *testing.T) {
	body := `{
		"messages":[
			{"role":"user","content":[{"text":"Weather?"},{"cachePoint":{"type":"default"}},{"image":{"format":"png","source":{"bytes":"iVBOR"}}}]},
			{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"t","signature":"c2ln"}}},{"reasoningContent":{"redactedContent":"ZW5j"}},
				{"toolUse":{"toolUseId":"tooluse_1","name":"get_weather","input":{"city":"Paris"}}}]},
			{"role":"user","content":[{"toolResult":{"toolUseId":"tooluse_1","content":[{"text":"18C"},{"json":{"sky":"clear"}},{"image":{"format":"gif","source":{"bytes":"R0lG"}}}],"status":"error"}},
				{"document":{"name":"d","format":"pdf","source":{"bytes":"JVBE"}}},{"image":{"format":"jpeg","source":{"s3Location":{"uri":"s3://b/k"}}}}]}],
		"system":[{"text":"Be brief."},{"cachePoint":{"type":"default"}},{"guardContent":{"text":{"text":"g"}}}],
		"inferenceConfig":{"maxTokens":3000,"temperature":0.5,"topP":0.9,"stopSequences":["END"]},
		"toolConfig":{"tools":[{"toolSpec":{"name":"get_weather","description":"Weather.","inputSchema":{"json":{"type":"object"}}}},{"cachePoint":{"type":"default"}}],
			"toolChoice":{"tool":{"name":"get_weather"}}},
		"additionalModelRequestFields":{"thinking":{"type":"enabled","budget_tokens":2000},"top_k":40},
		"guardrailConfig":{"guardrailIdentifier":"g","guardrailVersion":"1"},
		"performanceConfig":{"latency":"optimized"}
	}`
	r, err := Bedrock.(Translator).DecodeRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	want := &Request{
		System: []Part{{Kind: PartText, Text: "Be brief.", CacheControl: agEphemeral}},
		Messages: []Message{
			{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: "Weather?", CacheControl: agEphemeral}, {Kind: PartImage, MediaType: "image/png", Data: "iVBOR"}}},
			{Role: RoleAssistant, Parts: []Part{
				{Kind: PartThinking, Text: "t", Signature: "c2ln"},
				{Kind: PartRedactedThinking, Data: "ZW5j"},
				{Kind: PartToolCall, ID: "tooluse_1", Name: "get_weather", Arguments: agRaw(`{"city":"Paris"}`)},
			}},
			{Role: RoleUser, Parts: []Part{{Kind: PartToolResult, ID: "tooluse_1", IsError: true, Content: []Part{
				{Kind: PartText, Text: "18C"}, {Kind: PartText, Text: `{"sky":"clear"}`}, {Kind: PartImage, MediaType: "image/gif", Data: "R0lG"},
			}}}},
		},
		Tools:       []Tool{{Name: "get_weather", Description: "Weather.", Schema: agRaw(`{"type":"object"}`), CacheControl: agEphemeral}},
		ToolChoice:  ToolChoice{Mode: ToolNamed, Name: "get_weather"},
		MaxTokens:   3000,
		Temperature: agPtr(0.5),
		TopP:        agPtr(0.9),
		TopK:        agPtr(int64(40)),
		Stop:        []string{"END"},
		Thinking:    &Thinking{BudgetTokens: 2000},
		Needs: []Feature{
			{Name: "document", Protocols: []string{"bedrock"}},
			{Name: "image_s3_location", Protocols: []string{"bedrock"}},
			{Name: "guardContent", Protocols: []string{"bedrock"}},
			{Name: "guardrailConfig", Protocols: []string{"bedrock"}},
		},
	}
	agEqual(t, r, want)
	if got := r.Unsupported("anthropic"); got != "document" {
		t.Errorf("Unsupported(anthropic) = %q, want document", got)
	}
}

func TestBedrockDecodeRequestErrors(t *testing.T) {
	msg := func(content string) string { return `{"messages":[{"role":"user","content":` + content + `}]}` }
	tests := []struct {
		name, body, want string
	}{
		{"not JSON", `{`, "request body: invalid JSON"},
		{"not an object", `[]`, "request body: must be a JSON object"},
		{"no messages", `{"system":[]}`, "messages: field required"},
		{"messages not an array", `{"messages":{}}`, "messages: must be an array"},
		{"bad role", `{"messages":[{"role":"system","content":[]}]}`, `messages[0].role: must be "user" or "assistant"`},
		{"content not an array", msg(`"hi"`), "messages[0].content: must be an array of content blocks"},
		{"block not an object", msg(`[1]`), "messages[0].content[0]: must be an object"},
		{"empty block", msg(`[{}]`), "messages[0].content[0]: an empty content block"},
		{"text not a string", msg(`[{"text":1}]`), "messages[0].content[0].text: must be a string"},
		{"image format", msg(`[{"image":{"format":"bmp","source":{"bytes":"x"}}}]`), `messages[0].content[0].image.format: must be "png", "jpeg", "gif" or "webp"`},
		{"image bytes", msg(`[{"image":{"format":"png","source":{}}}]`), "messages[0].content[0].image.source.bytes: must be a base64 string"},
		{"tool use id", msg(`[{"toolUse":{"name":"f","input":{}}}]`), "messages[0].content[0].toolUse.toolUseId: field required"},
		{"tool result content", msg(`[{"toolResult":{"toolUseId":"t","content":"x"}}]`), "messages[0].content[0].toolResult.content: must be an array of content blocks"},
		{"tool result holds a tool use", msg(`[{"toolResult":{"toolUseId":"t","content":[{"toolUse":{}}]}}]`),
			"messages[0].content[0].toolResult.content[0]: a tool result holds text, json and image blocks, not toolUse"},
		{"reasoning without text", msg(`[{"reasoningContent":{}}]`), "messages[0].content[0].reasoningContent: has neither reasoningText nor redactedContent"},
		{"system block", `{"messages":[],"system":[{"image":{}}]}`, "system[0]: must be a text, cachePoint or guardContent block"},
		{"max tokens", `{"messages":[],"inferenceConfig":{"maxTokens":0}}`, "inferenceConfig.maxTokens: must be a positive integer"},
		{"temperature", `{"messages":[],"inferenceConfig":{"temperature":"hot"}}`, "inferenceConfig.temperature: must be a number"},
		{"stop", `{"messages":[],"inferenceConfig":{"stopSequences":[1]}}`, "inferenceConfig.stopSequences[0]: must be a string"},
		{"tool spec", `{"messages":[],"toolConfig":{"tools":[{}]}}`, "toolConfig.tools[0]: must be a toolSpec or cachePoint"},
		{"tool schema", `{"messages":[],"toolConfig":{"tools":[{"toolSpec":{"name":"f","inputSchema":{}}}]}}`,
			"toolConfig.tools[0].toolSpec.inputSchema.json: must be an object (a JSON Schema)"},
		{"tool choice", `{"messages":[],"toolConfig":{"tools":[],"toolChoice":{"none":{}}}}`, "toolConfig.toolChoice: must be"},
		{"thinking type", `{"messages":[],"additionalModelRequestFields":{"thinking":{"type":"adaptive"}}}`,
			`additionalModelRequestFields.thinking.type: must be "enabled" or "disabled"`},
		{"thinking budget", `{"messages":[],"additionalModelRequestFields":{"thinking":{"type":"enabled"}}}`,
			"additionalModelRequestFields.thinking.budget_tokens: must be a positive integer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Bedrock.(Translator).DecodeRequest([]byte(tt.body))
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

func TestBedrockEncodeRequest(t *testing.T) {
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
	const claude = "us.anthropic.claude-sonnet-4-20250514-v1:0"
	const nova = "amazon.nova-pro-v1:0"
	hi := []Message{user(text("Hi"))}
	tests := []struct {
		name  string
		req   Request
		model string
		opts  EncodeOptions
		want  string
	}{
		{
			name: "a bare request: no inferenceConfig, no default max tokens (Converse needs none)", req: Request{Messages: hi}, model: nova, opts: EncodeOptions{DefaultMaxTokens: 1000},
			want: `{"messages":[{"role":"user","content":[{"text":"Hi"}]}]}`,
		},
		{
			name: "turns merged, tool results first; blank text, unsigned thinking and empty turns left out; ids made valid",
			req: Request{MaxTokens: 5, System: []Part{text("Be brief."), text("  "), {Kind: PartText, Text: "Cached.", CacheControl: agEphemeral}}, Messages: []Message{
				user(text("Weather in Paris?")),
				user(text("And London.")),
				assistant(Part{Kind: PartThinking, Text: "from a chat model"}, text(""), call("call_1", `{"city":"Paris"}`), call("call.2", `"London"`)),
				assistant(Part{Kind: PartThinking, Text: "unsigned only"}),
				user(text("Thanks."), result("call_1", "18C"), Part{Kind: PartToolResult, ID: "call.2", IsError: true, Content: []Part{text("down"), {Kind: PartImage, Data: "R0lG", MediaType: "image/gif"}}}),
				user(result("call_3", ""), Part{Kind: PartToolResult, ID: "call_4"}),
			}, Tools: weather},
			model: nova,
			want: `{"messages":[
				{"role":"user","content":[{"text":"Weather in Paris?"},{"text":"And London."}]},
				{"role":"assistant","content":[
					{"toolUse":{"toolUseId":"call_1","name":"get_weather","input":{"city":"Paris"}}},
					{"toolUse":{"toolUseId":"call_2","name":"get_weather","input":{"value":"London"}}}]},
				{"role":"user","content":[
					{"toolResult":{"toolUseId":"call_1","content":[{"text":"18C"}]}},
					{"toolResult":{"toolUseId":"call_2","content":[{"text":"down"},{"image":{"format":"gif","source":{"bytes":"R0lG"}}}],"status":"error"}},
					{"toolResult":{"toolUseId":"call_3","content":[{"text":"(no output)"}]}},
					{"toolResult":{"toolUseId":"call_4","content":[{"text":"(no output)"}]}},
					{"text":"Thanks."}]}],
				"system":[{"text":"Be brief."},{"text":"Cached."},{"cachePoint":{"type":"default"}}],
				"inferenceConfig":{"maxTokens":5},
				"toolConfig":{"tools":[{"toolSpec":{"name":"get_weather","inputSchema":{"json":{"type":"object"}}}}]}}`,
		},
		{
			name: "images: data, data URL, URL-safe base64 made standard, jpg spelled jpeg, another type left to Bedrock; signed reasoning and cache points",
			req: Request{Messages: []Message{
				user(Part{Kind: PartImage, MediaType: "image/png", Data: "iVBOR", CacheControl: agEphemeral},
					Part{Kind: PartImage, URL: "data:image/webp;base64,UklGRg=="},
					Part{Kind: PartImage, MediaType: "image/jpg", Data: "_-8"},
					Part{Kind: PartImage, MediaType: "image/HEIC", Data: "AAAA"},
					Part{Kind: PartImage}),
				assistant(Part{Kind: PartThinking, Text: "t", Signature: "c2ln"}, Part{Kind: PartRedactedThinking, Data: "ZW5j"}, text("ok")),
			}},
			model: nova,
			want: `{"messages":[
				{"role":"user","content":[{"image":{"format":"png","source":{"bytes":"iVBOR"}}},{"cachePoint":{"type":"default"}},
					{"image":{"format":"webp","source":{"bytes":"UklGRg=="}}},{"image":{"format":"jpeg","source":{"bytes":"/+8="}}},
					{"image":{"format":"heic","source":{"bytes":"AAAA"}}}]},
				{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"t","signature":"c2ln"}}},
					{"reasoningContent":{"redactedContent":"ZW5j"}},{"text":"ok"}]}]}`,
		},
		{
			name:  "sampling: temperature clamped, topP kept for other models, stop sequences",
			req:   Request{Messages: hi, MaxTokens: 7, Temperature: agPtr(1.7), TopP: agPtr(0.9), TopK: agPtr(int64(5)), Stop: []string{"a", "b"}},
			model: nova,
			want: `{"messages":[{"role":"user","content":[{"text":"Hi"}]}],
				"inferenceConfig":{"maxTokens":7,"temperature":1,"topP":0.9,"stopSequences":["a","b"]}}`,
		},
		{
			name:  "Claude: topP dropped beside temperature, top_k passed on, the matched stop sequence asked for",
			req:   Request{Messages: hi, Temperature: agPtr(0.3), TopP: agPtr(0.9), TopK: agPtr(int64(5)), Stop: []string{"END"}},
			model: claude,
			want: `{"messages":[{"role":"user","content":[{"text":"Hi"}]}],
				"inferenceConfig":{"temperature":0.3,"stopSequences":["END"]},
				"additionalModelRequestFields":{"top_k":5},"additionalModelResponseFieldPaths":["/stop_sequence"]}`,
		},
		{
			name:  "Claude thinking: an effort becomes a budget, maxTokens raised above it, sampling left out",
			req:   Request{Messages: hi, MaxTokens: 1000, Temperature: agPtr(0.5), TopK: agPtr(int64(5)), Thinking: &Thinking{Effort: "medium"}},
			model: claude,
			want: `{"messages":[{"role":"user","content":[{"text":"Hi"}]}],"inferenceConfig":{"maxTokens":9192},
				"additionalModelRequestFields":{"thinking":{"type":"enabled","budget_tokens":8192}}}`,
		},
		{
			name:  "Claude thinking without max tokens takes the route's default",
			req:   Request{Messages: hi, Thinking: &Thinking{BudgetTokens: 2000}},
			model: claude, opts: EncodeOptions{DefaultMaxTokens: 5000},
			want: `{"messages":[{"role":"user","content":[{"text":"Hi"}]}],"inferenceConfig":{"maxTokens":5000},
				"additionalModelRequestFields":{"thinking":{"type":"enabled","budget_tokens":2000}}}`,
		},
		{
			name:  "Claude: a forced tool drops thinking",
			req:   Request{Messages: hi, MaxTokens: 10, Tools: weather, ToolChoice: ToolChoice{Mode: ToolAny}, Thinking: &Thinking{BudgetTokens: 2000}},
			model: claude,
			want: `{"messages":[{"role":"user","content":[{"text":"Hi"}]}],"inferenceConfig":{"maxTokens":10},
				"toolConfig":{"tools":[{"toolSpec":{"name":"get_weather","inputSchema":{"json":{"type":"object"}}}}],"toolChoice":{"any":{}}}}`,
		},
		{
			name:  "other models' thinking is dropped",
			req:   Request{Messages: hi, Thinking: &Thinking{BudgetTokens: 2000}},
			model: nova,
			want:  `{"messages":[{"role":"user","content":[{"text":"Hi"}]}]}`,
		},
		{
			name: "a named tool, description and cache point",
			req: Request{Messages: hi, Tools: []Tool{{Name: "f", Description: "F.", Schema: agRaw(`{"type":"object","properties":{}}`), CacheControl: agEphemeral}, {Name: "g"}},
				ToolChoice: ToolChoice{Mode: ToolNamed, Name: "g"}},
			model: nova,
			want: `{"messages":[{"role":"user","content":[{"text":"Hi"}]}],"toolConfig":{"tools":[
				{"toolSpec":{"name":"f","description":"F.","inputSchema":{"json":{"type":"object","properties":{}}}}},{"cachePoint":{"type":"default"}},
				{"toolSpec":{"name":"g","inputSchema":{"json":{"type":"object"}}}}],"toolChoice":{"tool":{"name":"g"}}}}`,
		},
		{
			name:  "tool_choice none without tool history sends no tools",
			req:   Request{Messages: hi, Tools: weather, ToolChoice: ToolChoice{Mode: ToolNone}},
			model: nova,
			want:  `{"messages":[{"role":"user","content":[{"text":"Hi"}]}]}`,
		},
		{
			name: "tool_choice none with tool history declares the tools, with no choice",
			req: Request{Tools: weather, ToolChoice: ToolChoice{Mode: ToolNone}, Messages: []Message{
				user(text("Hi")), assistant(call("c1", `{}`)), user(result("c1", "sunny"))}},
			model: nova,
			want: `{"messages":[{"role":"user","content":[{"text":"Hi"}]},{"role":"assistant","content":[{"toolUse":{"toolUseId":"c1","name":"get_weather","input":{}}}]},
				{"role":"user","content":[{"toolResult":{"toolUseId":"c1","content":[{"text":"sunny"}]}}]}],
				"toolConfig":{"tools":[{"toolSpec":{"name":"get_weather","inputSchema":{"json":{"type":"object"}}}}]}}`,
		},
		{
			name: "tool history without tools declares the called ones",
			req: Request{Messages: []Message{user(text("Hi")), assistant(call("c1", `{}`), Part{Kind: PartToolCall, ID: "c2", Name: "get_time"}, call("c3", `{}`)),
				user(result("c1", "a"), result("c2", "b"), result("c3", "c"))}},
			model: nova,
			want: `{"messages":[{"role":"user","content":[{"text":"Hi"}]},{"role":"assistant","content":[
					{"toolUse":{"toolUseId":"c1","name":"get_weather","input":{}}},{"toolUse":{"toolUseId":"c2","name":"get_time","input":{}}},{"toolUse":{"toolUseId":"c3","name":"get_weather","input":{}}}]},
				{"role":"user","content":[{"toolResult":{"toolUseId":"c1","content":[{"text":"a"}]}},{"toolResult":{"toolUseId":"c2","content":[{"text":"b"}]}},{"toolResult":{"toolUseId":"c3","content":[{"text":"c"}]}}]}],
				"toolConfig":{"tools":[{"toolSpec":{"name":"get_weather","inputSchema":{"json":{"type":"object"}}}},{"toolSpec":{"name":"get_time","inputSchema":{"json":{"type":"object"}}}}]}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out, err := Bedrock.(Translator).EncodeRequest(&tt.req, tt.model, tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			agJSONEqual(t, out, []byte(tt.want))
		})
	}
}

func TestBedrockEncodeRequestErrors(t *testing.T) {
	tests := []struct {
		name string
		part Part
		want string
	}{
		{"an image by URL", Part{Kind: PartImage, URL: "https://example.com/a.png"},
			`encoding bedrock request: an image by URL ("https://example.com/a.png") cannot be sent: Converse takes image data only`},
		{"inside a tool result", Part{Kind: PartToolResult, ID: "t", Content: []Part{{Kind: PartImage, URL: "http://x/a.gif"}}},
			`encoding bedrock request: an image by URL ("http://x/a.gif") cannot be sent`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Request{Messages: []Message{{Role: RoleUser, Parts: []Part{tt.part}}}}
			_, err := Bedrock.(Translator).EncodeRequest(r, "m", EncodeOptions{})
			if err == nil || !strings.HasPrefix(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

// TestBedrockRequestRoundTrip decodes requests that say nothing only
// Bedrock can, encodes them back for a Claude model, and expects the same
// request.
func TestBedrockRequestRoundTrip(t *testing.T) {
	bodies := []string{
		`{"messages":[{"role":"user","content":[{"text":"Hi"},{"cachePoint":{"type":"default"}},{"image":{"format":"png","source":{"bytes":"iVBOR"}}}]},
			{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"t","signature":"c2ln"}}},{"toolUse":{"toolUseId":"tooluse_1","name":"f","input":{"a":[1,2]}}}]},
			{"role":"user","content":[{"toolResult":{"toolUseId":"tooluse_1","content":[{"text":"ok"}],"status":"error"}}]}],
			"system":[{"text":"S"},{"cachePoint":{"type":"default"}}],
			"inferenceConfig":{"maxTokens":3000,"stopSequences":["x"]},
			"toolConfig":{"tools":[{"toolSpec":{"name":"f","description":"F.","inputSchema":{"json":{"type":"object"}}}}]},
			"additionalModelRequestFields":{"thinking":{"type":"enabled","budget_tokens":2000}}}`,
		`{"messages":[{"role":"user","content":[{"text":"Hi"}]}],"inferenceConfig":{"temperature":0.2},"additionalModelRequestFields":{"top_k":7},
			"toolConfig":{"tools":[{"toolSpec":{"name":"f","inputSchema":{"json":{}}}}],"toolChoice":{"any":{}}}}`,
	}
	for i, body := range bodies {
		t.Run(string(rune('a'+i)), func(t *testing.T) {
			tr := Bedrock.(Translator)
			r, err := tr.DecodeRequest([]byte(body))
			if err != nil {
				t.Fatal(err)
			}
			out, err := tr.EncodeRequest(r, "anthropic.claude-3-7-sonnet-20250219-v1:0", EncodeOptions{})
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

// TestBedrockFromAnthropic translates an Anthropic request, as a Claude
// Code turn sends it, for Claude on Bedrock.
func TestBedrockFromAnthropic(t *testing.T) {
	body := `{"model":"claude-sonnet-4","max_tokens":32000,"stream":true,
		"system":[{"type":"text","text":"You are Claude Code.","cache_control":{"type":"ephemeral"}}],
		"messages":[{"role":"user","content":[{"type":"text","text":"List files"}]},
			{"role":"assistant","content":[{"type":"thinking","thinking":"use ls","signature":"c2ln"},{"type":"tool_use","id":"toolu_01","name":"Bash","input":{"command":"ls"}}]},
			{"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01","content":"a.go\nb.go","cache_control":{"type":"ephemeral"}}]}],
		"tools":[{"name":"Bash","description":"Run a command.","input_schema":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}],
		"thinking":{"type":"enabled","budget_tokens":10000},"metadata":{"user_id":"user_x_session_1"}}`
	r, err := Anthropic.(Translator).DecodeRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	out, err := Bedrock.(Translator).EncodeRequest(r, "us.anthropic.claude-sonnet-4-20250514-v1:0", EncodeOptions{DefaultMaxTokens: 4096})
	if err != nil {
		t.Fatal(err)
	}
	agJSONEqual(t, out, []byte(`{"messages":[
		{"role":"user","content":[{"text":"List files"}]},
		{"role":"assistant","content":[{"reasoningContent":{"reasoningText":{"text":"use ls","signature":"c2ln"}}},{"toolUse":{"toolUseId":"toolu_01","name":"Bash","input":{"command":"ls"}}}]},
		{"role":"user","content":[{"toolResult":{"toolUseId":"toolu_01","content":[{"text":"a.go\nb.go"}]}},{"cachePoint":{"type":"default"}}]}],
		"system":[{"text":"You are Claude Code."},{"cachePoint":{"type":"default"}}],
		"inferenceConfig":{"maxTokens":32000},
		"toolConfig":{"tools":[{"toolSpec":{"name":"Bash","description":"Run a command.","inputSchema":{"json":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]}}}}]},
		"additionalModelRequestFields":{"thinking":{"type":"enabled","budget_tokens":10000}}}`))
}

// FuzzBedrockRequest decodes arbitrary bodies as Converse requests: what
// decodes encodes, to Bedrock, Anthropic and Gemini, as valid JSON (an
// image Converse cannot take, or a Gemini tool result that answers no
// call, may be refused), and the Bedrock encoding decodes again.
func FuzzBedrockRequest(f *testing.F) {
	f.Add([]byte(`{"messages":[{"role":"user","content":[{"text":"Hi"}]}]}`))
	f.Add([]byte(`{"messages":[{"role":"assistant","content":[{"toolUse":{"toolUseId":"t","name":"f","input":{}}}]},{"role":"user","content":[{"toolResult":{"toolUseId":"t","content":[{"json":{"a":1}}]}}]}],"toolConfig":{"tools":[{"toolSpec":{"name":"f","inputSchema":{"json":{}}}}],"toolChoice":{"any":{}}}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		agFuzzRequest(t, Bedrock.(Translator), body)
	})
}
