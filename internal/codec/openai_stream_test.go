package codec

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
)

// The canonical stream harness of the OpenAI translators' tests: read an
// SSE fixture through a decoder, check the canonical sequence, gather it
// into a whole answer, and run chunks through an encoder.

// oaiCheckChunks checks the canonical sequence contract of canon.go: one
// ChunkStart first (unless the stream is only a ChunkError); blocks one
// at a time with Index 0, 1, 2, …, deltas only inside the open block; then
// one ChunkEnd with no block open, or a ChunkError; nothing after either.
// complete says the input reached its terminal event, so the end must be
// there.
func oaiCheckChunks(chunks []Chunk, complete bool) error {
	started, ended := false, false
	open, next := -1, 0
	for i, c := range chunks {
		if ended {
			return fmt.Errorf("chunk %d (type %d) after the end", i, c.Type)
		}
		if !started && c.Type != ChunkStart && c.Type != ChunkError {
			return fmt.Errorf("chunk %d (type %d) before ChunkStart", i, c.Type)
		}
		switch c.Type {
		case ChunkStart:
			if started {
				return fmt.Errorf("chunk %d: a second ChunkStart", i)
			}
			started = true
		case ChunkBlockStart:
			if open >= 0 {
				return fmt.Errorf("chunk %d: block %d starts while block %d is open", i, c.Index, open)
			}
			if c.Index != next {
				return fmt.Errorf("chunk %d: block index %d, want %d", i, c.Index, next)
			}
			open = c.Index
			next++
		case ChunkDelta:
			if c.Index != open || open < 0 {
				return fmt.Errorf("chunk %d: delta for block %d while block %d is open", i, c.Index, open)
			}
		case ChunkBlockStop:
			if c.Index != open || open < 0 {
				return fmt.Errorf("chunk %d: stop of block %d while block %d is open", i, c.Index, open)
			}
			open = -1
		case ChunkEnd:
			if open >= 0 {
				return fmt.Errorf("chunk %d: ChunkEnd while block %d is open", i, open)
			}
			ended = true
		case ChunkError:
			if c.Err == nil {
				return fmt.Errorf("chunk %d: ChunkError without Err", i)
			}
			ended = true
		}
	}
	if complete && !ended {
		return fmt.Errorf("the stream ended without ChunkEnd or ChunkError")
	}
	return nil
}

// oaiDecodeSSE reads data with an EventReader and decodes every event,
// stopping at the first error.
func oaiDecodeSSE(dec StreamDecoder, data []byte) ([]Chunk, error) {
	rd := NewEventReader(bytes.NewReader(data))
	var chunks []Chunk
	for {
		ev, err := rd.Next()
		if errors.Is(err, io.EOF) {
			return chunks, nil
		}
		if err != nil {
			return chunks, err
		}
		if chunks, err = dec.Decode(ev, chunks); err != nil {
			return chunks, err
		}
	}
}

// oaiEncodeAll encodes chunks with enc.
func oaiEncodeAll(enc StreamEncoder, chunks []Chunk) []byte {
	var out []byte
	for i := range chunks {
		out = enc.Encode(&chunks[i], out)
	}
	return out
}

// oaiCollect gathers a canonical chunk sequence into the whole answer it
// streams.
func oaiCollect(chunks []Chunk) *Response {
	r := &Response{}
	for _, c := range chunks {
		switch c.Type {
		case ChunkStart:
			r.ID, r.Model = c.ID, c.Model
		case ChunkBlockStart:
			r.Parts = append(r.Parts, c.Block)
		case ChunkDelta:
			p := &r.Parts[len(r.Parts)-1]
			switch {
			case p.Kind == PartToolCall:
				p.Arguments = append(p.Arguments, c.Text...)
			case c.Signature:
				p.Signature += c.Text
			case p.Kind == PartRedactedThinking:
				p.Data += c.Text
			default:
				p.Text += c.Text
			}
		case ChunkEnd:
			r.StopReason, r.StopSequence, r.Usage = c.StopReason, c.StopSequence, c.Usage
		}
	}
	for i := range r.Parts {
		if r.Parts[i].Kind == PartToolCall && len(r.Parts[i].Arguments) == 0 {
			r.Parts[i].Arguments = json.RawMessage("{}")
		}
	}
	return r
}

// oaiFixture reads testdata/openai/name.
func oaiFixture(t testing.TB, name string) []byte {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "openai", name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestOAICheckChunksCatchesBrokenSequences(t *testing.T) {
	start := Chunk{Type: ChunkStart}
	end := Chunk{Type: ChunkEnd}
	open := func(i int) Chunk { return Chunk{Type: ChunkBlockStart, Index: i} }
	stop := func(i int) Chunk { return Chunk{Type: ChunkBlockStop, Index: i} }
	tests := []struct {
		name     string
		chunks   []Chunk
		complete bool
		ok       bool
	}{
		{"good", []Chunk{start, open(0), {Type: ChunkDelta}, stop(0), open(1), stop(1), end}, true, true},
		{"error only", []Chunk{{Type: ChunkError, Err: &Error{}}}, true, true},
		{"unfinished prefix", []Chunk{start, open(0)}, false, true},
		{"no end", []Chunk{start}, true, false},
		{"two starts", []Chunk{start, start}, false, false},
		{"gap in indices", []Chunk{start, open(0), stop(0), open(2)}, false, false},
		{"overlapping blocks", []Chunk{start, open(0), open(1)}, false, false},
		{"delta outside", []Chunk{start, {Type: ChunkDelta}}, false, false},
		{"end with open block", []Chunk{start, open(0), end}, false, false},
		{"after end", []Chunk{start, end, {Type: ChunkUsage}}, false, false},
		{"before start", []Chunk{{Type: ChunkUsage}, start}, false, false},
	}
	for _, tt := range tests {
		if err := oaiCheckChunks(tt.chunks, tt.complete); (err == nil) != tt.ok {
			t.Errorf("%s: oaiCheckChunks = %v, want ok=%v", tt.name, err, tt.ok)
		}
	}
}
