package codec

import (
	"testing"
)

func TestGeminiDecodeRequest(t *testing.T) {
	imageURL := Feature{Name: "image_url", Protocols: []string{"openai-chat", "openai-responses", "anthropic", "gemini"}}
	responseFormat := Feature{Name: "response_format", Protocols: []string{"gemini"}}
	tests := []struct {
		name string
		body string
		want *Request
	}{
		{
			name: "text turns, system and generation config, in snake_case too",
			body: `{"system_instruction":{"parts":[{"text":"Be brief."},{"text":"Be kind."}]},
				"contents":[{"role":"user","parts":[{"text":"Hi"}]},{"role":"model","parts":[{"text":"Hello"}]},{"parts":[{"text":"Bye"}]}],
				"generation_config":{"max_output_tokens":100,"temperature":0.5,"topP":0.9,"top_k":40,"stopSequences":["END"],
					"presencePenalty":0.5,"frequency_penalty":0.1,"seed":7,"responseMimeType":"text/plain","candidateCount":1},
				"safetySettings":[{"category":"HARM_CATEGORY_HARASSMENT","threshold":"BLOCK_NONE"}]}`,
			want: &Request{
				System: []Part{{Kind: PartText, Text: "Be brief."}, {Kind: PartText, Text: "Be kind."}},
				Messages: []Message{
					{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: "Hi"}}},
					{Role: RoleAssistant, Parts: []Part{{Kind: PartText, Text: "Hello"}}},
					{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: "Bye"}}},
				},
				MaxTokens: 100, Temperature: agPtr(0.5), TopP: agPtr(0.9), TopK: agPtr(int64(40)), Stop: []string{"END"}},
		},
		{
			name: "thought parts and the signatures parts carry",
			body: `{"contents":[{"role":"user","parts":[{"text":"Q"}]},{"role":"model","parts":[
				{"text":"plan","thought":true},{"text":"answer","thoughtSignature":"c2ln"},{"text":"","thought_signature":"dA=="}]}]}`,
			want: &Request{Messages: []Message{
				{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: "Q"}}},
				{Role: RoleAssistant, Parts: []Part{
					{Kind: PartThinking, Text: "plan"},
					{Kind: PartText, Text: "answer", Signature: "c2ln"},
					{Kind: PartText, Signature: "dA=="},
				}},
			}},
		},
		{
			name: "images inline and by file; other media only Gemini takes",
			body: `{"contents":[{"role":"user","parts":[
				{"inlineData":{"mimeType":"image/png","data":"iVBOR"}},
				{"inline_data":{"mime_type":"image/jpeg","data":"/9j/"}},
				{"fileData":{"mimeType":"image/jpeg","fileUri":"gs://bucket/cat.jpg"}},
				{"file_data":{"file_uri":"https://example.com/dog.png"}},
				{"inlineData":{"mimeType":"application/pdf","data":"JVBE"}},
				{"fileData":{"mimeType":"video/mp4","fileUri":"https://generativelanguage.googleapis.com/v1beta/files/abc"}},
				{"executableCode":{"language":"PYTHON","code":"print(1)"}},
				{"text":"Describe."}]}]}`,
			want: &Request{
				Messages: []Message{{Role: RoleUser, Parts: []Part{
					{Kind: PartImage, MediaType: "image/png", Data: "iVBOR"},
					{Kind: PartImage, MediaType: "image/jpeg", Data: "/9j/"},
					{Kind: PartImage, MediaType: "image/jpeg", URL: "gs://bucket/cat.jpg"},
					{Kind: PartImage, URL: "https://example.com/dog.png"},
					{Kind: PartText, Text: "Describe."},
				}}},
				Needs: []Feature{imageURL,
					{Name: "inline_data:application/pdf", Protocols: []string{"gemini"}},
					{Name: "file_data:video/mp4", Protocols: []string{"gemini"}},
					{Name: "part:executableCode", Protocols: []string{"gemini"}},
				}},
		},
		{
			name: "function calls get ids and responses answer them in order",
			body: `{"contents":[
				{"role":"user","parts":[{"text":"Weather?"}]},
				{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{"city":"Oslo"}}}]},
				{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"temp":-3}}}]},
				{"role":"model","parts":[
					{"functionCall":{"name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"c2ln"},
					{"function_call":{"name":"get_weather","args":{"city":"London"}}},
					{"functionCall":{"id":"fc-9","name":"lookup"}}]},
				{"role":"user","parts":[
					{"functionResponse":{"id":"fc-9","name":"lookup","response":{"result":"ok"}}},
					{"functionResponse":{"name":"get_weather","response":{"temp":18}}},
					{"function_response":{"name":"get_weather","response":{"error":"down"}}}]}]}`,
			want: &Request{Messages: []Message{
				{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: "Weather?"}}},
				{Role: RoleAssistant, Parts: []Part{{Kind: PartToolCall, ID: "call_1", Name: "get_weather", Arguments: agRaw(`{"city":"Oslo"}`)}}},
				{Role: RoleUser, Parts: []Part{{Kind: PartToolResult, ID: "call_1", Name: "get_weather", Content: []Part{{Kind: PartText, Text: `{"temp":-3}`}}}}},
				{Role: RoleAssistant, Parts: []Part{
					{Kind: PartToolCall, ID: "call_2", Name: "get_weather", Arguments: agRaw(`{"city":"Paris"}`), Signature: "c2ln"},
					{Kind: PartToolCall, ID: "call_3", Name: "get_weather", Arguments: agRaw(`{"city":"London"}`)},
					{Kind: PartToolCall, ID: "fc-9", Name: "lookup", Arguments: agRaw(`{}`)},
				}},
				{Role: RoleUser, Parts: []Part{
					{Kind: PartToolResult, ID: "fc-9", Name: "lookup", Content: []Part{{Kind: PartText, Text: `{"result":"ok"}`}}},
					{Kind: PartToolResult, ID: "call_2", Name: "get_weather", Content: []Part{{Kind: PartText, Text: `{"temp":18}`}}},
					{Kind: PartToolResult, ID: "call_3", Name: "get_weather", IsError: true, Content: []Part{{Kind: PartText, Text: `{"error":"down"}`}}},
				}},
			}},
		},
		{
			name: "tools: an OpenAPI schema becomes JSON Schema; one allowed name under ANY is a named choice",
			body: `{"contents":[],"tools":[{"functionDeclarations":[
				{"name":"get_weather","description":"Weather now.","parameters":{"type":"OBJECT","properties":{
					"city":{"type":"STRING","nullable":true,"description":"A city"},
					"days":{"type":"ARRAY","items":{"type":"INTEGER"},"max_items":"7"},
					"unit":{"anyOf":[{"type":"STRING","enum":["c","f"]},{"type":"NULL"}]},
					"opt":{"nullable":true}},
					"required":["city"],"propertyOrdering":["city","days"]}},
				{"name":"noop"},
				{"name":"js","parametersJsonSchema":{"type":"object","additionalProperties":false}}]},
				{"googleSearch":{}},{"code_execution":{}}],
				"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["get_weather"]}}}`,
			want: &Request{
				Tools: []Tool{{Name: "get_weather", Description: "Weather now.", Schema: agRaw(`{"type":"object","properties":{` +
					`"city":{"type":["string","null"],"description":"A city"},` +
					`"days":{"type":"array","items":{"type":"integer"},"maxItems":"7"},` +
					`"unit":{"anyOf":[{"type":"string","enum":["c","f"]},{"type":"null"}]},` +
					`"opt":{"type":"null"}},"required":["city"]}`)}},
				ToolChoice: ToolChoice{Mode: ToolNamed, Name: "get_weather"},
				Needs:      []Feature{{Name: "tool:googleSearch", Protocols: []string{"gemini"}}, {Name: "tool:codeExecution", Protocols: []string{"gemini"}}}},
		},
		{
			name: "ANY with two allowed names keeps those tools",
			body: `{"contents":[],"tools":[{"functionDeclarations":[{"name":"a"},{"name":"b"},{"name":"c"}]}],
				"tool_config":{"function_calling_config":{"mode":"any","allowed_function_names":["c","a"]}}}`,
			want: &Request{Tools: []Tool{{Name: "a"}, {Name: "c"}}, ToolChoice: ToolChoice{Mode: ToolAny}},
		},
		{
			name: "mode NONE",
			body: `{"contents":[],"tools":[{"functionDeclarations":[{"name":"a"}]}],"toolConfig":{"functionCallingConfig":{"mode":"NONE"}}}`,
			want: &Request{Tools: []Tool{{Name: "a"}}, ToolChoice: ToolChoice{Mode: ToolNone}},
		},
		{
			name: "mode VALIDATED is automatic",
			body: `{"contents":[],"toolConfig":{"functionCallingConfig":{"mode":"VALIDATED"}}}`,
			want: &Request{},
		},
		{name: "a thinking budget", body: `{"contents":[],"generationConfig":{"thinkingConfig":{"thinkingBudget":2048,"includeThoughts":true}}}`,
			want: &Request{Thinking: &Thinking{BudgetTokens: 2048}}},
		{name: "a zero budget turns thinking off", body: `{"contents":[],"generationConfig":{"thinkingConfig":{"thinkingBudget":0,"includeThoughts":true}}}`,
			want: &Request{}},
		{name: "a dynamic budget is a medium effort", body: `{"contents":[],"generationConfig":{"thinking_config":{"thinking_budget":-1}}}`,
			want: &Request{Thinking: &Thinking{Effort: "medium"}}},
		{name: "thoughts asked for alone", body: `{"contents":[],"generationConfig":{"thinkingConfig":{"includeThoughts":true}}}`,
			want: &Request{Thinking: &Thinking{Effort: "medium"}}},
		{name: "a thinking level is an effort", body: `{"contents":[],"generationConfig":{"thinkingConfig":{"thinkingLevel":"HIGH"}}}`,
			want: &Request{Thinking: &Thinking{Effort: "high"}}},
		{
			name: "what only Gemini (or Chat) can say",
			body: `{"contents":[],"cachedContent":"cachedContents/abc","generationConfig":{"candidateCount":2,"responseMimeType":"application/json",
				"responseSchema":{"type":"OBJECT"},"responseModalities":["TEXT","IMAGE"],"speechConfig":{},"responseLogprobs":true}}`,
			want: &Request{Needs: []Feature{
				{Name: "cached_content", Protocols: []string{"gemini"}},
				{Name: "n", Protocols: []string{"gemini"}},
				responseFormat,
				{Name: "response_modalities", Protocols: []string{"gemini"}},
				{Name: "speech_config", Protocols: []string{"gemini"}},
				{Name: "logprobs", Protocols: []string{"gemini"}},
			}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Gemini.(Translator).DecodeRequest([]byte(tt.body))
			if err != nil {
				t.Fatal(err)
			}
			agEqual(t, got, tt.want)
		})
	}
}

