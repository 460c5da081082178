package mock

import (
	"encoding/json"
	"net/http"
	"strings"

	"github.com/tidwall/gjson"
)

// Gemini model metadata, as GET /models reports it for every model.
const (
	geminiInputLimit  = 1_048_576
	geminiOutputLimit = 65_536
)

// geminiUsage is usageMetadata: promptTokenCount counts the cached tokens
// too, candidatesTokenCount the visible answer, thoughtsTokenCount the
// reasoning; zero counts are left out, as proto3 JSON does.
func geminiUsage(t tally) obj {
	total := t.prompt + t.output + t.reasoning
	u := obj{
		"promptTokenCount":    t.prompt,
		"totalTokenCount":     total,
		"promptTokensDetails": []obj{{"modality": "TEXT", "tokenCount": t.prompt}},
	}
	if t.output > 0 {
		u["candidatesTokenCount"] = t.output
	}
	if t.cacheRead > 0 {
		u["cachedContentTokenCount"] = t.cacheRead
		u["cacheTokensDetails"] = []obj{{"modality": "TEXT", "tokenCount": t.cacheRead}}
	}
	if t.reasoning > 0 {
		u["thoughtsTokenCount"] = t.reasoning
	}
	return u
}

// geminiFinish is a candidate's finishReason.
func geminiFinish(r *reply) string {
	if r.truncated {
		return "MAX_TOKENS"
	}
	return "STOP"
}

// generateContent answers :generateContent with a GenerateContentResponse,
// and :streamGenerateContent with its chunks: one per reasoning and text
// piece (candidates[0].content.parts[0].text, thought pieces marked
// "thought": true), the tool calls whole in one, each with the prompt's
// usageMetadata; the last chunk carries the finishReason and the whole
// usage. With alt=sse the chunks are "data:" events and no terminal event;
// without it, the elements of one JSON array.
func (c *call) generateContent() {
	r := &c.rep
	respID := c.id("")
	candidate := func(parts []obj, finish string) []obj {
		cand := obj{"content": obj{"parts": parts, "role": "model"}, "index": 0}
		if finish != "" {
			cand["finishReason"] = finish
		}
		return []obj{cand}
	}
	response := func(parts []obj, finish string, usage obj) obj {
		return obj{"candidates": candidate(parts, finish), "usageMetadata": usage, "modelVersion": c.model, "responseId": respID}
	}
	calls := make([]obj, len(r.calls))
	for i, tc := range r.calls {
		calls[i] = obj{"functionCall": obj{"id": tc.id, "name": tc.name, "args": json.RawMessage(tc.args)}}
	}
	if !c.stream {
		var parts []obj
		if r.thinking != nil {
			parts = append(parts, obj{"text": r.thinkingText(), "thought": true})
		}
		if len(r.calls) == 0 {
			parts = append(parts, obj{"text": r.text()})
		}
		parts = append(parts, calls...)
		c.writeJSON(http.StatusOK, response(parts, geminiFinish(r), geminiUsage(r.usage)))
		return
	}
	partial := geminiUsage(tally{prompt: r.usage.prompt, cacheRead: r.usage.cacheRead})
	var segs []segment
	if r.thinking != nil {
		tmpl := newEventTemplate("", response([]obj{{"text": slotPiece, "thought": true}}, "", partial))
		ps := r.thinking
		segs = append(segs, segment{n: len(ps), token: func(i int) sseEvent { return tmpl.fill(ps[i], 0) }})
	}
	final := response([]obj{{"text": ""}}, geminiFinish(r), geminiUsage(r.usage))
	if len(r.calls) > 0 {
		final = response(calls, geminiFinish(r), geminiUsage(r.usage))
	} else {
		tmpl := newEventTemplate("", response([]obj{{"text": slotPiece}}, "", partial))
		ps := r.pieces
		segs = append(segs, segment{n: len(ps), token: func(i int) sseEvent { return tmpl.fill(ps[i], 0) }})
	}
	c.streamSegments(segs, func() []sseEvent { return []sseEvent{jsonEvent("", final)} })
}

// countTokens answers :countTokens for contents, or for a whole
// generateContentRequest, with the prompt estimate.
func (c *call) countTokens() {
	if len(gjson.GetBytes(c.body, "contents").Array()) == 0 && !gjson.GetBytes(c.body, "generateContentRequest").IsObject() {
		c.fail(*geminiInvalid("* CountTokensRequest.contents: contents is not specified\n"))
		return
	}
	n := c.promptTokens()
	c.writeJSON(http.StatusOK, obj{"totalTokens": n, "promptTokensDetails": []obj{{"modality": "TEXT", "tokenCount": n}}})
}

// embedContent answers :embedContent ({"embedding":{"values"}}) and
// :batchEmbedContents ({"embeddings":[…]}) with deterministic unit
// vectors of outputDimensionality (default 8) dimensions.
func (c *call) embedContent() {
	reqs := []gjson.Result{gjson.ParseBytes(c.body)}
	if c.rt.endpoint == epBatchEmbed {
		reqs = gjson.GetBytes(c.body, "requests").Array()
		if len(reqs) == 0 {
			c.fail(*geminiInvalid("* BatchEmbedContentsRequest.requests: requests is not specified\n"))
			return
		}
	}
	out := make([]obj, len(reqs))
	for i, req := range reqs {
		parts := req.Get("content.parts").Array()
		if len(parts) == 0 {
			c.fail(*geminiInvalid("* EmbedContentRequest.content: content is not specified\n"))
			return
		}
		texts := make([]string, len(parts))
		for j, p := range parts {
			texts[j] = p.Get("text").String()
		}
		dims := defaultEmbeddingDims
		if d := req.Get("outputDimensionality"); d.Exists() {
			if d.Type != gjson.Number || d.Int() < 1 || d.Int() > maxEmbeddingDims {
				c.fail(*geminiInvalid("* EmbedContentRequest.output_dimensionality: must be from 1 to 4096\n"))
				return
			}
			dims = int(d.Int())
		}
		out[i] = obj{"values": embedding(c.s.seed, strings.Join(texts, "\n"), dims)}
	}
	if c.rt.endpoint == epBatchEmbed {
		c.writeJSON(http.StatusOK, obj{"embeddings": out})
		return
	}
	c.writeJSON(http.StatusOK, obj{"embedding": out[0]})
}

// geminiModels answers GET /models ({"models":[…]}) and /models/{model}
// in Google's format.
func (c *call) geminiModels() {
	model := func(id string) obj {
		return obj{
			"name": "models/" + id, "version": "001", "displayName": id,
			"description":                id + " served by mock " + c.s.name,
			"inputTokenLimit":            geminiInputLimit,
			"outputTokenLimit":           geminiOutputLimit,
			"supportedGenerationMethods": []string{"generateContent", "countTokens"},
			"temperature":                1.0, "topP": 0.95, "topK": 64,
		}
	}
	if c.rt.modelID != "" {
		id := strings.TrimPrefix(c.rt.modelID, "models/")
		for _, m := range c.s.models {
			if m == id {
				c.writeJSON(http.StatusOK, model(m))
				return
			}
		}
		c.fail(statusError(protoGemini, http.StatusNotFound, "models/"+id+" is not found for API version v1beta, or is not supported for generateContent. Call ListModels to see the list of available models and their supported methods."))
		return
	}
	data := make([]obj, len(c.s.models))
	for i, m := range c.s.models {
		data[i] = model(m)
	}
	c.writeJSON(http.StatusOK, obj{"models": data})
}
