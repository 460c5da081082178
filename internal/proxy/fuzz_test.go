package proxy

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"testing/iotest"

	"github.com/tidwall/gjson"
)

// FuzzPeek feeds arbitrary request bodies to exchange.peek. It checks that
// peek does not panic; that a failure is an *apiError; that a success sets a non-empty model that is the body's top-level
// "model" string, mirrors model and stream into the request log, and
// estimates at least a quarter of the body's bytes in tokens (so a negative
// or overflowing max_tokens cannot shrink or wrap the estimate).
func FuzzPeek(f *testing.F) {
	f.Add([]byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"max_tokens":64}`))
	f.Add([]byte(`{"model":"claude-sonnet-4-5","stream":true,"max_tokens":1024,"messages":[]}`))
	f.Add([]byte(`{"model":"gpt-4o","max_tokens":-9223372036854775808}`))
	f.Add([]byte(`{"model":"","stream":"yes"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		x := &exchange{body: body}
		err := x.peek()
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) {
				t.Fatalf("peek error %T %v, want *apiError", err, err)
			}
			return
		}
		if x.model == "" || x.model != x.log.Model {
			t.Fatalf("model %q, log model %q", x.model, x.log.Model)
		}
		if m := gjson.GetBytes(body, "model"); m.Type != gjson.String || m.Str != x.model {
			t.Fatalf("model %q, body has %v", x.model, m)
		}
		if x.stream != x.log.Stream {
			t.Fatalf("stream %v, log stream %v", x.stream, x.log.Stream)
		}
		if floor := int64(len(body)) / 4; x.est < floor {
			t.Fatalf("estimate %d tokens < %d (body bytes/4)", x.est, floor)
		}
	})
}

// FuzzEventReader feeds arbitrary bytes to eventReader and every event to a
// usageScanner of each format. It checks that nothing panics; that next ends
// with io.EOF (a bytes.Reader never fails and the fuzzer's inputs are far
// below maxEventBytes); that every event's raw is non-empty, at most
// maxEventBytes and at least as long as its name and data; that the raws,
// concatenated, are the input verbatim; that reading one byte at a time
// yields the same events; and that a scanner, once finished, stays finished.
// Token counts are copied from the stream as sent and may be negative; their
// consumers (Reservation.Commit, Cost, Metrics.Tokens) clamp them.
func FuzzEventReader(f *testing.F) {
	f.Add([]byte("data: {\"choices\":[]}\n\ndata: [DONE]\n\n"))
	f.Add([]byte("event: message_start\ndata: {\"message\":{\"usage\":{\"input_tokens\":3}}}\n\nevent: message_stop\ndata: {}\n\n"))
	f.Add([]byte("data: a\r\ndata: b\r\n\r\ndata: cut short"))
	f.Fuzz(func(t *testing.T, input []byte) {
		whole := readEvents(t, input, bytes.NewReader(input))
		if !bytes.Equal(bytes.Join(whole, nil), input) {
			t.Fatalf("events %q do not concatenate to the input %q", whole, input)
		}
		bytewise := readEvents(t, input, iotest.OneByteReader(bytes.NewReader(input)))
		if len(bytewise) != len(whole) {
			t.Fatalf("%d events read whole, %d byte by byte", len(whole), len(bytewise))
		}
		for i := range whole {
			if !bytes.Equal(whole[i], bytewise[i]) {
				t.Fatalf("event %d: %q read whole, %q byte by byte", i, whole[i], bytewise[i])
			}
		}
	})
}

// readEvents reads r to the end, scanning every event in each usage format,
// and returns copies of the events' raw bytes.
func readEvents(t *testing.T, input []byte, r io.Reader) [][]byte {
	t.Helper()
	rd := newEventReader(r)
	scans := []*usageScanner{{format: usageOpenAI}, {format: usageResponses}, {format: usageAnthropic}}
	var raws [][]byte
	for range len(input) + 1 { // every event consumes at least one byte
		ev, err := rd.next()
		if err == io.EOF {
			if _, err := rd.next(); err != io.EOF {
				t.Fatalf("next after io.EOF: %v", err)
			}
			return raws
		}
		if err != nil {
			t.Fatalf("next: %v", err)
		}
		if len(ev.raw) == 0 || len(ev.raw) > maxEventBytes {
			t.Fatalf("event of %d bytes", len(ev.raw))
		}
		if len(ev.name) > len(ev.raw) || len(ev.data) > len(ev.raw) {
			t.Fatalf("event %q: name %q or data %q longer than it", ev.raw, ev.name, ev.data)
		}
		for _, s := range scans {
			was := s.finished
			s.observe(ev)
			if was && !s.finished {
				t.Fatalf("format %d: scanner unfinished by %q", s.format, ev.raw)
			}
		}
		raws = append(raws, bytes.Clone(ev.raw))
	}
	t.Fatalf("more than %d events from %d bytes", len(input)+1, len(input))
	return nil
}

// FuzzBodyUsage feeds arbitrary response bodies to bodyUsage in each format.
// It checks that bodyUsage does not panic, is deterministic, and reports no
// tokens for a body that does not mention "usage". Counts are otherwise the
// body's as sent, negative included (see FuzzEventReader).
func FuzzBodyUsage(f *testing.F) {
	f.Add(uint8(usageOpenAI), []byte(`{"id":"chatcmpl-1","usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}`))
	f.Add(uint8(usageAnthropic), []byte(`{"type":"message","usage":{"input_tokens":10,"output_tokens":20}}`))
	f.Add(uint8(usageResponses), []byte(`{"object":"response","usage":{"input_tokens":1e30,"output_tokens":-4}}`))
	f.Fuzz(func(t *testing.T, format uint8, body []byte) {
		fm := usageFormat(format % 3)
		in, out := bodyUsage(fm, body)
		if in2, out2 := bodyUsage(fm, body); in2 != in || out2 != out {
			t.Fatalf("bodyUsage gave (%d, %d) then (%d, %d)", in, out, in2, out2)
		}
		if !bytes.Contains(body, []byte("usage")) && (in != 0 || out != 0) {
			t.Fatalf("bodyUsage(%q) = (%d, %d) without usage", body, in, out)
		}
	})
}
