package codec

import (
	"bytes"
	"errors"
	"io"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
)

// brFrames builds an AWS event-stream from lines "eventType {json}"; a
// line "!exceptionType {json}" is an exception frame.
func brFrames(lines ...string) []byte {
	enc := eventstream.NewEncoder()
	var out []byte
	for _, l := range lines {
		name, payload, _ := strings.Cut(l, " ")
		exception := strings.HasPrefix(name, "!")
		out = appendBedrockFrame(out, enc, strings.TrimPrefix(name, "!"), exception, []byte(payload))
	}
	return out
}

// brFixtureFrames reads testdata/name, one frame a line, as an event-stream.
func brFixtureFrames(t testing.TB, name string) []byte {
	t.Helper()
	return brFrames(strings.Split(strings.TrimSpace(string(agFixture(t, name))), "\n")...)
}

// brEvents splits an event-stream into Events as provider.Framer does.
func brEvents(frames []byte) ([]Event, error) {
	dec := eventstream.NewDecoder()
	r := bytes.NewReader(frames)
	var out []Event
	for r.Len() > 0 {
		msg, err := dec.Decode(r, nil)
		if err != nil {
			return out, err
		}
		ev := Event{Data: msg.Payload}
		switch mt := msg.Headers.Get(":message-type"); {
		case mt != nil && mt.String() == "exception":
			ev.Exception, ev.Name = true, []byte(msg.Headers.Get(":exception-type").String())
		case msg.Headers.Get(":event-type") != nil:
			ev.Name = []byte(msg.Headers.Get(":event-type").String())
		}
		out = append(out, ev)
	}
	return out, nil
}

// brDecodeStream feeds every frame of an event-stream to dec and returns
// the chunks, or the first error.
func brDecodeStream(dec StreamDecoder, frames []byte) ([]Chunk, error) {
	evs, err := brEvents(frames)
	var out []Chunk
	for i := range evs {
		var derr error
		if out, derr = dec.Decode(&evs[i], out); derr != nil {
			return out, derr
		}
	}
	return out, err
}

// TestBedrockStreamFixture decodes the recorded stream (reasoning with a
// signature, text, two tool calls, usage with cache reads after
// messageStop), checks the canonical invariants and that it carries the
// recorded whole answer; then re-encodes it and decodes the frames again.
func TestBedrockStreamFixture(t *testing.T) {
	tr := Bedrock.(Translator)
	dec := tr.NewStreamDecoder()
	chunks, err := brDecodeStream(dec, brFixtureFrames(t, "bedrock-stream.txt"))
	if err != nil {
		t.Fatal(err)
	}
	if err := agCheckChunks(chunks, true); err != nil {
		t.Fatal(err)
	}
	if !dec.Done() {
		t.Error("Done() is false after metadata")
	}
	whole, err := tr.DecodeResponse(agFixture(t, "bedrock-response.json"))
	if err != nil {
		t.Fatal(err)
	}
	got := agCollect(chunks)
	agEqual(t, got, agCompactArgs(whole))
	if want := (Usage{Input: 1436, Output: 118, CacheRead: 1024}); got.Usage != want {
		t.Errorf("usage %+v, want %+v", got.Usage, want)
	}

	again := agEncodeStream(tr.NewStreamEncoder(&Request{}), chunks)
	dec2 := tr.NewStreamDecoder()
	chunks2, err := brDecodeStream(dec2, again)
	if err != nil {
		t.Fatalf("its own stream does not decode: %v", err)
	}
	if !dec2.Done() {
		t.Error("the re-encoded stream has no end")
	}
	agEqual(t, agCollect(chunks2), got)
}

