package codec

import (
	"bytes"
	"fmt"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/tidwall/gjson"
)

// NewStreamDecoder follows a ConverseStream, its frames turned into Events
// (provider.Framer): Name the :event-type, Data the JSON payload.
func (bedrock) NewStreamDecoder() StreamDecoder { return &bedrockStreamDecoder{closed: -1} }

// NewStreamEncoder writes a ConverseStream as AWS event-stream frames.
func (bedrock) NewStreamEncoder(*Request) StreamEncoder {
	return &bedrockStreamEncoder{enc: eventstream.NewEncoder()}
}

var (
	_ StreamDecoder = (*bedrockStreamDecoder)(nil)
	_ StreamEncoder = (*bedrockStreamEncoder)(nil)
)

// bedrockStreamDecoder turns ConverseStream events into canonical chunks.
// Only a tool call's block has a contentBlockStart; a text or reasoning
// block starts with its first delta, of the kind that delta says.
// Blocks are renumbered from 0; a delta of a block already stopped, or of
// another kind than its open block, is dropped. messageStop closes the
// last block and gives the stop reason, but Converse sends the usage after
// it, in metadata: the ChunkEnd comes with metadata, which ends the
// stream. An exception frame (Event.Exception) is a ChunkError whose
// status is the exception's (throttlingException 429,
// serviceUnavailableException 503, validationException 400, the others
// 500). A signature delta of a thinking block is a signature chunk;
// redactedContent opens a redacted thinking block holding it.
type bedrockStreamDecoder struct {
	started, stopped, done bool
	// next is the canonical index of the next block.
	next int
	// open: a block is open, upstream index upstream, of kind kind.
	open     bool
	upstream int64
	kind     PartKind
	// closed is the highest upstream index of a block already stopped.
	closed  int64
	stop    StopReason
	stopSeq string
	usage   Usage
}

// Decode reads one event. Events after metadata or an exception, and
// event types not known, are ignored; a payload that is not a JSON object,
// or content before messageStart, is an error.
func (d *bedrockStreamDecoder) Decode(ev *Event, out []Chunk) ([]Chunk, error) {
	if d.done {
		return out, nil
	}
	if ev.Exception {
		d.done = true
		e := bedrockError(0, string(ev.Name), gjson.GetBytes(ev.Data, "message").Str)
		if e.Message == "" {
			e.Message = string(ev.Name)
		}
		return append(out, Chunk{Type: ChunkError, Err: &e}), nil
	}
	name := string(ev.Name)
	switch name {
	case bedrockEvMessageStart, bedrockEvBlockStart, bedrockEvBlockDelta, bedrockEvBlockStop, bedrockEvMessageStop, bedrockEvMetadata:
	default:
		return out, nil
	}
	data := bytes.TrimSpace(ev.Data)
	if len(data) == 0 || data[0] != '{' || !gjson.ValidBytes(data) {
		return out, fmt.Errorf("bedrock stream: event %q: payload is not a JSON object", name)
	}
	s := string(data) // one copy: the chunks' strings point into it
	if name == bedrockEvMessageStart {
		if d.started {
			return out, fmt.Errorf("bedrock stream: a second messageStart")
		}
		d.started = true
		return append(out, Chunk{Type: ChunkStart}), nil
	}
	if !d.started {
		return out, fmt.Errorf("bedrock stream: %s before messageStart", name)
	}
	switch name {
	case bedrockEvBlockStart:
		return d.blockStart(s, out), nil
	case bedrockEvBlockDelta:
		return d.delta(s, out), nil
	case bedrockEvBlockStop:
		if d.open && gjson.Get(s, "contentBlockIndex").Int() == d.upstream {
			out = d.closeBlock(out)
		}
		return out, nil
	case bedrockEvMessageStop:
		out = d.closeBlock(out)
		root := gjson.Parse(s)
		d.stopped = true
		d.stop = bedrockStop(root.Get("stopReason").Str)
		d.stopSeq = root.Get("additionalModelResponseFields.stop_sequence").Str
		return out, nil
	}
	// metadata
	d.usage = bedrockUsage(gjson.Get(s, "usage"))
	if !d.stopped {
		return append(out, Chunk{Type: ChunkUsage, Usage: d.usage}), nil
	}
	return d.finish(out), nil
}

// Done reports whether metadata after messageStop, or an exception, was seen.
func (d *bedrockStreamDecoder) Done() bool { return d.done }

