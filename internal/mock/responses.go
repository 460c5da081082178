package mock

import (
	"encoding/json"
	"net/http"

	"github.com/tidwall/gjson"
)

// seqStream builds a Responses event stream, numbering every event in
// sequence_number, token events included.
type seqStream struct {
	seq  int
	pre  []sseEvent // events since the last run of tokens
	segs []segment
}

// event adds an event of type typ with fields.
func (b *seqStream) event(typ string, fields obj) {
	fields["type"] = typ
	fields["sequence_number"] = b.seq
	b.seq++
	b.pre = append(b.pre, jsonEvent(typ, fields))
}

// tokens adds one event per piece, made from tmpl (which has slotPiece and
// slotSeq).
func (b *seqStream) tokens(tmpl eventTemplate, ps []string) {
	base := b.seq
	b.segs = append(b.segs, segment{pre: b.pre, n: len(ps), token: func(i int) sseEvent { return tmpl.fill(ps[i], base+i) }})
	b.pre = nil
	b.seq += len(ps)
}

// response answers POST /responses: a Responses API object whose output is
// a reasoning item (with reasoning.effort) and then a message or function
// calls; or its event stream: response.created, response.in_progress, for
// each output item response.output_item.added, its parts' events
// (reasoning_summary_part/_text, content_part and output_text,
// function_call_arguments), response.output_item.done; and
// response.completed (response.incomplete when cut), each as "event:
// type" + "data: {...}" with contiguous sequence_number.
func (c *call) response() {
	r := &c.rep
	respID := c.id("resp_")
	c.s.stored.Add(respID, struct{}{})
	items := c.responseItems()
	final := c.responseObject(respID, r, items.done)
	if !c.stream {
		c.writeJSON(http.StatusOK, final)
		return
	}
	var b seqStream
	b.event("response.created", obj{"response": c.responseObject(respID, nil, nil)})
	b.event("response.in_progress", obj{"response": c.responseObject(respID, nil, nil)})
	for o, it := range items.done {
		b.event("response.output_item.added", obj{"output_index": o, "item": items.added[o]})
		id := items.ids[o]
		switch it["type"] {
		case "reasoning":
			text := r.thinkingText()
			at := func(m obj) obj {
				m["item_id"], m["output_index"], m["summary_index"] = id, o, 0
				return m
			}
			b.event("response.reasoning_summary_part.added", at(obj{"part": obj{"type": "summary_text", "text": ""}}))
			b.tokens(newEventTemplate("response.reasoning_summary_text.delta", at(obj{
				"type": "response.reasoning_summary_text.delta", "sequence_number": slotSeq, "delta": slotPiece,
			})), r.thinking)
			b.event("response.reasoning_summary_text.done", at(obj{"text": text}))
			b.event("response.reasoning_summary_part.done", at(obj{"part": obj{"type": "summary_text", "text": text}}))
		case "message":
			text := r.text()
			at := func(m obj) obj {
				m["item_id"], m["output_index"], m["content_index"] = id, o, 0
				return m
			}
			b.event("response.content_part.added", at(obj{"part": outputText("")}))
			b.tokens(newEventTemplate("response.output_text.delta", at(obj{
				"type": "response.output_text.delta", "sequence_number": slotSeq, "delta": slotPiece, "logprobs": []obj{},
			})), r.pieces)
			b.event("response.output_text.done", at(obj{"text": text, "logprobs": []obj{}}))
			b.event("response.content_part.done", at(obj{"part": outputText(text)}))
		case "function_call":
			args := it["arguments"].(string)
			b.tokens(newEventTemplate("response.function_call_arguments.delta", obj{
				"type": "response.function_call_arguments.delta", "sequence_number": slotSeq,
				"item_id": id, "output_index": o, "delta": slotPiece,
			}), argPieces([]byte(args)))
			b.event("response.function_call_arguments.done", obj{"item_id": id, "output_index": o, "name": it["name"], "arguments": args})
		}
		b.event("response.output_item.done", obj{"output_index": o, "item": it})
	}
	completed := "response.completed"
	if r.truncated {
		completed = "response.incomplete"
	}
	b.event(completed, obj{"response": final})
	post := b.pre
	c.streamSegments(b.segs, func() []sseEvent { return post })
}

