package codec

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/genai"
)

// agData joins Gemini events, one JSON chunk each.
func agData(chunks ...string) []byte {
	var b strings.Builder
	for _, c := range chunks {
		b.WriteString("data: " + c + "\n\n")
	}
	return []byte(b.String())
}

// TestGeminiStreamFixture decodes the recorded stream (thought parts, text,
// two function calls, usage with cache and thoughts), checks the canonical
// invariants and the answer it carries, then re-encodes it: the genai SDK's
// reading of the new stream, parts joined, equals its reading of the
// whole-answer translation.
func TestGeminiStreamFixture(t *testing.T) {
	tr := Gemini.(Translator)
	dec := tr.NewStreamDecoder()
	chunks, err := agDecodeStream(dec, agFixture(t, "gemini-stream.sse"))
	if err != nil {
		t.Fatal(err)
	}
	if err := agCheckChunks(chunks, true); err != nil {
		t.Fatal(err)
	}
	if !dec.Done() {
		t.Error("Done() is false after the finishReason")
	}
	agEqual(t, agCollect(chunks), agGeminiResponse)

	whole, err := tr.DecodeResponse(agFixture(t, "gemini-response.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := agGeminiSDKResponse(t, tr.EncodeResponse(whole))
	encoded := agEncodeStream(tr.NewStreamEncoder(&Request{}), chunks)
	c := agGeminiClient(t, agServeBody(t, "text/event-stream", encoded))
	var got agGeminiView
	for r, err := range c.Models.GenerateContentStream(context.Background(), "gemini-2.5-flash", genai.Text("Weather?"), nil) {
		if err != nil {
			t.Fatalf("the SDK refuses the stream: %v\n%s", err, encoded)
		}
		got.add(t, r)
	}
	agEqual(t, got, want)
}

func TestGeminiStreamDecode(t *testing.T) {
	usage := `"usageMetadata":{"promptTokenCount":10,"candidatesTokenCount":5,"totalTokenCount":15}`
	tests := []struct {
		name string
		sse  []byte
		want []Chunk
		done bool
	}{
		{
			name: "text parts extend one block; a thought between them is its own; a signature on text is dropped",
			sse: agData(
				`{"candidates":[{"content":{"role":"model","parts":[{"text":"a"},{"text":"b","thoughtSignature":"c2ln"}]}}],"responseId":"r1","modelVersion":"m"}`,
				`{"candidates":[{"content":{"role":"model","parts":[{"text":"t","thought":true,"thoughtSignature":"dA=="}]}}]}`,
				`{"candidates":[{"content":{"role":"model","parts":[{"text":""},{"text":"c"},{"inlineData":{"mimeType":"image/png","data":"x"}}]}}],`+usage+`}`,
				`{"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"MAX_TOKENS"}],`+usage+`}`,
				`{"usageMetadata":{"promptTokenCount":99}}`),
			want: []Chunk{
				{Type: ChunkStart, ID: "r1", Model: "m"},
				{Type: ChunkBlockStart, Index: 0, Block: Part{Kind: PartText}},
				{Type: ChunkDelta, Index: 0, Text: "a"},
				{Type: ChunkDelta, Index: 0, Text: "b"},
				{Type: ChunkBlockStop, Index: 0},
				{Type: ChunkBlockStart, Index: 1, Block: Part{Kind: PartThinking}},
				{Type: ChunkDelta, Index: 1, Text: "t"},
				{Type: ChunkDelta, Index: 1, Text: "dA==", Signature: true},
				{Type: ChunkBlockStop, Index: 1},
				{Type: ChunkBlockStart, Index: 2, Block: Part{Kind: PartText}},
				{Type: ChunkDelta, Index: 2, Text: "c"},
				{Type: ChunkUsage, Usage: Usage{Input: 10, Output: 5}},
				{Type: ChunkBlockStop, Index: 2},
				{Type: ChunkEnd, StopReason: StopMaxTokens, Usage: Usage{Input: 10, Output: 5}},
			},
			done: true,
		},
		{
			name: "function calls are whole blocks, with their ids or synthesized ones",
			sse: agData(
				`{"candidates":[{"content":{"role":"model","parts":[{"functionCall":{"id":"fc-1","name":"a","args":{"x":1}}},{"functionCall":{"name":"b"}}]},"finishReason":"STOP"}],` + usage + `}`),
			want: []Chunk{
				{Type: ChunkStart, Usage: Usage{Input: 10, Output: 5}},
				{Type: ChunkBlockStart, Index: 0, Block: Part{Kind: PartToolCall, ID: "fc-1", Name: "a"}},
				{Type: ChunkDelta, Index: 0, Text: `{"x":1}`},
				{Type: ChunkBlockStop, Index: 0},
				{Type: ChunkBlockStart, Index: 1, Block: Part{Kind: PartToolCall, ID: "call_2", Name: "b"}},
				{Type: ChunkDelta, Index: 1, Text: `{}`},
				{Type: ChunkBlockStop, Index: 1},
				{Type: ChunkEnd, StopReason: StopToolUse, Usage: Usage{Input: 10, Output: 5}},
			},
			done: true,
		},
		{
			name: "a blocked prompt ends the stream as a content filter",
			sse:  agData(`{"promptFeedback":{"blockReason":"SAFETY"},"usageMetadata":{"promptTokenCount":4}}`),
			want: []Chunk{{Type: ChunkStart, Usage: Usage{Input: 4}}, {Type: ChunkEnd, StopReason: StopContentFilter, Usage: Usage{Input: 4}}},
			done: true,
		},
		{
			name: "an error event",
			sse: agData(`{"candidates":[{"content":{"parts":[{"text":"a"}]}}]}`,
				`{"error":{"code":503,"message":"The model is overloaded.","status":"UNAVAILABLE"}}`),
			want: []Chunk{
				{Type: ChunkStart},
				{Type: ChunkBlockStart, Index: 0, Block: Part{Kind: PartText}},
				{Type: ChunkDelta, Index: 0, Text: "a"},
				{Type: ChunkError, Err: &Error{Status: 503, Type: "server_error", Code: "UNAVAILABLE", Message: "The model is overloaded."}},
			},
			done: true,
		},
		{
			name: "a stream cut short is not done; an unspecified finish is none",
			sse:  agData(`{"candidates":[{"content":{"parts":[{"text":"a"}]},"finishReason":"FINISH_REASON_UNSPECIFIED"}]}`),
			want: []Chunk{{Type: ChunkStart}, {Type: ChunkBlockStart, Index: 0, Block: Part{Kind: PartText}}, {Type: ChunkDelta, Index: 0, Text: "a"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dec := Gemini.(Translator).NewStreamDecoder()
			got, err := agDecodeStream(dec, tt.sse)
			if err != nil {
				t.Fatal(err)
			}
			agEqual(t, got, tt.want)
			if dec.Done() != tt.done {
				t.Errorf("Done() = %v, want %v", dec.Done(), tt.done)
			}
			if err := agCheckChunks(got, tt.done); err != nil {
				t.Error(err)
			}
		})
	}
	for _, sse := range []string{"data: {\"candidates\n\n", "data: [DONE]\n\n", "data: [1]\n\n"} {
		_, err := agDecodeStream(Gemini.(Translator).NewStreamDecoder(), []byte(sse))
		if err == nil || err.Error() != "gemini stream: event data is not a JSON object" {
			t.Errorf("%q: error %v", sse, err)
		}
	}
}

func TestGeminiStreamEncode(t *testing.T) {
	head := `{"candidates":[{"content":{"role":"model","parts":[`
	tail := `]},"index":0}],"modelVersion":"claude-x","responseId":"msg_1"}`
	tests := []struct {
		name   string
		chunks []Chunk
		want   []byte
	}{
		{
			name: "text and thinking deltas are chunks; a tool call is held until its block stops",
			chunks: []Chunk{
				{Type: ChunkStart, ID: "msg_1", Model: "claude-x", Usage: Usage{Input: 30}},
				{Type: ChunkBlockStart, Index: 0, Block: Part{Kind: PartThinking}},
				{Type: ChunkDelta, Index: 0, Text: "Hmm"},
				{Type: ChunkDelta, Index: 0, Text: "c2ln", Signature: true},
				{Type: ChunkDelta, Index: 0, Text: "not base64!", Signature: true},
				{Type: ChunkBlockStop, Index: 0},
				{Type: ChunkBlockStart, Index: 1, Block: Part{Kind: PartText}},
				{Type: ChunkDelta, Index: 1, Text: "Hi \"you\""},
				{Type: ChunkDelta, Index: 1, Text: ""},
				{Type: ChunkBlockStop, Index: 1},
				{Type: ChunkBlockStart, Index: 2, Block: Part{Kind: PartToolCall, ID: "toolu_1", Name: "f"}},
				{Type: ChunkDelta, Index: 2, Text: `{"a":`},
				{Type: ChunkDelta, Index: 2, Text: `1}`},
				{Type: ChunkBlockStop, Index: 2},
				{Type: ChunkBlockStart, Index: 3, Block: Part{Kind: PartToolCall, ID: "toolu_2", Name: "g"}},
				{Type: ChunkDelta, Index: 3, Text: `{"cut`},
				{Type: ChunkUsage, Usage: Usage{Input: 30, Output: 12, CacheRead: 10, Reasoning: 2}},
				{Type: ChunkEnd, StopReason: StopToolUse},
				{Type: ChunkDelta, Index: 3, Text: "after the end"},
			},
			want: agData(
				head+`{"text":"Hmm","thought":true}`+tail,
				head+`{"text":"","thought":true,"thoughtSignature":"c2ln"}`+tail,
				head+`{"text":"Hi \"you\""}`+tail,
				head+`{"functionCall":{"id":"toolu_1","name":"f","args":{"a":1}}}`+tail,
				head+`{"functionCall":{"id":"toolu_2","name":"g","args":{}}}`+tail,
				head+`{"text":""}]},"finishReason":"STOP","index":0}],"usageMetadata":{"promptTokenCount":30,"candidatesTokenCount":10,"totalTokenCount":42,"cachedContentTokenCount":10,"thoughtsTokenCount":2},"modelVersion":"claude-x","responseId":"msg_1"}`),
		},
		{
			name: "an error ends the stream in Google's shape",
			chunks: []Chunk{
				{Type: ChunkStart},
				{Type: ChunkError, Err: &Error{Status: 529, Type: "server_error", Message: "Overloaded"}},
				{Type: ChunkEnd},
			},
			want: agData(`{"error":{"code":529,"message":"Overloaded","status":"UNAVAILABLE"}}`),
		},
		{
			name:   "an error without a status is INTERNAL",
			chunks: []Chunk{{Type: ChunkError}},
			want:   agData(`{"error":{"code":500,"message":"","status":"INTERNAL"}}`),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := agEncodeStream(Gemini.(Translator).NewStreamEncoder(&Request{}), tt.chunks)
			if string(got) != string(tt.want) {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}
