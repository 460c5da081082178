package codec

import (
	"bytes"
	"errors"
	"io"
	"slices"
	"testing"

	"github.com/tidwall/gjson"
)

// The stop reason through translation (docs/protocols.md#stop-reasons):
// every client protocol × every upstream wire × every way an answer ends ×
// a whole answer, a stream, and a stream that ends without its terminal
// event (an OpenAI-compatible server's stream without [DONE]), decoded
// from the upstream's protocol and encoded in the client's.

// stopNames is what each client protocol says for each canonical stop
// reason: Chat's finish_reason, Responses' status (with
// incomplete_details.reason), Anthropic's stop_reason, Gemini's
// finishReason. Responses and Gemini have no tool-use stop (the calls
// themselves say it); Chat and Responses have no refusal stop.
var stopNames = map[string]map[StopReason]string{
	"openai-chat": {StopEnd: "stop", StopMaxTokens: "length", StopToolUse: "tool_calls",
		StopContentFilter: "content_filter", StopRefusal: "stop"},
	"openai-responses": {StopEnd: "completed", StopMaxTokens: "incomplete/max_output_tokens", StopToolUse: "completed",
		StopContentFilter: "incomplete/content_filter", StopRefusal: "completed"},
	"anthropic": {StopEnd: "end_turn", StopMaxTokens: "max_tokens", StopToolUse: "tool_use",
		StopContentFilter: "refusal", StopRefusal: "refusal"},
	"gemini": {StopEnd: "STOP", StopMaxTokens: "MAX_TOKENS", StopToolUse: "STOP",
		StopContentFilter: "SAFETY", StopRefusal: "SAFETY"},
}

// How the upstream's answer reaches the decoder.
const (
	modePlain   = "plain"
	modeStream  = "stream"
	modeOpenEnd = "stream without terminator"
)

// TestStopReasonTranslation: the client sees the stop reason the upstream
// gave, mapped per pair, however the upstream's answer ended. A stream
// without its terminal event is closed as the proxy closes it for an
// upstream whose streams may end so (provider OpenStreamEnd): by the
// decoder's End.
func TestStopReasonTranslation(t *testing.T) {
	clients := []Translator{OpenAIChat.(Translator), OpenAIResponses.(Translator), Anthropic.(Translator), Gemini.(Translator)}
	for _, cl := range clients {
		t.Run(cl.Name(), func(t *testing.T) {
			for i := range stopUpstreams {
				up := &stopUpstreams[i]
				t.Run(up.name, func(t *testing.T) {
					for c, name := range stopCases {
						t.Run(name, func(t *testing.T) {
							for _, mode := range []string{modePlain, modeStream, modeOpenEnd} {
								t.Run(mode, func(t *testing.T) {
									want := stopNames[cl.Name()][up.reason[c]]
									if got := stopThrough(t, cl, up, stopCase(c), mode); !slices.Equal(got, []string{want}) {
										t.Errorf("upstream %s %q: the client sees stop reasons %q, want [%q]", up.name, up.wire[c], got, want)
									}
								})
							}
						})
					}
				})
			}
		})
	}
}

// stopThrough decodes up's answer of case c in mode, encodes it for client
// cl and returns every stop reason the client's answer or stream states.
func stopThrough(t *testing.T, cl Translator, up *stopUpstream, c stopCase, mode string) []string {
	t.Helper()
	wire := up.wire[c]
	if mode == modePlain {
		resp, err := up.t.DecodeResponse([]byte(up.whole(c, wire)))
		if err != nil {
			t.Fatalf("decoding the answer: %v", err)
		}
		if resp.StopReason != up.reason[c] {
			t.Errorf("canonical stop reason %d, want %d", resp.StopReason, up.reason[c])
		}
		return []string{clientStop(cl.Name(), cl.EncodeResponse(resp))}
	}
	evs := up.stream(c, wire)
	if mode == modeOpenEnd {
		evs = evs[:len(evs)-up.terminal]
	}
	dec := up.t.NewStreamDecoder()
	var chunks []Chunk
	for i := range evs {
		var err error
		if chunks, err = dec.Decode(&evs[i], chunks); err != nil {
			t.Fatalf("decoding event %d: %v", i, err)
		}
	}
	switch {
	case mode == modeStream && !dec.Done():
		t.Fatal("the decoder did not see the terminal event")
	case mode == modeOpenEnd && up.terminal > 0 && dec.Done():
		t.Fatal("the decoder saw a terminal event in a stream without one")
	}
	if !dec.Done() { // the proxy's translateRelay.end
		chunks = dec.End(chunks)
	}
	if err := oaiCheckChunks(chunks, true); err != nil {
		t.Fatalf("canonical stream: %v", err)
	}
	if end := chunks[len(chunks)-1]; end.StopReason != up.reason[c] {
		t.Errorf("canonical stop reason %d, want %d", end.StopReason, up.reason[c])
	}
	out := oaiEncodeAll(cl.NewStreamEncoder(&Request{Model: "m", IncludeUsage: true}), chunks)
	rd := NewEventReader(bytes.NewReader(out))
	var stops []string
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return stops
		}
		if err != nil {
			t.Fatalf("reading the client's stream: %v", err)
		}
		if s := clientStop(cl.Name(), ev.Data); s != "" {
			stops = append(stops, s)
		}
	}
}