func TestBedrockStreamDecode(t *testing.T) {
	start := `messageStart {"role":"assistant"}`
	stop := `messageStop {"stopReason":"end_turn"}`
	meta := `metadata {"usage":{"inputTokens":10,"outputTokens":5,"cacheWriteInputTokens":3,"totalTokens":18},"metrics":{"latencyMs":9}}`
	u := Usage{Input: 13, Output: 5, CacheWrite: 3}
	tests := []struct {
		name   string
		frames []byte
		want   []Chunk
		done   bool
	}{
		{
			name: "text and reasoning blocks start with their first delta; the end waits for metadata",
			frames: brFrames(start,
				`contentBlockDelta {"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"hm"}}}`,
				`contentBlockDelta {"contentBlockIndex":0,"delta":{"reasoningContent":{"signature":"c2ln"}}}`,
				`contentBlockDelta {"contentBlockIndex":0,"delta":{"text":"dropped: another kind"}}`,
				`contentBlockStop {"contentBlockIndex":0}`,
				`contentBlockDelta {"contentBlockIndex":0,"delta":{"text":"dropped: a stopped block"}}`,
				`contentBlockDelta {"contentBlockIndex":1,"delta":{"text":"a"}}`,
				`contentBlockDelta {"contentBlockIndex":1,"delta":{"text":""}}`,
				`contentBlockDelta {"contentBlockIndex":1,"delta":{"citation":{"title":"x"}}}`,
				`contentBlockDelta {"contentBlockIndex":1,"delta":{"text":"b"}}`,
				`messageStop {"stopReason":"stop_sequence","additionalModelResponseFields":{"stop_sequence":"END"}}`,
				meta,
				`contentBlockDelta {"contentBlockIndex":2,"delta":{"text":"after the end"}}`),
			want: []Chunk{
				{Type: ChunkStart},
				{Type: ChunkBlockStart, Index: 0, Block: Part{Kind: PartThinking}},
				{Type: ChunkDelta, Index: 0, Text: "hm"},
				{Type: ChunkDelta, Index: 0, Text: "c2ln", Signature: true},
				{Type: ChunkBlockStop, Index: 0},
				{Type: ChunkBlockStart, Index: 1, Block: Part{Kind: PartText}},
				{Type: ChunkDelta, Index: 1, Text: "a"},
				{Type: ChunkDelta, Index: 1, Text: "b"},
				{Type: ChunkBlockStop, Index: 1},
				{Type: ChunkEnd, StopReason: StopSequence, StopSequence: "END", Usage: u},
			},
			done: true,
		},
		{
			name: "a tool call's block starts with contentBlockStart; upstream indices are renumbered; a new index closes the open block",
			frames: brFrames(start,
				`contentBlockDelta {"contentBlockIndex":3,"delta":{"text":"x"}}`,
				`contentBlockStart {"contentBlockIndex":5,"start":{"toolUse":{"toolUseId":"t1","name":"f"}}}`,
				`contentBlockDelta {"contentBlockIndex":5,"delta":{"toolUse":{"input":"{\"a\":"}}}`,
				`contentBlockDelta {"contentBlockIndex":5,"delta":{"toolUse":{"input":"1}"}}}`,
				`contentBlockStop {"contentBlockIndex":5}`,
				`contentBlockDelta {"contentBlockIndex":6,"delta":{"reasoningContent":{"redactedContent":"ZW5j"}}}`,
				`contentBlockDelta {"contentBlockIndex":6,"delta":{"reasoningContent":{"redactedContent":"bW9yZQ=="}}}`,
				`messageStop {"stopReason":"tool_use"}`, meta),
			want: []Chunk{
				{Type: ChunkStart},
				{Type: ChunkBlockStart, Index: 0, Block: Part{Kind: PartText}},
				{Type: ChunkDelta, Index: 0, Text: "x"},
				{Type: ChunkBlockStop, Index: 0},
				{Type: ChunkBlockStart, Index: 1, Block: Part{Kind: PartToolCall, ID: "t1", Name: "f"}},
				{Type: ChunkDelta, Index: 1, Text: `{"a":`},
				{Type: ChunkDelta, Index: 1, Text: `1}`},
				{Type: ChunkBlockStop, Index: 1},
				{Type: ChunkBlockStart, Index: 2, Block: Part{Kind: PartRedactedThinking, Data: "ZW5j"}},
				{Type: ChunkBlockStop, Index: 2},
				{Type: ChunkEnd, StopReason: StopToolUse, Usage: u},
			},
			done: true,
		},
		{
			name:   "metadata before messageStop is usage so far; unknown events are ignored",
			frames: brFrames(start, meta, `somethingNew {"x":1}`, `contentBlockStart {"contentBlockIndex":0,"start":{"image":{}}}`, stop),
			want:   []Chunk{{Type: ChunkStart}, {Type: ChunkUsage, Usage: u}},
		},
		{
			name:   "an exception as the first frame",
			frames: brFrames(`!throttlingException {"message":"Too many tokens, please wait before trying again."}`, start),
			want: []Chunk{{Type: ChunkError, Err: &Error{Status: 429, Type: "rate_limit_error", Code: "ThrottlingException",
				Message: "Too many tokens, please wait before trying again."}}},
			done: true,
		},
		{
			name: "an exception mid-stream",
			frames: brFrames(start, `contentBlockDelta {"contentBlockIndex":0,"delta":{"text":"a"}}`,
				`!modelStreamErrorException {"message":"boom","originalStatusCode":500}`),
			want: []Chunk{
				{Type: ChunkStart},
				{Type: ChunkBlockStart, Index: 0, Block: Part{Kind: PartText}},
				{Type: ChunkDelta, Index: 0, Text: "a"},
				{Type: ChunkError, Err: &Error{Status: 500, Type: "server_error", Code: "ModelStreamErrorException", Message: "boom"}},
			},
			done: true,
		},
		{
			name:   "an exception without a message is named by its type",
			frames: brFrames(start, `!serviceUnavailableException {}`),
			want: []Chunk{{Type: ChunkStart},
				{Type: ChunkError, Err: &Error{Status: 503, Type: "server_error", Code: "ServiceUnavailableException", Message: "serviceUnavailableException"}}},
			done: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dec := Bedrock.(Translator).NewStreamDecoder()
			got, err := brDecodeStream(dec, tt.frames)
			if err != nil {
				t.Fatal(err)
			}
			agEqual(t, got, tt.want)
			if err := agCheckChunks(got, false); err != nil {
				t.Error(err)
			}
			if dec.Done() != tt.done {
				t.Errorf("Done() = %v, want %v", dec.Done(), tt.done)
			}
		})
	}
}

