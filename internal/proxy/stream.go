package proxy

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/tidwall/gjson"

	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/health"
	"switchyard/internal/metrics"
)

// maxEventBytes bounds one SSE event, so a broken upstream cannot make the
// gateway buffer without limit.
const maxEventBytes = 8 << 20

// errEventTooLarge: an SSE event exceeded maxEventBytes.
var errEventTooLarge = errors.New("SSE event too large")

// event is one server-sent event: its bytes as received, plus the fields
// the usage scanner reads.
type event struct {
	raw  []byte // every line of the event including the blank line ending it
	name []byte // the event: field ("" when absent)
	data []byte // the data: lines joined by \n
}

// eventReader splits an SSE body into events without buffering more than one.
type eventReader struct {
	br  *bufio.Reader
	ev  event
	eof bool
}

func newEventReader(r io.Reader) *eventReader {
	return &eventReader{br: bufio.NewReaderSize(r, 16<<10)}
}

// next returns the next event; it is valid until the following call.
// A final event cut short by EOF is returned whole before io.EOF.
func (r *eventReader) next() (*event, error) {
	if r.eof {
		return nil, io.EOF
	}
	ev := &r.ev
	ev.raw, ev.name, ev.data = ev.raw[:0], ev.name[:0], ev.data[:0]
	for {
		line, err := r.readLine()
		if len(line) > 0 {
			ev.raw = append(ev.raw, line...)
			if len(ev.raw) > maxEventBytes {
				return nil, errEventTooLarge
			}
			content := bytes.TrimRight(line, "\r\n")
			if len(content) == 0 {
				return ev, nil
			}
			ev.parseField(content)
		}
		if err == io.EOF {
			r.eof = true
			if len(ev.raw) > 0 {
				return ev, nil
			}
			return nil, io.EOF
		}
		if err != nil {
			return nil, err
		}
	}
}

// readLine reads through the next \n, however long the line (bounded by maxEventBytes).
func (r *eventReader) readLine() ([]byte, error) {
	line, err := r.br.ReadSlice('\n')
	if !errors.Is(err, bufio.ErrBufferFull) {
		return line, err
	}
	long := append([]byte(nil), line...)
	for errors.Is(err, bufio.ErrBufferFull) && len(long) <= maxEventBytes {
		line, err = r.br.ReadSlice('\n')
		long = append(long, line...)
	}
	return long, err
}

func (ev *event) parseField(line []byte) {
	field, value, _ := bytes.Cut(line, []byte(":"))
	value = bytes.TrimPrefix(value, []byte(" "))
	switch string(field) {
	case "event":
		ev.name = append(ev.name, value...)
	case "data":
		if len(ev.data) > 0 {
			ev.data = append(ev.data, '\n')
		}
		ev.data = append(ev.data, value...)
	}
}

// relayStream passes an SSE answer to the client event by event. Nothing is
// written until the first event has arrived, so an upstream that fails
// before it is failed over like any other; after it, the stream stays on
// this upstream and a break ends it with a protocol-shaped error event.
func (x *exchange) relayStream(actx context.Context, cancel context.CancelCauseFunc, firstByte clock.Timer, resp *http.Response,
	up *upstream, rs config.RouteSettings, sent time.Time,
) attemptResult {
	rd := newEventReader(resp.Body)
	ev, err := rd.next()
	if err != nil {
		return x.streamFailure(actx, err, "stream ended before its first event")
	}
	if !wellFormedFirst(ev) {
		// Nothing is written yet: fail over like an invalid JSON body.
		return attemptResult{outcome: health.ServerError, class: metrics.ErrorMalformed,
			detail: "malformed upstream stream (first event is not SSE with JSON data)"}
	}
	firstByte.Stop()
	firstAt := x.s.opts.Clock.Now()
	x.log.TTFT = firstAt.Sub(sent)
	x.log.Status = resp.StatusCode
	h := x.w.Header()
	copyResponseHeaders(h, resp.Header)
	x.setGatewayHeaders(up)
	x.w.WriteHeader(resp.StatusCode)
	rc := http.NewResponseController(x.w)
	idle := x.s.opts.Clock.AfterFunc(rs.StreamIdleTimeout, func() { cancel(errStreamIdle) })
	defer idle.Stop()

	scan := usageScanner{format: x.ep.usage}
	for {
		scan.observe(ev)
		x.log.InputTokens, x.log.OutputTokens = scan.in, scan.out
		if _, err := x.w.Write(ev.raw); err != nil {
			return attemptResult{outcome: health.Canceled, written: true}
		}
		_ = rc.Flush()
		ev, err = rd.next()
		if err == io.EOF && (scan.finished || up.cfg.Provider == config.ProviderOpenAICompatible) {
			res := attemptResult{outcome: health.Success, written: true, ttft: x.log.TTFT}
			if d := x.s.opts.Clock.Now().Sub(firstAt); d > 0 && scan.out > 0 {
				res.tps = float64(scan.out) / d.Seconds()
			}
			return res
		}
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		if err != nil {
			res := x.streamFailure(actx, err, "stream interrupted")
			res.written, res.class = true, metrics.ErrorStreamInterrupted
			if res.outcome != health.Canceled {
				x.log.ErrorClass, x.log.Error = "stream_interrupted", res.detail
				_, _ = x.w.Write(streamErrorEvent(x.ep.protocol, "upstream "+up.cfg.Name+": "+res.detail))
				_ = rc.Flush()
			}
			return res
		}
		idle.Reset(rs.StreamIdleTimeout)
	}
}

// wellFormedFirst reports whether ev can start a client's stream: its data,
// when it has any, is JSON (or OpenAI's [DONE]), and every line is an SSE
// field or comment, so that an HTML page or a bare JSON body sent as
// text/event-stream is not relayed as a stream.
func wellFormedFirst(ev *event) bool {
	if len(ev.data) > 0 && string(ev.data) != "[DONE]" && !gjson.ValidBytes(ev.data) {
		return false
	}
	for line := range bytes.Lines(bytes.TrimPrefix(ev.raw, []byte("\uFEFF"))) { // a stream may start with a BOM
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

// streamFailure classifies a read error on an upstream stream.
func (x *exchange) streamFailure(actx context.Context, err error, what string) attemptResult {
	if x.r.Context().Err() != nil {
		return attemptResult{outcome: health.Canceled, detail: "client canceled"}
	}
	if actx.Err() != nil {
		err = context.Cause(actx) // first-byte or idle timeout, or the request deadline
	}
	class := metrics.ErrorConnection
	switch {
	case errors.Is(err, errFirstByteTimeout):
		class = metrics.ErrorFirstByteTimeout
	case errors.Is(err, errRequestTimeout) || errors.Is(err, errStreamIdle):
		class = metrics.ErrorTimeout
	case errors.Is(err, errEventTooLarge):
		class = metrics.ErrorMalformed
	}
	return attemptResult{outcome: health.ServerError, class: class, detail: fmt.Sprintf("%s: %v", what, err)}
}

// streamErrorEvent is the last event of a broken stream (DESIGN.md §3).
func streamErrorEvent(p Protocol, msg string) []byte {
	if p == Anthropic {
		b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": "api_error", "message": msg}})
		return append(append([]byte("event: error\ndata: "), b...), "\n\n"...)
	}
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"message": msg, "type": "upstream_error", "code": "stream_interrupted"}})
	return append(append([]byte("data: "), b...), "\n\n"...)
}
