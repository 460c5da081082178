package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// Test helpers shared by the Anthropic and Gemini translator tests, and
// the tests that cross the two.

// agFixture reads testdata/name.
func agFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// agJSONEqual fails t unless got and want are equal JSON values.
func agJSONEqual(t testing.TB, got, want []byte) {
	t.Helper()
	var g, w any
	if err := json.Unmarshal(got, &g); err != nil {
		t.Fatalf("got invalid JSON (%v): %s", err, got)
	}
	if err := json.Unmarshal(want, &w); err != nil {
		t.Fatalf("want invalid JSON (%v): %s", err, want)
	}
	if !reflect.DeepEqual(g, w) {
		t.Errorf("JSON differs\n got: %s\nwant: %s", agCompact(got), agCompact(want))
	}
}

func agCompact(b []byte) []byte {
	var out bytes.Buffer
	if json.Compact(&out, b) != nil {
		return b
	}
	return out.Bytes()
}

// agEqual fails t unless got and want are deeply equal, showing both.
func agEqual(t testing.TB, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		g, _ := json.MarshalIndent(got, "", "  ")
		w, _ := json.MarshalIndent(want, "", "  ")
		t.Errorf("differs\n got: %s\nwant: %s", g, w)
	}
}

// agDecodeStream feeds every event of sse to dec and returns the chunks,
// or the first error.
func agDecodeStream(dec StreamDecoder, sse []byte) ([]Chunk, error) {
	rd := NewEventReader(bytes.NewReader(sse))
	var out []Chunk
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		if out, err = dec.Decode(ev, out); err != nil {
			return out, err
		}
	}
}

// agEncodeStream writes chunks with enc.
func agEncodeStream(enc StreamEncoder, chunks []Chunk) []byte {
	var out []byte
	for i := range chunks {
		out = enc.Encode(&chunks[i], out)
	}
	return out
}

// agCheckChunks checks the canonical sequence of canon.go: one ChunkStart
// first; blocks one at a time with indices 0, 1, 2, …, each started,
// given deltas of its own index, and stopped; ChunkUsage anywhere after
// the start; and one ChunkEnd (or a ChunkError) last. complete says
// whether the stream must have ended.
func agCheckChunks(chunks []Chunk, complete bool) error {
	next, open, ended := 0, false, false
	for i, c := range chunks {
		if ended {
			return fmt.Errorf("chunk %d (type %d) after the end", i, c.Type)
		}
		if i == 0 && c.Type != ChunkStart && c.Type != ChunkError {
			return fmt.Errorf("first chunk is type %d, not ChunkStart", c.Type)
		}
		switch c.Type {
		case ChunkStart:
			if i != 0 {
				return fmt.Errorf("chunk %d: a second ChunkStart", i)
			}
		case ChunkBlockStart:
			if open || c.Index != next {
				return fmt.Errorf("chunk %d: block %d starts while open=%v, expected index %d", i, c.Index, open, next)
			}
			open = true
		case ChunkDelta:
			if !open || c.Index != next {
				return fmt.Errorf("chunk %d: delta for block %d, open=%v, current %d", i, c.Index, open, next)
			}
		case ChunkBlockStop:
			if !open || c.Index != next {
				return fmt.Errorf("chunk %d: stop of block %d, open=%v, current %d", i, c.Index, open, next)
			}
			open = false
			next++
		case ChunkEnd, ChunkError:
			if open && c.Type == ChunkEnd {
				return fmt.Errorf("chunk %d: ChunkEnd with block %d open", i, next)
			}
			ended = true
		}
	}
	if complete && !ended {
		return errors.New("no ChunkEnd")
	}
	return nil
}