func TestBedrockStreamDecodeErrors(t *testing.T) {
	tests := []struct {
		name   string
		frames []byte
		want   string
	}{
		{"payload not JSON", brFrames(`messageStart {"role":`), `event "messageStart": payload is not a JSON object`},
		{"payload not an object", brFrames(`messageStart [1]`), `payload is not a JSON object`},
		{"content before messageStart", brFrames(`contentBlockDelta {"contentBlockIndex":0,"delta":{"text":"a"}}`), "contentBlockDelta before messageStart"},
		{"two messageStarts", brFrames(`messageStart {}`, `messageStart {}`), "a second messageStart"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := brDecodeStream(Bedrock.(Translator).NewStreamDecoder(), tt.frames)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want one containing %q", err, tt.want)
			}
		})
	}
}

// TestBedrockStreamEncode checks the frames written for a canonical
// stream: their headers and payloads, exactly.
func TestBedrockStreamEncode(t *testing.T) {
	u := Usage{Input: 30, Output: 7, CacheRead: 20}
	tests := []struct {
		name   string
		chunks []Chunk
		want   []string // "type payload", "!type payload" for an exception
	}{
		{
			name: "every kind of block, an image skipped",
			chunks: []Chunk{
				{Type: ChunkStart, ID: "x", Model: "m"},
				{Type: ChunkBlockStart, Index: 0, Block: Part{Kind: PartThinking}},
				{Type: ChunkDelta, Index: 0, Text: "hm"},
				{Type: ChunkDelta, Index: 0, Text: "c2ln", Signature: true},
				{Type: ChunkBlockStop, Index: 0},
				{Type: ChunkBlockStart, Index: 1, Block: Part{Kind: PartImage}},
				{Type: ChunkDelta, Index: 1, Text: "ignored"},
				{Type: ChunkBlockStop, Index: 1},
				{Type: ChunkBlockStart, Index: 2, Block: Part{Kind: PartText}},
				{Type: ChunkDelta, Index: 2, Text: "a \"b\""},
				{Type: ChunkBlockStop, Index: 2},
				{Type: ChunkBlockStart, Index: 3, Block: Part{Kind: PartToolCall, ID: "t1", Name: "f"}},
				{Type: ChunkDelta, Index: 3, Text: `{"a":1}`},
				{Type: ChunkBlockStart, Index: 4, Block: Part{Kind: PartRedactedThinking, Data: "ZW5j"}},
				{Type: ChunkUsage, Usage: u},
				{Type: ChunkEnd, StopReason: StopSequence, StopSequence: "END"},
				{Type: ChunkDelta, Index: 4, Text: "after the end"},
			},
			want: []string{
				`messageStart {"role":"assistant"}`,
				`contentBlockDelta {"contentBlockIndex":0,"delta":{"reasoningContent":{"text":"hm"}}}`,
				`contentBlockDelta {"contentBlockIndex":0,"delta":{"reasoningContent":{"signature":"c2ln"}}}`,
				`contentBlockStop {"contentBlockIndex":0}`,
				`contentBlockDelta {"contentBlockIndex":1,"delta":{"text":"a \"b\""}}`,
				`contentBlockStop {"contentBlockIndex":1}`,
				`contentBlockStart {"contentBlockIndex":2,"start":{"toolUse":{"toolUseId":"t1","name":"f"}}}`,
				`contentBlockDelta {"contentBlockIndex":2,"delta":{"toolUse":{"input":"{\"a\":1}"}}}`,
				`contentBlockStop {"contentBlockIndex":2}`,
				`contentBlockDelta {"contentBlockIndex":3,"delta":{"reasoningContent":{"redactedContent":"ZW5j"}}}`,
				`contentBlockStop {"contentBlockIndex":3}`,
				`messageStop {"stopReason":"stop_sequence","additionalModelResponseFields":{"stop_sequence":"END"}}`,
				`metadata {"usage":{"inputTokens":10,"outputTokens":7,"totalTokens":37,"cacheReadInputTokens":20},"metrics":{"latencyMs":0}}`,
			},
		},
		{
			name:   "an error first: an exception alone",
			chunks: []Chunk{{Type: ChunkError, Err: &Error{Status: 429, Message: "slow down"}}, {Type: ChunkStart}},
			want:   []string{`!throttlingException {"message":"slow down"}`},
		},
		{
			name:   "no ChunkStart: messageStart comes first anyway",
			chunks: []Chunk{{Type: ChunkBlockStart, Index: 0, Block: Part{Kind: PartText}}, {Type: ChunkError}},
			want:   []string{`messageStart {"role":"assistant"}`, `!internalServerException {"message":""}`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			out := agEncodeStream(Bedrock.(Translator).NewStreamEncoder(&Request{}), tt.chunks)
			evs, err := brEvents(out)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, ev := range evs {
				prefix := ""
				if ev.Exception {
					prefix = "!"
				}
				got = append(got, prefix+string(ev.Name)+" "+string(ev.Data))
			}
			agEqual(t, got, tt.want)
		})
	}
}

