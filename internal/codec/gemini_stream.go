package codec

import (
	"bytes"
	"errors"
	"fmt"
	"net/http"

	"github.com/tidwall/gjson"
)

// NewStreamDecoder follows a Gemini streamGenerateContent?alt=sse stream.
func (gemini) NewStreamDecoder() StreamDecoder { return &geminiStreamDecoder{} }

// NewStreamEncoder writes a Gemini streamGenerateContent?alt=sse stream.
func (gemini) NewStreamEncoder(*Request) StreamEncoder { return &geminiStreamEncoder{} }

var (
	_ StreamDecoder = (*geminiStreamDecoder)(nil)
	_ StreamEncoder = (*geminiStreamEncoder)(nil)
)

// geminiStreamDecoder turns Gemini's chunks, each a whole
// GenerateContentResponse, into canonical blocks: consecutive text parts
// extend one text block, consecutive thought parts one thinking block (a
// thought's signature a signature delta), and each functionCall, which
// arrives whole, is a block of its own with its arguments as one delta and
// its signature on the block. The chunk with a finishReason ends the
// stream (Gemini has no terminal event): a usage-only chunk after it is
// not waited for. A thoughtSignature on a text part is dropped.
type geminiStreamDecoder struct {
	started, done bool
	next          int
	open          bool
	kind          PartKind
	calls         int
	usage         Usage
}

// Decode reads one event.
func (d *geminiStreamDecoder) Decode(ev *Event, out []Chunk) ([]Chunk, error) {
	data := bytes.TrimSpace(ev.Data)
	if d.done || len(data) == 0 {
		return out, nil
	}
	if !gjson.ValidBytes(data) || data[0] != '{' {
		return out, errors.New("gemini stream: event data is not a JSON object")
	}
	s := string(data) // one copy: the chunks' strings point into it
	var c geminiChunk
	c.read(gjson.Parse(s))
	if c.err.Exists() {
		ge := gemini{}.DecodeError(0, data)
		d.done = true
		return append(out, Chunk{Type: ChunkError, Err: &ge}), nil
	}
	if c.usage.Exists() {
		d.usage = geminiUsage(c.usage)
	}
	if !d.started {
		d.started = true
		out = append(out, Chunk{Type: ChunkStart, ID: c.id.Str, Model: c.model.Str, Usage: d.usage})
	}
	c.parts.ForEach(func(_, p gjson.Result) bool {
		out = d.part(p, out)
		return true
	})
	finish := c.finish.Str
	if finish == "FINISH_REASON_UNSPECIFIED" {
		finish = ""
	}
	if finish == "" && !c.candidate && c.feedback.Get("blockReason").Str != "" {
		finish = "SAFETY" // the prompt was blocked: no candidate comes
	}
	if finish == "" {
		if c.usage.Exists() {
			out = append(out, Chunk{Type: ChunkUsage, Usage: d.usage})
		}
		return out, nil
	}
	return d.finish(out, finish), nil
}

// End closes a stream that ended before a chunk with a finishReason (Gemini
// has no other terminal event) as a STOP would have: end, or tool use when
// the stream had function calls, with the last usage. After the finish or
// an error it appends nothing.
func (d *geminiStreamDecoder) End(out []Chunk) []Chunk {
	if d.done {
		return out
	}
	if !d.started {
		d.started = true
		out = append(out, Chunk{Type: ChunkStart, Usage: d.usage})
	}
	return d.finish(out, "")
}

// finish ends the stream with finishReason reason: it closes the open block
// and appends the ChunkEnd.
func (d *geminiStreamDecoder) finish(out []Chunk, reason string) []Chunk {
	out = d.closeBlock(out)
	d.done = true
	return append(out, Chunk{Type: ChunkEnd, StopReason: geminiStop(reason, d.calls > 0), Usage: d.usage})
}

