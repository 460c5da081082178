package codec

import (
	"errors"
	"io"
	"strings"
	"testing"
)

// TestEventReaderRelease: Release gives the buffer back, after which Next
// ends the stream; the last event stays readable, a second Release does
// nothing, and a line longer than the buffer is still read whole.
func TestEventReaderRelease(t *testing.T) {
	long := strings.Repeat("x", 3*eventBufSize)
	r := NewEventReader(strings.NewReader("data: " + long + "\n\ndata: two\n\ndata: three\n\n"))
	ev, err := r.Next()
	if err != nil || string(ev.Data) != long {
		t.Fatalf("first event: %d bytes, %v; want %d bytes", len(ev.Data), err, len(long))
	}
	ev, err = r.Next()
	if err != nil || string(ev.Data) != "two" {
		t.Fatalf("second event %q, %v", ev.Data, err)
	}
	r.Release()
	r.Release()
	if string(ev.Data) != "two" {
		t.Errorf("after Release the last event is %q, want two", ev.Data)
	}
	if _, err := r.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("Next after Release: %v, want io.EOF", err)
	}
}

// TestObserveAllocs: following a passthrough stream allocates nothing per
// event (docs/benchmarks.md#long-streams), for every kind of event a
// long stream is made of; but a string with JSON escapes, which gjson
// unescapes as it reads it: one allocation.
func TestObserveAllocs(t *testing.T) {
	tests := []struct {
		name   string
		codec  Codec
		ev     Event
		allocs float64
	}{
		{"chat delta", openAI{}, Event{Data: []byte(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"word "},"finish_reason":null}]}`)}, 0},
		{"chat tool delta", openAI{}, Event{Data: []byte(`{"id":"c","choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{\"a\""}}]}}]}`)}, 1},
		{"chat escaped delta", openAI{}, Event{Data: []byte(`{"id":"c","choices":[{"index":0,"delta":{"content":"line\nbreak"}}]}`)}, 1},
		{"chat usage", openAI{}, Event{Data: []byte(`{"id":"c","choices":[],"usage":{"prompt_tokens":12,"completion_tokens":50}}`)}, 0},
		{"responses delta", openAIResponses{}, Event{Data: []byte(`{"type":"response.output_text.delta","delta":"word "}`)}, 0},
		{"responses completed", openAIResponses{}, Event{Name: []byte("response.completed"), Data: []byte(`{"type":"response.completed","response":{"usage":{"input_tokens":12,"output_tokens":50}}}`)}, 0},
		{"anthropic start", anthropic{}, Event{Name: []byte("message_start"), Data: []byte(`{"type":"message_start","message":{"usage":{"input_tokens":12,"output_tokens":1}}}`)}, 0},
		{"anthropic message delta", anthropic{}, Event{Name: []byte("message_delta"), Data: []byte(`{"type":"message_delta","usage":{"output_tokens":50}}`)}, 0},
		{"anthropic delta", anthropic{}, Event{Name: []byte("content_block_delta"), Data: []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"word "}}`)}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s StreamState
			if n := testing.AllocsPerRun(100, func() { tt.codec.Observe(&s, &tt.ev) }); n != tt.allocs {
				t.Errorf("Observe: %v allocations per event, want %v", n, tt.allocs)
			}
			if s.Deltas == 0 && s.Out == 0 {
				t.Errorf("Observe saw nothing: %+v", s)
			}
		})
	}
}

// TestEventReaderBOM: a byte order mark before the first field is not
// part of the field's name (the SSE spec strips it); one later is.
func TestEventReaderBOM(t *testing.T) {
	r := NewEventReader(strings.NewReader("\uFEFFdata: one\n\n\uFEFFdata: two\n\n"))
	defer r.Release()
	ev, err := r.Next()
	if err != nil || string(ev.Data) != "one" || string(ev.Raw) != "\uFEFFdata: one\n\n" {
		t.Fatalf("first event data %q raw %q, %v; want data one, raw as sent", ev.Data, ev.Raw, err)
	}
	if ev, err = r.Next(); err != nil || len(ev.Data) != 0 {
		t.Errorf("second event data %q, %v; want none (its field is not data)", ev.Data, err)
	}
}
