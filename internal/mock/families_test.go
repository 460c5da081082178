package mock

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// onePixelPNG is a 1×1 PNG.
var onePixelPNG = []byte{
	0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0x49, 0x48, 0x44, 0x52,
	0x00, 0x00, 0x00, 0x01, 0x00, 0x00, 0x00, 0x01, 0x08, 0x06, 0x00, 0x00, 0x00, 0x1f, 0x15, 0xc4,
	0x89, 0x00, 0x00, 0x00, 0x0b, 0x49, 0x44, 0x41, 0x54, 0x78, 0x9c, 0x63, 0x00, 0x01, 0x00, 0x00,
	0x05, 0x00, 0x01, 0x0d, 0x0a, 0x2d, 0xb4, 0x00, 0x00, 0x00, 0x00, 0x49, 0x45, 0x4e, 0x44, 0xae,
	0x42, 0x60, 0x82, 0x00,
}

var pngBase64 = base64.StdEncoding.EncodeToString(onePixelPNG)

// testTools are the tools scenarios offer, by name.
var testTools = map[string]string{
	"get_weather": `{"type":"object","properties":{"location":{"type":"string"},"unit":{"type":"string","enum":["celsius","fahrenheit"]},"days":{"type":"integer"}},"required":["location","unit"]}`,
	"get_time":    `{"type":"object","properties":{"timezone":{"type":"string"}},"required":["timezone"]}`,
}

// scenario is a request described once and written in each family's shape
// by body.
type scenario struct {
	user      string
	tools     []string // names of testTools, in order
	choice    string   // "none", a tool name to force, or "" for the default
	imageData string   // base64 PNG data
	imageURL  string
	toolRound bool // the user asked, get_weather was called and answered "Sunny, 21°C"
	reasoning bool
	pad       int // bytes of system prompt
	maxTokens int
	stop      []string // stop sequences (the Responses API has none)
}

const toolAnswer = "Sunny, 21°C"

// body writes sc in family f's shape.
func (sc scenario) body(f string) string {
	m := map[string]any{}
	switch f {
	case "chat":
		sc.chat(m)
	case "responses":
		sc.responses(m)
	case "messages":
		sc.messages(m)
	case "gemini":
		sc.gemini(m)
	}
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(m); err != nil {
		panic(err)
	}
	return strings.TrimSpace(buf.String())
}

func (sc scenario) chat(m map[string]any) {
	m["model"] = "gpt-4o"
	if sc.reasoning {
		m["model"], m["reasoning_effort"] = "o4-mini", "low"
	}
	var msgs []any
	if sc.pad > 0 {
		msgs = append(msgs, map[string]any{"role": "system", "content": strings.Repeat("x", sc.pad)})
	}
	content := []any{map[string]any{"type": "text", "text": sc.user}}
	for _, u := range sc.imageURLs() {
		content = append(content, map[string]any{"type": "image_url", "image_url": map[string]any{"url": u}})
	}
	msgs = append(msgs, map[string]any{"role": "user", "content": content})
	if sc.toolRound {
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{
				"id": "call_9", "type": "function", "function": map[string]any{"name": "get_weather", "arguments": `{"location":"Paris","unit":"celsius"}`}}}},
			map[string]any{"role": "tool", "tool_call_id": "call_9", "content": toolAnswer})
	}
	m["messages"] = msgs
	var tools []any
	for _, name := range sc.tools {
		tools = append(tools, map[string]any{"type": "function", "function": map[string]any{"name": name, "parameters": json.RawMessage(testTools[name])}})
	}
	if tools != nil {
		m["tools"] = tools
	}
	switch sc.choice {
	case "":
	case "none":
		m["tool_choice"] = "none"
	default:
		m["tool_choice"] = map[string]any{"type": "function", "function": map[string]any{"name": sc.choice}}
	}
	if sc.maxTokens > 0 {
		m["max_tokens"] = sc.maxTokens
	}
	if sc.stop != nil {
		m["stop"] = sc.stop
	}
}

