package codec

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/tidwall/gjson"
)

// NewStreamDecoder follows a chat.completion.chunk stream.
func (openAIChat) NewStreamDecoder() StreamDecoder { return &chatStreamDecoder{} }

// NewStreamEncoder writes a chat.completion.chunk stream for the client of r.
func (openAIChat) NewStreamEncoder(r *Request) StreamEncoder {
	return &chatStreamEncoder{includeUsage: r.IncludeUsage, model: r.Model}
}

// chatBlock is what the decoder's open block holds.
type chatBlock uint8

const (
	chatNone chatBlock = iota
	chatText
	chatThinking
	chatTool
)

// chatToolCall is one upstream tool call (delta.tool_calls[].index) as the
// decoder follows it.
type chatToolCall struct {
	index    int64
	id, name string
	// args are argument deltas buffered while another block is open.
	args []byte
	// state: pending (not yet a canonical block), open, or closed.
	state uint8
}

const (
	toolPending uint8 = iota
	toolOpen
	toolClosed
)

// chatStreamDecoder turns chat.completion.chunk events into canonical
// chunks. Text, reasoning and each tool call become blocks one after the
// other; a tool call whose deltas arrive while another call's block is open
// is buffered and becomes a block when that one closes (at the
// finish_reason, [DONE], or text that follows the calls).
type chatStreamDecoder struct {
	started, done bool
	open          chatBlock
	// index is the open block's Index; next the Index of the next block.
	index, next int
	// tools are the upstream tool calls in order of appearance; cur
	// indexes the one whose block is open.
	tools   []chatToolCall
	cur     int
	stop    StopReason
	refusal bool
	usage   Usage
}

// Done reports whether [DONE] (or an error event) was seen.
func (d *chatStreamDecoder) Done() bool { return d.done }

// Decode follows one event.
func (d *chatStreamDecoder) Decode(ev *Event, out []Chunk) ([]Chunk, error) {
	data := bytes.TrimSpace(ev.Data)
	if len(data) == 0 {
		return out, nil
	}
	if d.done {
		return out, fmt.Errorf("chat stream: event after the end of the stream: %s", truncateText(string(data), 80))
	}
	if string(data) == "[DONE]" {
		return d.finish(out), nil
	}
	s := string(data)
	if !gjson.Valid(s) {
		return out, fmt.Errorf("chat stream: event is not JSON: %s", truncateText(s, 80))
	}
	var f [len(chatChunkKeys)]gjson.Result // error, choices, usage, id, model
	objectFields(gjson.Parse(s), chatChunkKeys[:], f[:])
	if !isNull(f[0]) {
		d.done = true
		err := decodeOpenAIError(0, data)
		return append(out, Chunk{Type: ChunkError, Err: &err}), nil
	}
	if !f[1].IsArray() {
		return out, fmt.Errorf("chat stream: event is not a chat.completion.chunk (no choices array): %s", truncateText(s, 80))
	}
	out = d.begin(out, f[3].Str, f[4].Str)
	if f[2].IsObject() {
		d.usage = chatUsage(f[2])
		out = append(out, Chunk{Type: ChunkUsage, Usage: d.usage})
	}
	var choice gjson.Result
	f[1].ForEach(func(_, c gjson.Result) bool {
		choice = c
		return false
	})
	return d.choice(out, choice), nil
}

// End closes a stream that ended without [DONE], as some OpenAI-compatible
// servers end theirs, as [DONE] would have: the stop reason of the
// finish_reason chunk and the usage the stream reported. After [DONE] or
// an error it appends nothing.
func (d *chatStreamDecoder) End(out []Chunk) []Chunk {
	if d.done {
		return out
	}
	return d.finish(out)
}

// finish ends the stream: it closes every block and appends the ChunkEnd.
func (d *chatStreamDecoder) finish(out []Chunk) []Chunk {
	d.done = true
	out = d.begin(out, "", "")
	out = d.closeAll(out)
	stop := d.stop
	switch {
	case stop == StopEnd && d.refusal:
		stop = StopRefusal
	case stop == StopEnd && len(d.tools) > 0:
		stop = StopToolUse // some servers say "stop" after tool calls
	}
	return append(out, Chunk{Type: ChunkEnd, StopReason: stop, Usage: d.usage})
}

// chatChunkKeys, chatChoiceKeys and chatDeltaKeys are the fields of a
// chunk, of its choice and of the choice's delta that the decoder reads.
var (
	chatChunkKeys  = [...]string{"error", "choices", "usage", "id", "model"}
	chatChoiceKeys = [...]string{"index", "delta", "finish_reason"}
	chatDeltaKeys  = [...]string{"reasoning_content", "reasoning", "content", "refusal", "tool_calls"}
	// chatToolDeltaKeys are a tool call delta's fields, then its function's.
	chatToolDeltaKeys = [...]string{"index", "id", "function", "name", "arguments"}
)

// begin emits ChunkStart once, with the answer's id and model.
func (d *chatStreamDecoder) begin(out []Chunk, id, model string) []Chunk {
	if d.started {
		return out
	}
	d.started = true
	return append(out, Chunk{Type: ChunkStart, ID: id, Model: model})
}

