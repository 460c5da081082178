package codec

import (
	"strconv"
)

// NewStreamEncoder writes a Responses event stream for the client of r.
func (openAIResponses) NewStreamEncoder(r *Request) StreamEncoder {
	return &responsesStreamEncoder{model: r.Model}
}

// responsesStreamEncoder writes canonical chunks as Responses events
// (event: <type> / data: <json>, sequence_number from 0): the response's
// created and in_progress events, each block as one output item (a
// message, reasoning or function_call item with its part, delta and done
// events), then response.completed (or .incomplete) with every item and
// the usage. It keeps each block's text, which the done events and the
// final response repeat.
type responsesStreamEncoder struct {
	// model is the request's, for an answer that names none.
	model   string
	h       responsesHead
	seq     int64
	started bool
	done    bool
	// items are the finished output items, JSON, comma-separated; n counts them.
	items []byte
	n     int
	// The open block: its kind, item id, call id and name (tool calls),
	// and its text so far. skip marks a block of a kind with no item.
	open, skip   bool
	kind         PartKind
	itemID       string
	callID, name string
	text         []byte
	usage        Usage
}

// Encode appends the events of c.
func (e *responsesStreamEncoder) Encode(c *Chunk, out []byte) []byte {
	if e.done {
		return out
	}
	if !e.started && c.Type != ChunkError {
		out = e.begin(c, out)
	}
	switch c.Type {
	case ChunkBlockStart:
		out = e.closeBlock(out)
		out = e.openBlock(c, out)
	case ChunkDelta:
		out = e.delta(c, out)
	case ChunkBlockStop:
		out = e.closeBlock(out)
	case ChunkUsage:
		e.usage = c.Usage
	case ChunkEnd:
		out = e.closeBlock(out)
		out = e.end(c, out)
	case ChunkError:
		out = e.fail(c, out)
	}
	return out
}

// event starts an event of type typ: its event line and the data object
// through sequence_number; the caller writes the rest and ends it.
func (e *responsesStreamEncoder) event(out []byte, typ string) jsonWriter {
	out = append(out, "event: "...)
	out = append(out, typ...)
	out = append(out, "\ndata: {\"type\":\""...)
	out = append(out, typ...)
	out = append(out, `","sequence_number":`...)
	out = strconv.AppendInt(out, e.seq, 10)
	e.seq++
	return jsonWriter{b: out}
}

// endEvent closes an event's data object and the event.
func endEvent(w *jsonWriter) []byte { return append(w.b, "}\n\n"...) }

// begin writes response.created and response.in_progress.
func (e *responsesStreamEncoder) begin(c *Chunk, out []byte) []byte {
	e.started = true
	model := c.Model
	if model == "" {
		model = e.model
	}
	e.h = newResponsesHead(c.ID, model, unixOr(0))
	for _, typ := range [...]string{"response.created", "response.in_progress"} {
		w := e.event(out, typ)
		w.raw(`,"response":`)
		e.h.writeResponse(&w, StopEnd, false, nil, nil)
		out = endEvent(&w)
	}
	return out
}

// openBlock writes the events that open block c's output item.
func (e *responsesStreamEncoder) openBlock(c *Chunk, out []byte) []byte {
	e.kind, e.text = c.Block.Kind, e.text[:0]
	switch e.kind {
	case PartText, PartThinking, PartToolCall:
	case PartRedactedThinking:
		e.text = append(e.text, c.Block.Data...)
	default:
		e.open, e.skip = true, true
		return out
	}
	e.open, e.skip = true, false
	e.itemID = e.h.itemID(e.kind, e.n)
	e.callID, e.name = c.Block.ID, c.Block.Name
	w := e.event(out, "response.output_item.added")
	w.raw(`,"output_index":`)
	w.int(int64(e.n))
	w.raw(`,"item":`)
	e.h.writeItem(&w, e.kind, e.n, e.callID, e.name, "", false)
	out = endEvent(&w)
	switch e.kind {
	case PartText:
		w = e.itemEvent(out, "response.content_part.added")
		w.raw(`,"content_index":0,"part":`)
		writeOutputText(&w, "")
		out = endEvent(&w)
	case PartThinking:
		w = e.itemEvent(out, "response.reasoning_summary_part.added")
		w.raw(`,"summary_index":0,"part":`)
		writeSummaryText(&w, "")
		out = endEvent(&w)
	}
	return out
}

