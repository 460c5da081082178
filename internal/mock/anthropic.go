package mock

import (
	"encoding/json"
	"net/http"
)

// anthropicUsage is Anthropic's usage: input_tokens leaves out the tokens
// read from or written to the cache, output_tokens counts the thinking.
func anthropicUsage(t tally, output int) obj {
	return obj{
		"input_tokens":                t.prompt - t.cacheRead - t.cacheWrite,
		"output_tokens":               output,
		"cache_creation_input_tokens": t.cacheWrite,
		"cache_read_input_tokens":     t.cacheRead,
		"service_tier":                "standard",
	}
}

// anthropicStop is the reply's stop_reason.
func anthropicStop(r *reply) string {
	switch {
	case len(r.calls) > 0:
		return "tool_use"
	case r.truncated:
		return "max_tokens"
	case r.stopSequence != "":
		return "stop_sequence"
	}
	return "end_turn"
}

// anthropicStopSequence is the reply's stop_sequence: the one that matched,
// or null.
func anthropicStopSequence(r *reply) any {
	if r.stopSequence == "" {
		return nil
	}
	return r.stopSequence
}

// message answers POST /v1/messages: a message object whose content is a
// thinking block (with thinking enabled), then text or tool_use blocks; or
// Anthropic's event stream: message_start (usage.input_tokens and the
// cache's), then per block content_block_start, its deltas (thinking_delta…
// and a signature_delta, text_delta…, input_json_delta…) and
// content_block_stop, with a ping after the first block's start;
// message_delta (stop_reason, usage.output_tokens), message_stop.
func (c *call) message() {
	r := &c.rep
	c.rememberPrefix(c.cv)
	id := c.id("msg_")
	stop := anthropicStop(r)
	msg := func(content []obj, stopReason, stopSequence any, usage obj) obj {
		return obj{
			"id":            id,
			"type":          "message",
			"role":          "assistant",
			"model":         c.model,
			"content":       content,
			"stop_reason":   stopReason,
			"stop_sequence": stopSequence,
			"usage":         usage,
		}
	}
	withText := len(r.pieces) > 0 || (len(r.calls) == 0 && r.thinking == nil)
	if !c.stream {
		var content []obj
		if r.thinking != nil {
			content = append(content, obj{"type": "thinking", "thinking": r.thinkingText(), "signature": r.signature})
		}
		if withText {
			content = append(content, obj{"type": "text", "text": r.text()})
		}
		for _, tc := range r.calls {
			content = append(content, obj{"type": "tool_use", "id": tc.id, "name": tc.name, "input": json.RawMessage(tc.args)})
		}
		c.writeJSON(http.StatusOK, msg(content, stop, anthropicStopSequence(r), anthropicUsage(r.usage, r.usage.completion())))
		return
	}
	var segs []segment
	pre := []sseEvent{jsonEvent("message_start", obj{"type": "message_start", "message": msg([]obj{}, nil, nil, anthropicUsage(r.usage, 1))})}
	index := 0
	block := func(start obj, deltaType, field string, ps []string) {
		pre = append(pre, jsonEvent("content_block_start", obj{"type": "content_block_start", "index": index, "content_block": start}))
		if index == 0 {
			pre = append(pre, jsonEvent("ping", obj{"type": "ping"}))
		}
		tmpl := newEventTemplate("content_block_delta", obj{
			"type": "content_block_delta", "index": index, "delta": obj{"type": deltaType, field: slotPiece},
		})
		segs = append(segs, segment{pre: pre, n: len(ps), token: func(i int) sseEvent { return tmpl.fill(ps[i], 0) }})
		pre = nil
		index++
	}
	stopBlock := func() {
		pre = append(pre, jsonEvent("content_block_stop", obj{"type": "content_block_stop", "index": index - 1}))
	}
	if r.thinking != nil {
		block(obj{"type": "thinking", "thinking": "", "signature": ""}, "thinking_delta", "thinking", r.thinking)
		pre = append(pre, jsonEvent("content_block_delta", obj{
			"type": "content_block_delta", "index": index - 1, "delta": obj{"type": "signature_delta", "signature": r.signature},
		}))
		stopBlock()
	}
	if withText {
		block(obj{"type": "text", "text": ""}, "text_delta", "text", r.pieces)
		stopBlock()
	}
	for _, tc := range r.calls {
		block(obj{"type": "tool_use", "id": tc.id, "name": tc.name, "input": obj{}}, "input_json_delta", "partial_json", argPieces(tc.args))
		stopBlock()
	}
	post := append(pre,
		jsonEvent("message_delta", obj{
			"type":  "message_delta",
			"delta": obj{"stop_reason": stop, "stop_sequence": anthropicStopSequence(r)},
			"usage": obj{"output_tokens": r.usage.completion()},
		}),
		jsonEvent("message_stop", obj{"type": "message_stop"}))
	c.streamSegments(segs, func() []sseEvent { return post })
}

// anthropicModels answers GET /v1/models and /v1/models/{id} in Anthropic's
// format.
func (c *call) anthropicModels() {
	const created = "2024-10-22T00:00:00Z"
	model := func(id string) obj {
		return obj{"type": "model", "id": id, "display_name": id, "created_at": created}
	}
	if c.rt.modelID != "" {
		for _, m := range c.s.models {
			if m == c.rt.modelID {
				c.writeJSON(http.StatusOK, model(m))
				return
			}
		}
		c.fail(statusError(protoAnthropic, http.StatusNotFound, "model: "+c.rt.modelID))
		return
	}
	data := make([]obj, len(c.s.models))
	for i, m := range c.s.models {
		data[i] = model(m)
	}
	var first, last any
	if len(c.s.models) > 0 {
		first, last = c.s.models[0], c.s.models[len(c.s.models)-1]
	}
	c.writeJSON(http.StatusOK, obj{"data": data, "has_more": false, "first_id": first, "last_id": last})
}
