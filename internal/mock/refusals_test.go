package mock

import (
	"encoding/base64"
	"net/http"
	"strings"
	"testing"
)

// TestRefusals sends requests each real API refuses and checks the 400,
// its family's error shape and that the message names what was wrong.
func TestRefusals(t *testing.T) {
	_, url := newServed(t, Options{})
	const (
		chat     = "/v1/chat/completions"
		resp     = "/v1/responses"
		messages = "/v1/messages"
		gemini   = "/v1beta/models/gemini-2.5-flash:generateContent"
	)
	png := `"` + pngBase64 + `"`
	user := func(content string) string { return `{"role":"user","content":` + content + `}` }
	chatBody := func(msgs ...string) string {
		return `{"model":"gpt-4o","messages":[` + strings.Join(msgs, ",") + `]}`
	}
	chatWith := func(extra string) string {
		return `{"model":"gpt-4o",` + extra + `,"messages":[{"role":"user","content":"hi"}]}`
	}
	imagePart := func(u string) string {
		return user(`[{"type":"text","text":"see"},{"type":"image_url","image_url":{"url":"` + u + `"}}]`)
	}
	weatherTool := `{"type":"function","function":{"name":"get_weather","parameters":{"type":"object"}}}`
	callMsg := `{"role":"assistant","content":null,"tool_calls":[{"id":"call_1","type":"function","function":{"name":"get_weather","arguments":"{}"}}]}`
	ant := func(extra, msgs string) string {
		return `{"model":"claude-sonnet-4-5","max_tokens":2048` + extra + `,"messages":[` + msgs + `]}`
	}
	antUser := user(`"hi"`)
	antImage := func(source string) string {
		return user(`[{"type":"image","source":` + source + `}]`)
	}
	toolUse := `{"role":"assistant","content":[{"type":"tool_use","id":"toolu_1","name":"get_weather","input":{}}]}`
	toolResult := func(id string) string {
		return user(`[{"type":"tool_result","tool_use_id":"` + id + `","content":"ok"}]`)
	}
	thinking := `,"thinking":{"type":"enabled","budget_tokens":1024}`
	thoughtBlock := func(sig string) string {
		return `{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"` + sig + `"},{"type":"text","text":"done"}]}`
	}
	cached := `{"type":"text","text":"x","cache_control":{"type":"ephemeral"}}`
	gem := func(contents string) string { return `{"contents":[` + contents + `]}` }
	gUser := `{"role":"user","parts":[{"text":"hi"}]}`
	gCall := `{"role":"model","parts":[{"functionCall":{"name":"get_weather","args":{}}}]}`
	gAnswer := func(name string) string {
		return `{"role":"user","parts":[{"functionResponse":{"name":"` + name + `","response":{"result":"ok"}}}]}`
	}

	tests := []struct {
		name, path, body string
		want             string // a part of the error message
		status           int    // 0 = 400
	}{
		{"chat image media type", chat, chatBody(imagePart("data:image/bmp;base64," + pngBase64)), "unsupported image", 0},
		{"chat image base64", chat, chatBody(imagePart("data:image/png;base64,%%%")), "base64", 0},
		{"chat image url", chat, chatBody(imagePart("ftp://example.com/x.png")), "messages[0].content[1].image_url.url", 0},
		{"chat tool message without a call", chat, chatBody(antUser, `{"role":"tool","tool_call_id":"call_1","content":"x"}`), "must be a response to a preceeding message with 'tool_calls'", 0},
		{"chat tool call unanswered", chat, chatBody(antUser, callMsg, antUser), "did not have response messages: call_1", 0},
		{"chat tool call last", chat, chatBody(antUser, callMsg), "did not have response messages: call_1", 0},
		{"chat tool answers another call", chat, chatBody(antUser, callMsg, `{"role":"tool","tool_call_id":"call_2","content":"x"}`), "preceeding message", 0},
		{"chat role", chat, chatBody(`{"role":"robot","content":"x"}`), "Invalid value: 'robot'", 0},
		{"chat messages not an array", chat, `{"model":"gpt-4o","messages":"hi"}`, "expected an array", 0},
		{"chat tool_choice without tools", chat, chatWith(`"tool_choice":"auto"`), "only allowed when 'tools' are specified", 0},
		{"chat tool_choice unknown", chat, chatWith(`"tools":[` + weatherTool + `],"tool_choice":{"type":"function","function":{"name":"nope"}}`), "function 'nope'", 0},
		{"chat tool_choice value", chat, chatWith(`"tools":[` + weatherTool + `],"tool_choice":"always"`), "Invalid value: 'always'", 0},
		{"chat tool name", chat, chatWith(`"tools":[{"type":"function","function":{"name":"get weather"}}]`), "tools[0].function.name", 0},
		{"chat tool without name", chat, chatWith(`"tools":[{"type":"function","function":{}}]`), "Missing required parameter: 'tools[0].function.name'", 0},
		{"chat reasoning effort", chat, chatWith(`"reasoning_effort":"ultra"`), "Invalid value: 'ultra'", 0},

		{"responses output without call", resp, `{"model":"gpt-4o","input":[{"type":"function_call_output","call_id":"call_7","output":"x"}]}`, "call_id call_7", 0},
		{"responses image media type", resp, `{"model":"gpt-4o","input":[{"role":"user","content":[{"type":"input_image","image_url":"data:image/tiff;base64,` + pngBase64 + `"}]}]}`, "unsupported image", 0},
		{"responses image without source", resp, `{"model":"gpt-4o","input":[{"role":"user","content":[{"type":"input_image"}]}]}`, "image_url or a file_id", 0},
		{"responses role", resp, `{"model":"gpt-4o","input":[{"role":"tool","content":"x"}]}`, "Invalid value: 'tool'", 0},
		{"responses input type", resp, `{"model":"gpt-4o","input":42}`, "Invalid type for 'input'", 0},
		{"responses effort", resp, `{"model":"gpt-4o","input":"x","reasoning":{"effort":"max"}}`, "Invalid value: 'max'", 0},

		{"anthropic max_tokens missing", messages, `{"model":"claude-sonnet-4-5","messages":[` + antUser + `]}`, "max_tokens: Field required", 0},
		{"anthropic max_tokens zero", messages, `{"model":"claude-sonnet-4-5","max_tokens":0,"messages":[]}`, "greater than or equal to 1", 0},
		{"anthropic role", messages, ant("", `{"role":"system","content":"x"}`), "messages.0.role", 0},
		{"anthropic image media type", messages, ant("", antImage(`{"type":"base64","media_type":"image/bmp","data":`+png+`}`)), "messages.0.content.0.image.source.base64.media_type", 0},
		{"anthropic image base64", messages, ant("", antImage(`{"type":"base64","media_type":"image/png","data":"not base64!"}`)), "not valid base64", 0},
		{"anthropic image url", messages, ant("", antImage(`{"type":"url","url":"file:///etc/passwd"}`)), "image.source.url", 0},
		{"anthropic image source type", messages, ant("", antImage(`{"type":"path","path":"x"}`)), "Input tag 'path'", 0},
		{"anthropic tool_result unknown id", messages, ant("", antUser+`,`+toolUse+`,`+toolResult("toolu_2")), "unexpected `tool_use_id` found in `tool_result` blocks: toolu_2", 0},
		{"anthropic tool_use unanswered", messages, ant("", antUser+`,`+toolUse+`,`+antUser), "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_1", 0},
		{"anthropic tool_use last", messages, ant("", antUser+`,`+toolUse), "toolu_1", 0},
		{"anthropic tool without schema", messages, ant(`,"tools":[{"name":"get_weather"}]`, antUser), "tools.0.custom.input_schema: Field required", 0},
		{"anthropic tool name", messages, ant(`,"tools":[{"name":"get.weather","input_schema":{"type":"object"}}]`, antUser), "tools.0.custom.name", 0},
		{"anthropic tool_choice unknown", messages, ant(`,"tools":[{"name":"a","input_schema":{"type":"object"}}],"tool_choice":{"type":"tool","name":"b"}`, antUser), "tool 'b'", 0},
		{"thinking budget too small", messages, ant(`,"thinking":{"type":"enabled","budget_tokens":1000}`, antUser), "greater than or equal to 1024", 0},
		{"thinking budget not below max_tokens", messages, `{"model":"c","max_tokens":1024` + thinking + `,"messages":[` + antUser + `]}`, "`max_tokens` must be greater than `thinking.budget_tokens`", 0},
		{"thinking without budget", messages, ant(`,"thinking":{"type":"enabled"}`, antUser), "budget_tokens: Field required", 0},
		{"thinking type", messages, ant(`,"thinking":{"type":"sometimes"}`, antUser), "Input tag 'sometimes'", 0},
		{"thinking temperature", messages, ant(thinking+`,"temperature":0.5`, antUser), "`temperature` may only be set to 1", 0},
		{"thinking top_k", messages, ant(thinking+`,"top_k":5`, antUser), "`top_k` must be unset", 0},
		{"thinking forced tool", messages, ant(thinking+`,"tools":[{"name":"a","input_schema":{"type":"object"}}],"tool_choice":{"type":"any"}`, antUser), "tool_choice forces tool use", 0},
		{"thinking block without signature", messages, ant("", antUser+`,`+thoughtBlock("")+`,`+antUser), "messages.1.content.0.thinking.signature: Field required", 0},
		{"thinking block altered", messages, ant("", antUser+`,`+thoughtBlock(thinkingSignature("something else"))+`,`+antUser), "Invalid `signature` in `thinking` block", 0},
		{"redacted thinking without data", messages, ant("", antUser+`,{"role":"assistant","content":[{"type":"redacted_thinking"}]},`+antUser), "redacted_thinking.data", 0},
		{"thinking tool loop without thinking", messages, ant(thinking, antUser+`,`+toolUse+`,`+toolResult("toolu_1")), "a final `assistant` message must start with a thinking block", 0},
		{"five cache breakpoints", messages, ant(`,"system":[`+strings.Repeat(cached+",", 4)+cached+`]`, antUser), "A maximum of 4 blocks with cache_control may be provided. Found 5.", 0},

		{"gemini no contents", gemini, `{}`, "contents is not specified", 0},
		{"gemini empty contents", gemini, gem(""), "contents is not specified", 0},
		{"gemini role", gemini, gem(`{"role":"assistant","parts":[{"text":"x"}]}`), "Please use a valid role: user, model.", 0},
		{"gemini no parts", gemini, gem(`{"role":"user","parts":[]}`), "contents[0].parts: contents.parts must not be empty", 0},
		{"gemini response without call", gemini, gem(gUser + `,` + gAnswer("get_weather")), "function response turn comes immediately after a function call turn", 0},
		{"gemini response of another name", gemini, gem(gUser + `,` + gCall + `,` + gAnswer("get_time")), `no call of "get_time"`, 0},
		{"gemini responses outnumber calls", gemini, gem(gUser + `,` + gCall + `,{"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{}}},{"functionResponse":{"name":"get_weather","response":{}}}]}`), "number of function response parts", 0},
		{"gemini image type", gemini, gem(`{"role":"user","parts":[{"inlineData":{"mimeType":"image/bmp","data":` + png + `}}]}`), "Unsupported MIME type: image/bmp", 0},
		{"gemini image base64", gemini, gem(`{"role":"user","parts":[{"inlineData":{"mimeType":"image/png","data":"%%%"}}]}`), "contents[0].parts[0].inline_data.data", 0},
		{"gemini function name", gemini, `{"contents":[` + gUser + `],"tools":[{"functionDeclarations":[{"name":"1st"}]}]}`, "Invalid function name", 0},
		{"gemini allowed names without ANY", gemini, `{"contents":[` + gUser + `],"tools":[{"functionDeclarations":[{"name":"a"}]}],"toolConfig":{"functionCallingConfig":{"mode":"AUTO","allowedFunctionNames":["a"]}}}`, "should only be set when the Mode is ANY", 0},
		{"gemini allowed name unknown", gemini, `{"contents":[` + gUser + `],"tools":[{"functionDeclarations":[{"name":"a"}]}],"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":["b"]}}}`, `"b" is not a declared function`, 0},
		{"gemini mode", gemini, `{"contents":[` + gUser + `],"toolConfig":{"functionCallingConfig":{"mode":"SOMETIMES"}}}`, "SOMETIMES", 0},
		{"gemini invalid JSON", gemini, `{"contents":`, "Invalid JSON payload received", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			header := []string{}
			switch tt.path {
			case messages:
				header = []string{"anthropic-version", "2023-06-01"}
			case gemini:
				header = []string{"x-goog-api-key", "k"}
			}
			res := do(t, http.MethodPost, url+tt.path, tt.body, header...)
			status := tt.status
			if status == 0 {
				status = http.StatusBadRequest
			}
			if res.status != status {
				t.Fatalf("status = %d, want %d: %s", res.status, status, res.body)
			}
			msg := res.get("error.message").String()
			if !strings.Contains(msg, tt.want) {
				t.Errorf("message %q does not say %q", msg, tt.want)
			}
			switch tt.path {
			case messages:
				if res.get("type").String() != "error" || res.get("error.type").String() != "invalid_request_error" {
					t.Errorf("not Anthropic's error shape: %s", res.body)
				}
			case gemini:
				if res.get("error.code").Int() != 400 || res.get("error.status").String() != "INVALID_ARGUMENT" {
					t.Errorf("not Google's error shape: %s", res.body)
				}
			default:
				if res.get("error.type").String() != "invalid_request_error" || !res.get("error.param").Exists() {
					t.Errorf("not OpenAI's error shape: %s", res.body)
				}
			}
		})
	}
}

