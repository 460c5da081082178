package mock

import (
	"net/http"
	"strings"
)

func anthropicUsage(input, output int) obj {
	return obj{
		"input_tokens":                input,
		"output_tokens":               output,
		"cache_creation_input_tokens": 0,
		"cache_read_input_tokens":     0,
		"service_tier":                "standard",
	}
}

// message answers POST /v1/messages: a message object, or Anthropic's event
// stream: message_start (usage.input_tokens), content_block_start, ping,
// content_block_delta (text_delta)…, content_block_stop, message_delta
// (stop_reason, usage.output_tokens), message_stop.
func (c *call) message(n int, truncated bool) {
	words := c.answer(n)
	id := c.id("msg_")
	input := promptTokens(c.body)
	stop := "end_turn"
	if truncated {
		stop = "max_tokens"
	}
	msg := func(content []obj, stopReason any, usage obj) obj {
		return obj{
			"id":            id,
			"type":          "message",
			"role":          "assistant",
			"model":         c.model,
			"content":       content,
			"stop_reason":   stopReason,
			"stop_sequence": nil,
			"usage":         usage,
		}
	}
	if !c.stream {
		text := obj{"type": "text", "text": strings.Join(words, " ")}
		c.writeJSON(http.StatusOK, msg([]obj{text}, stop, anthropicUsage(input, n)))
		return
	}
	ps := pieces(words)
	pre := []sseEvent{
		jsonEvent("message_start", obj{"type": "message_start", "message": msg([]obj{}, nil, anthropicUsage(input, 1))}),
		jsonEvent("content_block_start", obj{"type": "content_block_start", "index": 0, "content_block": obj{"type": "text", "text": ""}}),
		jsonEvent("ping", obj{"type": "ping"}),
	}
	tmpl := newEventTemplate("content_block_delta", obj{
		"type": "content_block_delta", "index": 0, "delta": obj{"type": "text_delta", "text": slotPiece},
	})
	token := func(i int) sseEvent { return tmpl.fill(ps[i], 0) }
	post := func() []sseEvent {
		return []sseEvent{
			jsonEvent("content_block_stop", obj{"type": "content_block_stop", "index": 0}),
			jsonEvent("message_delta", obj{
				"type":  "message_delta",
				"delta": obj{"stop_reason": stop, "stop_sequence": nil},
				"usage": obj{"output_tokens": n},
			}),
			jsonEvent("message_stop", obj{"type": "message_stop"}),
		}
	}
	c.streamAnswer(pre, n, token, post)
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
