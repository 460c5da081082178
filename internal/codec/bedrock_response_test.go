package codec

import (
	"net/http"
	"strings"
	"testing"
)

// brWhole is the answer testdata/bedrock-response.json carries.
var brWhole = &Response{
	Parts: []Part{
		{Kind: PartThinking, Text: "The user wants the weather and the time.", Signature: "EqoBCkgIBhABGAIiQLx8jH3mNtT0dZPkq6m4vY2G1yRrA3l5c8Q=="},
		{Kind: PartText, Text: "Let me check both."},
		{Kind: PartToolCall, ID: "tooluse_kZJMlvQmRJ6eAyJE5GIl7Q", Name: "get_weather", Arguments: agRaw(`{"location":"Paris"}`)},
		{Kind: PartToolCall, ID: "tooluse_9sH2x0_bQXaB3nFqL0Jx7w", Name: "get_time", Arguments: agRaw(`{"timezone":"Europe/Paris"}`)},
	},
	StopReason: StopToolUse,
	Usage:      Usage{Input: 1436, Output: 118, CacheRead: 1024},
}

func TestBedrockDecodeResponse(t *testing.T) {
	r, err := Bedrock.(Translator).DecodeResponse(agFixture(t, "bedrock-response.json"))
	if err != nil {
		t.Fatal(err)
	}
	agEqual(t, agCompactArgs(r), brWhole)

	tests := []struct {
		name, body, want string
	}{
		{"not JSON", `{`, "decoding bedrock answer: invalid JSON"},
		{"not an object", `[]`, "decoding bedrock answer: not a JSON object"},
		{"an error body", `{"message":"Too many requests"}`, "decoding bedrock answer: it is an error: Too many requests"},
		{"no content", `{"output":{}}`, "decoding bedrock answer: no output.message.content array"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Bedrock.(Translator).DecodeResponse([]byte(tt.body))
			if err == nil || err.Error() != tt.want {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

func TestBedrockAnswerParts(t *testing.T) {
	body := `{"output":{"message":{"role":"assistant","content":[
		{"reasoningContent":{"redactedContent":"ZW5j"}},{"text":""},{"image":{"format":"png","source":{"bytes":"x"}}},
		{"citationsContent":{"content":[{"text":"c"}]}},{"toolUse":{"toolUseId":"t","name":"f","input":"not an object"}}]}},
		"stopReason":"stop_sequence","additionalModelResponseFields":{"stop_sequence":"END"},"usage":{"inputTokens":5,"outputTokens":1,"cacheWriteInputTokens":7}}`
	r, err := Bedrock.(Translator).DecodeResponse([]byte(body))
	if err != nil {
		t.Fatal(err)
	}
	agEqual(t, r, &Response{
		Parts:      []Part{{Kind: PartRedactedThinking, Data: "ZW5j"}, {Kind: PartText}, {Kind: PartToolCall, ID: "t", Name: "f", Arguments: agRaw(`{}`)}},
		StopReason: StopSequence, StopSequence: "END", Usage: Usage{Input: 12, Output: 1, CacheWrite: 7},
	})
}

func TestBedrockStopReasons(t *testing.T) {
	for _, tt := range []struct {
		wire  string
		stop  StopReason
		again string // the reason EncodeResponse writes back
	}{
		{"end_turn", StopEnd, "end_turn"},
		{"tool_use", StopToolUse, "tool_use"},
		{"max_tokens", StopMaxTokens, "max_tokens"},
		{"model_context_window_exceeded", StopMaxTokens, "max_tokens"},
		{"stop_sequence", StopSequence, "stop_sequence"},
		{"guardrail_intervened", StopContentFilter, "content_filtered"},
		{"content_filtered", StopContentFilter, "content_filtered"},
		{"something_new", StopEnd, "end_turn"},
	} {
		t.Run(tt.wire, func(t *testing.T) {
			if got := bedrockStop(tt.wire); got != tt.stop {
				t.Errorf("bedrockStop(%q) = %v, want %v", tt.wire, got, tt.stop)
			}
			if got := bedrockStopName(tt.stop); got != tt.again {
				t.Errorf("bedrockStopName(%v) = %q, want %q", tt.stop, got, tt.again)
			}
		})
	}
	if got := bedrockStopName(StopRefusal); got != "content_filtered" {
		t.Errorf("a refusal is %q", got)
	}
}

func TestBedrockEncodeResponse(t *testing.T) {
	r := &Response{
		ID: "ignored", Model: "ignored",
		Parts: []Part{
			{Kind: PartThinking, Text: "t"},
			{Kind: PartRedactedThinking, Data: "not base64!"},
			{Kind: PartRedactedThinking, Data: "ZW5j"},
			{Kind: PartImage, Data: "x"},
			{Kind: PartText, Text: "Hi"},
			{Kind: PartToolCall, ID: "t1", Name: "f", Arguments: agRaw(`[1]`)},
		},
		StopReason: StopSequence, StopSequence: "END",
		Usage: Usage{Input: 100, Output: 9, CacheRead: 60, CacheWrite: 30},
	}
	out := Bedrock.(Translator).EncodeResponse(r)
	agJSONEqual(t, out, []byte(`{"output":{"message":{"role":"assistant","content":[
		{"reasoningContent":{"reasoningText":{"text":"t"}}},{"reasoningContent":{"redactedContent":"ZW5j"}},{"text":"Hi"},
		{"toolUse":{"toolUseId":"t1","name":"f","input":{"value":[1]}}}]}},
		"stopReason":"stop_sequence","usage":{"inputTokens":10,"outputTokens":9,"totalTokens":109,"cacheReadInputTokens":60,"cacheWriteInputTokens":30},
		"metrics":{"latencyMs":0},"additionalModelResponseFields":{"stop_sequence":"END"}}`))

	// The recorded answer survives a round trip.
	whole, err := Bedrock.(Translator).DecodeResponse(agFixture(t, "bedrock-response.json"))
	if err != nil {
		t.Fatal(err)
	}
	again, err := Bedrock.(Translator).DecodeResponse(Bedrock.(Translator).EncodeResponse(whole))
	if err != nil {
		t.Fatal(err)
	}
	agEqual(t, again, whole)
}

func TestBedrockCodec(t *testing.T) {
	c := Bedrock
	if c.Name() != "bedrock" || c.Family() != FamilyBedrock || FamilyBedrock.String() != "bedrock" || ForFamily(FamilyBedrock) != c.(Translator) {
		t.Fatalf("name %q family %v", c.Name(), c.Family())
	}
	if c.Op(false) != "converse" || c.Op(true) != "converse-stream" {
		t.Errorf("ops %q %q", c.Op(false), c.Op(true))
	}
	body := []byte(`{"messages":[]}`)
	if out, err := c.Encode(body, "m", FamilyBedrock); err != nil || string(out) != string(body) {
		t.Errorf("Encode within the family = %s, %v", out, err)
	}
	if _, err := c.Encode(body, "m", FamilyAnthropic); err != ErrIncompatible {
		t.Errorf("Encode to anthropic: %v", err)
	}
	if u := c.Usage(agFixture(t, "bedrock-response.json")); u.Input != 1436 || u.Output != 118 {
		t.Errorf("Usage = %+v", u)
	}
	var s StreamState
	c.Observe(&s, &Event{Name: []byte("messageStop"), Data: []byte(`{"stopReason":"end_turn"}`)})
	if s.Finished {
		t.Error("finished on messageStop: the usage is still to come")
	}
	c.Observe(&s, &Event{Name: []byte("metadata"), Data: []byte(`{"usage":{"inputTokens":3,"cacheReadInputTokens":4,"outputTokens":2}}`)})
	if s != (StreamState{In: 7, Out: 2, CacheRead: 4, Finished: true}) {
		t.Errorf("state after metadata %+v", s)
	}
	var e StreamState
	c.Observe(&e, &Event{Name: []byte("throttlingException"), Exception: true, Data: []byte(`{}`)})
	if !e.Finished {
		t.Error("an exception does not finish the stream")
	}
	if got := string(c.ErrorBody(Error{Status: 400, Message: `bad "x"`})); got != `{"message":"bad \"x\""}` {
		t.Errorf("ErrorBody = %s", got)
	}
	evs, err := brEvents(c.StreamError("upstream cut"))
	if err != nil || len(evs) != 1 || !evs[0].Exception || string(evs[0].Name) != "internalServerException" || string(evs[0].Data) != `{"message":"upstream cut"}` {
		t.Errorf("StreamError frames %+v, %v", evs, err)
	}
}

func TestBedrockDecodeError(t *testing.T) {
	tests := []struct {
		name   string
		status int
		body   string
		want   Error
	}{
		{"throttling", 429, `{"message":"Too many requests, please wait before trying again."}`,
			Error{Status: 429, Type: "rate_limit_error", Code: "ThrottlingException", Message: "Too many requests, please wait before trying again."}},
		{"validation", 400, `{"message":"messages.0.content.0: blank"}`,
			Error{Status: 400, Type: "invalid_request_error", Code: "ValidationException", Message: "messages.0.content.0: blank"}},
		{"a typed body wins over the status", 400, `{"__type":"com.amazon.coral.service#ThrottlingException","Message":"Too many tokens"}`,
			Error{Status: 400, Type: "rate_limit_error", Code: "ThrottlingException", Message: "Too many tokens"}},
		{"access denied", 403, `{"message":"You don't have access to the model with the specified model ID."}`,
			Error{Status: 403, Type: "permission_error", Code: "AccessDeniedException", Message: "You don't have access to the model with the specified model ID."}},
		{"not found", 404, `{"message":"Could not resolve the foundation model"}`,
			Error{Status: 404, Type: "not_found_error", Code: "ResourceNotFoundException", Message: "Could not resolve the foundation model"}},
		{"model error", 424, `{"message":"The model returned an error"}`,
			Error{Status: 424, Type: "server_error", Code: "ModelErrorException", Message: "The model returned an error"}},
		{"unavailable", 503, `{"message":"Bedrock is unable to process your request."}`,
			Error{Status: 503, Type: "server_error", Code: "ServiceUnavailableException", Message: "Bedrock is unable to process your request."}},
		{"not JSON", 502, `<html>bad gateway</html>`,
			Error{Status: 502, Type: "server_error", Code: "InternalServerException", Message: "<html>bad gateway</html>"}},
		{"an unknown type keeps the status's error type", 418, `{"__type":"TeapotException","message":"short and stout"}`,
			Error{Status: 418, Type: "invalid_request_error", Code: "TeapotException", Message: "short and stout"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			agEqual(t, Bedrock.(Translator).DecodeError(tt.status, []byte(tt.body)), tt.want)
		})
	}
}

func TestBedrockErrorNames(t *testing.T) {
	for _, tt := range []struct {
		raw, name string
		status    int
	}{
		{"ThrottlingException:http://internal.amazon.com/coral/com.amazon.bedrock/", "ThrottlingException", http.StatusTooManyRequests},
		{"com.amazon.coral.service#UnrecognizedClientException", "UnrecognizedClientException", http.StatusForbidden},
		{"InvalidSignatureException", "InvalidSignatureException", http.StatusForbidden},
		{"ExpiredTokenException", "ExpiredTokenException", http.StatusForbidden},
		{"ServiceQuotaExceededException", "ServiceQuotaExceededException", http.StatusTooManyRequests},
		{"ModelNotReadyException", "ModelNotReadyException", http.StatusServiceUnavailable},
		{"ModelTimeoutException", "ModelTimeoutException", http.StatusRequestTimeout},
		{"modelStreamErrorException", "modelStreamErrorException", http.StatusInternalServerError},
		{"validationException", "validationException", http.StatusBadRequest},
		{" SomethingNew ", "SomethingNew", 0},
		{"", "", 0},
	} {
		t.Run(tt.raw, func(t *testing.T) {
			name := BedrockErrorType(tt.raw)
			if name != tt.name || BedrockErrorStatus(name) != tt.status {
				t.Errorf("BedrockErrorType(%q) = %q (status %d), want %q (%d)", tt.raw, name, BedrockErrorStatus(name), tt.name, tt.status)
			}
		})
	}
	if got := bedrockExceptionName(&Error{Status: 529}); !strings.HasPrefix(got, "serviceUnavailable") {
		t.Errorf("an overload is reported as %s", got)
	}
}