// TestBedrockStreamToClients carries the recorded stream to each client
// protocol and back: what the client reads is what Bedrock said, less the
// reasoning signature Gemini cannot take and the reasoning OpenAI Chat
// shows without one.
func TestBedrockStreamToClients(t *testing.T) {
	chunks, err := brDecodeStream(Bedrock.(Translator).NewStreamDecoder(), brFixtureFrames(t, "bedrock-stream.txt"))
	if err != nil {
		t.Fatal(err)
	}
	want := agCollect(chunks)
	for _, to := range []Translator{Anthropic.(Translator), Gemini.(Translator), OpenAIChat.(Translator)} {
		t.Run(to.Name(), func(t *testing.T) {
			sse := agEncodeStream(to.NewStreamEncoder(&Request{IncludeUsage: true}), chunks)
			back, err := agDecodeStream(to.NewStreamDecoder(), sse)
			if err != nil {
				t.Fatalf("%v\n%s", err, sse)
			}
			if err := agCheckChunks(back, true); err != nil {
				t.Fatal(err)
			}
			got := agCollect(back)
			if got.StopReason != StopToolUse || got.Usage.Input != want.Usage.Input || got.Usage.Output != want.Usage.Output {
				t.Errorf("stop %v usage %+v, want tool use and %+v", got.StopReason, got.Usage, want.Usage)
			}
			var calls []Part
			for _, p := range got.Parts {
				if p.Kind == PartToolCall {
					calls = append(calls, Part{Kind: p.Kind, ID: p.ID, Name: p.Name, Arguments: p.Arguments})
				}
			}
			agEqual(t, calls, []Part{want.Parts[2], want.Parts[3]})
		})
	}
}

