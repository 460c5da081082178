package codec

import "testing"

// TestObserveOutSoFar: every codec's Observe counts the events that carry
// a piece of the answer, so that a stream cut before it reports its output
// (its client left) still bills what it sent; a finished stream bills what
// it reported.
func TestObserveOutSoFar(t *testing.T) {
	type ev struct{ name, data string }
	tests := []struct {
		name       string
		c          Codec
		events     []ev
		wantDeltas int64
		wantOut    int64 // OutSoFar
	}{
		{"openai chat cut: role chunk, 3 words, an empty delta", OpenAIChat, []ev{
			{"", `{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}],"usage":null}`},
			{"", `{"choices":[{"index":0,"delta":{"content":"a"}}],"usage":null}`},
			{"", `{"choices":[{"index":0,"delta":{"reasoning_content":"b"}}],"usage":null}`},
			{"", `{"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"x"}}]}}]}`},
			{"", `{"choices":[{"index":0,"delta":{},"finish_reason":"stop"}],"usage":null}`},
		}, 3, 3},
		{"openai chat finished: the reported usage wins", OpenAIChat, []ev{
			{"", `{"choices":[{"index":0,"delta":{"content":"a"}}]}`},
			{"", `{"choices":[{"index":0,"delta":{"content":"b"}}]}`},
			{"", `{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7}}`},
			{"", `[DONE]`},
		}, 2, 7},
		{"openai completions cut", OpenAICompletions, []ev{
			{"", `{"choices":[{"index":0,"text":"a"}]}`},
			{"", `{"choices":[{"index":0,"text":""}]}`},
		}, 1, 1},
		{"openai responses cut", OpenAIResponses, []ev{
			{"response.created", `{"type":"response.created"}`},
			{"response.output_text.delta", `{"type":"response.output_text.delta","delta":"a"}`},
			{"", `{"type":"response.function_call_arguments.delta","delta":"{"}`},
		}, 2, 2},
		{"anthropic cut: message_start's output 1 is less than the deltas", Anthropic, []ev{
			{"message_start", `{"type":"message_start","message":{"usage":{"input_tokens":9,"output_tokens":1}}}`},
			{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"a"}}`},
			{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"s"}}`},
			{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"b"}}`},
			{"content_block_delta", `{"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"c"}}`},
		}, 3, 3},
		{"anthropic finished", Anthropic, []ev{
			{"content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"b"}}`},
			{"message_delta", `{"type":"message_delta","usage":{"output_tokens":4}}`},
			{"message_stop", `{"type":"message_stop"}`},
		}, 1, 4},
		{"gemini cut: the chunks' usage is more than the deltas", Gemini, []ev{
			{"", `{"candidates":[{"content":{"parts":[{"text":"a b c"}]}}],"usageMetadata":{"promptTokenCount":2,"candidatesTokenCount":3}}`},
		}, 1, 3},
		{"bedrock cut", Bedrock, []ev{
			{"messageStart", `{"role":"assistant"}`},
			{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"a"}}`},
			{"contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"b"}}`},
		}, 2, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var s StreamState
			for _, e := range tc.events {
				tc.c.Observe(&s, &Event{Name: []byte(e.name), Data: []byte(e.data)})
			}
			if s.Deltas != tc.wantDeltas || s.OutSoFar() != tc.wantOut {
				t.Errorf("Deltas %d, OutSoFar %d; want %d, %d (state %+v)", s.Deltas, s.OutSoFar(), tc.wantDeltas, tc.wantOut, s)
			}
		})
	}
}
