package mock

import (
	"net/http"
	"strings"

	"github.com/tidwall/gjson"
)

// systemFingerprint is sent where OpenAI sends one.
const systemFingerprint = "fp_mock"

// defaultEmbeddingDims is the vector size when the request sets no
// "dimensions"; maxEmbeddingDims bounds it.
const (
	defaultEmbeddingDims = 8
	maxEmbeddingDims     = 4096
)

func openAIUsage(prompt, completion int) obj {
	return obj{
		"prompt_tokens":     prompt,
		"completion_tokens": completion,
		"total_tokens":      prompt + completion,
		"prompt_tokens_details": obj{
			"cached_tokens": 0, "audio_tokens": 0,
		},
		"completion_tokens_details": obj{
			"reasoning_tokens": 0, "audio_tokens": 0,
			"accepted_prediction_tokens": 0, "rejected_prediction_tokens": 0,
		},
	}
}

func finishReason(truncated bool) string {
	if truncated {
		return "length"
	}
	return "stop"
}

// chatCompletion answers POST /chat/completions: a chat.completion object,
// or chat.completion.chunk events ending with data: [DONE]. With
// stream_options.include_usage every chunk carries "usage": null and a last
// chunk with empty choices carries the usage.
func (c *call) chatCompletion(n int, truncated bool) {
	words := c.answer(n)
	id := c.id("chatcmpl-")
	created := c.now.Unix()
	usage := openAIUsage(promptTokens(c.body), n)
	if !c.stream {
		c.writeJSON(http.StatusOK, obj{
			"id":      id,
			"object":  "chat.completion",
			"created": created,
			"model":   c.model,
			"choices": []obj{{
				"index": 0,
				"message": obj{
					"role":        "assistant",
					"content":     strings.Join(words, " "),
					"refusal":     nil,
					"annotations": []obj{},
				},
				"logprobs":      nil,
				"finish_reason": finishReason(truncated),
			}},
			"usage":              usage,
			"service_tier":       "default",
			"system_fingerprint": systemFingerprint,
		})
		return
	}
	includeUsage := gjson.GetBytes(c.body, "stream_options.include_usage").Bool()
	chunk := func(choices []obj) obj {
		m := obj{
			"id":                 id,
			"object":             "chat.completion.chunk",
			"created":            created,
			"model":              c.model,
			"service_tier":       "default",
			"system_fingerprint": systemFingerprint,
			"choices":            choices,
		}
		if includeUsage {
			m["usage"] = nil
		}
		return m
	}
	choice := func(delta obj, finish any) []obj {
		return []obj{{"index": 0, "delta": delta, "logprobs": nil, "finish_reason": finish}}
	}
	ps := pieces(words)
	pre := []sseEvent{jsonEvent("", chunk(choice(obj{"role": "assistant", "content": "", "refusal": nil}, nil)))}
	tmpl := newEventTemplate("", chunk(choice(obj{"content": slotPiece}, nil)))
	token := func(i int) sseEvent { return tmpl.fill(ps[i], 0) }
	post := func() []sseEvent {
		out := []sseEvent{jsonEvent("", chunk(choice(obj{}, finishReason(truncated))))}
		if includeUsage {
			last := chunk([]obj{})
			last["usage"] = usage
			out = append(out, jsonEvent("", last))
		}
		return append(out, doneEvent)
	}
	c.streamAnswer(pre, n, token, post)
}