// geminiChunk holds the fields the decoders read of a
// GenerateContentResponse (a whole answer or a streamed chunk), found in
// one pass over each object.
type geminiChunk struct {
	err, usage, id, model, feedback gjson.Result
	// candidate: the chunk has a first candidate, whose parts and
	// finishReason these are.
	candidate     bool
	parts, finish gjson.Result
}

func (c *geminiChunk) read(root gjson.Result) {
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "candidates":
			v.ForEach(func(_, cand gjson.Result) bool {
				c.candidate = true
				cand.ForEach(func(k, f gjson.Result) bool {
					switch k.Str {
					case "content":
						c.parts = f.Get("parts")
					case "finishReason":
						c.finish = f
					}
					return true
				})
				return false // the first candidate only
			})
		case "usageMetadata":
			c.usage = v
		case "responseId":
			c.id = v
		case "modelVersion":
			c.model = v
		case "promptFeedback":
			c.feedback = v
		case "error":
			c.err = v
		}
		return true
	})
}

// Done reports whether a chunk with a finishReason, or an error, was seen.
func (d *geminiStreamDecoder) Done() bool { return d.done }

func (d *geminiStreamDecoder) part(p gjson.Result, out []Chunk) []Chunk {
	var text, call gjson.Result
	var thought bool
	var sig string
	p.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "text":
			text = v
		case "thought":
			thought = v.Bool()
		case "thoughtSignature":
			sig = v.Str
		case "functionCall":
			call = v
		}
		return true
	})
	if call.Exists() {
		return d.call(call, sig, out)
	}
	if text.Type != gjson.String {
		return out // inline data, code execution, …: no canonical block
	}
	kind := PartText
	if thought {
		kind = PartThinking
	} else {
		sig = "" // the canonical stream carries thinking signatures only
	}
	if text.Str == "" && sig == "" {
		return out
	}
	if !d.open || d.kind != kind {
		out = d.closeBlock(out)
		out = append(out, Chunk{Type: ChunkBlockStart, Index: d.next, Block: Part{Kind: kind}})
		d.open, d.kind = true, kind
	}
	if text.Str != "" {
		out = append(out, Chunk{Type: ChunkDelta, Index: d.next, Text: text.Str})
	}
	if sig != "" {
		out = append(out, Chunk{Type: ChunkDelta, Index: d.next, Text: sig, Signature: true})
	}
	return out
}

// call writes a whole function call as a block: its start (with the
// part's signature), its arguments as one delta, its stop.
func (d *geminiStreamDecoder) call(fc gjson.Result, sig string, out []Chunk) []Chunk {
	out = d.closeBlock(out)
	d.calls++
	b := Part{Kind: PartToolCall, ID: fc.Get("id").Str, Name: fc.Get("name").Str, Signature: sig}
	if b.ID == "" {
		b.ID = fmt.Sprintf("call_%d", d.calls)
	}
	args := "{}"
	if a := fc.Get("args"); a.IsObject() {
		args = a.Raw
	}
	out = append(out,
		Chunk{Type: ChunkBlockStart, Index: d.next, Block: b},
		Chunk{Type: ChunkDelta, Index: d.next, Text: args},
		Chunk{Type: ChunkBlockStop, Index: d.next})
	d.next++
	return out
}

func (d *geminiStreamDecoder) closeBlock(out []Chunk) []Chunk {
	if !d.open {
		return out
	}
	out = append(out, Chunk{Type: ChunkBlockStop, Index: d.next})
	d.next++
	d.open = false
	return out
}

// geminiStreamEncoder writes canonical chunks as Gemini's chunks: each
// text or thinking delta is a chunk of one part; a tool call is held until
// its block stops and sent as one functionCall part (arguments that are
// not a JSON object become {}); ChunkEnd is a chunk with the finishReason
// and usageMetadata. After it, or an error, nothing is written.
type geminiStreamEncoder struct {
	ended   bool
	id      string
	model   string
	kind    PartKind
	open    bool
	call    Part // the tool call being held
	args    []byte
	usage   Usage
	pending bool // a tool call is held
}

