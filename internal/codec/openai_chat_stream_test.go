package codec

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/packages/ssestream"
)

func TestOpenAIChatStreamDecode(t *testing.T) {
	tests := []struct {
		fixture string
		want    []Chunk
	}{
		{
			fixture: "chat_tools_interleaved.sse",
			want: []Chunk{
				{Type: ChunkStart, ID: "chatcmpl-7f3a9c1e2b", Model: "Qwen/Qwen3-32B"},
				{Type: ChunkBlockStart, Index: 0, Block: Part{Kind: PartText}},
				{Type: ChunkDelta, Index: 0, Text: "Let me check both."},
				{Type: ChunkBlockStop, Index: 0},
				{Type: ChunkBlockStart, Index: 1, Block: Part{Kind: PartToolCall, ID: "chatcmpl-tool-a1", Name: "get_weather"}},
				{Type: ChunkDelta, Index: 1, Text: `{"city": `},
				{Type: ChunkDelta, Index: 1, Text: `"Paris"}`},
				{Type: ChunkUsage, Usage: Usage{Input: 310, Output: 42}},
				{Type: ChunkBlockStop, Index: 1},
				{Type: ChunkBlockStart, Index: 2, Block: Part{Kind: PartToolCall, ID: "chatcmpl-tool-b2", Name: "get_time"}},
				{Type: ChunkDelta, Index: 2, Text: `{"tz": "Europe/Rome"}`},
				{Type: ChunkBlockStop, Index: 2},
				{Type: ChunkEnd, StopReason: StopToolUse, Usage: Usage{Input: 310, Output: 42}},
			},
		},
		{
			fixture: "chat_reasoning.sse",
			want: []Chunk{
				{Type: ChunkStart, ID: "0a4b7c1d-9e8f-4a1b-8c2d-3e4f5a6b7c8d", Model: "deepseek-reasoner"},
				{Type: ChunkBlockStart, Index: 0, Block: Part{Kind: PartThinking}},
				{Type: ChunkDelta, Index: 0, Text: "Okay"},
				{Type: ChunkDelta, Index: 0, Text: ", the user greets me."},
				{Type: ChunkBlockStop, Index: 0},
				{Type: ChunkBlockStart, Index: 1, Block: Part{Kind: PartText}},
				{Type: ChunkDelta, Index: 1, Text: "Hi"},
				{Type: ChunkDelta, Index: 1, Text: " there!"},
				{Type: ChunkUsage, Usage: Usage{Input: 12, Output: 20, CacheRead: 8, Reasoning: 14}},
				{Type: ChunkBlockStop, Index: 1},
				{Type: ChunkEnd, StopReason: StopMaxTokens, Usage: Usage{Input: 12, Output: 20, CacheRead: 8, Reasoning: 14}},
			},
		},
		{
			fixture: "chat_error.sse",
			want: []Chunk{
				{Type: ChunkStart, ID: "chatcmpl-Err1", Model: "gpt-4o"},
				{Type: ChunkBlockStart, Index: 0, Block: Part{Kind: PartText}},
				{Type: ChunkDelta, Index: 0, Text: "Partial"},
				{Type: ChunkError, Err: &Error{Type: "server_error", Message: "The server had an error while processing your request."}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			dec := OpenAIChat.(Translator).NewStreamDecoder()
			got, err := oaiDecodeSSE(dec, oaiFixture(t, tt.fixture))
			if err != nil {
				t.Fatalf("decoding: %v", err)
			}
			oaiSameValue(t, "chunks", got, tt.want)
			if !dec.Done() {
				t.Fatal("Done() = false after the terminal event")
			}
		})
	}
}

func TestOpenAIChatStreamDecodeErrors(t *testing.T) {
	tests := []struct {
		name, stream, want string
	}{
		{"not JSON", "data: {\"choices\":\n\n", "chat stream: event is not JSON: {\"choices\":"},
		{"not a chunk", "data: {\"object\":\"response\"}\n\n", `chat stream: event is not a chat.completion.chunk (no choices array): {"object":"response"}`},
		{"after DONE", "data: [DONE]\n\ndata: {\"choices\":[]}\n\n", `chat stream: event after the end of the stream: {"choices":[]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := oaiDecodeSSE(OpenAIChat.(Translator).NewStreamDecoder(), []byte(tt.stream))
			if err == nil || err.Error() != tt.want {
				t.Fatalf("error = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestOpenAIChatStreamEdgeCases decodes streams that real servers send
// rarely: a tool call whose name comes after its arguments, a call
// without an id, text after tool calls, [DONE] alone, a second choice.
func TestOpenAIChatStreamEdgeCases(t *testing.T) {
	ev := func(delta string, extra ...string) string {
		return `data: {"id":"x","model":"m","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]` + strings.Join(extra, "") + "}\n\n"
	}
	tests := []struct {
		name, stream string
		want         []Chunk
	}{
		{
			name:   "DONE alone",
			stream: "data: [DONE]\n\n",
			want:   []Chunk{{Type: ChunkStart}, {Type: ChunkEnd}},
		},
		{
			name: "arguments before the name, no id, text after the call",
			stream: ev(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\""}}]}`) +
				ev(`{"tool_calls":[{"index":0,"function":{"name":"f","arguments":":1}"}}]}`) +
				ev(`{"content":"done"}`) +
				`data: {"choices":[{"index":1,"delta":{"content":"other choice"}}]}` + "\n\n" +
				"data: [DONE]\n\n",
			want: []Chunk{
				{Type: ChunkStart, ID: "x", Model: "m"},
				{Type: ChunkBlockStart, Index: 0, Block: Part{Kind: PartToolCall, ID: "call_0", Name: "f"}},
				{Type: ChunkDelta, Index: 0, Text: `{"a":1}`},
				{Type: ChunkBlockStop, Index: 0},
				{Type: ChunkBlockStart, Index: 1, Block: Part{Kind: PartText}},
				{Type: ChunkDelta, Index: 1, Text: "done"},
				{Type: ChunkBlockStop, Index: 1},
				{Type: ChunkEnd, StopReason: StopToolUse},
			},
		},
		{
			name: "a late fragment of a closed call is dropped; finish stop after calls is tool use",
			stream: ev(`{"tool_calls":[{"index":0,"id":"c","function":{"name":"f","arguments":"{}"}}]}`) +
				ev(`{"content":"x"}`) +
				ev(`{"tool_calls":[{"index":0,"function":{"arguments":"junk"}}]}`) +
				`data: {"choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n" +
				"data: [DONE]\n\n",
			want: []Chunk{
				{Type: ChunkStart, ID: "x", Model: "m"},
				{Type: ChunkBlockStart, Index: 0, Block: Part{Kind: PartToolCall, ID: "c", Name: "f"}},
				{Type: ChunkDelta, Index: 0, Text: `{}`},
				{Type: ChunkBlockStop, Index: 0},
				{Type: ChunkBlockStart, Index: 1, Block: Part{Kind: PartText}},
				{Type: ChunkDelta, Index: 1, Text: "x"},
				{Type: ChunkBlockStop, Index: 1},
				{Type: ChunkEnd, StopReason: StopToolUse},
			},
		},
		{
			name:   "error as the first event has no start",
			stream: `data: {"error":{"message":"overloaded","type":"server_error","code":"overloaded"}}` + "\n\n",
			want:   []Chunk{{Type: ChunkError, Err: &Error{Type: "server_error", Code: "overloaded", Message: "overloaded"}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := oaiDecodeSSE(OpenAIChat.(Translator).NewStreamDecoder(), []byte(tt.stream))
			if err != nil {
				t.Fatal(err)
			}
			oaiSameValue(t, "chunks", got, tt.want)
			if err := oaiCheckChunks(got, true); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// chatFixtures are the recorded upstream streams with their whole-answer twins.
var chatFixtures = []string{"chat_text", "chat_tools_parallel", "chat_tools_interleaved", "chat_reasoning", "chat_refusal"}

// TestOpenAIChatStreamRoundTrip decodes each recorded stream, checks the
// canonical sequence and that it gathers into the answer the whole-answer
// twin decodes to, re-encodes it as a Chat stream, and checks that the
// official SDK's accumulator rebuilds the same completion as the SDK reads
// from EncodeResponse of the twin.
func TestOpenAIChatStreamRoundTrip(t *testing.T) {
	c := OpenAIChat.(Translator)
	for _, name := range chatFixtures {
		t.Run(name, func(t *testing.T) {
			chunks, err := oaiDecodeSSE(c.NewStreamDecoder(), oaiFixture(t, name+".sse"))
			if err != nil {
				t.Fatal(err)
			}
			if err := oaiCheckChunks(chunks, true); err != nil {
				t.Fatal(err)
			}
			whole, err := c.DecodeResponse(oaiFixture(t, name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			streamed := oaiCollect(chunks)
			streamed.Created = whole.Created
			oaiSameValue(t, "streamed answer", streamed, whole)

			wire := oaiEncodeAll(c.NewStreamEncoder(&Request{IncludeUsage: true}), chunks)
			acc, reasoning := chatFromSSE(t, wire)
			var want openai.ChatCompletion
			if err := json.Unmarshal(c.EncodeResponse(whole), &want); err != nil {
				t.Fatalf("SDK cannot read EncodeResponse: %v", err)
			}
			compareChatCompletions(t, acc, want)
			if w := oaiField(want.Choices[0].Message.RawJSON(), "reasoning_content"); reasoning != w {
				t.Fatalf("streamed reasoning %q, whole answer's %q", reasoning, w)
			}
		})
	}
}

// chatFromSSE reads a Chat stream with the official SDK's decoder and
// accumulator; it also gathers the reasoning_content deltas, which the
// accumulator does not keep.
func chatFromSSE(t *testing.T, wire []byte) (openai.ChatCompletion, string) {
	t.Helper()
	res := &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(wire))}
	stream := ssestream.NewStream[openai.ChatCompletionChunk](ssestream.NewDecoder(res), nil)
	var acc openai.ChatCompletionAccumulator
	var reasoning strings.Builder
	for stream.Next() {
		chunk := stream.Current()
		if !acc.AddChunk(chunk) {
			t.Fatalf("the accumulator refused %s", chunk.RawJSON())
		}
		if len(chunk.Choices) > 0 {
			reasoning.WriteString(oaiField(chunk.Choices[0].Delta.RawJSON(), "reasoning_content"))
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("SDK stream error: %v\n%s", err, wire)
	}
	return acc.ChatCompletion, reasoning.String()
}

// compareChatCompletions compares what a client reads of two completions.
func compareChatCompletions(t *testing.T, got, want openai.ChatCompletion) {
	t.Helper()
	if got.ID != want.ID || got.Model != want.Model {
		t.Fatalf("id/model %q/%q, want %q/%q", got.ID, got.Model, want.ID, want.Model)
	}
	if len(got.Choices) != 1 || len(want.Choices) != 1 {
		t.Fatalf("%d choices streamed, %d whole", len(got.Choices), len(want.Choices))
	}
	g, w := got.Choices[0], want.Choices[0]
	if g.FinishReason != w.FinishReason || g.Message.Content != w.Message.Content || g.Message.Refusal != w.Message.Refusal {
		t.Fatalf("streamed %q/%q/%q, whole %q/%q/%q (finish/content/refusal)",
			g.FinishReason, g.Message.Content, g.Message.Refusal, w.FinishReason, w.Message.Content, w.Message.Refusal)
	}
	if len(g.Message.ToolCalls) != len(w.Message.ToolCalls) {
		t.Fatalf("%d tool calls streamed, %d whole", len(g.Message.ToolCalls), len(w.Message.ToolCalls))
	}
	for i := range g.Message.ToolCalls {
		gc, wc := g.Message.ToolCalls[i], w.Message.ToolCalls[i]
		if gc.ID != wc.ID || gc.Function.Name != wc.Function.Name || gc.Function.Arguments != wc.Function.Arguments {
			t.Fatalf("tool call %d: streamed %s %s %s, whole %s %s %s", i, gc.ID, gc.Function.Name, gc.Function.Arguments, wc.ID, wc.Function.Name, wc.Function.Arguments)
		}
	}
	if got.Usage.PromptTokens != want.Usage.PromptTokens || got.Usage.CompletionTokens != want.Usage.CompletionTokens ||
		got.Usage.TotalTokens != want.Usage.TotalTokens ||
		got.Usage.PromptTokensDetails.CachedTokens != want.Usage.PromptTokensDetails.CachedTokens ||
		got.Usage.CompletionTokensDetails.ReasoningTokens != want.Usage.CompletionTokensDetails.ReasoningTokens {
		t.Fatalf("usage streamed %s, whole %s", got.Usage.RawJSON(), want.Usage.RawJSON())
	}
}

func TestOpenAIChatStreamEncode(t *testing.T) {
	chunks := []Chunk{
		{Type: ChunkStart, ID: "msg_01", Model: "claude-x"},
		{Type: ChunkBlockStart, Index: 0, Block: Part{Kind: PartThinking}},
		{Type: ChunkDelta, Index: 0, Text: "hmm"},
		{Type: ChunkDelta, Index: 0, Text: "c2lnbmF0dXJl", Signature: true},
		{Type: ChunkBlockStop, Index: 0},
		{Type: ChunkBlockStart, Index: 1, Block: Part{Kind: PartText}},
		{Type: ChunkDelta, Index: 1, Text: "Hi \"you\"\n"},
		{Type: ChunkBlockStop, Index: 1},
		{Type: ChunkBlockStart, Index: 2, Block: Part{Kind: PartRedactedThinking, Data: "opaque"}},
		{Type: ChunkBlockStop, Index: 2},
		{Type: ChunkBlockStart, Index: 3, Block: Part{Kind: PartToolCall, ID: "toolu_1", Name: "f"}},
		{Type: ChunkDelta, Index: 3, Text: `{"a":`},
		{Type: ChunkDelta, Index: 3, Text: `1}`},
		{Type: ChunkBlockStop, Index: 3},
		{Type: ChunkBlockStart, Index: 4, Block: Part{Kind: PartToolCall, ID: "toolu_2", Name: "g"}},
		{Type: ChunkBlockStop, Index: 4},
		{Type: ChunkUsage, Usage: Usage{Input: 5, Output: 7}},
		{Type: ChunkEnd, StopReason: StopToolUse},
		{Type: ChunkDelta, Index: 4, Text: "after the end"},
	}
	head := `"id":"chatcmpl-msg_01","object":"chat.completion.chunk","created":0,"model":"claude-x"`
	wantEvents := []string{
		`{` + head + `,"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
		`{` + head + `,"choices":[{"index":0,"delta":{"reasoning_content":"hmm"},"finish_reason":null}]}`,
		`{` + head + `,"choices":[{"index":0,"delta":{"content":"Hi \"you\"\n"},"finish_reason":null}]}`,
		`{` + head + `,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"toolu_1","type":"function","function":{"name":"f","arguments":""}}]},"finish_reason":null}]}`,
		`{` + head + `,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\":"}}]},"finish_reason":null}]}`,
		`{` + head + `,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"1}"}}]},"finish_reason":null}]}`,
		`{` + head + `,"choices":[{"index":0,"delta":{"tool_calls":[{"index":1,"id":"toolu_2","type":"function","function":{"name":"g","arguments":""}}]},"finish_reason":null}]}`,
		`{` + head + `,"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`,
	}
	usage := `{` + head + `,"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":7,"total_tokens":12,"prompt_tokens_details":{"cached_tokens":0},"completion_tokens_details":{"reasoning_tokens":0}}}`
	tests := []struct {
		name         string
		includeUsage bool
		want         []string
	}{
		{"without usage", false, append(append([]string{}, wantEvents...), "[DONE]")},
		{"with usage", true, append(append([]string{}, wantEvents...), usage, "[DONE]")},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wire := oaiEncodeAll(OpenAIChat.(Translator).NewStreamEncoder(&Request{IncludeUsage: tt.includeUsage}), chunks)
			events := strings.Split(strings.TrimSuffix(string(wire), "\n\n"), "\n\n")
			if len(events) != len(tt.want) {
				t.Fatalf("%d events, want %d:\n%s", len(events), len(tt.want), wire)
			}
			for i, ev := range events {
				data, ok := strings.CutPrefix(ev, "data: ")
				if !ok {
					t.Fatalf("event %d is not a data line: %q", i, ev)
				}
				if data == "[DONE]" || tt.want[i] == "[DONE]" {
					if data != tt.want[i] {
						t.Fatalf("event %d = %s, want %s", i, data, tt.want[i])
					}
					continue
				}
				oaiSameJSON(t, []byte(zeroCreated(data)), []byte(tt.want[i]))
			}
		})
	}
}