// textCompletion answers the legacy POST /completions: a text_completion
// object or its stream, ending with data: [DONE].
func (c *call) textCompletion(n int, truncated bool) {
	words := c.answer(n)
	id := c.id("cmpl-")
	created := c.now.Unix()
	usage := obj{"prompt_tokens": promptTokens(c.body), "completion_tokens": n, "total_tokens": promptTokens(c.body) + n}
	completion := func(text string, finish any) obj {
		return obj{
			"id":                 id,
			"object":             "text_completion",
			"created":            created,
			"model":              c.model,
			"system_fingerprint": systemFingerprint,
			"choices":            []obj{{"text": text, "index": 0, "logprobs": nil, "finish_reason": finish}},
		}
	}
	if !c.stream {
		m := completion(strings.Join(words, " "), finishReason(truncated))
		m["usage"] = usage
		c.writeJSON(http.StatusOK, m)
		return
	}
	includeUsage := gjson.GetBytes(c.body, "stream_options.include_usage").Bool()
	withUsage := func(m obj) obj {
		if includeUsage {
			m["usage"] = nil
		}
		return m
	}
	ps := pieces(words)
	tmpl := newEventTemplate("", withUsage(completion(slotPiece, nil)))
	token := func(i int) sseEvent { return tmpl.fill(ps[i], 0) }
	post := func() []sseEvent {
		out := []sseEvent{jsonEvent("", withUsage(completion("", finishReason(truncated))))}
		if includeUsage {
			last := completion("", nil)
			last["choices"] = []obj{}
			last["usage"] = usage
			out = append(out, jsonEvent("", last))
		}
		return append(out, doneEvent)
	}
	c.streamAnswer(nil, n, token, post)
}

// embeddings answers POST /embeddings with one deterministic unit vector per
// input: a string, an array of strings, a token array, or an array of token
// arrays. encoding_format "base64" packs little-endian float32s.
func (c *call) embeddings() {
	input := gjson.GetBytes(c.body, "input")
	var items []string
	switch {
	case input.Type == gjson.String:
		items = []string{input.String()}
	case input.IsArray():
		arr := input.Array()
		if len(arr) > 0 && arr[0].Type == gjson.Number {
			items = []string{input.Raw} // one input given as tokens
			break
		}
		for _, v := range arr {
			if v.Type == gjson.String {
				items = append(items, v.String())
			} else {
				items = append(items, v.Raw)
			}
		}
	}
	if len(items) == 0 {
		c.fail(statusError(protoOpenAI, http.StatusBadRequest, "'input' is a required property and must be a non-empty string or array"))
		return
	}
	dims := defaultEmbeddingDims
	if d := gjson.GetBytes(c.body, "dimensions"); d.Exists() {
		if d.Type != gjson.Number || d.Int() < 1 || d.Int() > maxEmbeddingDims {
			c.fail(statusError(protoOpenAI, http.StatusBadRequest, "'dimensions' must be an integer from 1 to 4096"))
			return
		}
		dims = int(d.Int())
	}
	b64 := gjson.GetBytes(c.body, "encoding_format").String() == "base64"
	data := make([]obj, len(items))
	for i, in := range items {
		vec := embedding(c.s.seed, in, dims)
		var v any = vec
		if b64 {
			v = embeddingBase64(vec)
		}
		data[i] = obj{"object": "embedding", "index": i, "embedding": v}
	}
	p := promptTokens(c.body)
	c.writeJSON(http.StatusOK, obj{
		"object": "list",
		"data":   data,
		"model":  c.model,
		"usage":  obj{"prompt_tokens": p, "total_tokens": p},
	})
}