// TestAccepted are requests near the refusals that the real APIs take.
func TestAccepted(t *testing.T) {
	_, url := newServed(t, Options{})
	urlSafe := base64.RawURLEncoding.EncodeToString(onePixelPNG)
	// A response this mock stored: a request may continue only such a one.
	stored := do(t, http.MethodPost, url+"/v1/responses", `{"model":"gpt-4o","input":"x"}`).get("id").String()
	tests := []struct {
		name, path, body string
		header           []string
	}{
		{"responses output of a stored call", "/v1/responses", `{"model":"gpt-4o","previous_response_id":"` + stored + `","input":[{"type":"function_call_output","call_id":"call_7","output":"x"}]}`, nil},
		{"responses file image", "/v1/responses", `{"model":"gpt-4o","input":[{"role":"user","content":[{"type":"input_image","file_id":"file-1"}]}]}`, nil},
		{"chat parallel tool results", "/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"x"},{"role":"assistant","tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"b","type":"function","function":{"name":"f","arguments":"{}"}}]},{"role":"tool","tool_call_id":"b","content":"1"},{"role":"tool","tool_call_id":"a","content":"2"}]}`, nil},
		{"anthropic thinking disabled", "/v1/messages", `{"model":"c","max_tokens":10,"thinking":{"type":"disabled"},"temperature":0.2,"messages":[{"role":"user","content":"x"}]}`, nil},
		{"anthropic four cache breakpoints", "/v1/messages", `{"model":"c","max_tokens":10,"system":[{"type":"text","text":"a","cache_control":{"type":"ephemeral"}}],"tools":[{"name":"t","input_schema":{"type":"object"},"cache_control":{"type":"ephemeral"}}],"messages":[{"role":"user","content":[{"type":"text","text":"b","cache_control":{"type":"ephemeral"}},{"type":"text","text":"c","cache_control":{"type":"ephemeral"}}]}]}`, nil},
		{"anthropic thinking of an earlier turn", "/v1/messages", `{"model":"c","max_tokens":10,"messages":[{"role":"user","content":"x"},{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"` + thinkingSignature("hmm") + `"},{"type":"text","text":"y"}]},{"role":"user","content":"z"}]}`, nil},
		{"gemini url-safe unpadded base64", "/v1beta/models/g:generateContent", `{"contents":[{"parts":[{"inlineData":{"mimeType":"image/png","data":"` + urlSafe + `"}}]}]}`, []string{"x-goog-api-key", "k"}},
		{"gemini key in the query", "/v1beta/models/g:generateContent?key=k", `{"contents":[{"role":"user","parts":[{"text":"x"}]}]}`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if res := do(t, http.MethodPost, url+tt.path, tt.body, tt.header...); res.status != http.StatusOK {
				t.Errorf("status = %d: %s", res.status, res.body)
			}
		})
	}
}