// agCollect accumulates a canonical stream into the answer it carries.
func agCollect(chunks []Chunk) *Response {
	r := &Response{}
	for _, c := range chunks {
		switch c.Type {
		case ChunkStart:
			r.ID, r.Model, r.Usage = c.ID, c.Model, c.Usage
		case ChunkBlockStart:
			p := c.Block
			if p.Kind == PartToolCall {
				p.Arguments = nil
			}
			r.Parts = append(r.Parts, p)
		case ChunkDelta:
			p := &r.Parts[len(r.Parts)-1]
			switch {
			case c.Signature:
				p.Signature += c.Text
			case p.Kind == PartToolCall:
				p.Arguments = append(p.Arguments, c.Text...)
			default:
				p.Text += c.Text
			}
		case ChunkUsage:
			r.Usage = c.Usage
		case ChunkEnd:
			r.StopReason, r.StopSequence, r.Usage = c.StopReason, c.StopSequence, c.Usage
		}
	}
	for i := range r.Parts {
		if r.Parts[i].Arguments != nil {
			r.Parts[i].Arguments = agCompact(r.Parts[i].Arguments)
		}
	}
	return r
}

// agCompactArgs returns r with every tool call's arguments compacted, to
// compare answers whose JSON spacing differs.
func agCompactArgs(r *Response) *Response {
	c := *r
	c.Parts = append([]Part(nil), r.Parts...)
	for i := range c.Parts {
		if c.Parts[i].Arguments != nil {
			c.Parts[i].Arguments = agCompact(c.Parts[i].Arguments)
		}
	}
	return &c
}

// TestCrossAnthropicGemini carries each recorded stream to the other
// protocol and back. The parts survive, but for the thought signatures of
// Gemini's tool calls, which Anthropic cannot carry; so does the usage, but
// for cache writes (Gemini has none) and reasoning tokens (Anthropic
// reports none).
func TestCrossAnthropicGemini(t *testing.T) {
	tests := []struct {
		name     string
		fixture  string
		from, to Translator
		lost     func(u *Usage, parts []Part)
	}{
		{
			name: "anthropic through gemini", fixture: "anthropic-stream.sse", from: Anthropic.(Translator), to: Gemini.(Translator),
			lost: func(u *Usage, _ []Part) { u.CacheWrite = 0 },
		},
		{
			name: "gemini through anthropic", fixture: "gemini-stream.sse", from: Gemini.(Translator), to: Anthropic.(Translator),
			lost: func(u *Usage, parts []Part) {
				u.Reasoning = 0
				for i := range parts {
					if parts[i].Kind == PartToolCall {
						parts[i].Signature = ""
					}
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			chunks, err := agDecodeStream(tt.from.NewStreamDecoder(), agFixture(t, tt.fixture))
			if err != nil {
				t.Fatal(err)
			}
			want := agCollect(chunks)
			if len(want.Parts) != 4 {
				t.Fatalf("the fixture's answer has %d parts, want thinking, text and two tool calls", len(want.Parts))
			}
			there := agEncodeStream(tt.to.NewStreamEncoder(&Request{}), chunks)
			chunks2, err := agDecodeStream(tt.to.NewStreamDecoder(), there)
			if err != nil {
				t.Fatalf("decoding %s's stream: %v\n%s", tt.to.Name(), err, there)
			}
			if err := agCheckChunks(chunks2, true); err != nil {
				t.Fatal(err)
			}
			back := agEncodeStream(tt.from.NewStreamEncoder(&Request{}), chunks2)
			chunks3, err := agDecodeStream(tt.from.NewStreamDecoder(), back)
			if err != nil {
				t.Fatalf("decoding %s's stream: %v\n%s", tt.from.Name(), err, back)
			}
			if err := agCheckChunks(chunks3, true); err != nil {
				t.Fatal(err)
			}
			tt.lost(&want.Usage, want.Parts)
			got := agCollect(chunks3)
			got.ID, want.ID = "", "" // Anthropic prefixes msg_
			agEqual(t, got, want)
			if got.Usage.Input == 0 || got.Usage.Output == 0 || got.Usage.CacheRead == 0 {
				t.Errorf("usage %+v lost a count", got.Usage)
			}
		})
	}
}