// FuzzBedrockStream feeds arbitrary events to the ConverseStream decoder.
// The input is text, one frame a line ("eventType {json}", "!exceptionType
// {json}" for an exception), framed as AWS event-stream before decoding,
// so that mutations reach the payloads instead of failing the frames'
// checksums (the framing itself is fuzzed by provider's FuzzEventStream).
// The chunks up to the first error keep the canonical invariants, Done
// agrees with the last chunk, and the Bedrock, Anthropic and Gemini
// encoders turn them into streams that decode again. Seeded from the
// recorded stream and an exception.
func FuzzBedrockStream(f *testing.F) {
	f.Add(string(agFixture(f, "bedrock-stream.txt")))
	f.Add("messageStart {\"role\":\"assistant\"}\n!throttlingException {\"message\":\"slow\"}")
	f.Add("messageStart {}\ncontentBlockDelta {\"contentBlockIndex\":0,\"delta\":{\"text\":\"a\"}}\nmessageStop {\"stopReason\":\"end_turn\"}\nmetadata {\"usage\":{}}")
	f.Fuzz(func(t *testing.T, lines string) {
		frames := brFrames(strings.Split(lines, "\n")...)
		dec := Bedrock.(Translator).NewStreamDecoder()
		chunks, _ := brDecodeStream(dec, frames)
		if err := agCheckChunks(chunks, false); err != nil {
			t.Fatalf("decoder: %v", err)
		}
		ended := len(chunks) > 0 && (chunks[len(chunks)-1].Type == ChunkEnd || chunks[len(chunks)-1].Type == ChunkError)
		if ended != dec.Done() {
			t.Fatalf("ended %v but Done() %v", ended, dec.Done())
		}
		out := agEncodeStream(Bedrock.(Translator).NewStreamEncoder(&Request{}), chunks)
		again, err := brDecodeStream(Bedrock.(Translator).NewStreamDecoder(), out)
		if err != nil {
			t.Fatalf("its own stream does not decode: %v", err)
		}
		if err := agCheckChunks(again, false); err != nil {
			t.Fatalf("its own stream breaks the invariants: %v", err)
		}
		for _, to := range []Translator{Anthropic.(Translator), Gemini.(Translator)} {
			sse := agEncodeStream(to.NewStreamEncoder(&Request{}), chunks)
			agFuzzEventsJSON(t, to.Name(), sse)
			if _, err := agDecodeStream(to.NewStreamDecoder(), sse); err != nil && !errors.Is(err, io.EOF) {
				t.Fatalf("%s: its stream does not decode: %v\n%s", to.Name(), err, sse)
			}
		}
	})
}