func TestOpenAIChatStreamEncodeError(t *testing.T) {
	chunks := []Chunk{
		{Type: ChunkStart, ID: "chatcmpl-1", Model: "m"},
		{Type: ChunkBlockStart, Index: 0, Block: Part{Kind: PartText}},
		{Type: ChunkDelta, Index: 0, Text: "par"},
		{Type: ChunkError, Err: &Error{Message: "Overloaded", Type: "overloaded_error"}},
		{Type: ChunkEnd},
	}
	wire := string(oaiEncodeAll(OpenAIChat.(Translator).NewStreamEncoder(&Request{IncludeUsage: true}), chunks))
	wantTail := "data: " + `{"error":{"code":"stream_interrupted","message":"Overloaded","type":"upstream_error"}}` + "\n\n"
	if !strings.HasSuffix(wire, wantTail) || strings.Contains(wire, "[DONE]") || strings.Count(wire, "data: ") != 3 {
		t.Fatalf("stream ends\n%s\nwant it to end with %q and no [DONE]", wire, wantTail)
	}
}

// zeroCreated replaces a chunk's created time (the encoder's clock) by 0.
func zeroCreated(data string) string {
	var m map[string]any
	if json.Unmarshal([]byte(data), &m) != nil {
		return data
	}
	if _, ok := m["created"]; ok {
		m["created"] = 0
	}
	b, _ := json.Marshal(m)
	return string(b)
}