// choice follows one choice's delta and finish_reason.
func (d *chatStreamDecoder) choice(out []Chunk, choice gjson.Result) []Chunk {
	var ch [len(chatChoiceKeys)]gjson.Result // index, delta, finish_reason
	objectFields(choice, chatChoiceKeys[:], ch[:])
	if ch[0].Int() != 0 {
		return out // another choice: n > 1 is never translated
	}
	var f [len(chatDeltaKeys)]gjson.Result // reasoning_content, reasoning, content, refusal, tool_calls
	objectFields(ch[1], chatDeltaKeys[:], f[:])
	if r := chatReasoning(f[0], f[1]); r != "" {
		out = d.text(out, chatThinking, r)
	}
	if f[2].Type == gjson.String && f[2].Str != "" {
		out = d.text(out, chatText, f[2].Str)
	}
	if f[3].Type == gjson.String && f[3].Str != "" {
		out = d.text(out, chatText, f[3].Str)
		d.refusal = true
	}
	if calls := f[4]; calls.IsArray() {
		j := 0
		calls.ForEach(func(_, c gjson.Result) bool {
			out = d.toolDelta(out, j, c)
			j++
			return true
		})
	}
	if fr := ch[2]; fr.Type == gjson.String && fr.Str != "" {
		d.stop = chatStopReason(fr.Str)
		out = d.closeAll(out)
	}
	return out
}

// text appends text or reasoning to the open block of its kind, opening
// one (and closing whatever else is open) when needed.
func (d *chatStreamDecoder) text(out []Chunk, kind chatBlock, s string) []Chunk {
	if d.open != kind {
		out = d.closeAll(out)
		pk := PartText
		if kind == chatThinking {
			pk = PartThinking
		}
		out = d.openBlock(out, kind, Part{Kind: pk})
	}
	return append(out, Chunk{Type: ChunkDelta, Index: d.index, Text: s})
}

// openBlock emits a ChunkBlockStart for a block of kind holding block.
func (d *chatStreamDecoder) openBlock(out []Chunk, kind chatBlock, block Part) []Chunk {
	d.open, d.index = kind, d.next
	d.next++
	return append(out, Chunk{Type: ChunkBlockStart, Index: d.index, Block: block})
}

// closeOpen closes the open block, if any.
func (d *chatStreamDecoder) closeOpen(out []Chunk) []Chunk {
	if d.open == chatNone {
		return out
	}
	if d.open == chatTool {
		d.tools[d.cur].state = toolClosed
	}
	d.open = chatNone
	return append(out, Chunk{Type: ChunkBlockStop, Index: d.index})
}

// closeAll closes the open block and emits every buffered tool call as a
// whole block, in the order the calls appeared.
func (d *chatStreamDecoder) closeAll(out []Chunk) []Chunk {
	out = d.closeOpen(out)
	for k := range d.tools {
		if d.tools[k].state == toolPending {
			out = d.openTool(out, k)
			out = d.closeOpen(out)
		}
	}
	return out
}

// openTool opens the block of tools[k], with its buffered arguments.
func (d *chatStreamDecoder) openTool(out []Chunk, k int) []Chunk {
	t := &d.tools[k]
	if t.id == "" {
		t.id = "call_" + strconv.Itoa(k)
	}
	t.state, d.cur = toolOpen, k
	out = d.openBlock(out, chatTool, Part{Kind: PartToolCall, ID: t.id, Name: t.name})
	if len(t.args) > 0 {
		out = append(out, Chunk{Type: ChunkDelta, Index: d.index, Text: string(t.args)})
		t.args = nil
	}
	return out
}

// toolDelta follows delta.tool_calls[j]: a call's id and name open it,
// argument fragments stream into its block, or are buffered while another
// block is open.
func (d *chatStreamDecoder) toolDelta(out []Chunk, j int, c gjson.Result) []Chunk {
	var f [len(chatToolDeltaKeys)]gjson.Result // index, id, function, then name, arguments
	objectFields(c, chatToolDeltaKeys[:3], f[:3])
	objectFields(f[2], chatToolDeltaKeys[3:], f[3:])
	idx := int64(j)
	if f[0].Exists() {
		idx = f[0].Int()
	}
	k := -1
	for i := len(d.tools) - 1; i >= 0 && k < 0; i-- {
		if d.tools[i].index == idx {
			k = i
		}
	}
	id, name, args := f[1].Str, f[3].Str, f[4].Str
	if k >= 0 && d.tools[k].state == toolClosed {
		if id == "" || id == d.tools[k].id {
			return out // a late fragment of a call already closed: dropped
		}
		k = -1 // a new call that reuses the index
	}
	if k < 0 {
		if id == "" && name == "" && args == "" {
			return out
		}
		d.tools = append(d.tools, chatToolCall{index: idx})
		k = len(d.tools) - 1
	}
	t := &d.tools[k]
	if t.id == "" {
		t.id = id
	}
	if t.name == "" {
		t.name = name
	}
	if t.state == toolOpen {
		if args != "" {
			out = append(out, Chunk{Type: ChunkDelta, Index: d.index, Text: args})
		}
		return out
	}
	t.args = append(t.args, args...)
	if d.open == chatText || d.open == chatThinking {
		out = d.closeOpen(out)
	}
	if d.open == chatNone && t.name != "" && d.firstPending() == k {
		out = d.openTool(out, k)
	}
	return out
}

