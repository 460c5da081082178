package codec

// EncodeRequest writes r as a Responses request. Translated requests to
// OpenAI upstreams take Chat (ForFamily); this makes the translator total
// and is not on the hot path. What the Responses API cannot take is
// dropped: stop sequences, top_k, thinking in the history (its reasoning
// items need ids the upstream issued), cache breakpoints (see
// docs/protocols.md#lossy-dropped-or-changed-never-refused). Function tools are sent with strict false,
// since the API's default (true) would reject most schemas.
func (openAIResponses) EncodeRequest(r *Request, model string, _ EncodeOptions) ([]byte, error) {
	w := jsonWriter{b: make([]byte, 0, chatRequestSize(r))}
	w.raw("{")
	if model != "" {
		w.keyStr("model", model)
		w.comma()
	}
	if instructions := joinText(r.System, "\n\n"); instructions != "" {
		w.keyStr("instructions", instructions)
		w.comma()
	}
	w.raw(`"input":[`)
	first := true
	for i := range r.Messages {
		first = writeResponsesInput(&w, &r.Messages[i], first)
	}
	w.raw("]")
	writeResponsesTools(&w, r)
	if r.MaxTokens > 0 {
		w.raw(`,"max_output_tokens":`)
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
	if r.Stream {
		w.raw(`,"stream":true`)
	}
	if effort := effortForBudget(r.Thinking); effort != "" {
		w.raw(`,"reasoning":{"effort":`)
		w.str(effort)
		w.raw("}")
	}
	if r.User != "" {
		w.raw(`,"user":`)
		w.str(r.User)
	}
	w.raw("}")
	return w.b, nil
}

// writeResponsesInput writes m as input items (a user turn's tool results
// become function_call_output items first) and reports whether nothing
// has been written yet.
func writeResponsesInput(w *jsonWriter, m *Message, first bool) bool {
	sep := func() {
		if !first {
			w.comma()
		}
		first = false
	}
	if m.Role == RoleAssistant {
		if containsKind(m.Parts, PartText) {
			sep()
			w.raw(`{"role":"assistant","content":`)
			w.str(joinText(m.Parts, ""))
			w.raw("}")
		}
		for i := range m.Parts {
			if p := &m.Parts[i]; p.Kind == PartToolCall {
				sep()
				w.raw(`{"type":"function_call","call_id":`)
				w.str(p.ID)
				w.raw(`,"name":`)
				w.str(p.Name)
				w.raw(`,"arguments":`)
				w.str(argumentsText(p))
				w.raw("}")
			}
		}
		return first
	}
	rest := 0
	for i := range m.Parts {
		p := &m.Parts[i]
		switch p.Kind {
		case PartToolResult:
			sep()
			w.raw(`{"type":"function_call_output","call_id":`)
			w.str(p.ID)
			w.raw(`,"output":`)
			w.str(joinText(p.Content, "\n"))
			w.raw("}")
		case PartText, PartImage:
			rest++
		}
	}
	if rest == 0 {
		return first
	}
	sep()
	w.raw(`{"role":"user","content":[`)
	n := 0
	for i := range m.Parts {
		p := &m.Parts[i]
		if p.Kind != PartText && p.Kind != PartImage {
			continue
		}
		if n > 0 {
			w.comma()
		}
		n++
		if p.Kind == PartText {
			w.raw(`{"type":"input_text","text":`)
			w.str(p.Text)
		} else {
			w.raw(`{"type":"input_image","image_url":`)
			w.b = appendImageURL(w.b, p)
		}
		w.raw("}")
	}
	w.raw("]}")
	return first
}

// writeResponsesTools writes tools, tool_choice and parallel_tool_calls.
func writeResponsesTools(w *jsonWriter, r *Request) {
	if len(r.Tools) == 0 {
		return
	}
	w.raw(`,"tools":[`)
	for i := range r.Tools {
		t := &r.Tools[i]
		if i > 0 {
			w.comma()
		}
		w.raw(`{"type":"function","name":`)
		w.str(t.Name)
		if t.Description != "" {
			w.raw(`,"description":`)
			w.str(t.Description)
		}
		w.raw(`,"parameters":`)
		w.object(t.Schema, `{"type":"object"}`)
		w.raw(`,"strict":false}`)
	}
	w.raw("]")
	switch r.ToolChoice.Mode {
	case ToolNone:
		w.raw(`,"tool_choice":"none"`)
	case ToolAny:
		w.raw(`,"tool_choice":"required"`)
	case ToolNamed:
		w.raw(`,"tool_choice":{"type":"function","name":`)
		w.str(r.ToolChoice.Name)
		w.raw("}")
	}
	if r.ParallelToolCalls != nil {
		w.raw(`,"parallel_tool_calls":`)
		w.bool(*r.ParallelToolCalls)
	}
}
