package codec

import (
	"bytes"
	"fmt"

	"github.com/tidwall/gjson"
)

// NewStreamDecoder follows a Responses event stream.
func (openAIResponses) NewStreamDecoder() StreamDecoder { return &responsesStreamDecoder{} }

// responsesBlock identifies the upstream part a canonical block follows:
// an output item and, within it, a content part or summary part.
type responsesBlock struct {
	item, part int64
	kind       PartKind
}

// responsesStreamDecoder turns Responses events into canonical chunks.
// Each output_text or refusal part, each reasoning summary part (or
// reasoning text part) and each function call becomes a block; a
// reasoning item's encrypted_content becomes a redacted-thinking block
// when the item is done. The API streams items one after another, so
// blocks follow its order; a fragment for a part whose block was closed is
// dropped.
type responsesStreamDecoder struct {
	started, done bool
	// open: a block is open, following cur; index is its Index, next
	// the next block's.
	open        bool
	cur         responsesBlock
	index, next int
	// gotDelta: the open block received a delta (its done event's full
	// text is then not needed).
	gotDelta bool
	// lastItem is the highest output_index that opened a block; an item
	// done beyond it was never streamed and is emitted whole.
	lastItem  int64
	toolCalls bool
	refusal   bool
}

// Done reports whether a terminal event (response.completed, .incomplete,
// .failed or error) was seen.
func (d *responsesStreamDecoder) Done() bool { return d.done }

// Decode follows one event.
func (d *responsesStreamDecoder) Decode(ev *Event, out []Chunk) ([]Chunk, error) {
	data := bytes.TrimSpace(ev.Data)
	if len(data) == 0 {
		return out, nil
	}
	if d.done {
		return out, fmt.Errorf("responses stream: event after the end of the stream: %s", truncateText(string(data), 80))
	}
	s := string(data)
	if !gjson.Valid(s) {
		return out, fmt.Errorf("responses stream: event is not JSON: %s", truncateText(s, 80))
	}
	root := gjson.Parse(s)
	var e responsesEvent
	e.read(root)
	if e.typ == "" {
		e.typ = string(ev.Name)
	}
	if !root.IsObject() || e.typ == "" {
		return out, fmt.Errorf("responses stream: event has no type: %s", truncateText(s, 80))
	}
	switch e.typ {
	case "error":
		d.done = true
		return append(out, Chunk{Type: ChunkError, Err: responsesStreamError(root)}), nil
	case "response.failed":
		d.done = true
		fail := e.response.Get("error")
		return append(out, Chunk{Type: ChunkError, Err: &Error{Code: fail.Get("code").String(), Message: fail.Get("message").Str}}), nil
	}
	if !d.started {
		d.started, d.lastItem = true, -1
		out = append(out, Chunk{Type: ChunkStart, ID: e.response.Get("id").Str, Model: e.response.Get("model").Str})
	}
	return d.event(out, &e), nil
}

// responsesEventKeys are the fields of an event the decoder reads, in the
// order responsesEvent.read takes them.
var responsesEventKeys = [...]string{"type", "response", "item", "part", "output_index", "content_index", "summary_index", "delta", "text", "refusal", "arguments"}

// responsesEvent is an event's fields, read in one pass.
type responsesEvent struct {
	typ                        string
	response, item, part       gjson.Result
	output, content, summary   int64
	delta, text, refusal, args string
}

// read fills e from the event object root.
func (e *responsesEvent) read(root gjson.Result) {
	var f [len(responsesEventKeys)]gjson.Result
	objectFields(root, responsesEventKeys[:], f[:])
	e.typ, e.response, e.item, e.part = f[0].Str, f[1], f[2], f[3]
	e.output, e.content, e.summary = f[4].Int(), f[5].Int(), f[6].Int()
	e.delta, e.text, e.refusal, e.args = f[7].Str, f[8].Str, f[9].Str, f[10].Str
}

