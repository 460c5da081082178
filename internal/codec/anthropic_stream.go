package codec

import (
	"bytes"
	"fmt"

	"github.com/tidwall/gjson"
)

// NewStreamDecoder follows an Anthropic Messages stream.
func (anthropic) NewStreamDecoder() StreamDecoder { return &anthropicStreamDecoder{} }

// NewStreamEncoder writes an Anthropic Messages stream.
func (anthropic) NewStreamEncoder(*Request) StreamEncoder { return &anthropicStreamEncoder{} }

var (
	_ StreamDecoder = (*anthropicStreamDecoder)(nil)
	_ StreamEncoder = (*anthropicStreamEncoder)(nil)
)

// anthropicStreamDecoder turns Anthropic's events into canonical chunks.
// Blocks are renumbered from 0 whatever indices the upstream sends;
// blocks of server tools are skipped with their deltas; a block started
// while another is open (Anthropic never does this) closes the open one,
// and the late one's deltas are dropped.
type anthropicStreamDecoder struct {
	started, done bool
	// next is the canonical index of the next block.
	next int
	// open: a block is open, upstream index upstream, of kind kind.
	open     bool
	upstream int64
	kind     PartKind
	// toolInput is a tool_use's input given whole in content_block_start,
	// sent as one delta at its stop when no delta came (toolDeltas).
	toolInput  string
	toolDeltas bool
	// rawInput is input_tokens without the cache's; usage.Input adds them.
	rawInput int64
	usage    Usage
	stop     StopReason
	stopSeq  string
}

// Decode reads one event. Events after message_stop or an error, pings
// and event types not known are ignored; an event whose data is not JSON,
// or content before message_start, is an error.
func (d *anthropicStreamDecoder) Decode(ev *Event, out []Chunk) ([]Chunk, error) {
	if d.done || len(bytes.TrimSpace(ev.Data)) == 0 {
		return out, nil
	}
	if !gjson.ValidBytes(ev.Data) {
		return out, fmt.Errorf("anthropic stream: event %q: data is not JSON", ev.Name)
	}
	s := string(ev.Data) // one copy: the chunks' strings point into it
	typ := gjson.Get(s, "type").Str
	if typ == "" {
		typ = string(ev.Name)
	}
	switch typ {
	case "ping":
		return out, nil
	case "error":
		e := anthropic{}.DecodeError(0, ev.Data)
		d.done = true
		return append(out, Chunk{Type: ChunkError, Err: &e}), nil
	case "message_start":
		if d.started {
			return out, fmt.Errorf("anthropic stream: a second message_start")
		}
		d.started = true
		return d.start(s, out), nil
	case "content_block_start", "content_block_delta", "content_block_stop", "message_delta", "message_stop":
		if !d.started {
			return out, fmt.Errorf("anthropic stream: %s before message_start", typ)
		}
	default:
		return out, nil
	}
	switch typ {
	case "content_block_start":
		return d.blockStart(s, out), nil
	case "content_block_delta":
		return d.delta(s, out), nil
	case "content_block_stop":
		if d.open && gjson.Get(s, "index").Int() == d.upstream {
			out = d.closeBlock(out)
		}
		return out, nil
	case "message_delta":
		return d.messageDelta(s, out), nil
	}
	return d.finish(out), nil // message_stop
}

// Done reports whether message_stop or an error event was seen.
func (d *anthropicStreamDecoder) Done() bool { return d.done }

// End closes a stream that ended without message_stop as message_stop
// would have: the stop reason and usage of the last message_delta. After
// message_stop or an error it appends nothing.
func (d *anthropicStreamDecoder) End(out []Chunk) []Chunk {
	if d.done {
		return out
	}
	if !d.started {
		d.started = true
		out = append(out, Chunk{Type: ChunkStart})
	}
	return d.finish(out)
}

// finish ends the stream: it closes the open block and appends the ChunkEnd.
func (d *anthropicStreamDecoder) finish(out []Chunk) []Chunk {
	out = d.closeBlock(out)
	d.done = true
	return append(out, Chunk{Type: ChunkEnd, StopReason: d.stop, StopSequence: d.stopSeq, Usage: d.usage})
}

func (d *anthropicStreamDecoder) start(s string, out []Chunk) []Chunk {
	m := gjson.Get(s, "message")
	u := m.Get("usage")
	d.rawInput = u.Get("input_tokens").Int()
	d.usage = anthropicUsage(u)
	return append(out, Chunk{Type: ChunkStart, ID: m.Get("id").Str, Model: m.Get("model").Str, Usage: d.usage})
}

