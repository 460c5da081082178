package mock

import (
	"net/http"
	"strings"
	"unicode/utf8"

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

// openAIUsage is Chat Completions' usage: prompt_tokens counts the cached
// tokens too, completion_tokens the reasoning tokens too.
func openAIUsage(t tally) obj {
	return obj{
		"prompt_tokens":     t.prompt,
		"completion_tokens": t.completion(),
		"total_tokens":      t.prompt + t.completion(),
		"prompt_tokens_details": obj{
			"cached_tokens": t.cacheRead, "audio_tokens": 0,
		},
		"completion_tokens_details": obj{
			"reasoning_tokens": t.reasoning, "audio_tokens": 0,
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

// chatFinish is the reply's finish_reason.
func chatFinish(r *reply) string {
	if len(r.calls) > 0 {
		return "tool_calls"
	}
	return finishReason(r.truncated)
}

// argPieceBytes is the most bytes of a tool call's arguments one stream
// delta carries, so that arguments arrive in several pieces.
const argPieceBytes = 8

// argPieces cuts a tool call's arguments into stream deltas of at most
// argPieceBytes bytes, at character boundaries.
func argPieces(args []byte) []string {
	var out []string
	for len(args) > 0 {
		n := min(argPieceBytes, len(args))
		for n < len(args) && !utf8.RuneStart(args[n]) {
			n++
		}
		out = append(out, string(args[:n]))
		args = args[n:]
	}
	return out
}

// chatCompletion answers POST /chat/completions: a chat.completion object,
// or chat.completion.chunk events ending with data: [DONE] (unless
// Behavior.OmitDone): a first chunk with the role, then one per text
// piece, or for each tool call a chunk with its id and name and chunks with
// pieces of its arguments; a chunk with the finish_reason. With
// stream_options.include_usage every chunk carries "usage": null and a last
// chunk with empty choices carries the usage.
func (c *call) chatCompletion() {
	r := &c.rep
	id := c.id("chatcmpl-")
	created := c.now.Unix()
	usage := openAIUsage(r.usage)
	if !c.stream {
		msg := obj{"role": "assistant", "content": r.text(), "refusal": nil, "annotations": []obj{}}
		if len(r.calls) > 0 {
			calls := make([]obj, len(r.calls))
			for i, tc := range r.calls {
				calls[i] = obj{"id": tc.id, "type": "function", "function": obj{"name": tc.name, "arguments": string(tc.args)}}
			}
			msg["content"], msg["tool_calls"] = nil, calls
		}
		c.writeJSON(http.StatusOK, obj{
			"id":                 id,
			"object":             "chat.completion",
			"created":            created,
			"model":              c.model,
			"choices":            []obj{{"index": 0, "message": msg, "logprobs": nil, "finish_reason": chatFinish(r)}},
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
	var segs []segment
	if len(r.calls) == 0 {
		ps := r.pieces
		pre := []sseEvent{jsonEvent("", chunk(choice(obj{"role": "assistant", "content": "", "refusal": nil}, nil)))}
		tmpl := newEventTemplate("", chunk(choice(obj{"content": slotPiece}, nil)))
		segs = append(segs, segment{pre: pre, n: len(ps), token: func(i int) sseEvent { return tmpl.fill(ps[i], 0) }})
	}
	for k, tc := range r.calls {
		head := []obj{{"index": k, "id": tc.id, "type": "function", "function": obj{"name": tc.name, "arguments": ""}}}
		delta := obj{"tool_calls": head}
		if k == 0 {
			delta = obj{"role": "assistant", "content": nil, "tool_calls": head, "refusal": nil}
		}
		tmpl := newEventTemplate("", chunk(choice(obj{"tool_calls": []obj{{"index": k, "function": obj{"arguments": slotPiece}}}}, nil)))
		ps := argPieces(tc.args)
		segs = append(segs, segment{pre: []sseEvent{jsonEvent("", chunk(choice(delta, nil)))}, n: len(ps),
			token: func(i int) sseEvent { return tmpl.fill(ps[i], 0) }})
	}
	post := func() []sseEvent {
		out := []sseEvent{jsonEvent("", chunk(choice(obj{}, chatFinish(r))))}
		if includeUsage {
			last := chunk([]obj{})
			last["usage"] = usage
			out = append(out, jsonEvent("", last))
		}
		return c.withDone(out)
	}
	c.streamSegments(segs, post)
}

// textCompletion answers the legacy POST /completions: a text_completion
// object or its stream, ending with data: [DONE] (unless Behavior.OmitDone).
func (c *call) textCompletion(n int, truncated bool) {
	words := c.answer(n)
	id := c.id("cmpl-")
	created := c.now.Unix()
	p := c.promptTokens()
	usage := obj{"prompt_tokens": p, "completion_tokens": n, "total_tokens": p + n}
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
		return c.withDone(out)
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
	p := c.promptTokens()
	c.writeJSON(http.StatusOK, obj{
		"object": "list",
		"data":   data,
		"model":  c.model,
		"usage":  obj{"prompt_tokens": p, "total_tokens": p},
	})
}

// listModels answers GET /models and /models/{id} in OpenAI's format, or in
// Anthropic's when the request carries anthropic-version.
func (c *call) listModels() {
	const created = 1700000000 // a fixed date keeps answers reproducible
	switch c.rt.proto {
	case protoAnthropic:
		c.anthropicModels()
		return
	case protoGemini:
		c.geminiModels()
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