func (sc scenario) responses(m map[string]any) {
	m["model"] = "gpt-4o"
	if sc.reasoning {
		m["reasoning"] = map[string]any{"effort": "low", "summary": "auto"}
	}
	if sc.pad > 0 {
		m["instructions"] = strings.Repeat("x", sc.pad)
	}
	content := []any{map[string]any{"type": "input_text", "text": sc.user}}
	for _, u := range sc.imageURLs() {
		content = append(content, map[string]any{"type": "input_image", "image_url": u})
	}
	input := []any{map[string]any{"role": "user", "content": content}}
	if sc.toolRound {
		input = append(input,
			map[string]any{"type": "function_call", "call_id": "call_9", "name": "get_weather", "arguments": `{"location":"Paris","unit":"celsius"}`},
			map[string]any{"type": "function_call_output", "call_id": "call_9", "output": toolAnswer})
	}
	m["input"] = input
	var tools []any
	for _, name := range sc.tools {
		tools = append(tools, map[string]any{"type": "function", "name": name, "parameters": json.RawMessage(testTools[name])})
	}
	if tools != nil {
		m["tools"] = tools
	}
	switch sc.choice {
	case "":
	case "none":
		m["tool_choice"] = "none"
	default:
		m["tool_choice"] = map[string]any{"type": "function", "name": sc.choice}
	}
	if sc.maxTokens > 0 {
		m["max_output_tokens"] = sc.maxTokens
	}
}

func (sc scenario) messages(m map[string]any) {
	m["model"], m["max_tokens"] = "claude-sonnet-4-5", 1024
	if sc.reasoning {
		m["max_tokens"], m["thinking"] = 4096, map[string]any{"type": "enabled", "budget_tokens": 1024}
	}
	if sc.maxTokens > 0 {
		m["max_tokens"] = sc.maxTokens
	}
	if sc.pad > 0 {
		m["system"] = strings.Repeat("x", sc.pad)
	}
	if sc.stop != nil {
		m["stop_sequences"] = sc.stop
	}
	content := []any{map[string]any{"type": "text", "text": sc.user}}
	if sc.imageData != "" {
		content = append(content, map[string]any{"type": "image", "source": map[string]any{"type": "base64", "media_type": "image/png", "data": sc.imageData}})
	}
	if sc.imageURL != "" {
		content = append(content, map[string]any{"type": "image", "source": map[string]any{"type": "url", "url": sc.imageURL}})
	}
	msgs := []any{map[string]any{"role": "user", "content": content}}
	if sc.toolRound {
		msgs = append(msgs,
			map[string]any{"role": "assistant", "content": []any{map[string]any{
				"type": "tool_use", "id": "toolu_9", "name": "get_weather", "input": map[string]any{"location": "Paris", "unit": "celsius"}}}},
			map[string]any{"role": "user", "content": []any{map[string]any{"type": "tool_result", "tool_use_id": "toolu_9", "content": toolAnswer}}})
	}
	m["messages"] = msgs
	var tools []any
	for _, name := range sc.tools {
		tools = append(tools, map[string]any{"name": name, "input_schema": json.RawMessage(testTools[name])})
	}
	if tools != nil {
		m["tools"] = tools
	}
	switch sc.choice {
	case "":
	case "none":
		m["tool_choice"] = map[string]any{"type": "none"}
	default:
		m["tool_choice"] = map[string]any{"type": "tool", "name": sc.choice}
	}
}