func (d *anthropicStreamDecoder) blockStart(s string, out []Chunk) []Chunk {
	out = d.closeBlock(out)
	idx := gjson.Get(s, "index").Int()
	cb := gjson.Get(s, "content_block")
	var p Part
	var initial string
	switch cb.Get("type").Str {
	case "text":
		p.Kind, initial = PartText, cb.Get("text").Str
	case "tool_use":
		p.Kind, p.ID, p.Name = PartToolCall, cb.Get("id").Str, cb.Get("name").Str
		if in := cb.Get("input"); in.IsObject() && !gjEmptyObject(in) {
			d.toolInput = in.Raw
		}
	case "thinking":
		p.Kind, initial = PartThinking, cb.Get("thinking").Str
	case "redacted_thinking":
		p.Kind, p.Data = PartRedactedThinking, cb.Get("data").Str
	default: // server tools' blocks: no block is open, so their deltas and stop are dropped
		return out
	}
	d.open, d.upstream, d.kind = true, idx, p.Kind
	out = append(out, Chunk{Type: ChunkBlockStart, Index: d.next, Block: p})
	if initial != "" {
		out = append(out, Chunk{Type: ChunkDelta, Index: d.next, Text: initial})
	}
	if sig := cb.Get("signature").Str; p.Kind == PartThinking && sig != "" {
		out = append(out, Chunk{Type: ChunkDelta, Index: d.next, Text: sig, Signature: true})
	}
	return out
}

func (d *anthropicStreamDecoder) delta(s string, out []Chunk) []Chunk {
	if !d.open || gjson.Get(s, "index").Int() != d.upstream {
		return out
	}
	delta := gjson.Get(s, "delta")
	c := Chunk{Type: ChunkDelta, Index: d.next}
	switch delta.Get("type").Str {
	case "text_delta":
		c.Text = delta.Get("text").Str
	case "input_json_delta":
		c.Text = delta.Get("partial_json").Str
		d.toolDeltas = d.toolDeltas || c.Text != ""
	case "thinking_delta":
		c.Text = delta.Get("thinking").Str
	case "signature_delta":
		c.Text, c.Signature = delta.Get("signature").Str, true
	}
	if c.Text == "" {
		return out
	}
	return append(out, c)
}

// closeBlock ends the open block, if any.
func (d *anthropicStreamDecoder) closeBlock(out []Chunk) []Chunk {
	if !d.open {
		return out
	}
	if d.kind == PartToolCall && !d.toolDeltas && d.toolInput != "" {
		out = append(out, Chunk{Type: ChunkDelta, Index: d.next, Text: d.toolInput})
	}
	out = append(out, Chunk{Type: ChunkBlockStop, Index: d.next})
	d.next++
	d.open, d.toolInput, d.toolDeltas = false, "", false
	return out
}

func (d *anthropicStreamDecoder) messageDelta(s string, out []Chunk) []Chunk {
	root := gjson.Parse(s)
	if r := root.Get("delta.stop_reason"); r.Type == gjson.String {
		d.stop = anthropicStop(r.Str)
	}
	if seq := root.Get("delta.stop_sequence"); seq.Type == gjson.String {
		d.stopSeq = seq.Str
	}
	root.Get("usage").ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "input_tokens":
			d.rawInput = v.Int()
		case "cache_creation_input_tokens":
			d.usage.CacheWrite = v.Int()
		case "cache_read_input_tokens":
			d.usage.CacheRead = v.Int()
		case "output_tokens":
			d.usage.Output = v.Int()
		}
		return true
	})
	d.usage.Input = d.rawInput + d.usage.CacheWrite + d.usage.CacheRead
	return append(out, Chunk{Type: ChunkUsage, Usage: d.usage})
}

// anthropicStreamEncoder writes canonical chunks as Anthropic's events.
// It numbers blocks itself, from 0, and skips blocks Anthropic cannot
// show (images); after message_stop or an error it writes nothing.
type anthropicStreamEncoder struct {
	started, ended bool
	next           int
	open           bool
	kind           PartKind
	usage          Usage
}