// response answers POST /responses: a Responses API object, or its event
// stream (response.created, response.in_progress,
// response.output_item.added, response.content_part.added,
// response.output_text.delta…, response.output_text.done,
// response.content_part.done, response.output_item.done,
// response.completed), each as "event: type" + "data: {...}".
func (c *call) response(n int, truncated bool) {
	words := c.answer(n)
	respID := c.id("resp_")
	msgID := c.id("msg_")
	text := strings.Join(words, " ")
	prompt := promptTokens(c.body)
	usage := obj{
		"input_tokens":          prompt,
		"input_tokens_details":  obj{"cached_tokens": 0},
		"output_tokens":         n,
		"output_tokens_details": obj{"reasoning_tokens": 0},
		"total_tokens":          prompt + n,
	}
	part := func(text string) obj {
		return obj{"type": "output_text", "text": text, "annotations": []obj{}, "logprobs": []obj{}}
	}
	item := func(status string, content []obj) obj {
		return obj{"type": "message", "id": msgID, "status": status, "role": "assistant", "content": content}
	}
	finalStatus := "completed"
	var incomplete any
	if truncated {
		finalStatus = "incomplete"
		incomplete = obj{"reason": "max_output_tokens"}
	}
	resp := func(status string, output []obj, usage any, incomplete any) obj {
		var maxOut any
		if v := gjson.GetBytes(c.body, "max_output_tokens"); v.Exists() {
			maxOut = v.Int()
		}
		var prev any
		if v := gjson.GetBytes(c.body, "previous_response_id"); v.Type == gjson.String {
			prev = v.String()
		}
		return obj{
			"id":                   respID,
			"object":               "response",
			"created_at":           c.now.Unix(),
			"status":               status,
			"background":           false,
			"error":                nil,
			"incomplete_details":   incomplete,
			"instructions":         nil,
			"max_output_tokens":    maxOut,
			"model":                c.model,
			"output":               output,
			"parallel_tool_calls":  true,
			"previous_response_id": prev,
			"reasoning":            obj{"effort": nil, "summary": nil},
			"service_tier":         "default",
			"store":                true,
			"temperature":          1.0,
			"text":                 obj{"format": obj{"type": "text"}},
			"tool_choice":          "auto",
			"tools":                []obj{},
			"top_p":                1.0,
			"truncation":           "disabled",
			"usage":                usage,
			"metadata":             obj{},
		}
	}
	itemStatus := "completed"
	if truncated {
		itemStatus = "incomplete"
	}
	final := resp(finalStatus, []obj{item(itemStatus, []obj{part(text)})}, usage, incomplete)
	if !c.stream {
		c.writeJSON(http.StatusOK, final)
		return
	}
	// Every event carries its position in the stream as sequence_number.
	event := func(typ string, seq any, fields obj) sseEvent {
		fields["type"] = typ
		fields["sequence_number"] = seq
		return jsonEvent(typ, fields)
	}
	ps := pieces(words)
	pre := []sseEvent{
		event("response.created", 0, obj{"response": resp("in_progress", []obj{}, nil, nil)}),
		event("response.in_progress", 1, obj{"response": resp("in_progress", []obj{}, nil, nil)}),
		event("response.output_item.added", 2, obj{"output_index": 0, "item": item("in_progress", []obj{})}),
		event("response.content_part.added", 3, obj{"item_id": msgID, "output_index": 0, "content_index": 0, "part": part("")}),
	}
	tmpl := newEventTemplate("response.output_text.delta", obj{
		"type": "response.output_text.delta", "sequence_number": slotSeq,
		"item_id": msgID, "output_index": 0, "content_index": 0, "delta": slotPiece, "logprobs": []obj{},
	})
	token := func(i int) sseEvent { return tmpl.fill(ps[i], len(pre)+i) }
	post := func() []sseEvent {
		seq := len(pre) + n
		completedType := "response.completed"
		if truncated {
			completedType = "response.incomplete"
		}
		return []sseEvent{
			event("response.output_text.done", seq, obj{"item_id": msgID, "output_index": 0, "content_index": 0, "text": text, "logprobs": []obj{}}),
			event("response.content_part.done", seq+1, obj{"item_id": msgID, "output_index": 0, "content_index": 0, "part": part(text)}),
			event("response.output_item.done", seq+2, obj{"output_index": 0, "item": item(itemStatus, []obj{part(text)})}),
			event(completedType, seq+3, obj{"response": final}),
		}
	}
	c.streamAnswer(pre, n, token, post)
}

// listModels answers GET /models and /models/{id} in OpenAI's format, or in
// Anthropic's when the request carries anthropic-version.
func (c *call) listModels() {
	const created = 1700000000 // a fixed date keeps answers reproducible
	if c.rt.proto == protoAnthropic {
		c.anthropicModels()
		return
	}
	model := func(id string) obj {
		return obj{"id": id, "object": "model", "created": created, "owned_by": c.s.name}
	}
	if c.rt.modelID != "" {
		for _, m := range c.s.models {
			if m == c.rt.modelID {
				c.writeJSON(http.StatusOK, model(m))
				return
			}
		}
		c.fail(apiError{status: http.StatusNotFound, typ: "invalid_request_error", code: "model_not_found",
			message: "The model '" + c.rt.modelID + "' does not exist or you do not have access to it."})
		return
	}
	data := make([]obj, len(c.s.models))
	for i, m := range c.s.models {
		data[i] = model(m)
	}
	c.writeJSON(http.StatusOK, obj{"object": "list", "data": data})
}
