package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"testing"
)

// Fuzz targets of the Anthropic and Gemini translators, seeded from
// testdata/fuzz/<name>/ (the recorded streams and typical requests).

// FuzzAnthropicRequest decodes arbitrary bodies as Anthropic requests.
// What decodes must encode, to Anthropic and to Gemini, as valid JSON (a
// Gemini tool result that answers no call may be refused), and the
// Anthropic encoding must decode again.
func FuzzAnthropicRequest(f *testing.F) {
	f.Add([]byte(`{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"Hi"}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		agFuzzRequest(t, Anthropic.(Translator), body)
	})
}

// FuzzGeminiRequest is FuzzAnthropicRequest for Gemini requests.
func FuzzGeminiRequest(f *testing.F) {
	f.Add([]byte(`{"contents":[{"role":"user","parts":[{"text":"Hi"}]}]}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		agFuzzRequest(t, Gemini.(Translator), body)
	})
}

func agFuzzRequest(t *testing.T, from Translator, body []byte) {
	r, err := from.DecodeRequest(body)
	if err != nil {
		return
	}
	for _, to := range []Translator{Anthropic.(Translator), Gemini.(Translator)} {
		out, err := to.EncodeRequest(r, "model", EncodeOptions{})
		if err != nil {
			if to == Gemini.(Translator) {
				continue
			}
			t.Fatalf("%s: EncodeRequest: %v", to.Name(), err)
		}
		if !json.Valid(out) {
			t.Fatalf("%s: invalid JSON %s", to.Name(), out)
		}
		if _, err := to.DecodeRequest(out); err != nil {
			t.Fatalf("%s: its own encoding does not decode: %v\n%s", to.Name(), err, out)
		}
	}
}

// FuzzAnthropicStream feeds arbitrary bytes to the Anthropic stream
// decoder: the chunks up to the first error keep the canonical
// invariants, and both encoders turn them into events of valid JSON that
// decode again, keeping the invariants.
func FuzzAnthropicStream(f *testing.F) {
	f.Add(agSSE(`message_start {"type":"message_start","message":{"id":"m"}}`, `message_stop {"type":"message_stop"}`))
	f.Fuzz(func(t *testing.T, sse []byte) {
		agFuzzStream(t, Anthropic.(Translator), sse)
	})
}

// FuzzGeminiStream is FuzzAnthropicStream for Gemini streams.
func FuzzGeminiStream(f *testing.F) {
	f.Add(agData(`{"candidates":[{"content":{"parts":[{"text":"a"}]},"finishReason":"STOP"}]}`))
	f.Fuzz(func(t *testing.T, sse []byte) {
		agFuzzStream(t, Gemini.(Translator), sse)
	})
}

func agFuzzStream(t *testing.T, from Translator, sse []byte) {
	dec := from.NewStreamDecoder()
	chunks, _ := agDecodeStream(dec, sse)
	if err := agCheckChunks(chunks, false); err != nil {
		t.Fatalf("%s decoder: %v", from.Name(), err)
	}
	ended := len(chunks) > 0 && (chunks[len(chunks)-1].Type == ChunkEnd || chunks[len(chunks)-1].Type == ChunkError)
	if ended != dec.Done() {
		t.Fatalf("%s decoder: ended %v but Done() %v", from.Name(), ended, dec.Done())
	}
	for _, to := range []Translator{Anthropic.(Translator), Gemini.(Translator)} {
		out := agEncodeStream(to.NewStreamEncoder(&Request{}), chunks)
		agFuzzEventsJSON(t, to.Name(), out)
		again, err := agDecodeStream(to.NewStreamDecoder(), out)
		if err != nil {
			t.Fatalf("%s: its own stream does not decode: %v\n%s", to.Name(), err, out)
		}
		if err := agCheckChunks(again, false); err != nil {
			t.Fatalf("%s: its own stream breaks the invariants: %v\n%s", to.Name(), err, out)
		}
	}
}

// agFuzzEventsJSON fails t unless every event of sse carries valid JSON.
func agFuzzEventsJSON(t *testing.T, name string, sse []byte) {
	rd := NewEventReader(bytes.NewReader(sse))
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if !json.Valid(ev.Data) {
			t.Fatalf("%s: event %q carries invalid JSON %q", name, ev.Name, ev.Data)
		}
	}
}