// responsesStreamError reads an error event: {code, message} at the top
// or inside "error".
func responsesStreamError(root gjson.Result) *Error {
	if e := root.Get("error"); e.IsObject() {
		return &Error{Type: e.Get("type").Str, Code: e.Get("code").String(), Message: e.Get("message").Str}
	}
	return &Error{Code: root.Get("code").String(), Message: root.Get("message").Str}
}

// event follows one event that neither fails nor starts the stream.
func (d *responsesStreamDecoder) event(out []Chunk, e *responsesEvent) []Chunk {
	item := e.output
	text := responsesBlock{item: item, part: e.content, kind: PartText}
	summary := responsesBlock{item: item, part: e.summary, kind: PartThinking}
	reasoning := responsesBlock{item: item, part: -1 - e.content, kind: PartThinking}
	switch e.typ {
	case "response.output_item.added":
		if e.item.Get("type").Str == "function_call" {
			out = d.openBlock(out, responsesBlock{item: item, kind: PartToolCall},
				Part{Kind: PartToolCall, ID: e.item.Get("call_id").Str, Name: e.item.Get("name").Str})
			d.toolCalls = true
			out = d.delta(out, e.item.Get("arguments").Str)
		}
	case "response.content_part.added":
		if pt := e.part.Get("type").Str; pt == "output_text" || pt == "refusal" {
			out = d.ensure(out, text)
		}
	case "response.output_text.delta", "response.refusal.delta":
		d.refusal = d.refusal || e.typ == "response.refusal.delta"
		out = d.deltaTo(out, text, e.delta)
	case "response.output_text.done":
		out = d.doneText(out, text, e.text)
	case "response.refusal.done":
		out = d.doneText(out, text, e.refusal)
	case "response.content_part.done":
		out = d.closeIf(out, text)
	case "response.reasoning_summary_part.added":
		out = d.ensure(out, summary)
	case "response.reasoning_summary_text.delta":
		out = d.deltaTo(out, summary, e.delta)
	case "response.reasoning_summary_text.done":
		out = d.doneText(out, summary, e.text)
	case "response.reasoning_summary_part.done":
		out = d.closeIf(out, summary)
	case "response.reasoning_text.delta":
		out = d.deltaTo(out, reasoning, e.delta)
	case "response.reasoning_text.done":
		out = d.doneText(out, reasoning, e.text)
	case "response.function_call_arguments.delta":
		if d.open && d.cur.item == item && d.cur.kind == PartToolCall {
			out = d.delta(out, e.delta)
		}
	case "response.function_call_arguments.done":
		if d.open && d.cur.item == item && d.cur.kind == PartToolCall && !d.gotDelta {
			out = d.delta(out, e.args)
		}
	case "response.output_item.done":
		out = d.itemDone(out, item, e.item)
	case "response.completed", "response.incomplete":
		return d.finish(out, e.response)
	}
	return out
}

// End closes a stream that ended without response.completed or
// .incomplete as response.completed would have: tool use when the stream
// had function calls, refusal when it had a refusal, else end, with no
// usage (the Responses API reports it only at the end). After the
// terminal event or an error it appends nothing.
func (d *responsesStreamDecoder) End(out []Chunk) []Chunk {
	if d.done {
		return out
	}
	if !d.started {
		d.started, d.lastItem = true, -1
		out = append(out, Chunk{Type: ChunkStart})
	}
	return d.finish(out, gjson.Result{})
}

// finish ends the stream with the Response object resp of the terminal
// event (its status, incomplete_details and usage): it closes the open
// block and appends the ChunkEnd.
func (d *responsesStreamDecoder) finish(out []Chunk, resp gjson.Result) []Chunk {
	out = d.closeOpen(out)
	d.done = true
	return append(out, Chunk{Type: ChunkEnd, StopReason: responsesStopReason(resp, d.toolCalls, d.refusal), Usage: responsesUsage(resp.Get("usage"))})
}