func (sc scenario) gemini(m map[string]any) {
	if sc.pad > 0 {
		m["systemInstruction"] = map[string]any{"parts": []any{map[string]any{"text": strings.Repeat("x", sc.pad)}}}
	}
	parts := []any{map[string]any{"text": sc.user}}
	if sc.imageData != "" {
		parts = append(parts, map[string]any{"inlineData": map[string]any{"mimeType": "image/png", "data": sc.imageData}})
	}
	if sc.imageURL != "" {
		parts = append(parts, map[string]any{"fileData": map[string]any{"mimeType": "image/png", "fileUri": sc.imageURL}})
	}
	contents := []any{map[string]any{"role": "user", "parts": parts}}
	if sc.toolRound {
		contents = append(contents,
			map[string]any{"role": "model", "parts": []any{map[string]any{"functionCall": map[string]any{
				"name": "get_weather", "args": map[string]any{"location": "Paris", "unit": "celsius"}}}}},
			map[string]any{"role": "user", "parts": []any{map[string]any{"functionResponse": map[string]any{
				"name": "get_weather", "response": map[string]any{"result": toolAnswer}}}}})
	}
	m["contents"] = contents
	var decls []any
	for _, name := range sc.tools {
		decls = append(decls, map[string]any{"name": name, "parametersJsonSchema": json.RawMessage(testTools[name])})
	}
	if decls != nil {
		m["tools"] = []any{map[string]any{"functionDeclarations": decls}}
	}
	switch sc.choice {
	case "":
	case "none":
		m["toolConfig"] = map[string]any{"functionCallingConfig": map[string]any{"mode": "NONE"}}
	default:
		m["toolConfig"] = map[string]any{"functionCallingConfig": map[string]any{"mode": "ANY", "allowedFunctionNames": []string{sc.choice}}}
	}
	gc := map[string]any{}
	if sc.reasoning {
		gc["thinkingConfig"] = map[string]any{"includeThoughts": true}
	}
	if sc.maxTokens > 0 {
		gc["maxOutputTokens"] = sc.maxTokens
	}
	if sc.stop != nil {
		gc["stopSequences"] = sc.stop
	}
	if len(gc) > 0 {
		m["generationConfig"] = gc
	}
}

func (sc scenario) imageURLs() []string {
	var out []string
	if sc.imageData != "" {
		out = append(out, "data:image/png;base64,"+sc.imageData)
	}
	if sc.imageURL != "" {
		out = append(out, sc.imageURL)
	}
	return out
}