// Encode appends the events of c.
func (e *anthropicStreamEncoder) Encode(c *Chunk, out []byte) []byte {
	if e.ended {
		return out
	}
	if !e.started && c.Type != ChunkError {
		e.started = true
		start := c
		if c.Type != ChunkStart {
			start = &Chunk{Type: ChunkStart}
		}
		out = e.messageStart(start, out)
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
		out = anthropicEventStart(out, "message_delta")
		out = append(out, `{"type":"message_delta","delta":{"stop_reason":`...)
		out = wireString(out, anthropicStopName(c.StopReason))
		out = append(out, `,"stop_sequence":`...)
		out = wireStringOrNull(out, c.StopSequence)
		out = append(out, `},"usage":`...)
		out = appendAnthropicUsage(out, e.usage)
		out = append(out, "}\n\n"...)
		out = anthropicEventStart(out, "message_stop")
		out = append(out, `{"type":"message_stop"}`+"\n\n"...)
		e.ended = true
	case ChunkError:
		e.ended = true
		return appendAnthropicStreamError(out, c.Err)
	}
	return out
}

// anthropicEventStart begins an event: its name and "data: ".
func anthropicEventStart(b []byte, name string) []byte {
	b = append(b, "event: "...)
	b = append(b, name...)
	return append(b, "\ndata: "...)
}

func (e *anthropicStreamEncoder) messageStart(c *Chunk, out []byte) []byte {
	e.usage = c.Usage
	out = anthropicEventStart(out, "message_start")
	out = append(out, `{"type":"message_start","message":{"id":`...)
	out = wireString(out, anthropicMessageID(c.ID))
	out = append(out, `,"type":"message","role":"assistant","model":`...)
	out = wireString(out, c.Model)
	out = append(out, `,"content":[],"stop_reason":null,"stop_sequence":null,"usage":`...)
	out = appendAnthropicUsage(out, c.Usage)
	return append(out, "}}\n\n"...)
}

func (e *anthropicStreamEncoder) blockStart(c *Chunk, out []byte) []byte {
	p := &c.Block
	switch p.Kind {
	case PartText, PartToolCall, PartThinking, PartRedactedThinking:
	default:
		return out
	}
	out = anthropicEventStart(out, "content_block_start")
	out = append(out, `{"type":"content_block_start","index":`...)
	out = wireInt(out, int64(e.next))
	switch p.Kind {
	case PartText:
		out = append(out, `,"content_block":{"type":"text","text":""}`...)
	case PartToolCall:
		out = append(out, `,"content_block":{"type":"tool_use","id":`...)
		out = wireString(out, p.ID)
		out = append(out, `,"name":`...)
		out = wireString(out, p.Name)
		out = append(out, `,"input":{}}`...)
	case PartThinking:
		out = append(out, `,"content_block":{"type":"thinking","thinking":"","signature":""}`...)
	case PartRedactedThinking:
		out = append(out, `,"content_block":{"type":"redacted_thinking","data":`...)
		out = wireString(out, p.Data)
		out = append(out, '}')
	}
	e.open, e.kind = true, p.Kind
	return append(out, "}\n\n"...)
}

func (e *anthropicStreamEncoder) delta(c *Chunk, out []byte) []byte {
	if !e.open || c.Text == "" {
		return out
	}
	var kind, field string
	switch {
	case e.kind == PartText:
		kind, field = "text_delta", "text"
	case e.kind == PartToolCall:
		kind, field = "input_json_delta", "partial_json"
	case e.kind == PartThinking && c.Signature:
		kind, field = "signature_delta", "signature"
	case e.kind == PartThinking:
		kind, field = "thinking_delta", "thinking"
	default:
		return out
	}
	out = anthropicEventStart(out, "content_block_delta")
	out = append(out, `{"type":"content_block_delta","index":`...)
	out = wireInt(out, int64(e.next))
	out = append(out, `,"delta":{"type":"`...)
	out = append(out, kind...)
	out = append(out, `","`...)
	out = append(out, field...)
	out = append(out, `":`...)
	out = wireString(out, c.Text)
	return append(out, "}}\n\n"...)
}

func (e *anthropicStreamEncoder) closeBlock(out []byte) []byte {
	if !e.open {
		return out
	}
	out = anthropicEventStart(out, "content_block_stop")
	out = append(out, `{"type":"content_block_stop","index":`...)
	out = wireInt(out, int64(e.next))
	e.next++
	e.open = false
	return append(out, "}\n\n"...)
}

// appendAnthropicStreamError writes the error event that ends a broken
// stream: Anthropic's StreamError shape with the error's own type.
func appendAnthropicStreamError(out []byte, err *Error) []byte {
	var e Error
	if err != nil {
		e = *err
	}
	typ := "api_error"
	if e.Status != 0 {
		typ = AnthropicErrorType(e.Status)
	}
	out = anthropicEventStart(out, "error")
	out = append(out, `{"type":"error","error":{"type":`...)
	out = wireString(out, typ)
	out = append(out, `,"message":`...)
	out = wireString(out, e.Message)
	return append(out, "}}\n\n"...)
}