// openBlock closes the open block and opens one following b.
func (d *responsesStreamDecoder) openBlock(out []Chunk, b responsesBlock, block Part) []Chunk {
	out = d.closeOpen(out)
	d.cur, d.open, d.gotDelta = b, true, false
	d.index = d.next
	d.next++
	d.lastItem = max(d.lastItem, b.item)
	return append(out, Chunk{Type: ChunkBlockStart, Index: d.index, Block: block})
}

// ensure opens a text or thinking block for b unless it is open already.
func (d *responsesStreamDecoder) ensure(out []Chunk, b responsesBlock) []Chunk {
	if d.open && d.cur == b {
		return out
	}
	return d.openBlock(out, b, Part{Kind: b.kind})
}

// deltaTo appends text to b's block, opening it when b is new; a fragment
// of an item already passed is dropped.
func (d *responsesStreamDecoder) deltaTo(out []Chunk, b responsesBlock, text string) []Chunk {
	if (!d.open || d.cur != b) && b.item < d.lastItem {
		return out
	}
	out = d.ensure(out, b)
	return d.delta(out, text)
}

// doneText gives b's block its whole text when no delta carried it.
func (d *responsesStreamDecoder) doneText(out []Chunk, b responsesBlock, text string) []Chunk {
	if d.open && d.cur == b && d.gotDelta {
		return out
	}
	return d.deltaTo(out, b, text)
}

// delta appends text to the open block.
func (d *responsesStreamDecoder) delta(out []Chunk, text string) []Chunk {
	if text == "" || !d.open {
		return out
	}
	d.gotDelta = true
	return append(out, Chunk{Type: ChunkDelta, Index: d.index, Text: text})
}

// closeIf closes the open block if it follows b.
func (d *responsesStreamDecoder) closeIf(out []Chunk, b responsesBlock) []Chunk {
	if d.open && d.cur == b {
		return d.closeOpen(out)
	}
	return out
}

// closeOpen closes the open block, if any.
func (d *responsesStreamDecoder) closeOpen(out []Chunk) []Chunk {
	if !d.open {
		return out
	}
	d.open = false
	return append(out, Chunk{Type: ChunkBlockStop, Index: d.index})
}

// itemDone closes the item's open block, emits a reasoning item's
// encrypted_content as redacted thinking, and emits whole an item that no
// event streamed.
func (d *responsesStreamDecoder) itemDone(out []Chunk, item int64, it gjson.Result) []Chunk {
	if d.open && d.cur.item == item {
		if d.cur.kind == PartToolCall && !d.gotDelta {
			out = d.delta(out, it.Get("arguments").Str) // arguments only in the done item
		}
		out = d.closeOpen(out)
	}
	streamed := item <= d.lastItem
	if !streamed {
		parts, refused := appendResponsesItem(nil, it, false)
		d.refusal = d.refusal || refused
		for _, p := range parts {
			if p.Kind == PartRedactedThinking {
				continue // below
			}
			out = d.whole(out, item, p)
		}
	}
	if enc := it.Get("encrypted_content"); it.Get("type").Str == "reasoning" && enc.Type == gjson.String && enc.Str != "" {
		out = d.whole(out, item, Part{Kind: PartRedactedThinking, Data: enc.Str})
	}
	d.lastItem = max(d.lastItem, item)
	return out
}

// whole emits part p of item as one block.
func (d *responsesStreamDecoder) whole(out []Chunk, item int64, p Part) []Chunk {
	text := p.Text
	block := Part{Kind: p.Kind}
	switch p.Kind {
	case PartToolCall:
		block.ID, block.Name, text = p.ID, p.Name, string(p.Arguments)
		d.toolCalls = true
	case PartRedactedThinking:
		block.Data, text = p.Data, ""
	}
	out = d.openBlock(out, responsesBlock{item: item, part: -1 << 40, kind: p.Kind}, block)
	out = d.delta(out, text)
	return d.closeOpen(out)
}