// firstPending is the index in tools of the first call not yet a block.
func (d *chatStreamDecoder) firstPending() int {
	for k := range d.tools {
		if d.tools[k].state == toolPending {
			return k
		}
	}
	return -1
}

// chatStreamEncoder writes canonical chunks as a chat.completion.chunk
// stream: data: <json> events ending with data: [DONE].
type chatStreamEncoder struct {
	includeUsage bool
	// model is the request's, for an answer that names none.
	model string
	// prefix is every chunk's start, through "choices":[.
	prefix []byte
	// kind is the open block's kind; tool the open tool call's index
	// among the answer's calls, tools how many calls began.
	kind        PartKind
	tool, tools int
	usage       Usage
	done        bool
}

// Encode appends the events of c.
func (e *chatStreamEncoder) Encode(c *Chunk, out []byte) []byte {
	if e.done {
		return out
	}
	if e.prefix == nil && c.Type != ChunkError {
		e.begin(c)
		if c.Type != ChunkStart {
			out = e.roleChunk(out)
		}
	}
	switch c.Type {
	case ChunkStart:
		out = e.roleChunk(out)
	case ChunkBlockStart:
		e.kind = c.Block.Kind
		if e.kind == PartToolCall {
			e.tool = e.tools
			e.tools++
			out = append(out, e.prefix...)
			out = append(out, `{"index":0,"delta":{"tool_calls":[{"index":`...)
			out = strconv.AppendInt(out, int64(e.tool), 10)
			out = append(out, `,"id":`...)
			out = wireString(out, c.Block.ID)
			out = append(out, `,"type":"function","function":{"name":`...)
			out = wireString(out, c.Block.Name)
			out = append(out, `,"arguments":""}}]},"finish_reason":null}]}`+"\n\n"...)
		}
	case ChunkDelta:
		out = e.delta(c, out)
	case ChunkUsage:
		e.usage = c.Usage
	case ChunkEnd:
		out = e.end(c, out)
	case ChunkError:
		msg := "upstream stream error"
		if c.Err != nil && c.Err.Message != "" {
			msg = c.Err.Message
		}
		out = append(out, openAIStreamError(msg)...)
		e.done = true
	}
	return out
}

// begin builds the chunk prefix from the answer's id and model.
func (e *chatStreamEncoder) begin(c *Chunk) {
	model := c.Model
	if model == "" {
		model = e.model
	}
	b := append(make([]byte, 0, 128+len(c.ID)+len(model)), `data: {"id":`...)
	b = wireString(b, chatID(c.ID))
	b = append(b, `,"object":"chat.completion.chunk","created":`...)
	b = strconv.AppendInt(b, unixOr(0), 10)
	b = append(b, `,"model":`...)
	b = wireString(b, model)
	e.prefix = append(b, `,"choices":[`...)
}

// roleChunk is the first chunk: the assistant role and empty content.
func (e *chatStreamEncoder) roleChunk(out []byte) []byte {
	out = append(out, e.prefix...)
	return append(out, `{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`+"\n\n"...)
}

// delta writes a text, reasoning or argument fragment.
func (e *chatStreamEncoder) delta(c *Chunk, out []byte) []byte {
	if c.Text == "" || c.Signature {
		return out
	}
	switch e.kind {
	case PartText:
		out = append(out, e.prefix...)
		out = append(out, `{"index":0,"delta":{"content":`...)
	case PartThinking:
		out = append(out, e.prefix...)
		out = append(out, `{"index":0,"delta":{"reasoning_content":`...)
	case PartToolCall:
		out = append(out, e.prefix...)
		out = append(out, `{"index":0,"delta":{"tool_calls":[{"index":`...)
		out = strconv.AppendInt(out, int64(e.tool), 10)
		out = append(out, `,"function":{"arguments":`...)
		out = wireString(out, c.Text)
		return append(out, `}}]},"finish_reason":null}]}`+"\n\n"...)
	default:
		return out // redacted thinking: Chat has no place for it
	}
	out = wireString(out, c.Text)
	return append(out, `},"finish_reason":null}]}`+"\n\n"...)
}

// end writes the finish_reason chunk, the usage chunk when the client
// asked for it, and [DONE].
func (e *chatStreamEncoder) end(c *Chunk, out []byte) []byte {
	e.done = true
	out = append(out, e.prefix...)
	out = append(out, `{"index":0,"delta":{},"finish_reason":`...)
	out = wireString(out, chatFinishReason(c.StopReason))
	out = append(out, "}]}\n\n"...)
	if e.includeUsage {
		u := c.Usage
		if u == (Usage{}) {
			u = e.usage
		}
		w := jsonWriter{b: append(out, e.prefix...)}
		w.raw(`],"usage":`)
		writeChatUsage(&w, &u)
		out = append(w.b, "}\n\n"...)
	}
	return append(out, "data: [DONE]\n\n"...)
}
