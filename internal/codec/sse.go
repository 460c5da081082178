package codec

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"sync"

	"github.com/tidwall/gjson"
)

// MaxEventBytes bounds one SSE event, so a broken upstream cannot make the
// gateway buffer without limit.
const MaxEventBytes = 8 << 20

// ErrEventTooLarge: an SSE event exceeded MaxEventBytes.
var ErrEventTooLarge = errors.New("SSE event too large")

// Event is one server-sent event: its bytes as received, plus the fields
// the codecs read.
type Event struct {
	// Raw is every line of the event including the blank line ending it.
	Raw []byte
	// Name is the event: field ("" when absent).
	Name []byte
	// Data is the data: lines joined by \n.
	Data []byte
	// Exception marks an event of a provider's own framing that reports an
	// error out of band: an AWS event-stream frame whose :message-type is
	// "exception" (Name is then its :exception-type) or "error" (Name is
	// its :error-code). Always false for SSE.
	Exception bool
}

// EventStream is a stream's events, one at a time: SSE (EventReader) or a
// provider's own framing turned into Events (Bedrock's AWS event-stream).
type EventStream interface {
	// Next returns the next event, valid until the following call; io.EOF
	// at the end.
	Next() (*Event, error)
}

var _ EventStream = (*EventReader)(nil)

// eventBufSize is an EventReader's read buffer: it holds one line at a
// time, and a line longer than it is read in pieces (readLine), so it is
// sized for a typical event's line (a few hundred bytes), not the longest.
// Every open stream holds one (docs/benchmarks.md#long-streams).
const eventBufSize = 4 << 10

// readers are the read buffers of finished streams, for the next ones.
var readers = sync.Pool{New: func() any { return bufio.NewReaderSize(nil, eventBufSize) }}

// EventReader splits an SSE body into events without buffering more than one.
type EventReader struct {
	br      *bufio.Reader
	ev      Event
	eof     bool
	started bool // a line was read: a BOM is stripped from the first only
}

// NewEventReader reads events from r. Release gives its read buffer back
// once the stream is over.
func NewEventReader(r io.Reader) *EventReader {
	br := readers.Get().(*bufio.Reader)
	br.Reset(r)
	return &EventReader{br: br}
}

// Release returns the reader's buffer to a pool for the next stream; Next
// then returns io.EOF. The last event returned stays valid. It must not
// run concurrently with Next; a second call does nothing.
func (r *EventReader) Release() {
	if r.br == nil {
		return
	}
	r.br.Reset(nil)
	readers.Put(r.br)
	r.br, r.eof = nil, true
}

// Next returns the next event; it is valid until the following call.
// A final event cut short by EOF is returned whole before io.EOF.
func (r *EventReader) Next() (*Event, error) {
	if r.eof {
		return nil, io.EOF
	}
	ev := &r.ev
	ev.Raw, ev.Name, ev.Data = ev.Raw[:0], ev.Name[:0], ev.Data[:0]
	for {
		line, err := r.readLine()
		if len(line) > 0 {
			ev.Raw = append(ev.Raw, line...)
			if len(ev.Raw) > MaxEventBytes {
				return nil, ErrEventTooLarge
			}
			content := bytes.TrimRight(line, "\r\n")
			if !r.started {
				// The SSE spec strips one leading byte order mark.
				r.started, content = true, bytes.TrimPrefix(content, utf8BOM)
			}
			if len(content) == 0 {
				return ev, nil
			}
			ev.parseField(content)
		}
		if err == io.EOF {
			r.eof = true
			if len(ev.Raw) > 0 {
				return ev, nil
			}
			return nil, io.EOF
		}
		if err != nil {
			return nil, err
		}
	}
}

// readLine reads through the next \n, however long the line (bounded by MaxEventBytes).
func (r *EventReader) readLine() ([]byte, error) {
	line, err := r.br.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return line, err
	}
	long := append([]byte(nil), line...)
	for errors.Is(err, bufio.ErrBufferFull) && len(long) <= MaxEventBytes {
		line, err = r.br.ReadSlice('\n')
		long = append(long, line...)
	}
	return long, err
}

// utf8BOM is the byte order mark a stream may start with.
var utf8BOM = []byte("\uFEFF")

func (ev *Event) parseField(line []byte) {
	field, value, _ := bytes.Cut(line, []byte(":"))
	value = bytes.TrimPrefix(value, []byte(" "))
	switch string(field) {
	case "event":
		ev.Name = append(ev.Name, value...)
	case "data":
		if len(ev.Data) > 0 {
			ev.Data = append(ev.Data, '\n')
		}
		ev.Data = append(ev.Data, value...)
	}
}

// WellFormedFirst reports whether ev can start a client's stream: its data,
// when it has any, is JSON (or OpenAI's [DONE]), and every line is an SSE
// field or comment, so that an HTML page or a bare JSON body sent as
// text/event-stream is not relayed as a stream.
func WellFormedFirst(ev *Event) bool {
	if len(ev.Data) > 0 && string(ev.Data) != "[DONE]" && !gjson.ValidBytes(ev.Data) {
		return false
	}
	for line := range bytes.Lines(bytes.TrimPrefix(ev.Raw, []byte("\uFEFF"))) { // a stream may start with a BOM
		line = bytes.TrimRight(line, "\r\n")
		if len(line) == 0 || line[0] == ':' {
			continue
		}
		field, _, _ := bytes.Cut(line, []byte(":"))
		switch string(field) {
		case "event", "data", "id", "retry":
		default:
			return false
		}
	}
	return true
}
