package codec

import "testing"

// TestCountTokensEstimate: both protocols' estimates count the text of the
// system prompt, messages and tool definitions at four bytes a token (role
// names and tool names included, as they are strings), plus 4 a message and
// 16 a tool.
func TestCountTokensEstimate(t *testing.T) {
	tests := []struct {
		name  string
		c     Codec
		body  string
		want  int64
		reply string
	}{
		{"anthropic", AnthropicCountTokens,
			// "be brief" 8 + "user" 4 + "hello there!" 12 + "f" 1 + "does f" 6 = 31 bytes: 8 tokens; 1 message, 1 tool.
			`{"model":"m","system":"be brief","messages":[{"role":"user","content":"hello there!"}],"tools":[{"name":"f","description":"does f"}]}`,
			8 + 4 + 16, `{"input_tokens":28}`},
		{"gemini", GeminiCountTokens,
			// "be brief" 8 + "user" 4 + "hello there!" 12 + "f" 1 + "does f" 6 = 31 bytes: 8 tokens; 1 message, 1 function.
			`{"systemInstruction":{"parts":[{"text":"be brief"}]},"contents":[{"role":"user","parts":[{"text":"hello there!"}]}],"tools":[{"functionDeclarations":[{"name":"f","description":"does f"}]}]}`,
			8 + 4 + 16, `{"totalTokens":28}`},
		{"gemini generateContentRequest", GeminiCountTokens,
			// "user" 4 + "hello there!" 12 = 16 bytes: 4 tokens; 1 message.
			`{"generateContentRequest":{"model":"models/x","contents":[{"role":"user","parts":[{"text":"hello there!"}]}]}}`,
			4 + 4, `{"totalTokens":8}`},
		{"empty", GeminiCountTokens, `{}`, 1, `{"totalTokens":1}`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			ct := tc.c.(TokenCounter)
			n := ct.Estimate([]byte(tc.body))
			if n != tc.want {
				t.Errorf("Estimate = %d, want %d", n, tc.want)
			}
			if got := string(ct.CountBody(n)); got != tc.reply {
				t.Errorf("CountBody = %s, want %s", got, tc.reply)
			}
		})
	}
}

// TestGeminiMethods: the methods a Gemini model lists are those the
// gateway serves, each with its codec.
func TestGeminiMethods(t *testing.T) {
	tests := []struct {
		method string
		c      Codec
		stream bool
		ok     bool
	}{
		{"generateContent", Gemini, false, true},
		{"streamGenerateContent", Gemini, true, true},
		{"countTokens", GeminiCountTokens, false, true},
		{"embedContent", nil, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.method, func(t *testing.T) {
			c, stream, ok := GeminiMethod(tc.method)
			if c != tc.c || stream != tc.stream || ok != tc.ok {
				t.Errorf("GeminiMethod = %v, %v, %v; want %v, %v, %v", c, stream, ok, tc.c, tc.stream, tc.ok)
			}
		})
	}
}
