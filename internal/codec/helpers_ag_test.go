package codec

import (
	"math"
	"strings"
	"testing"
)

func TestWireString(t *testing.T) {
	tests := []struct{ in, want string }{
		{"plain", `"plain"`},
		{`q"b\`, `"q\"b\\"`},
		{"\n\r\t\x00\x1f", `"\n\r\t\u0000\u001f"`},
		{"<a>&", `"<a>&"`},
		{"é—\u2028\u2029", `"é—\u2028\u2029"`},
		{"bad \xff\xfe end", `"bad \ufffd\ufffd end"`},
		{"", `""`},
	}
	for _, tt := range tests {
		if got := string(wireString(nil, tt.in)); got != tt.want {
			t.Errorf("wireString(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestWireNumbersAndArgs(t *testing.T) {
	floats := []struct {
		in   float64
		want string
	}{{0.7, "0.7"}, {1, "1"}, {1e-7, "1e-07"}, {math.NaN(), "null"}, {math.Inf(1), "null"}}
	for _, tt := range floats {
		if got := string(wireFloat(nil, tt.in)); got != tt.want {
			t.Errorf("wireFloat(%v) = %s, want %s", tt.in, got, tt.want)
		}
	}
	args := []struct{ in, want string }{
		{"", `{}`},
		{"  ", `{}`},
		{` {"a":1} `, `{"a":1}`},
		{`[1,2]`, `{"value":[1,2]}`},
		{`"x"`, `{"value":"x"}`},
		{`{"a":`, `{"value":"{\"a\":"}`},
	}
	for _, tt := range args {
		if got := string(wireArgs(nil, []byte(tt.in))); got != tt.want {
			t.Errorf("wireArgs(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
	objects := []struct{ in, want string }{{`{"type":"object"}`, `{"type":"object"}`}, {`[]`, `{"d":1}`}, {`{bad`, `{"d":1}`}, {``, `{"d":1}`}}
	for _, tt := range objects {
		if got := string(wireRawObject(nil, []byte(tt.in), `{"d":1}`)); got != tt.want {
			t.Errorf("wireRawObject(%q) = %s, want %s", tt.in, got, tt.want)
		}
	}
}

func TestThinkingBudgetFor(t *testing.T) {
	tests := []struct {
		effort string
		want   int64
	}{{"none", 0}, {"minimal", 1024}, {"low", 1024}, {"medium", 8192}, {"", 8192}, {"unheard-of", 8192}, {"high", 24576}, {"xhigh", 32768}, {"max", 32768}}
	for _, tt := range tests {
		if got := thinkingBudgetFor(tt.effort); got != tt.want {
			t.Errorf("thinkingBudgetFor(%q) = %d, want %d", tt.effort, got, tt.want)
		}
	}
}

func TestErrorStatuses(t *testing.T) {
	anthropicTypes := []struct {
		typ  string
		want int
	}{
		{"invalid_request_error", 400}, {"authentication_error", 401}, {"billing_error", 402}, {"permission_error", 403},
		{"not_found_error", 404}, {"request_too_large", 413}, {"rate_limit_error", 429}, {"api_error", 500},
		{"timeout_error", 504}, {"overloaded_error", 529}, {"", 500},
	}
	for _, tt := range anthropicTypes {
		if got := anthropicErrorStatus(tt.typ); got != tt.want {
			t.Errorf("anthropicErrorStatus(%q) = %d, want %d", tt.typ, got, tt.want)
		}
	}
	googleStatuses := []struct {
		st   string
		want int
	}{
		{"INVALID_ARGUMENT", 400}, {"FAILED_PRECONDITION", 400}, {"OUT_OF_RANGE", 400}, {"UNAUTHENTICATED", 401},
		{"PERMISSION_DENIED", 403}, {"NOT_FOUND", 404}, {"ALREADY_EXISTS", 409}, {"ABORTED", 409}, {"RESOURCE_EXHAUSTED", 429},
		{"CANCELLED", 499}, {"INTERNAL", 500}, {"UNIMPLEMENTED", 501}, {"UNAVAILABLE", 503}, {"DEADLINE_EXCEEDED", 504}, {"", 500},
	}
	for _, tt := range googleStatuses {
		if got := googleStatusCode(tt.st); got != tt.want {
			t.Errorf("googleStatusCode(%q) = %d, want %d", tt.st, got, tt.want)
		}
	}
	openAITypes := []struct {
		status int
		want   string
	}{
		{400, "invalid_request_error"}, {401, "authentication_error"}, {403, "permission_error"}, {404, "not_found_error"},
		{413, "invalid_request_error"}, {429, "rate_limit_error"}, {500, "server_error"}, {529, "server_error"}, {0, "server_error"},
	}
	for _, tt := range openAITypes {
		if got := statusErrorType(tt.status); got != tt.want {
			t.Errorf("statusErrorType(%d) = %q, want %q", tt.status, got, tt.want)
		}
	}
}

func TestUntypedErrorMessage(t *testing.T) {
	long := strings.Repeat("a", 511) + "é" + strings.Repeat("b", 100) // é straddles byte 512
	tests := []struct{ name, body, want string }{
		{"trimmed", "  oops \n", "oops"},
		{"cut at 512 bytes", strings.Repeat("x", 600), strings.Repeat("x", 512)},
		{"cut before a split rune", long, strings.Repeat("a", 511)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := untypedErrorMessage([]byte(tt.body)); got != tt.want {
				t.Errorf("got %d bytes %q…, want %d bytes", len(got), got[:min(len(got), 20)], len(tt.want))
			}
		})
	}
}

func TestImageTypeByExtension(t *testing.T) {
	tests := []struct{ url, want string }{
		{"https://x/a.png", "image/png"}, {"https://x/a.GIF?v=1", "image/gif"}, {"gs://b/a.webp#f", "image/webp"},
		{"https://x/a.heic", "image/heic"}, {"https://x/a.heif", "image/heif"}, {"https://x/a.jpg", "image/jpeg"}, {"https://x/a", "image/jpeg"},
	}
	for _, tt := range tests {
		if got := imageTypeByExtension(tt.url); got != tt.want {
			t.Errorf("imageTypeByExtension(%q) = %q, want %q", tt.url, got, tt.want)
		}
	}
}

func TestLooksBase64(t *testing.T) {
	tests := []struct {
		s    string
		want bool
	}{{"", true}, {"c2ln", true}, {"dA==", true}, {"a-_b", true}, {"abc", false}, {"ab=c", false}, {"not base64!", false}}
	for _, tt := range tests {
		if got := looksBase64(tt.s); got != tt.want {
			t.Errorf("looksBase64(%q) = %v, want %v", tt.s, got, tt.want)
		}
	}
}

func TestCamelAndSnakeKeys(t *testing.T) {
	camel := []struct{ in, want string }{
		{"system_instruction", "systemInstruction"}, {"max_output_tokens", "maxOutputTokens"}, {"text", "text"},
		{"_responseJsonSchema", "_responseJsonSchema"}, {"mimeType", "mimeType"},
	}
	for _, tt := range camel {
		if got := camelKey(tt.in); got != tt.want {
			t.Errorf("camelKey(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	if got := snakeKey("allowedFunctionNames"); got != "allowed_function_names" {
		t.Errorf("snakeKey = %q", got)
	}
}