// End closes a stream that ended without its metadata as metadata would
// have: the stop reason of messageStop (end when none came) and the usage
// seen so far. After the metadata or an exception it appends nothing.
func (d *bedrockStreamDecoder) End(out []Chunk) []Chunk {
	if d.done {
		return out
	}
	if !d.started {
		d.started = true
		out = append(out, Chunk{Type: ChunkStart})
	}
	return d.finish(d.closeBlock(out))
}

// finish ends the stream with the ChunkEnd.
func (d *bedrockStreamDecoder) finish(out []Chunk) []Chunk {
	d.done = true
	return append(out, Chunk{Type: ChunkEnd, StopReason: d.stop, StopSequence: d.stopSeq, Usage: d.usage})
}

// blockStart opens a tool call's block; a start of another kind (Converse
// may add some) is ignored, and its block opens with its first delta.
func (d *bedrockStreamDecoder) blockStart(s string, out []Chunk) []Chunk {
	tu := gjson.Get(s, "start.toolUse")
	if !tu.IsObject() {
		return out
	}
	idx := gjson.Get(s, "contentBlockIndex").Int()
	if idx <= d.closed {
		return out
	}
	out = d.closeBlock(out)
	p := Part{Kind: PartToolCall, ID: tu.Get("toolUseId").Str, Name: tu.Get("name").Str}
	return d.openBlock(out, idx, p)
}

func (d *bedrockStreamDecoder) openBlock(out []Chunk, idx int64, p Part) []Chunk {
	d.open, d.upstream, d.kind = true, idx, p.Kind
	return append(out, Chunk{Type: ChunkBlockStart, Index: d.next, Block: p})
}

func (d *bedrockStreamDecoder) delta(s string, out []Chunk) []Chunk {
	idx := gjson.Get(s, "contentBlockIndex").Int()
	if idx <= d.closed {
		return out
	}
	delta := gjson.Get(s, "delta")
	c := Chunk{Type: ChunkDelta}
	var block Part
	switch {
	case delta.Get("text").Type == gjson.String:
		block.Kind, c.Text = PartText, delta.Get("text").Str
	case delta.Get("toolUse").Exists():
		block.Kind, c.Text = PartToolCall, delta.Get("toolUse.input").Str
	case delta.Get("reasoningContent.redactedContent").Type == gjson.String:
		block.Kind, block.Data = PartRedactedThinking, delta.Get("reasoningContent.redactedContent").Str
	case delta.Get("reasoningContent").Exists():
		rc := delta.Get("reasoningContent")
		block.Kind = PartThinking
		if sig := rc.Get("signature"); sig.Type == gjson.String {
			c.Text, c.Signature = sig.Str, true
		} else {
			c.Text = rc.Get("text").Str
		}
	default: // citations, images, tool results, …: no canonical delta
		return out
	}
	switch {
	case d.open && idx == d.upstream && d.kind != block.Kind:
		return out
	case !d.open || idx != d.upstream:
		out = d.closeBlock(out)
		out = d.openBlock(out, idx, block)
	case block.Kind == PartRedactedThinking:
		return out // a redacted block holds its data from the start
	}
	if c.Text == "" {
		return out
	}
	c.Index = d.next
	return append(out, c)
}

// closeBlock ends the open block, if any.
func (d *bedrockStreamDecoder) closeBlock(out []Chunk) []Chunk {
	if !d.open {
		return out
	}
	out = append(out, Chunk{Type: ChunkBlockStop, Index: d.next})
	d.next++
	d.open = false
	d.closed = max(d.closed, d.upstream)
	return out
}

// bedrockStreamEncoder writes canonical chunks as ConverseStream frames:
// messageStart; per block a contentBlockStart (tool calls only, as
// Bedrock does), its contentBlockDelta frames and a contentBlockStop, the
// blocks numbered from 0 (images, which an answer cannot hold, skipped);
// messageStop and metadata for ChunkEnd; an exception frame for
// ChunkError. After either it writes nothing.
type bedrockStreamEncoder struct {
	enc            *eventstream.Encoder
	started, ended bool
	next           int
	open           bool
	kind           PartKind
	usage          Usage
	payload        []byte // the frame's JSON, reused
}