// TestFamiliesAnswer runs each scenario in every family, plain and
// streamed, and checks the answer and that the stream says the same.
func TestFamiliesAnswer(t *testing.T) {
	_, url := newServed(t, Options{Seed: 4})
	both := []string{"get_weather", "get_time"}
	weather := gotCall{"get_weather", `{"location":"Paris","unit":"celsius"}`}
	tests := []struct {
		name  string
		sc    scenario
		check func(t *testing.T, f string, a answer)
	}{
		{"text", scenario{user: "Hello there"}, func(t *testing.T, f string, a answer) {
			if n := len(strings.Fields(a.text)); n != DefaultCompletionTokens || a.stop != "end" || a.calls != nil {
				t.Errorf("%d words, stop %q, calls %v", n, a.stop, a.calls)
			}
			if a.usage.out != DefaultCompletionTokens || a.usage.in < 1 || a.usage.cacheRead != 0 || a.usage.cacheWrite != 0 {
				t.Errorf("usage = %+v", a.usage)
			}
		}},
		{"tool call", scenario{user: "Weather in Paris?", tools: both}, func(t *testing.T, f string, a answer) {
			wantCalls(t, a, weather)
			if want := int64(callTokens(weather.name, []byte(weather.args))); a.usage.out != want {
				t.Errorf("output tokens = %d, want %d", a.usage.out, want)
			}
		}},
		{"parallel tool calls", scenario{user: "Check both, in parallel.", tools: both}, func(t *testing.T, f string, a answer) {
			wantCalls(t, a, weather, gotCall{"get_time", `{"timezone":"test"}`})
		}},
		{"named tool", scenario{user: "What time is it?", tools: both, choice: "get_time"}, func(t *testing.T, f string, a answer) {
			wantCalls(t, a, gotCall{"get_time", `{"timezone":"test"}`})
		}},
		{"tool_choice none", scenario{user: "Weather?", tools: both, choice: "none"}, func(t *testing.T, f string, a answer) {
			if a.calls != nil || a.stop != "end" || a.text == "" {
				t.Errorf("answer = %+v, want text", a)
			}
		}},
		{"tool result", scenario{user: "Weather in Paris?", tools: both, toolRound: true}, func(t *testing.T, f string, a answer) {
			if a.text != "The tool returned: "+toolAnswer || a.stop != "end" || a.calls != nil {
				t.Errorf("answer = %+v", a)
			}
			if a.usage.out != 5 {
				t.Errorf("output tokens = %d, want 5 (one per word)", a.usage.out)
			}
		}},
		{"image data", scenario{user: "What is this?", imageData: pngBase64}, func(t *testing.T, f string, a answer) {
			if want := fmt.Sprintf("I see 1 image (image/png, %d bytes).", len(onePixelPNG)); a.text != want {
				t.Errorf("text = %q, want %q", a.text, want)
			}
		}},
		{"images data and url", scenario{user: "Compare", imageData: pngBase64, imageURL: "https://example.com/cat.png"}, func(t *testing.T, f string, a answer) {
			if want := fmt.Sprintf("I see 2 images (image/png, %d bytes; url).", len(onePixelPNG)); a.text != want {
				t.Errorf("text = %q, want %q", a.text, want)
			}
		}},
		{"reasoning", scenario{user: "Think first", reasoning: true}, func(t *testing.T, f string, a answer) {
			want := map[string]int{"chat": 0, "responses": 8, "messages": 16, "gemini": 16}[f]
			if n := len(strings.Fields(a.thinking)); n != want {
				t.Errorf("thinking has %d words, want %d: %q", n, want, a.thinking)
			}
			reasoning := int64(map[string]int{"chat": 8, "responses": 8, "messages": 16, "gemini": 16}[f])
			if a.usage.out != DefaultCompletionTokens+reasoning || (a.usage.reasoning != -1 && a.usage.reasoning != reasoning) {
				t.Errorf("usage = %+v, want %d reasoning tokens", a.usage, reasoning)
			}
		}},
		{"reasoning with a tool call", scenario{user: "Weather?", tools: both, reasoning: true}, func(t *testing.T, f string, a answer) {
			wantCalls(t, a, weather)
			if f != "chat" && a.thinking == "" {
				t.Error("no reasoning before the call")
			}
		}},
		{"long prompt is cached", scenario{user: "Summarise", pad: 8000}, func(t *testing.T, f string, a answer) {
			if a.usage.in < cacheMinTokens || a.usage.cacheRead != int64(cachedPart(int(a.usage.in))) || a.usage.cacheRead%64 != 0 || a.usage.cacheWrite != 0 {
				t.Errorf("usage = %+v, want half the prompt read from the cache", a.usage)
			}
		}},
		{"stop sequence", scenario{user: "Weather in Paris?", tools: both, toolRound: true, stop: []string{"21", ","}}, func(t *testing.T, f string, a answer) {
			want, stop, seq := "The tool returned: Sunny", "end", ""
			switch f {
			case "responses":
				want = "The tool returned: " + toolAnswer
			case "messages":
				stop, seq = "stop_sequence", ","
			}
			if a.text != want || a.stop != stop || a.stopSequence != seq || a.usage.out != int64(len(splitPieces(want))) {
				t.Errorf("answer = %+v, want %q stopped by %q", a, want, seq)
			}
		}},
		{"max tokens", scenario{user: "Be brief", maxTokens: 3}, func(t *testing.T, f string, a answer) {
			if n := len(strings.Fields(a.text)); n != 3 || a.stop != "length" || a.usage.out != 3 {
				t.Errorf("%d words, stop %q, usage %+v", n, a.stop, a.usage)
			}
		}},
	}
	for _, f := range families {
		for _, tt := range tests {
			t.Run(f.name+"/"+tt.name, func(t *testing.T) {
				plain, streamed := f.ask(t, url, tt.sc.body(f.name))
				if !reflect.DeepEqual(plain, streamed) {
					t.Errorf("plain and streamed answers differ:\nplain    %+v\nstreamed %+v", plain, streamed)
				}
				tt.check(t, f.name, plain)
			})
		}
	}
}

func wantCalls(t *testing.T, a answer, want ...gotCall) {
	t.Helper()
	if a.stop != "tool" || a.text != "" {
		t.Errorf("stop %q text %q, want only tool calls", a.stop, a.text)
	}
	if len(a.calls) != len(want) {
		t.Fatalf("calls = %v, want %v", a.calls, want)
	}
	for i, c := range a.calls {
		var got, exp any
		if err := json.Unmarshal([]byte(c.args), &got); err != nil {
			t.Fatalf("call %d arguments %q: %v", i, c.args, err)
		}
		_ = json.Unmarshal([]byte(want[i].args), &exp)
		if c.name != want[i].name || !reflect.DeepEqual(got, exp) {
			t.Errorf("call %d = %s(%s), want %s(%s)", i, c.name, c.args, want[i].name, want[i].args)
		}
	}
}