// Encode appends the events of c.
func (e *geminiStreamEncoder) Encode(c *Chunk, out []byte) []byte {
	if e.ended {
		return out
	}
	switch c.Type {
	case ChunkStart:
		e.id, e.model, e.usage = c.ID, c.Model, c.Usage
	case ChunkBlockStart:
		out = e.flushCall(out)
		e.open, e.kind = true, c.Block.Kind
		if c.Block.Kind == PartToolCall {
			e.call = Part{Kind: PartToolCall, ID: c.Block.ID, Name: c.Block.Name, Signature: c.Block.Signature}
			e.args = e.args[:0]
			e.pending = true
		}
	case ChunkDelta:
		out = e.delta(c, out)
	case ChunkBlockStop:
		out = e.flushCall(out)
		e.open = false
	case ChunkUsage:
		e.usage = c.Usage
	case ChunkEnd:
		out = e.flushCall(out)
		if c.Usage != (Usage{}) {
			e.usage = c.Usage
		}
		out = append(out, `data: {"candidates":[{"content":{"role":"model","parts":[{"text":""}]},"finishReason":"`...)
		out = append(out, geminiFinishName(c.StopReason)...)
		out = append(out, `","index":0}],"usageMetadata":`...)
		out = appendGeminiUsage(out, e.usage)
		out = appendGeminiIdentity(out, e.id, e.model)
		out = append(out, '\n', '\n')
		e.ended = true
	case ChunkError:
		e.ended = true
		var ge Error
		if c.Err != nil {
			ge = *c.Err
		}
		if ge.Status == 0 {
			ge.Status = http.StatusInternalServerError
		}
		out = append(out, "data: "...)
		out = append(out, gemini{}.ErrorBody(ge)...)
		out = append(out, '\n', '\n')
	}
	return out
}

func (e *geminiStreamEncoder) delta(c *Chunk, out []byte) []byte {
	if !e.open || c.Text == "" {
		return out
	}
	switch {
	case e.kind == PartToolCall:
		e.args = append(e.args, c.Text...)
		return out
	case e.kind == PartThinking && c.Signature:
		if !looksBase64(c.Text) {
			return out
		}
		out = e.chunkStart(out)
		out = append(out, `{"text":"","thought":true,"thoughtSignature":`...)
		out = wireString(out, c.Text)
	case e.kind == PartThinking:
		out = e.chunkStart(out)
		out = append(out, `{"text":`...)
		out = wireString(out, c.Text)
		out = append(out, `,"thought":true`...)
	case e.kind == PartText:
		out = e.chunkStart(out)
		out = append(out, `{"text":`...)
		out = wireString(out, c.Text)
	default:
		return out
	}
	return e.chunkEnd(out)
}

// chunkStart begins a data event of one candidate, up to its first part.
func (e *geminiStreamEncoder) chunkStart(out []byte) []byte {
	return append(out, `data: {"candidates":[{"content":{"role":"model","parts":[`...)
}

// chunkEnd closes the part and the event.
func (e *geminiStreamEncoder) chunkEnd(out []byte) []byte {
	out = append(out, `}]},"index":0}]`...)
	out = appendGeminiIdentity(out, e.id, e.model)
	return append(out, '\n', '\n')
}

// flushCall sends the held tool call, if any.
func (e *geminiStreamEncoder) flushCall(out []byte) []byte {
	if !e.pending {
		return out
	}
	e.pending = false
	args := bytes.TrimSpace(e.args)
	if len(args) == 0 || args[0] != '{' || !gjson.ValidBytes(args) {
		args = append(args[:0], '{', '}')
	}
	e.call.Arguments = args
	if !looksBase64(e.call.Signature) {
		e.call.Signature = ""
	}
	out = append(out, `data: {"candidates":[{"content":{"role":"model","parts":[`...)
	out = appendGeminiCall(out, &e.call, e.call.Signature)
	out = append(out, `]},"index":0}]`...)
	out = appendGeminiIdentity(out, e.id, e.model)
	return append(out, '\n', '\n')
}