// Encode appends the frames of c.
func (e *bedrockStreamEncoder) Encode(c *Chunk, out []byte) []byte {
	if e.ended {
		return out
	}
	if !e.started && c.Type != ChunkError {
		e.started = true
		e.usage = c.Usage
		out = e.frame(out, bedrockEvMessageStart, append(e.payload[:0], `{"role":"assistant"}`...))
		if c.Type == ChunkStart {
			return out
		}
	}
	switch c.Type {
	case ChunkBlockStart:
		out = e.closeBlock(out)
		out = e.blockStart(c, out)
	case ChunkDelta:
		out = e.delta(c, out)
	case ChunkBlockStop:
		out = e.closeBlock(out)
	case ChunkUsage:
		e.usage = c.Usage
	case ChunkEnd:
		if c.Usage != (Usage{}) {
			e.usage = c.Usage
		}
		out = e.closeBlock(out)
		p := append(e.payload[:0], `{"stopReason":"`...)
		p = append(p, bedrockStopName(c.StopReason)...)
		p = append(p, '"')
		if c.StopSequence != "" {
			p = append(p, `,"additionalModelResponseFields":{"stop_sequence":`...)
			p = wireString(p, c.StopSequence)
			p = append(p, '}')
		}
		out = e.frame(out, bedrockEvMessageStop, append(p, '}'))
		p = append(e.payload[:0], `{"usage":`...)
		p = appendBedrockUsage(p, e.usage)
		out = e.frame(out, bedrockEvMetadata, append(p, `,"metrics":{"latencyMs":0}}`...))
		e.ended = true
	case ChunkError:
		e.ended = true
		out = appendBedrockException(out, e.enc, c.Err)
	}
	return out
}

// frame appends one event frame of payload p, which it keeps for reuse.
func (e *bedrockStreamEncoder) frame(out []byte, name string, p []byte) []byte {
	e.payload = p
	return appendBedrockFrame(out, e.enc, name, false, p)
}

// blockStart opens a block: a tool call's contentBlockStart, a redacted
// block's one delta; text and thinking blocks start with their deltas.
func (e *bedrockStreamEncoder) blockStart(c *Chunk, out []byte) []byte {
	p := &c.Block
	switch p.Kind {
	case PartText, PartThinking:
	case PartToolCall:
		b := e.indexed(`{"start":{"toolUse":{"toolUseId":`)
		b = wireString(b, p.ID)
		b = append(b, `,"name":`...)
		b = wireString(b, p.Name)
		out = e.frame(out, bedrockEvBlockStart, append(b, `}}}`...))
	case PartRedactedThinking:
		if !looksBase64(p.Data) || p.Data == "" {
			return out
		}
		b := e.indexed(`{"delta":{"reasoningContent":{"redactedContent":`)
		b = wireString(b, p.Data)
		out = e.frame(out, bedrockEvBlockDelta, append(b, `}}}`...))
	default:
		return out
	}
	e.open, e.kind = true, p.Kind
	return out
}

// indexed begins a block event's payload: {"contentBlockIndex":N, then
// prefix (the opening of the rest of the object) without its brace.
func (e *bedrockStreamEncoder) indexed(prefix string) []byte {
	b := append(e.payload[:0], `{"contentBlockIndex":`...)
	b = wireInt(b, int64(e.next))
	return append(b, ","+prefix[1:]...)
}

func (e *bedrockStreamEncoder) delta(c *Chunk, out []byte) []byte {
	if !e.open || c.Text == "" {
		return out
	}
	var b []byte
	switch {
	case e.kind == PartText:
		b = e.indexed(`{"delta":{"text":`)
	case e.kind == PartToolCall:
		b = e.indexed(`{"delta":{"toolUse":{"input":`)
	case e.kind == PartThinking && c.Signature:
		b = e.indexed(`{"delta":{"reasoningContent":{"signature":`)
	case e.kind == PartThinking:
		b = e.indexed(`{"delta":{"reasoningContent":{"text":`)
	default:
		return out
	}
	b = wireString(b, c.Text)
	if e.kind == PartText {
		b = append(b, `}}`...)
	} else {
		b = append(b, `}}}`...)
	}
	return e.frame(out, bedrockEvBlockDelta, b)
}

func (e *bedrockStreamEncoder) closeBlock(out []byte) []byte {
	if !e.open {
		return out
	}
	b := append(e.payload[:0], `{"contentBlockIndex":`...)
	b = wireInt(b, int64(e.next))
	out = e.frame(out, bedrockEvBlockStop, append(b, '}'))
	e.next++
	e.open = false
	return out
}
