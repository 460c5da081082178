package codec

// EncodeRequest writes r as a Chat Completions request for an upstream
// that knows the model as model (the "model" field is left out when model
// is empty). What Chat cannot take back is dropped: thinking in the
// history, cache breakpoints, images in tool results, top_k (see
// docs/protocols.md#lossy-dropped-or-changed-never-refused). A stream always asks for usage.
func (openAIChat) EncodeRequest(r *Request, model string, _ EncodeOptions) ([]byte, error) {
	w := jsonWriter{b: make([]byte, 0, chatRequestSize(r))}
	w.raw("{")
	if model != "" {
		w.keyStr("model", model)
		w.comma()
	}
	w.raw(`"messages":[`)
	first := true
	if len(r.System) > 0 {
		w.raw(`{"role":"system","content":`)
		w.str(joinText(r.System, "\n\n"))
		w.raw("}")
		first = false
	}
	for i := range r.Messages {
		first = writeChatMessage(&w, &r.Messages[i], first)
	}
	w.raw("]")
	writeChatTools(&w, r)
	writeChatSettings(&w, r)
	w.raw("}")
	return w.b, nil
}

// chatRequestSize estimates the encoded size of r, so the buffer is
// allocated once.
func chatRequestSize(r *Request) int {
	n := 256
	for i := range r.System {
		n += len(r.System[i].Text) + 8
	}
	for i := range r.Messages {
		n += 40
		for j := range r.Messages[i].Parts {
			p := &r.Messages[i].Parts[j]
			n += len(p.Text) + len(p.Data) + len(p.URL) + len(p.Arguments) + len(p.ID) + len(p.Name) + 64
			for k := range p.Content {
				n += len(p.Content[k].Text) + 8
			}
		}
	}
	for i := range r.Tools {
		n += len(r.Tools[i].Name) + len(r.Tools[i].Description) + len(r.Tools[i].Schema) + 64
	}
	return n
}

// writeChatMessage writes m as one or more Chat messages (a user turn's
// tool results become tool messages first) and reports whether nothing
// has been written yet.
func writeChatMessage(w *jsonWriter, m *Message, first bool) bool {
	sep := func() {
		if !first {
			w.comma()
		}
		first = false
	}
	if m.Role == RoleAssistant {
		if hasChatAssistantContent(m.Parts) {
			sep()
			writeChatAssistant(w, m.Parts)
		}
		return first
	}
	rest := 0
	for i := range m.Parts {
		p := &m.Parts[i]
		if p.Kind != PartToolResult {
			if p.Kind == PartText || p.Kind == PartImage {
				rest++
			}
			continue
		}
		sep()
		w.raw(`{"role":"tool","tool_call_id":`)
		w.str(p.ID)
		w.raw(`,"content":`)
		w.str(joinText(p.Content, "\n"))
		w.raw("}")
	}
	if rest > 0 {
		sep()
		writeChatUser(w, m.Parts, rest)
	}
	return first
}

// writeChatUser writes a user message of the text and image parts: a
// string content for one text, else an array of parts.
func writeChatUser(w *jsonWriter, parts []Part, n int) {
	w.raw(`{"role":"user","content":`)
	if n == 1 {
		for i := range parts {
			if parts[i].Kind == PartText {
				w.str(parts[i].Text)
				w.raw("}")
				return
			}
		}
	}
	w.raw("[")
	first := true
	for i := range parts {
		p := &parts[i]
		if p.Kind != PartText && p.Kind != PartImage {
			continue
		}
		if !first {
			w.comma()
		}
		first = false
		if p.Kind == PartText {
			w.raw(`{"type":"text","text":`)
			w.str(p.Text)
			w.raw("}")
			continue
		}
		w.raw(`{"type":"image_url","image_url":{"url":`)
		w.b = appendImageURL(w.b, p)
		w.raw("}}")
	}
	w.raw("]}")
}

// hasChatAssistantContent reports whether parts hold anything an
// assistant message in Chat carries (non-empty text or tool calls): an
// empty assistant turn is left out, as the Chat decoder leaves it out.
func hasChatAssistantContent(parts []Part) bool {
	for i := range parts {
		if parts[i].Kind == PartText && parts[i].Text != "" || parts[i].Kind == PartToolCall {
			return true
		}
	}
	return false
}

// writeChatAssistant writes an assistant message: its text joined as
// content (null when it has only tool calls) and its tool calls.
func writeChatAssistant(w *jsonWriter, parts []Part) {
	w.raw(`{"role":"assistant","content":`)
	if containsKind(parts, PartText) {
		w.str(joinText(parts, ""))
	} else {
		w.raw("null")
	}
	writeChatToolCalls(w, parts)
	w.raw("}")
}

// writeChatTools writes tools, tool_choice and parallel_tool_calls (only
// with tools: OpenAI refuses them alone).
func writeChatTools(w *jsonWriter, r *Request) {
	if len(r.Tools) == 0 {
		return
	}
	w.raw(`,"tools":[`)
	for i := range r.Tools {
		t := &r.Tools[i]
		if i > 0 {
			w.comma()
		}
		w.raw(`{"type":"function","function":{"name":`)
		w.str(t.Name)
		if t.Description != "" {
			w.raw(`,"description":`)
			w.str(t.Description)
		}
		w.raw(`,"parameters":`)
		w.object(t.Schema, `{"type":"object"}`)
		w.raw("}}")
	}
	w.raw("]")
	switch r.ToolChoice.Mode {
	case ToolNone:
		w.raw(`,"tool_choice":"none"`)
	case ToolAny:
		w.raw(`,"tool_choice":"required"`)
	case ToolNamed:
		w.raw(`,"tool_choice":{"type":"function","function":{"name":`)
		w.str(r.ToolChoice.Name)
		w.raw("}}")
	}
	if r.ParallelToolCalls != nil {
		w.raw(`,"parallel_tool_calls":`)
		w.bool(*r.ParallelToolCalls)
	}
}

// writeChatSettings writes the sampling, output and stream settings.
func writeChatSettings(w *jsonWriter, r *Request) {
	if r.MaxTokens > 0 {
		w.raw(`,"max_tokens":`)
		w.int(r.MaxTokens)
	}
	if r.Temperature != nil {
		w.raw(`,"temperature":`)
		w.float(*r.Temperature)
	}
	if r.TopP != nil {
		w.raw(`,"top_p":`)
		w.float(*r.TopP)
	}
	if len(r.Stop) > 0 {
		w.raw(`,"stop":[`)
		for i, s := range r.Stop {
			if i > 0 {
				w.comma()
			}
			w.str(s)
		}
		w.raw("]")
	}
	if r.Stream {
		w.raw(`,"stream":true,"stream_options":{"include_usage":true}`)
	}
	if effort := effortForBudget(r.Thinking); effort != "" {
		w.raw(`,"reasoning_effort":`)
		w.str(effort)
	}
	if r.User != "" {
		w.raw(`,"user":`)
		w.str(r.User)
	}
}
