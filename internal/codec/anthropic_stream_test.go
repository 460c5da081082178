package codec

import (
	"context"
	"strings"
	"testing"

	asdk "github.com/anthropics/anthropic-sdk-go/v2"
)

// agSSE joins Anthropic events given as "name data" lines.
func agSSE(events ...string) []byte {
	var b strings.Builder
	for _, e := range events {
		name, data, _ := strings.Cut(e, " ")
		b.WriteString("event: " + name + "\ndata: " + data + "\n\n")
	}
	return []byte(b.String())
}

// TestAnthropicStreamFixture decodes the recorded stream (thinking, text,
// two tool calls, cache usage), checks the canonical invariants and the
// answer it carries, then re-encodes it: the Anthropic SDK's accumulation
// of the new stream equals its reading of the whole-answer translation.
func TestAnthropicStreamFixture(t *testing.T) {
	tr := Anthropic.(Translator)
	dec := tr.NewStreamDecoder()
	chunks, err := agDecodeStream(dec, agFixture(t, "anthropic-stream.sse"))
	if err != nil {
		t.Fatal(err)
	}
	if err := agCheckChunks(chunks, true); err != nil {
		t.Fatal(err)
	}
	if !dec.Done() {
		t.Error("Done() is false after message_stop")
	}
	starts := 0
	for _, c := range chunks {
		if c.Type == ChunkBlockStart {
			starts++
		}
	}
	if starts != 4 {
		t.Errorf("%d blocks, want 4", starts)
	}
	got := agCollect(chunks)
	agEqual(t, got, agAnthropicMessage)

	whole, err := tr.DecodeResponse(agFixture(t, "anthropic-message.json"))
	if err != nil {
		t.Fatal(err)
	}
	want := agAnthropicSDKMessage(t, tr.EncodeResponse(whole))
	encoded := agEncodeStream(tr.NewStreamEncoder(&Request{}), chunks)
	client := agAnthropicClient(agServeBody(t, "text/event-stream", encoded))
	stream := client.Messages.NewStreaming(context.Background(), agAnthropicParams)
	var acc asdk.Message
	for stream.Next() {
		if err := acc.Accumulate(stream.Current()); err != nil {
			t.Fatalf("accumulating: %v\n%s", err, encoded)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("the SDK refuses the stream: %v\n%s", err, encoded)
	}
	agEqual(t, agViewAnthropic(&acc), want)
}

func TestAnthropicStreamDecode(t *testing.T) {
	start := `message_start {"type":"message_start","message":{"id":"msg_1","model":"claude","usage":{"input_tokens":10,"cache_read_input_tokens":4,"output_tokens":1}}}`
	stop := `message_stop {"type":"message_stop"}`
	startChunk := Chunk{Type: ChunkStart, ID: "msg_1", Model: "claude", Usage: Usage{Input: 14, CacheRead: 4, Output: 1}}
	tests := []struct {
		name string
		sse  []byte
		want []Chunk
		done bool
	}{
		{
			name: "server tool blocks skipped and indices renumbered",
			sse: agSSE(start,
				`content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search","input":{}}}`,
				`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\"query\":\"q\"}"}}`,
				`content_block_stop {"type":"content_block_stop","index":0}`,
				`content_block_start {"type":"content_block_start","index":1,"content_block":{"type":"web_search_tool_result","tool_use_id":"srvtoolu_1","content":[]}}`,
				`content_block_stop {"type":"content_block_stop","index":1}`,
				`content_block_start {"type":"content_block_start","index":2,"content_block":{"type":"text","text":"Found"}}`,
				`content_block_delta {"type":"content_block_delta","index":2,"delta":{"type":"citations_delta","citation":{}}}`,
				`content_block_delta {"type":"content_block_delta","index":2,"delta":{"type":"text_delta","text":" it."}}`,
				`content_block_stop {"type":"content_block_stop","index":2}`,
				`message_delta {"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":9}}`,
				stop),
			want: []Chunk{startChunk,
				{Type: ChunkBlockStart, Index: 0, Block: Part{Kind: PartText}},
				{Type: ChunkDelta, Index: 0, Text: "Found"},
				{Type: ChunkDelta, Index: 0, Text: " it."},
				{Type: ChunkBlockStop, Index: 0},
				{Type: ChunkUsage, Usage: Usage{Input: 14, CacheRead: 4, Output: 9}},
				{Type: ChunkEnd, StopReason: StopEnd, Usage: Usage{Input: 14, CacheRead: 4, Output: 9}}},
			done: true,
		},
		{
			name: "a tool input given whole at the start is one delta; message_delta updates input and cache",
			sse: agSSE(start,
				`content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"tool_use","id":"toolu_1","name":"f","input":{"a":1}}}`,
				`content_block_stop {"type":"content_block_stop","index":0}`,
				`content_block_start {"type":"content_block_start","index":1,"content_block":{"type":"redacted_thinking","data":"EmwK"}}`,
				`content_block_stop {"type":"content_block_stop","index":1}`,
				`message_delta {"type":"message_delta","delta":{"stop_reason":"stop_sequence","stop_sequence":"END"},"usage":{"input_tokens":20,"cache_creation_input_tokens":3,"cache_read_input_tokens":5,"output_tokens":9}}`,
				stop),
			want: []Chunk{startChunk,
				{Type: ChunkBlockStart, Index: 0, Block: Part{Kind: PartToolCall, ID: "toolu_1", Name: "f"}},
				{Type: ChunkDelta, Index: 0, Text: `{"a":1}`},
				{Type: ChunkBlockStop, Index: 0},
				{Type: ChunkBlockStart, Index: 1, Block: Part{Kind: PartRedactedThinking, Data: "EmwK"}},
				{Type: ChunkBlockStop, Index: 1},
				{Type: ChunkUsage, Usage: Usage{Input: 28, CacheWrite: 3, CacheRead: 5, Output: 9}},
				{Type: ChunkEnd, StopReason: StopSequence, StopSequence: "END", Usage: Usage{Input: 28, CacheWrite: 3, CacheRead: 5, Output: 9}}},
			done: true,
		},
		{
			name: "a block started over an open one closes it; message_stop closes the last",
			sse: agSSE(start,
				`content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"a","signature":"c2ln"}}`,
				`content_block_start {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
				`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"late"}}`,
				`content_block_delta {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":""}}`,
				`content_block_stop {"type":"content_block_stop","index":0}`,
				stop),
			want: []Chunk{startChunk,
				{Type: ChunkBlockStart, Index: 0, Block: Part{Kind: PartThinking}},
				{Type: ChunkDelta, Index: 0, Text: "a"},
				{Type: ChunkDelta, Index: 0, Text: "c2ln", Signature: true},
				{Type: ChunkBlockStop, Index: 0},
				{Type: ChunkBlockStart, Index: 1, Block: Part{Kind: PartText}},
				{Type: ChunkBlockStop, Index: 1},
				{Type: ChunkEnd, Usage: Usage{Input: 14, CacheRead: 4, Output: 1}}},
			done: true,
		},
		{
			name: "an error event ends the stream; nothing after it counts",
			sse: agSSE(start, `ping {"type":"ping"}`, `some_new_event {"type":"some_new_event"}`,
				`error {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`, stop),
			want: []Chunk{startChunk, {Type: ChunkError, Err: &Error{Status: 529, Type: "server_error", Code: "overloaded_error", Message: "Overloaded"}}},
			done: true,
		},
		{
			name: "events without a name are read by their type",
			sse:  []byte("data: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_2\",\"model\":\"m\"}}\n\ndata: {\"type\":\"message_stop\"}\n\n"),
			want: []Chunk{{Type: ChunkStart, ID: "msg_2", Model: "m"}, {Type: ChunkEnd}},
			done: true,
		},
		{
			name: "a stream cut short is not done",
			sse:  agSSE(start, `content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
			want: []Chunk{startChunk, {Type: ChunkBlockStart, Index: 0, Block: Part{Kind: PartText}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dec := Anthropic.(Translator).NewStreamDecoder()
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
}

func TestAnthropicStreamDecodeErrors(t *testing.T) {
	tests := []struct {
		name string
		sse  []byte
		want string
	}{
		{"data not JSON", []byte("event: message_start\ndata: {\"type\n\n"), `anthropic stream: event "message_start": data is not JSON`},
		{"content before message_start", agSSE(`content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"text"}}`), "anthropic stream: content_block_start before message_start"},
		{"a second message_start", agSSE(`message_start {"type":"message_start","message":{}}`, `message_start {"type":"message_start","message":{}}`), "anthropic stream: a second message_start"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := agDecodeStream(Anthropic.(Translator).NewStreamDecoder(), tt.sse)
			if err == nil || err.Error() != tt.want {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}

func TestAnthropicStreamEncode(t *testing.T) {
	tests := []struct {
		name   string
		chunks []Chunk
		want   []byte
	}{
		{
			name: "text, a tool call and thinking, numbered from 0 whatever the chunks say",
			chunks: []Chunk{
				{Type: ChunkStart, ID: "chatcmpl-1", Model: "gpt-5", Usage: Usage{Input: 50, CacheRead: 20, CacheWrite: 5}},
				{Type: ChunkBlockStart, Index: 3, Block: Part{Kind: PartThinking}},
				{Type: ChunkDelta, Index: 3, Text: "Hmm"},
				{Type: ChunkDelta, Index: 3, Text: "c2ln", Signature: true},
				{Type: ChunkBlockStop, Index: 3},
				{Type: ChunkBlockStart, Index: 7, Block: Part{Kind: PartImage}},
				{Type: ChunkDelta, Index: 7, Text: "ignored"},
				{Type: ChunkBlockStop, Index: 7},
				{Type: ChunkBlockStart, Index: 4, Block: Part{Kind: PartText}},
				{Type: ChunkDelta, Index: 4, Text: "Hi \"you\"\n"},
				{Type: ChunkDelta, Index: 4, Text: ""},
				{Type: ChunkBlockStart, Index: 5, Block: Part{Kind: PartToolCall, ID: "call_9", Name: "f"}},
				{Type: ChunkDelta, Index: 5, Text: `{"a":`},
				{Type: ChunkDelta, Index: 5, Text: `1}`},
				{Type: ChunkUsage, Usage: Usage{Input: 50, CacheRead: 20, CacheWrite: 5, Output: 3}},
				{Type: ChunkEnd, StopReason: StopToolUse},
				{Type: ChunkDelta, Index: 5, Text: "after the end"},
			},
			want: agSSE(
				`message_start {"type":"message_start","message":{"id":"msg_chatcmpl-1","type":"message","role":"assistant","model":"gpt-5","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":25,"cache_creation_input_tokens":5,"cache_read_input_tokens":20,"output_tokens":0}}}`,
				`content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":"","signature":""}}`,
				`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"Hmm"}}`,
				`content_block_delta {"type":"content_block_delta","index":0,"delta":{"type":"signature_delta","signature":"c2ln"}}`,
				`content_block_stop {"type":"content_block_stop","index":0}`,
				`content_block_start {"type":"content_block_start","index":1,"content_block":{"type":"text","text":""}}`,
				`content_block_delta {"type":"content_block_delta","index":1,"delta":{"type":"text_delta","text":"Hi \"you\"\n"}}`,
				`content_block_stop {"type":"content_block_stop","index":1}`,
				`content_block_start {"type":"content_block_start","index":2,"content_block":{"type":"tool_use","id":"call_9","name":"f","input":{}}}`,
				`content_block_delta {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"{\"a\":"}}`,
				`content_block_delta {"type":"content_block_delta","index":2,"delta":{"type":"input_json_delta","partial_json":"1}"}}`,
				`content_block_stop {"type":"content_block_stop","index":2}`,
				`message_delta {"type":"message_delta","delta":{"stop_reason":"tool_use","stop_sequence":null},"usage":{"input_tokens":25,"cache_creation_input_tokens":5,"cache_read_input_tokens":20,"output_tokens":3}}`,
				`message_stop {"type":"message_stop"}`),
		},
		{
			name: "an error ends the stream with the error's type",
			chunks: []Chunk{
				{Type: ChunkStart, ID: "msg_1", Model: "m"},
				{Type: ChunkError, Err: &Error{Status: 429, Type: "rate_limit_error", Message: "slow down"}},
				{Type: ChunkEnd},
			},
			want: agSSE(
				`message_start {"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"m","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}}`,
				`error {"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`),
		},
		{
			name:   "an error before anything else is the only event",
			chunks: []Chunk{{Type: ChunkError, Err: &Error{Message: "upstream broke"}}},
			want:   agSSE(`error {"type":"error","error":{"type":"api_error","message":"upstream broke"}}`),
		},
		{
			name:   "a stream that starts without ChunkStart gets a message_start",
			chunks: []Chunk{{Type: ChunkEnd, StopReason: StopMaxTokens, Usage: Usage{Input: 2, Output: 1}}},
			want: agSSE(
				`message_start {"type":"message_start","message":{"id":"msg_","type":"message","role":"assistant","model":"","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":0,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":0}}}`,
				`message_delta {"type":"message_delta","delta":{"stop_reason":"max_tokens","stop_sequence":null},"usage":{"input_tokens":2,"cache_creation_input_tokens":0,"cache_read_input_tokens":0,"output_tokens":1}}`,
				`message_stop {"type":"message_stop"}`),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := agEncodeStream(Anthropic.(Translator).NewStreamEncoder(&Request{}), tt.chunks)
			if string(got) != string(tt.want) {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}