func TestGeminiDecodeRequestErrors(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"not JSON", `{"contents":`, "request body: invalid JSON"},
		{"not an object", `"hi"`, "request body: must be a JSON object"},
		{"no contents", `{"generationConfig":{}}`, "contents: field required"},
		{"contents an object", `{"contents":{}}`, "contents: must be an array"},
		{"content a string", `{"contents":["hi"]}`, "contents[0]: must be an object"},
		{"role system", `{"contents":[{"role":"system","parts":[]}]}`, `contents[0].role: must be "user" or "model"`},
		{"parts missing", `{"contents":[{"role":"user"}]}`, "contents[0].parts: must be an array"},
		{"part a string", `{"contents":[{"parts":["hi"]}]}`, "contents[0].parts[0]: must be an object"},
		{"an empty part", `{"contents":[{"parts":[{"text":"a"}]},{"parts":[{"text":"b"},{}]}]}`, "contents[1].parts[1]: has no text, inlineData, fileData, functionCall or functionResponse"},
		{"text a number", `{"contents":[{"parts":[{"text":1}]}]}`, "contents[0].parts[0].text: must be a string"},
		{"call without name", `{"contents":[{"role":"model","parts":[{"functionCall":{"args":{}}}]}]}`, "contents[0].parts[0].functionCall.name: field required"},
		{"call args a list", `{"contents":[{"role":"model","parts":[{"functionCall":{"name":"f","args":[1]}}]}]}`, "contents[0].parts[0].functionCall.args: must be an object"},
		{"response without name", `{"contents":[{"parts":[{"functionResponse":{"response":{}}}]}]}`, "contents[0].parts[0].functionResponse.name: field required"},
		{"response not an object", `{"contents":[{"role":"model","parts":[{"functionCall":{"name":"f"}}]},{"parts":[{"functionResponse":{"name":"f","response":"ok"}}]}]}`, "contents[1].parts[0].functionResponse.response: must be an object"},
		{"response to no call", `{"contents":[{"role":"model","parts":[{"functionCall":{"name":"f"}}]},{"parts":[{"functionResponse":{"name":"g","response":{}}}]}]}`, `contents[1].parts[0].functionResponse: answers no earlier functionCall named "g"`},
		{"a second response to one call", `{"contents":[{"role":"model","parts":[{"functionCall":{"name":"f"}}]},{"parts":[{"functionResponse":{"name":"f","response":{}}},{"functionResponse":{"name":"f","response":{}}}]}]}`, `contents[1].parts[1].functionResponse: answers no earlier functionCall named "f"`},
		{"inline data without data", `{"contents":[{"parts":[{"inlineData":{"mimeType":"image/png"}}]}]}`, `contents[0].parts[0].inlineData: must be {"mimeType": …, "data": …}`},
		{"file data without uri", `{"contents":[{"parts":[{"fileData":{"mimeType":"image/png"}}]}]}`, "contents[0].parts[0].fileData.fileUri: field required"},
		{"system a string", `{"contents":[],"systemInstruction":"Be brief."}`, `systemInstruction: must be {"parts": [{"text": …}]}`},
		{"system part without text", `{"contents":[],"systemInstruction":{"parts":[{"inlineData":{}}]}}`, "systemInstruction.parts[0].text: must be a string"},
		{"tools an object", `{"contents":[],"tools":{}}`, "tools: must be an array"},
		{"a tool a string", `{"contents":[],"tools":["f"]}`, "tools[0]: must be an object"},
		{"declarations an object", `{"contents":[],"tools":[{"functionDeclarations":{}}]}`, "tools[0].functionDeclarations: must be an array"},
		{"declaration without name", `{"contents":[],"tools":[{"googleSearch":{}},{"functionDeclarations":[{"name":"a"},{"description":"x"}]}]}`, "tools[1].functionDeclarations[1].name: field required"},
		{"mode unknown", `{"contents":[],"toolConfig":{"functionCallingConfig":{"mode":"SOMETIMES"}}}`, "toolConfig.functionCallingConfig.mode: must be AUTO, ANY, NONE or VALIDATED"},
		{"allowed names not strings", `{"contents":[],"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":[1]}}}`, "toolConfig.functionCallingConfig.allowedFunctionNames[0]: must be a string"},
		{"generationConfig a list", `{"contents":[],"generationConfig":[]}`, "generationConfig: must be an object"},
		{"maxOutputTokens zero", `{"contents":[],"generationConfig":{"maxOutputTokens":0}}`, "generationConfig.maxOutputTokens: must be a positive integer"},
		{"temperature a string", `{"contents":[],"generationConfig":{"temperature":"hot"}}`, "generationConfig.temperature: must be a number"},
		{"topK zero", `{"contents":[],"generationConfig":{"topK":0}}`, "generationConfig.topK: must be a positive number"},
		{"stopSequences a string", `{"contents":[],"generationConfig":{"stopSequences":"END"}}`, "generationConfig.stopSequences: must be an array of strings"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Gemini.(Translator).DecodeRequest([]byte(tt.body))
			if err == nil || err.Error() != tt.want {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

func TestGeminiEncodeRequest(t *testing.T) {
	user := func(parts ...Part) Message { return Message{Role: RoleUser, Parts: parts} }
	assistant := func(parts ...Part) Message { return Message{Role: RoleAssistant, Parts: parts} }
	text := func(s string) Part { return Part{Kind: PartText, Text: s} }
	weather := []Tool{{Name: "get_weather", Description: "Weather now.", Schema: agRaw(`{"type":"object","properties":{"city":{"type":"string"}}}`)}, {Name: "noop"}}
	tests := []struct {
		name string
		req  Request
		want string
	}{
		{
			name: "turns merged, system, generation config; model, stream and user not in the body",
			req: Request{Model: "gemini-2.5-flash", Stream: true, User: "u-1", IncludeUsage: true,
				System:    []Part{text("Be brief."), text(""), text("Be kind.")},
				Messages:  []Message{user(text("Hi")), user(text("there")), assistant(text("Hello"), Part{Kind: PartRedactedThinking, Data: "x"}), {Role: RoleAssistant}},
				MaxTokens: 100, Temperature: agPtr(1.5), TopP: agPtr(0.9), TopK: agPtr(int64(40)), Stop: []string{"1", "2", "3", "4", "5", "6"}},
			want: `{"contents":[{"role":"user","parts":[{"text":"Hi"},{"text":"there"}]},{"role":"model","parts":[{"text":"Hello"}]}],
				"systemInstruction":{"parts":[{"text":"Be brief."},{"text":"Be kind."}]},
				"generationConfig":{"maxOutputTokens":100,"temperature":1.5,"topP":0.9,"topK":40,"stopSequences":["1","2","3","4","5"]}}`,
		},
		{
			name: "a tool loop: thinking left out, responses first and named by their call",
			req: Request{Tools: weather, Messages: []Message{
				user(text("Weather in Paris and London?")),
				assistant(Part{Kind: PartThinking, Text: "two calls", Signature: "c2ln"}, text("Checking."),
					Part{Kind: PartToolCall, ID: "toolu_1", Name: "get_weather", Arguments: agRaw(`{"city":"Paris"}`), Signature: "Q0FGRQ=="},
					Part{Kind: PartToolCall, ID: "toolu_2", Name: "get_weather", Arguments: agRaw(`{"city":"London"}`)}),
				user(text("Here."),
					Part{Kind: PartToolResult, ID: "toolu_1", Content: []Part{text("18C"), {Kind: PartImage, Data: "R0lG", MediaType: "image/gif"}}},
					Part{Kind: PartToolResult, ID: "toolu_2", IsError: true, Content: []Part{text("down")}}),
				user(Part{Kind: PartToolResult, ID: "x", Name: "noop", Content: []Part{text(` {"ok":true} `)}}),
			}},
			want: `{"contents":[
				{"role":"user","parts":[{"text":"Weather in Paris and London?"}]},
				{"role":"model","parts":[{"text":"Checking."},
					{"functionCall":{"id":"toolu_1","name":"get_weather","args":{"city":"Paris"}},"thoughtSignature":"Q0FGRQ=="},
					{"functionCall":{"id":"toolu_2","name":"get_weather","args":{"city":"London"}}}]},
				{"role":"user","parts":[
					{"functionResponse":{"id":"toolu_1","name":"get_weather","response":{"result":"18C"}}},
					{"functionResponse":{"id":"toolu_2","name":"get_weather","response":{"error":"down"}}},
					{"functionResponse":{"id":"x","name":"noop","response":{"ok":true}}},
					{"text":"Here."}]}],
				"tools":[{"functionDeclarations":[
					{"name":"get_weather","description":"Weather now.","parametersJsonSchema":{"type":"object","properties":{"city":{"type":"string"}}}},
					{"name":"noop","parametersJsonSchema":{"type":"object"}}]}]}`,
		},
		{
			name: "a call turn without a signature gets Google's skip signature on its first call",
			req: Request{Messages: []Message{
				user(text("Go")),
				assistant(Part{Kind: PartToolCall, ID: "c1", Name: "a"}, Part{Kind: PartToolCall, ID: "c2", Name: "b", Arguments: agRaw(`[1]`)}),
				user(Part{Kind: PartToolResult, ID: "c1", Content: []Part{text("1")}}, Part{Kind: PartToolResult, ID: "c2", Content: []Part{text("2")}}),
			}},
			want: `{"contents":[{"role":"user","parts":[{"text":"Go"}]},
				{"role":"model","parts":[{"functionCall":{"id":"c1","name":"a","args":{}},"thoughtSignature":"skip_thought_signature_validator"},
					{"functionCall":{"id":"c2","name":"b","args":{"value":[1]}}}]},
				{"role":"user","parts":[{"functionResponse":{"id":"c1","name":"a","response":{"result":"1"}}},{"functionResponse":{"id":"c2","name":"b","response":{"result":"2"}}}]}]}`,
		},
		{
			name: "images by data, data URL and URL",
			req: Request{Messages: []Message{user(
				Part{Kind: PartImage, MediaType: "image/png", Data: "iVBOR"},
				Part{Kind: PartImage, URL: "data:image/webp;base64,UklGR"},
				Part{Kind: PartImage, URL: "https://example.com/a.PNG?x=1"},
				Part{Kind: PartImage, URL: "gs://b/c", MediaType: "image/heic"},
				Part{Kind: PartImage, URL: "https://example.com/photo"},
			)}},
			want: `{"contents":[{"role":"user","parts":[
				{"inlineData":{"mimeType":"image/png","data":"iVBOR"}},
				{"inlineData":{"mimeType":"image/webp","data":"UklGR"}},
				{"fileData":{"mimeType":"image/png","fileUri":"https://example.com/a.PNG?x=1"}},
				{"fileData":{"mimeType":"image/heic","fileUri":"gs://b/c"}},
				{"fileData":{"mimeType":"image/jpeg","fileUri":"https://example.com/photo"}}]}]}`,
		},
		{
			name: "a named tool is ANY with one allowed name",
			req:  Request{Tools: weather[1:], ToolChoice: ToolChoice{Mode: ToolNamed, Name: "noop"}, ParallelToolCalls: agPtr(false)},
			want: `{"contents":[],"tools":[{"functionDeclarations":[{"name":"noop","parametersJsonSchema":{"type":"object"}}]}],
				"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["noop"]}}}`,
		},
		{
			name: "tool choice none and any",
			req:  Request{Tools: weather[1:], ToolChoice: ToolChoice{Mode: ToolNone}},
			want: `{"contents":[],"tools":[{"functionDeclarations":[{"name":"noop","parametersJsonSchema":{"type":"object"}}]}],"toolConfig":{"functionCallingConfig":{"mode":"NONE"}}}`,
		},
		{
			name: "tool choice any",
			req:  Request{Tools: weather[1:], ToolChoice: ToolChoice{Mode: ToolAny}},
			want: `{"contents":[],"tools":[{"functionDeclarations":[{"name":"noop","parametersJsonSchema":{"type":"object"}}]}],"toolConfig":{"functionCallingConfig":{"mode":"ANY"}}}`,
		},
		{
			name: "an effort is a budget with thoughts",
			req:  Request{Thinking: &Thinking{Effort: "high"}},
			want: `{"contents":[],"generationConfig":{"thinkingConfig":{"thinkingBudget":24576,"includeThoughts":true}}}`,
		},
		{
			name: "a budget is sent as it is",
			req:  Request{Thinking: &Thinking{BudgetTokens: 300, Effort: "high"}},
			want: `{"contents":[],"generationConfig":{"thinkingConfig":{"thinkingBudget":300,"includeThoughts":true}}}`,
		},
		{
			name: "effort none turns thinking off",
			req:  Request{Thinking: &Thinking{Effort: "none"}},
			want: `{"contents":[],"generationConfig":{"thinkingConfig":{"thinkingBudget":0}}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Gemini.(Translator).EncodeRequest(&tt.req, "gemini-2.5-flash", EncodeOptions{DefaultMaxTokens: 999})
			if err != nil {
				t.Fatal(err)
			}
			agJSONEqual(t, got, []byte(tt.want))
		})
	}
	t.Run("a tool result answering no call is an error", func(t *testing.T) {
		r := Request{Messages: []Message{user(Part{Kind: PartToolResult, ID: "ghost", Content: []Part{text("1")}})}}
		_, err := Gemini.(Translator).EncodeRequest(&r, "", EncodeOptions{})
		want := `encoding gemini request: tool result "ghost" answers no tool call of the conversation`
		if err == nil || err.Error() != want {
			t.Errorf("error %v, want %q", err, want)
		}
	})
}

// TestGeminiRequestRoundTrip decodes requests that say nothing only
// Gemini can, encodes them back, and expects the same request.
func TestGeminiRequestRoundTrip(t *testing.T) {
	body := `{"contents":[{"role":"user","parts":[{"text":"Hi"},{"inlineData":{"mimeType":"image/png","data":"iVBOR"}}]},
		{"role":"model","parts":[{"functionCall":{"id":"a1","name":"f","args":{"x":[1,2]}},"thoughtSignature":"c2ln"}]},
		{"role":"user","parts":[{"functionResponse":{"id":"a1","name":"f","response":{"ok":true}}}]}],
		"systemInstruction":{"parts":[{"text":"S"}]},
		"tools":[{"functionDeclarations":[{"name":"f","description":"F.","parametersJsonSchema":{"type":"object"}}]}],
		"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["f"]}},
		"generationConfig":{"maxOutputTokens":300,"temperature":0.2,"topP":0.5,"topK":3,"stopSequences":["x"],"thinkingConfig":{"thinkingBudget":2000,"includeThoughts":true}}}`
	tr := Gemini.(Translator)
	r, err := tr.DecodeRequest([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	out, err := tr.EncodeRequest(r, "", EncodeOptions{})
	if err != nil {
		t.Fatal(err)
	}
	agJSONEqual(t, out, []byte(body))
	r2, err := tr.DecodeRequest(out)
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	agEqual(t, r2, r)
}
