package codec

import (
	"bytes"
	"io"
	"testing"
	"testing/iotest"
)

// streamCodecs are the codecs whose Observe the fuzz targets exercise.
var streamCodecs = []Codec{OpenAIChat, OpenAIResponses, Anthropic}

// FuzzEventReader feeds arbitrary bytes to EventReader and every event to
// each codec's Observe. It checks that nothing panics; that Next ends with
// io.EOF (a bytes.Reader never fails and the fuzzer's inputs are far below
// MaxEventBytes); that every event's Raw is non-empty, at most
// MaxEventBytes and at least as long as its Name and Data; that the raws,
// concatenated, are the input verbatim; that reading one byte at a time
// yields the same events; and that a stream, once finished, stays finished.
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

// readEvents reads r to the end, observing every event with each codec,
// and returns copies of the events' raw bytes.
func readEvents(t *testing.T, input []byte, r io.Reader) [][]byte {
	t.Helper()
	rd := NewEventReader(r)
	states := make([]StreamState, len(streamCodecs))
	var raws [][]byte
	for range len(input) + 1 { // every event consumes at least one byte
		ev, err := rd.Next()
		if err == io.EOF {
			if _, err := rd.Next(); err != io.EOF {
				t.Fatalf("Next after io.EOF: %v", err)
			}
			return raws
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		if len(ev.Raw) == 0 || len(ev.Raw) > MaxEventBytes {
			t.Fatalf("event of %d bytes", len(ev.Raw))
		}
		if len(ev.Name) > len(ev.Raw) || len(ev.Data) > len(ev.Raw) {
			t.Fatalf("event %q: name %q or data %q longer than it", ev.Raw, ev.Name, ev.Data)
		}
		for i, c := range streamCodecs {
			was := states[i].Finished
			c.Observe(&states[i], ev)
			if was && !states[i].Finished {
				t.Fatalf("%s: stream unfinished by %q", c.Name(), ev.Raw)
			}
		}
		raws = append(raws, bytes.Clone(ev.Raw))
	}
	t.Fatalf("more than %d events from %d bytes", len(input)+1, len(input))
	return nil
}

// FuzzBodyUsage feeds arbitrary response bodies to each codec's Usage. It
// checks that Usage does not panic, is deterministic, and reports no tokens
// for a body that does not mention "usage". Counts are otherwise the body's
// as sent, negative included (see FuzzEventReader).
func FuzzBodyUsage(f *testing.F) {
	f.Add(uint8(0), []byte(`{"id":"chatcmpl-1","usage":{"prompt_tokens":12,"completion_tokens":5,"total_tokens":17}}`))
	f.Add(uint8(2), []byte(`{"type":"message","usage":{"input_tokens":10,"output_tokens":20}}`))
	f.Add(uint8(1), []byte(`{"object":"response","usage":{"input_tokens":1e30,"output_tokens":-4}}`))
	f.Fuzz(func(t *testing.T, format uint8, body []byte) {
		c := streamCodecs[int(format)%len(streamCodecs)]
		u := c.Usage(body)
		if u2 := c.Usage(body); u2 != u {
			t.Fatalf("%s: Usage gave %+v then %+v", c.Name(), u, u2)
		}
		if !bytes.Contains(body, []byte("usage")) && u != (Usage{}) {
			t.Fatalf("%s: Usage(%q) = %+v without usage", c.Name(), body, u)
		}
	})
}