// clientStop is the stop reason a whole answer or stream event of protocol
// proto states, in stopNames' terms; "" when it states none.
func clientStop(proto string, doc []byte) string {
	root := gjson.ParseBytes(doc)
	switch proto {
	case "openai-chat":
		return root.Get("choices.0.finish_reason").Str
	case "anthropic":
		if root.Get("type").Str == "message_delta" {
			return root.Get("delta.stop_reason").Str
		}
		return root.Get("stop_reason").Str
	case "gemini":
		return root.Get("candidates.0.finishReason").Str
	}
	if r := root.Get("response"); r.IsObject() { // a Responses stream event
		root = r
	}
	switch st := root.Get("status").Str; st {
	case "in_progress":
		return ""
	case "incomplete":
		return st + "/" + root.Get("incomplete_details.reason").Str
	default:
		return st
	}
}

// TestStreamDecoderEnd: every decoder's End closes a stream cut at any
// point as its terminal event would have (the open block stopped, the stop
// reason and usage seen so far), appends nothing after that event, and
// leaves the decoder Done.
func TestStreamDecoderEnd(t *testing.T) {
	type tc struct {
		name   string
		t      Codec
		events []Event
		want   []Chunk // what End appends
	}
	stop := func(i int) Chunk { return Chunk{Type: ChunkBlockStop, Index: i} }
	end := func(r StopReason, u Usage) Chunk { return Chunk{Type: ChunkEnd, StopReason: r, Usage: u} }
	chat := func(delta string) Event {
		return stopData(`{"id":"c","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}`)
	}
	tests := []tc{
		{"openai-chat cut in text", OpenAIChat, []Event{chat(`{"role":"assistant","content":""}`), chat(`{"content":"Hi"}`)},
			[]Chunk{stop(0), end(StopEnd, Usage{})}},
		{"openai-chat cut in a tool call", OpenAIChat, []Event{
			chat(`{"tool_calls":[{"index":0,"id":"call_1","function":{"name":"f","arguments":"{"}}]}`)},
			[]Chunk{stop(0), end(StopToolUse, Usage{})}},
		{"anthropic cut in a block", Anthropic, []Event{
			stopNamed("message_start", `{"type":"message_start","message":{"id":"m","usage":{"input_tokens":5,"output_tokens":1}}}`),
			stopNamed("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`),
			stopNamed("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hi"}}`)},
			[]Chunk{stop(0), end(StopEnd, Usage{Input: 5, Output: 1})}},
		{"gemini cut after a call", Gemini, []Event{stopData(`{"candidates":[{"content":{"parts":[{"functionCall":{"name":"f","args":{}}}]}}]}`)},
			[]Chunk{end(StopToolUse, Usage{})}},
		{"gemini cut in text", Gemini, []Event{stopData(`{"candidates":[{"content":{"parts":[{"text":"Hi"}]}}],"usageMetadata":{"promptTokenCount":5}}`)},
			[]Chunk{stop(0), end(StopEnd, Usage{Input: 5})}},
		{"bedrock cut in a block", Bedrock, []Event{stopNamed(bedrockEvMessageStart, `{"role":"assistant"}`),
			stopNamed(bedrockEvBlockDelta, `{"contentBlockIndex":0,"delta":{"text":"Hi"}}`)},
			[]Chunk{stop(0), end(StopEnd, Usage{})}},
		{"openai-responses cut in a function call", OpenAIResponses, []Event{
			stopNamed("response.created", `{"type":"response.created","response":{"id":"r","status":"in_progress"}}`),
			stopNamed("response.output_item.added", `{"type":"response.output_item.added","output_index":0,"item":{"type":"function_call","call_id":"c1","name":"f","arguments":""}}`),
			stopNamed("response.function_call_arguments.delta", `{"type":"response.function_call_arguments.delta","output_index":0,"delta":"{"}`)},
			[]Chunk{stop(0), end(StopToolUse, Usage{})}},
		{"openai-responses after response.incomplete", OpenAIResponses, []Event{
			stopNamed("response.created", `{"type":"response.created","response":{"id":"r","status":"in_progress"}}`),
			stopNamed("response.incomplete", `{"type":"response.incomplete","response":{"id":"r","status":"incomplete","incomplete_details":{"reason":"max_output_tokens"}}}`)},
			nil},
	}
	for _, c := range []Codec{OpenAIChat, OpenAIResponses, Anthropic, Gemini, Bedrock} {
		tests = append(tests, tc{c.Name() + " before any event", c, nil, []Chunk{{Type: ChunkStart}, end(StopEnd, Usage{})}})
	}
	for i := range stopUpstreams {
		up := &stopUpstreams[i]
		tests = append(tests, tc{up.name + " after its terminal event", up.t, up.stream(caseTool, up.wire[caseTool]), nil})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dec := tt.t.(Translator).NewStreamDecoder()
			var chunks []Chunk
			for i := range tt.events {
				var err error
				if chunks, err = dec.Decode(&tt.events[i], chunks); err != nil {
					t.Fatalf("decoding event %d: %v", i, err)
				}
			}
			n := len(chunks)
			chunks = dec.End(chunks)
			got := chunks[n:]
			if len(got) == 0 {
				got = nil
			}
			oaiSameValue(t, "End's chunks", got, tt.want)
			if err := oaiCheckChunks(chunks, true); err != nil {
				t.Errorf("canonical stream: %v", err)
			}
			if !dec.Done() {
				t.Error("Done is false after End")
			}
			if again := dec.End(nil); len(again) != 0 {
				t.Errorf("a second End appends %+v", again)
			}
		})
	}
}
