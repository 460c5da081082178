package provider

import (
	"bytes"
	"encoding/binary"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"switchyard/internal/codec"
)

// frame encodes one AWS event-stream message with string headers
// (name, value, name, value, …) and payload.
func esFrame(t testing.TB, payload string, headers ...string) []byte {
	t.Helper()
	var hs eventstream.Headers
	for i := 0; i+1 < len(headers); i += 2 {
		hs.Set(headers[i], eventstream.StringValue(headers[i+1]))
	}
	var buf bytes.Buffer
	if err := eventstream.NewEncoder().Encode(&buf, eventstream.Message{Headers: hs, Payload: []byte(payload)}); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// esEvent encodes a ConverseStream event frame of type typ.
func esEvent(t testing.TB, typ, payload string) []byte {
	return esFrame(t, payload, ":event-type", typ, ":content-type", "application/json", ":message-type", "event")
}

func TestEventStreamReader(t *testing.T) {
	start := esEvent(t, "messageStart", `{"role":"assistant"}`)
	exception := esFrame(t, `{"message":"slow down"}`, ":exception-type", "throttlingException", ":content-type", "application/json", ":message-type", "exception")
	errFrame := esFrame(t, "", ":message-type", "error", ":error-code", "InternalFailure", ":error-message", `it "broke"`)
	corrupt := bytes.Clone(start)
	corrupt[len(corrupt)-1] ^= 0xff
	huge := make([]byte, 12)
	binary.BigEndian.PutUint32(huge, codec.MaxEventBytes+1)
	lengths := make([]byte, 12)
	binary.BigEndian.PutUint32(lengths, 20)
	binary.BigEndian.PutUint32(lengths[4:], 10)
	type want struct {
		name, data string
		exception  bool
	}
	tests := []struct {
		name   string
		stream []byte
		events []want
		err    error // after the events; io.EOF for a clean end
	}{
		{"events then the end", append(append(bytes.Clone(start), esEvent(t, "metadata", `{"usage":{}}`)...), esEvent(t, "x", "")...),
			[]want{{"messageStart", `{"role":"assistant"}`, false}, {"metadata", `{"usage":{}}`, false}, {"x", "", false}}, io.EOF},
		{"an exception", append(bytes.Clone(start), exception...),
			[]want{{"messageStart", `{"role":"assistant"}`, false}, {"throttlingException", `{"message":"slow down"}`, true}}, io.EOF},
		{"an error message", errFrame, []want{{"InternalFailure", `{"message":"it \"broke\""}`, true}}, io.EOF},
		{"empty", nil, nil, io.EOF},
		{"cut inside the prelude", start[:5], nil, io.ErrUnexpectedEOF},
		{"cut inside a frame", append(bytes.Clone(start), exception[:len(exception)-3]...), []want{{"messageStart", `{"role":"assistant"}`, false}}, io.ErrUnexpectedEOF},
		{"a bad checksum", corrupt, nil, eventstream.ChecksumError{}},
		{"a frame too large", huge, nil, codec.ErrEventTooLarge},
		{"lengths that do not add up", lengths, nil, ErrMalformedFrame},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := NewEventStreamReader(bytes.NewReader(tt.stream))
			for i, w := range tt.events {
				ev, err := r.Next()
				if err != nil {
					t.Fatalf("event %d: %v", i, err)
				}
				if string(ev.Name) != w.name || string(ev.Data) != w.data || ev.Exception != w.exception || len(ev.Raw) != 0 {
					t.Errorf("event %d = %q %q exception %v, want %+v", i, ev.Name, ev.Data, ev.Exception, w)
				}
			}
			_, err := r.Next()
			if !errors.Is(err, tt.err) {
				t.Errorf("then %v, want %v", err, tt.err)
			}
		})
	}
}

func TestBedrockEvents(t *testing.T) {
	ep := Bedrock{}.New(sigV4Upstream("")).(Framer)
	for _, tt := range []struct {
		contentType string
		framed      bool
	}{
		{"application/vnd.amazon.eventstream", true},
		{"application/vnd.amazon.eventstream; charset=utf-8", true},
		{"application/json", false},
		{"text/event-stream", false},
		{"", false},
	} {
		es := ep.Events(http.Header{"Content-Type": {tt.contentType}}, bytes.NewReader(esEvent(t, "messageStart", `{}`)))
		if (es != nil) != tt.framed {
			t.Errorf("%q: framed %v, want %v", tt.contentType, es != nil, tt.framed)
		}
	}
}

// FuzzEventStream reads arbitrary bytes as an AWS event-stream: no panic,
// every event is a frame whose checksums held, and the reader stops at the
// first error.
func FuzzEventStream(f *testing.F) {
	f.Add(append(esEvent(f, "messageStart", `{"role":"assistant"}`), esEvent(f, "contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":"hi"}}`)...))
	f.Add(esFrame(f, `{"message":"x"}`, ":exception-type", "throttlingException", ":message-type", "exception"))
	f.Add(esFrame(f, "", ":message-type", "error", ":error-code", "E", ":error-message", "m"))
	f.Fuzz(func(t *testing.T, stream []byte) {
		r := NewEventStreamReader(bytes.NewReader(stream))
		read := 0
		for {
			ev, err := r.Next()
			if err != nil {
				return
			}
			read += 16 + len(ev.Data)
			if read > len(stream)+64 || len(ev.Data) > codec.MaxEventBytes {
				t.Fatalf("read %d bytes of events from %d bytes", read, len(stream))
			}
		}
	})
}