// itemEvent starts an event about the open item: its item_id and output_index.
func (e *responsesStreamEncoder) itemEvent(out []byte, typ string) jsonWriter {
	w := e.event(out, typ)
	w.raw(`,"item_id":`)
	w.str(e.itemID)
	w.raw(`,"output_index":`)
	w.int(int64(e.n))
	return w
}

// delta writes a text, reasoning or argument fragment.
func (e *responsesStreamEncoder) delta(c *Chunk, out []byte) []byte {
	if !e.open || e.skip || c.Text == "" || c.Signature {
		return out
	}
	e.text = append(e.text, c.Text...)
	var w jsonWriter
	switch e.kind {
	case PartText:
		w = e.itemEvent(out, "response.output_text.delta")
		w.raw(`,"content_index":0,"delta":`)
		w.str(c.Text)
		w.raw(`,"logprobs":[]`)
	case PartThinking:
		w = e.itemEvent(out, "response.reasoning_summary_text.delta")
		w.raw(`,"summary_index":0,"delta":`)
		w.str(c.Text)
	case PartToolCall:
		w = e.itemEvent(out, "response.function_call_arguments.delta")
		w.raw(`,"delta":`)
		w.str(c.Text)
	default:
		return out // redacted thinking: kept for the item's encrypted_content
	}
	return endEvent(&w)
}

// closeBlock writes the done events of the open item and keeps the item
// for the final response.
func (e *responsesStreamEncoder) closeBlock(out []byte) []byte {
	if !e.open {
		return out
	}
	e.open = false
	if e.skip {
		return out
	}
	text := string(e.text)
	var w jsonWriter
	switch e.kind {
	case PartText:
		w = e.itemEvent(out, "response.output_text.done")
		w.raw(`,"content_index":0,"text":`)
		w.str(text)
		w.raw(`,"logprobs":[]`)
		out = endEvent(&w)
		w = e.itemEvent(out, "response.content_part.done")
		w.raw(`,"content_index":0,"part":`)
		writeOutputText(&w, text)
		out = endEvent(&w)
	case PartThinking:
		w = e.itemEvent(out, "response.reasoning_summary_text.done")
		w.raw(`,"summary_index":0,"text":`)
		w.str(text)
		out = endEvent(&w)
		w = e.itemEvent(out, "response.reasoning_summary_part.done")
		w.raw(`,"summary_index":0,"part":`)
		writeSummaryText(&w, text)
		out = endEvent(&w)
	case PartToolCall:
		if text == "" {
			text = "{}"
		}
		w = e.itemEvent(out, "response.function_call_arguments.done")
		w.raw(`,"arguments":`)
		w.str(text)
		out = endEvent(&w)
	}
	start := len(e.items)
	items := jsonWriter{b: e.items}
	if e.n > 0 {
		items.comma()
		start++
	}
	e.h.writeItem(&items, e.kind, e.n, e.callID, e.name, text, true)
	e.items = items.b
	w = e.event(out, "response.output_item.done")
	w.raw(`,"output_index":`)
	w.int(int64(e.n))
	w.raw(`,"item":`)
	w.b = append(w.b, e.items[start:]...)
	e.n++
	return endEvent(&w)
}

// end writes response.completed, or response.incomplete for a
// max-tokens or content-filter stop, with the whole answer.
func (e *responsesStreamEncoder) end(c *Chunk, out []byte) []byte {
	e.done = true
	typ := "response.completed"
	if c.StopReason == StopMaxTokens || c.StopReason == StopContentFilter {
		typ = "response.incomplete"
	}
	u := c.Usage
	if u == (Usage{}) {
		u = e.usage
	}
	w := e.event(out, typ)
	w.raw(`,"response":`)
	e.h.writeResponse(&w, c.StopReason, true, e.items, &u)
	return endEvent(&w)
}

// fail writes an error event; nothing follows it.
func (e *responsesStreamEncoder) fail(c *Chunk, out []byte) []byte {
	e.done = true
	code, msg := "upstream_error", "upstream stream error"
	if c.Err != nil {
		switch {
		case c.Err.Code != "":
			code = c.Err.Code
		case c.Err.Type != "":
			code = c.Err.Type
		}
		if c.Err.Message != "" {
			msg = c.Err.Message
		}
	}
	w := e.event(out, "error")
	w.raw(`,"code":`)
	w.str(code)
	w.raw(`,"message":`)
	w.str(msg)
	w.raw(`,"param":null`)
	return endEvent(&w)
}
