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
	"github.com/openai/openai-go/v3/responses"
)

func TestOpenAIResponsesStreamDecode(t *testing.T) {
	tests := []struct {
		fixture string
		want    []Chunk
	}{
		{
			fixture: "resp_reasoning_tools.sse",
			want: []Chunk{
				{Type: ChunkStart, ID: "resp_68b0a1f2c3d48190b5e6f7a8091a2b3c0d4e5f6a7b8c9d0e", Model: "o4-mini-2025-04-16"},
				{Type: ChunkBlockStart, Index: 0, Block: Part{Kind: PartThinking}},
				{Type: ChunkDelta, Index: 0, Text: "**Planning the lookup**\n\nThe user wants "},
				{Type: ChunkDelta, Index: 0, Text: "weather in two cities."},
				{Type: ChunkBlockStop, Index: 0},
				{Type: ChunkBlockStart, Index: 1, Block: Part{Kind: PartRedactedThinking, Data: "gAAAAABosKHzQ1x2Y3z4_encrypted_reasoning=="}},
				{Type: ChunkBlockStop, Index: 1},
				{Type: ChunkBlockStart, Index: 2, Block: Part{Kind: PartToolCall, ID: "call_Vp1nV5xGZ6kX0bE7sXb3aKyF", Name: "get_weather"}},
				{Type: ChunkDelta, Index: 2, Text: `{"location":`},
				{Type: ChunkDelta, Index: 2, Text: `"Paris, France"}`},
				{Type: ChunkBlockStop, Index: 2},
				{Type: ChunkBlockStart, Index: 3, Block: Part{Kind: PartToolCall, ID: "call_Qw8rT2mN4bH6jL1pZ9cV3xYs", Name: "get_weather"}},
				{Type: ChunkDelta, Index: 3, Text: `{"location":"Rome, Italy"}`},
				{Type: ChunkBlockStop, Index: 3},
				{Type: ChunkEnd, StopReason: StopToolUse, Usage: Usage{Input: 310, Output: 221, Reasoning: 128}},
			},
		},
		{
			fixture: "resp_failed.sse",
			want: []Chunk{
				{Type: ChunkStart, ID: "resp_failed0001", Model: "gpt-4.1"},
				{Type: ChunkError, Err: &Error{Code: "server_error", Message: "The model failed to generate a response."}},
			},
		},
		{
			fixture: "resp_error.sse",
			want: []Chunk{
				{Type: ChunkStart, ID: "resp_err0001", Model: "gpt-4.1"},
				{Type: ChunkError, Err: &Error{Code: "rate_limit_exceeded", Message: "Rate limit reached for gpt-4.1."}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			dec := OpenAIResponses.(Translator).NewStreamDecoder()
			got, err := oaiDecodeSSE(dec, oaiFixture(t, tt.fixture))
			if err != nil {
				t.Fatal(err)
			}
			oaiSameValue(t, "chunks", got, tt.want)
			if !dec.Done() {
				t.Fatal("Done() = false after the terminal event")
			}
		})
	}
}

// TestOpenAIResponsesStreamDecodeSparse decodes streams of servers that
// send less than OpenAI does: items only as done events, text only in its
// done event, no type in the data (only the event name).
func TestOpenAIResponsesStreamDecodeSparse(t *testing.T) {
	ev := func(data string) string { return "data: " + data + "\n\n" }
	tests := []struct {
		name, stream string
		want         []Chunk
	}{
		{
			name: "whole items in done events",
			stream: ev(`{"type":"response.created","response":{"id":"resp_1","model":"m"}}`) +
				ev(`{"type":"response.output_item.done","output_index":0,"item":{"type":"message","content":[{"type":"output_text","text":"hi"}]}}`) +
				ev(`{"type":"response.output_item.done","output_index":1,"item":{"type":"function_call","call_id":"c","name":"f","arguments":"{}"}}`) +
				ev(`{"type":"response.completed","response":{"status":"completed","usage":{"input_tokens":1,"output_tokens":2}}}`),
			want: []Chunk{
				{Type: ChunkStart, ID: "resp_1", Model: "m"},
				{Type: ChunkBlockStart, Index: 0, Block: Part{Kind: PartText}},
				{Type: ChunkDelta, Index: 0, Text: "hi"},
				{Type: ChunkBlockStop, Index: 0},
				{Type: ChunkBlockStart, Index: 1, Block: Part{Kind: PartToolCall, ID: "c", Name: "f"}},
				{Type: ChunkDelta, Index: 1, Text: "{}"},
				{Type: ChunkBlockStop, Index: 1},
				{Type: ChunkEnd, StopReason: StopToolUse, Usage: Usage{Input: 1, Output: 2}},
			},
		},
		{
			name: "a call whose arguments come only in its done item",
			stream: ev(`{"type":"response.created","response":{"id":"resp_3"}}`) +
				ev(`{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","call_id":"c","name":"f","arguments":""}}`) +
				ev(`{"type":"response.output_item.done","output_index":0,"item":{"type":"function_call","call_id":"c","name":"f","arguments":"{\"a\":1}"}}`) +
				ev(`{"type":"response.completed","response":{"status":"completed"}}`),
			want: []Chunk{
				{Type: ChunkStart, ID: "resp_3"},
				{Type: ChunkBlockStart, Index: 0, Block: Part{Kind: PartToolCall, ID: "c", Name: "f"}},
				{Type: ChunkDelta, Index: 0, Text: `{"a":1}`},
				{Type: ChunkBlockStop, Index: 0},
				{Type: ChunkEnd, StopReason: StopToolUse},
			},
		},
		{
			name: "text only in its done event, type from the event name, refusal",
			stream: "event: response.created\ndata: {\"response\":{\"id\":\"resp_2\"}}\n\n" +
				ev(`{"type":"response.content_part.added","output_index":0,"content_index":0,"part":{"type":"output_text","text":""}}`) +
				ev(`{"type":"response.output_text.done","output_index":0,"content_index":0,"text":"whole"}`) +
				ev(`{"type":"response.content_part.done","output_index":0,"content_index":0}`) +
				ev(`{"type":"response.refusal.delta","output_index":1,"content_index":0,"delta":"no"}`) +
				ev(`{"type":"response.output_text.delta","output_index":0,"content_index":0,"delta":"late"}`) +
				ev(`{"type":"response.completed","response":{"status":"completed"}}`),
			want: []Chunk{
				{Type: ChunkStart, ID: "resp_2"},
				{Type: ChunkBlockStart, Index: 0, Block: Part{Kind: PartText}},
				{Type: ChunkDelta, Index: 0, Text: "whole"},
				{Type: ChunkBlockStop, Index: 0},
				{Type: ChunkBlockStart, Index: 1, Block: Part{Kind: PartText}},
				{Type: ChunkDelta, Index: 1, Text: "no"},
				{Type: ChunkBlockStop, Index: 1},
				{Type: ChunkEnd, StopReason: StopRefusal},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := oaiDecodeSSE(OpenAIResponses.(Translator).NewStreamDecoder(), []byte(tt.stream))
			if err != nil {
				t.Fatal(err)
			}
			oaiSameValue(t, "chunks", got, tt.want)
		})
	}
}

func TestOpenAIResponsesStreamDecodeErrors(t *testing.T) {
	tests := []struct{ name, stream, want string }{
		{"not JSON", "data: {oops\n\n", "responses stream: event is not JSON: {oops"},
		{"no type", "data: {\"delta\":\"x\"}\n\n", `responses stream: event has no type: {"delta":"x"}`},
		{"after the end", "data: {\"type\":\"response.completed\",\"response\":{}}\n\ndata: {\"type\":\"response.created\"}\n\n",
			`responses stream: event after the end of the stream: {"type":"response.created"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := oaiDecodeSSE(OpenAIResponses.(Translator).NewStreamDecoder(), []byte(tt.stream))
			if err == nil || err.Error() != tt.want {
				t.Fatalf("error = %v, want %q", err, tt.want)
			}
		})
	}
}

// TestOpenAIResponsesStreamRoundTrip decodes recorded upstream streams
// (Responses ones, and Chat ones as an answer from another protocol
// would arrive), re-encodes them as a Responses stream, and checks with
// the official SDK that the events are well formed and contiguous, that
// the deltas rebuild every item, and that the final response equals
// EncodeResponse of the whole-answer twin.
func TestOpenAIResponsesStreamRoundTrip(t *testing.T) {
	tests := []struct {
		fixture  string
		upstream Translator
	}{
		{"resp_text", OpenAIResponses.(Translator)},
		{"resp_reasoning_tools", OpenAIResponses.(Translator)},
		{"resp_incomplete", OpenAIResponses.(Translator)},
		{"chat_text", OpenAIChat.(Translator)},
		{"chat_tools_parallel", OpenAIChat.(Translator)},
		{"chat_tools_interleaved", OpenAIChat.(Translator)},
		{"chat_reasoning", OpenAIChat.(Translator)},
	}
	client := OpenAIResponses.(Translator)
	for _, tt := range tests {
		t.Run(tt.fixture, func(t *testing.T) {
			chunks, err := oaiDecodeSSE(tt.upstream.NewStreamDecoder(), oaiFixture(t, tt.fixture+".sse"))
			if err != nil {
				t.Fatal(err)
			}
			if err := oaiCheckChunks(chunks, true); err != nil {
				t.Fatal(err)
			}
			whole, err := tt.upstream.DecodeResponse(oaiFixture(t, tt.fixture+".json"))
			if err != nil {
				t.Fatal(err)
			}
			streamed := oaiCollect(chunks)
			streamed.Created = whole.Created
			oaiSameValue(t, "streamed answer", streamed, whole)

			final := responsesFromSSE(t, oaiEncodeAll(client.NewStreamEncoder(&Request{}), chunks))
			var want responses.Response
			if err := json.Unmarshal(client.EncodeResponse(whole), &want); err != nil {
				t.Fatal(err)
			}
			compareResponses(t, final, want)
		})
	}
}

// responsesFromSSE reads a Responses stream with the SDK: it checks the
// sequence numbers, rebuilds each item's text and arguments from the
// deltas against the done events and the final response, feeds the SDK's
// ResponseAccumulator, and returns the response the accumulator
// reconstructs.
func responsesFromSSE(t *testing.T, wire []byte) responses.Response {
	t.Helper()
	res := &http.Response{Header: http.Header{"Content-Type": {"text/event-stream"}}, Body: io.NopCloser(bytes.NewReader(wire))}
	stream := ssestream.NewStream[responses.ResponseStreamEventUnion](ssestream.NewDecoder(res), nil)
	var acc responses.ResponseAccumulator
	deltas := map[int64]*strings.Builder{}
	var seq int64
	var final responses.Response
	for stream.Next() {
		ev := stream.Current()
		if ev.SequenceNumber != seq {
			t.Fatalf("sequence_number %d, want %d (%s)", ev.SequenceNumber, seq, ev.Type)
		}
		seq++
		switch ev.Type {
		case "response.output_text.delta", "response.reasoning_summary_text.delta", "response.function_call_arguments.delta":
			if deltas[ev.OutputIndex] == nil {
				deltas[ev.OutputIndex] = &strings.Builder{}
			}
			deltas[ev.OutputIndex].WriteString(ev.Delta)
		case "response.output_text.done", "response.reasoning_summary_text.done":
			if got := deltas[ev.OutputIndex].String(); got != ev.Text {
				t.Fatalf("item %d: deltas make %q, done says %q", ev.OutputIndex, got, ev.Text)
			}
		case "response.completed", "response.incomplete":
			final = ev.Response
		}
		var server responses.ResponsesServerEventUnion
		if err := json.Unmarshal([]byte(ev.RawJSON()), &server); err != nil {
			t.Fatalf("SDK server event: %v", err)
		}
		if err := acc.AddEvent(server); err != nil {
			t.Fatalf("SDK accumulator refused %s: %v", ev.RawJSON(), err)
		}
	}
	if err := stream.Err(); err != nil {
		t.Fatalf("SDK stream error: %v\n%s", err, wire)
	}
	for _, item := range final.Output {
		d, ok := deltas[int64(indexOfItem(final, item.ID))]
		var text string
		switch item.Type {
		case "message":
			text = item.Content[0].Text
		case "reasoning":
			if len(item.Summary) > 0 {
				text = item.Summary[0].Text
			}
		case "function_call":
			text = item.Arguments.OfString
		}
		if ok && d.String() != text && !(item.Type == "function_call" && d.String() == "" && text == "{}") {
			t.Fatalf("item %s: deltas make %q, the final response has %q", item.ID, d.String(), text)
		}
	}
	rebuilt, err := acc.ReconstructedResponse()
	if err != nil {
		t.Fatalf("SDK accumulator: %v", err)
	}
	if rebuilt.ID != final.ID || len(rebuilt.Output) != len(final.Output) {
		t.Fatalf("the accumulator rebuilt %s with %d items, the stream ended with %s with %d", rebuilt.ID, len(rebuilt.Output), final.ID, len(final.Output))
	}
	return *rebuilt
}

// indexOfItem is the output index of the item with id.
func indexOfItem(r responses.Response, id string) int {
	for i, it := range r.Output {
		if it.ID == id {
			return i
		}
	}
	return -1
}

// compareResponses compares what a client reads of two responses.
func compareResponses(t *testing.T, got, want responses.Response) {
	t.Helper()
	if got.ID != want.ID || got.Model != want.Model || got.Status != want.Status || got.IncompleteDetails.Reason != want.IncompleteDetails.Reason {
		t.Fatalf("streamed %s %s %s %q, whole %s %s %s %q", got.ID, got.Model, got.Status, got.IncompleteDetails.Reason,
			want.ID, want.Model, want.Status, want.IncompleteDetails.Reason)
	}
	if got.OutputText() != want.OutputText() {
		t.Fatalf("output text streamed %q, whole %q", got.OutputText(), want.OutputText())
	}
	g, _ := json.Marshal(got.Output)
	w, _ := json.Marshal(want.Output)
	oaiSameJSON(t, g, w)
	if got.Usage.RawJSON() == "" || got.Usage.InputTokens != want.Usage.InputTokens || got.Usage.OutputTokens != want.Usage.OutputTokens ||
		got.Usage.InputTokensDetails.CachedTokens != want.Usage.InputTokensDetails.CachedTokens ||
		got.Usage.OutputTokensDetails.ReasoningTokens != want.Usage.OutputTokensDetails.ReasoningTokens {
		t.Fatalf("usage streamed %s, whole %s", got.Usage.RawJSON(), want.Usage.RawJSON())
	}
}

func TestOpenAIResponsesStreamEncodeError(t *testing.T) {
	chunks := []Chunk{
		{Type: ChunkStart, ID: "msg_1", Model: "m"},
		{Type: ChunkBlockStart, Index: 0, Block: Part{Kind: PartText}},
		{Type: ChunkDelta, Index: 0, Text: "par"},
		{Type: ChunkError, Err: &Error{Type: "overloaded_error", Message: "Overloaded"}},
		{Type: ChunkEnd},
	}
	wire := string(oaiEncodeAll(OpenAIResponses.(Translator).NewStreamEncoder(&Request{}), chunks))
	want := "event: error\ndata: {\"type\":\"error\",\"sequence_number\":5,\"code\":\"overloaded_error\",\"message\":\"Overloaded\",\"param\":null}\n\n"
	if !strings.HasSuffix(wire, want) || strings.Contains(wire, "response.completed") {
		t.Fatalf("stream\n%s\nwant it to end with\n%s", wire, want)
	}
}

// TestOpenAIResponsesStreamToChat re-encodes recorded Responses streams
// as Chat streams, the other direction an answer can take.
func TestOpenAIResponsesStreamToChat(t *testing.T) {
	chat, up := OpenAIChat.(Translator), OpenAIResponses.(Translator)
	for _, name := range []string{"resp_text", "resp_reasoning_tools", "resp_incomplete"} {
		t.Run(name, func(t *testing.T) {
			chunks, err := oaiDecodeSSE(up.NewStreamDecoder(), oaiFixture(t, name+".sse"))
			if err != nil {
				t.Fatal(err)
			}
			whole, err := up.DecodeResponse(oaiFixture(t, name+".json"))
			if err != nil {
				t.Fatal(err)
			}
			got, _ := chatFromSSE(t, oaiEncodeAll(chat.NewStreamEncoder(&Request{IncludeUsage: true}), chunks))
			var want openai.ChatCompletion
			if err := json.Unmarshal(chat.EncodeResponse(whole), &want); err != nil {
				t.Fatal(err)
			}
			compareChatCompletions(t, got, want)
		})
	}
}
