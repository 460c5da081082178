package provider

import (
	"bufio"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"

	"switchyard/internal/codec"
)

// EventStreamContentType is the Content-Type of an AWS event-stream body
// (Bedrock's ConverseStream).
const EventStreamContentType = "application/vnd.amazon.eventstream"

// ErrMalformedFrame: an AWS event-stream frame's lengths cannot be right.
var ErrMalformedFrame = errors.New("malformed AWS event-stream frame")

// awsFrameOverhead is a frame's bytes besides its headers and payload:
// total and headers length, prelude CRC, message CRC.
const awsFrameOverhead = 16

// isEventStream reports whether h announces an AWS event-stream body.
func isEventStream(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && mt == EventStreamContentType
}

// EventStreamReader reads the frames of an AWS event-stream as
// codec.Events, decoded by the AWS SDK's eventstream package: an event
// frame's Name is its :event-type and Data its payload; an exception
// frame's Name is its :exception-type, and an error frame's its
// :error-code with Data {"message": :error-message}, both marked
// Event.Exception. A frame longer than codec.MaxEventBytes is refused
// before it is read, and so is one whose lengths do not add up; a frame
// whose checksum fails is an error. It buffers one frame at a time.
type EventStreamReader struct {
	br  *bufio.Reader
	dec *eventstream.Decoder
	buf []byte // the last payload's storage, reused
	ev  codec.Event
}

var _ codec.EventStream = (*EventStreamReader)(nil)

// NewEventStreamReader reads frames from r.
func NewEventStreamReader(r io.Reader) *EventStreamReader {
	return &EventStreamReader{br: bufio.NewReaderSize(r, 16<<10), dec: eventstream.NewDecoder()}
}

// Next returns the next frame's event, valid until the following call;
// io.EOF after the last whole frame, io.ErrUnexpectedEOF inside one.
func (r *EventStreamReader) Next() (*codec.Event, error) {
	prelude, err := r.br.Peek(8)
	switch {
	case len(prelude) == 0 && errors.Is(err, io.EOF):
		return nil, io.EOF
	case errors.Is(err, io.EOF):
		return nil, io.ErrUnexpectedEOF
	case err != nil:
		return nil, err
	}
	total, headers := binary.BigEndian.Uint32(prelude), binary.BigEndian.Uint32(prelude[4:])
	if total > codec.MaxEventBytes {
		return nil, fmt.Errorf("%w: a frame of %d bytes", codec.ErrEventTooLarge, total)
	}
	if total < awsFrameOverhead || headers > total-awsFrameOverhead {
		return nil, fmt.Errorf("%w: %d bytes with %d of headers", ErrMalformedFrame, total, headers)
	}
	msg, err := r.dec.Decode(r.br, r.buf[:0])
	if err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, fmt.Errorf("reading an AWS event-stream frame: %w", err)
	}
	if cap(msg.Payload) > cap(r.buf) {
		r.buf = msg.Payload[:0]
	}
	r.fill(&msg)
	return &r.ev, nil
}

// fill makes the event of msg.
func (r *EventStreamReader) fill(msg *eventstream.Message) {
	ev := &r.ev
	ev.Raw, ev.Exception = nil, false
	ev.Name, ev.Data = append(ev.Name[:0], header(msg, ":event-type")...), msg.Payload
	switch header(msg, ":message-type") {
	case "exception":
		ev.Exception = true
		ev.Name = append(ev.Name[:0], header(msg, ":exception-type")...)
	case "error":
		ev.Exception = true
		ev.Name = append(ev.Name[:0], header(msg, ":error-code")...)
		ev.Data, _ = json.Marshal(struct {
			Message string `json:"message"`
		}{header(msg, ":error-message")})
	}
}

// header is msg's string header name; "" when it has none.
func header(msg *eventstream.Message, name string) string {
	v, ok := msg.Headers.Get(name).(eventstream.StringValue)
	if !ok {
		return ""
	}
	return string(v)
}