// responseItems are a reply's output items: as added (in progress, empty)
// and as done, with their ids.
type responseItems struct {
	added, done []obj
	ids         []string
}

// responseItems builds the reply's output: a reasoning item with its
// summary, then the message or the function calls.
func (c *call) responseItems() responseItems {
	r := &c.rep
	var items responseItems
	add := func(id string, added, done obj) {
		items.ids = append(items.ids, id)
		items.added = append(items.added, added)
		items.done = append(items.done, done)
	}
	if r.thinking != nil {
		id := c.id("rs_")
		summary := []obj{{"type": "summary_text", "text": r.thinkingText()}}
		add(id, obj{"type": "reasoning", "id": id, "summary": []obj{}},
			obj{"type": "reasoning", "id": id, "summary": summary})
	}
	for _, tc := range r.calls {
		id := "fc_" + tc.id
		call := func(status, args string) obj {
			return obj{"type": "function_call", "id": id, "call_id": tc.id, "name": tc.name, "arguments": args, "status": status}
		}
		add(id, call("in_progress", ""), call("completed", string(tc.args)))
	}
	if len(r.calls) == 0 {
		id := c.id("msg_")
		status := "completed"
		if r.truncated {
			status = "incomplete"
		}
		msg := func(status string, content []obj) obj {
			return obj{"type": "message", "id": id, "status": status, "role": "assistant", "content": content}
		}
		add(id, msg("in_progress", []obj{}), msg(status, []obj{outputText(r.text())}))
	}
	return items
}

func outputText(text string) obj {
	return obj{"type": "output_text", "text": text, "annotations": []obj{}, "logprobs": []obj{}}
}

// responsesUsage is the Responses API's usage: input_tokens counts the
// cached tokens too, output_tokens the reasoning tokens too.
func responsesUsage(t tally) obj {
	return obj{
		"input_tokens":          t.prompt,
		"input_tokens_details":  obj{"cached_tokens": t.cacheRead},
		"output_tokens":         t.completion(),
		"output_tokens_details": obj{"reasoning_tokens": t.reasoning},
		"total_tokens":          t.prompt + t.completion(),
	}
}

// responseObject is the Response object: in progress without usage (r
// nil), or finished with output. It echoes the request's settings.
func (c *call) responseObject(id string, r *reply, output []obj) obj {
	status, usage := "in_progress", any(nil)
	var incomplete any
	if r != nil {
		status, usage = "completed", responsesUsage(r.usage)
		if r.truncated {
			status, incomplete = "incomplete", obj{"reason": "max_output_tokens"}
		}
	}
	if output == nil {
		output = []obj{}
	}
	raw := func(path, otherwise string) json.RawMessage {
		if v := gjson.GetBytes(c.body, path); v.Exists() && v.Type != gjson.Null {
			return json.RawMessage(v.Raw)
		}
		return json.RawMessage(otherwise)
	}
	o := obj{
		"id":                   id,
		"object":               "response",
		"created_at":           c.now.Unix(),
		"status":               status,
		"background":           false,
		"error":                nil,
		"incomplete_details":   incomplete,
		"instructions":         raw("instructions", "null"),
		"max_output_tokens":    raw("max_output_tokens", "null"),
		"model":                c.model,
		"output":               output,
		"parallel_tool_calls":  !c.cv.single,
		"previous_response_id": raw("previous_response_id", "null"),
		"reasoning":            obj{"effort": raw("reasoning.effort", "null"), "summary": raw("reasoning.summary", "null")},
		"service_tier":         "default",
		"store":                true,
		"temperature":          raw("temperature", "1.0"),
		"text":                 obj{"format": obj{"type": "text"}},
		"tool_choice":          raw("tool_choice", `"auto"`),
		"tools":                raw("tools", "[]"),
		"top_p":                raw("top_p", "1.0"),
		"truncation":           "disabled",
		"usage":                usage,
		"metadata":             raw("metadata", "{}"),
	}
	// A response in a conversation names it as an object, whichever form
	// the request gave.
	if conv := gjson.GetBytes(c.body, "conversation"); conv.Type == gjson.String && conv.Str != "" {
		o["conversation"] = obj{"id": conv.Str}
	} else if id := conv.Get("id"); conv.IsObject() && id.Type == gjson.String {
		o["conversation"] = obj{"id": id.Str}
	}
	return o
}
