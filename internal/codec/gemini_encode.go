package codec

import (
	"fmt"
	"path"
	"strings"

	"github.com/tidwall/gjson"
)

// geminiMaxStops is how many stopSequences Gemini takes.
const geminiMaxStops = 5

// geminiSkipSignature is the thoughtSignature Google documents for a
// function call whose signature was lost (a conversation that another
// protocol carried): Gemini 3 refuses a function call turn without one.
const geminiSkipSignature = "skip_thought_signature_validator"

// EncodeRequest writes r as a Gemini generateContent request, the
// protocol translated requests take to a Gemini upstream; the model goes
// in the URL, so model is not written.
//
// Consecutive messages of one role are merged (assistant → "model"), a user
// turn's function responses first. Thinking and redacted thinking in the
// history are left out (Gemini keeps its reasoning in thought signatures,
// which ride on the parts that carry them), and so are images inside tool
// results. A tool result becomes a functionResponse named by Part.Name or
// by the call with its id; its response is the content when that is a JSON
// object, else {"result": text} ({"error": text} for an error). The first
// function call of a model turn with no thought signature gets Google's
// documented skip signature. Tool schemas go as parametersJsonSchema.
// Only the first five stop sequences are sent (Gemini's limit). ParallelToolCalls
// and User have no Gemini field and are dropped.
func (gemini) EncodeRequest(r *Request, _ string, _ EncodeOptions) ([]byte, error) {
	b := make([]byte, 0, 256+requestBytesHint(r))
	b = append(b, `{"contents":[`...)
	var err error
	if b, err = appendGeminiContents(b, r.Messages); err != nil {
		return nil, err
	}
	b = append(b, ']')
	b = appendGeminiSystem(b, r.System)
	if len(r.Tools) > 0 {
		b = appendGeminiTools(b, r)
	}
	b = appendGeminiGeneration(b, r)
	return append(b, '}'), nil
}

func appendGeminiContents(b []byte, msgs []Message) ([]byte, error) {
	first := true
	for i, j := range turns(msgs, geminiHasContent) {
		if !first {
			b = append(b, ',')
		}
		first = false
		var err error
		if b, err = appendGeminiTurn(b, msgs[i].Role, msgs[i:j], msgs[:i]); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// appendGeminiTurn writes the messages of one role as one content; earlier
// are the messages before them, where tool results find their calls' names.
func appendGeminiTurn(b []byte, role Role, msgs, earlier []Message) ([]byte, error) {
	if role == RoleAssistant {
		b = append(b, `{"role":"model","parts":[`...)
	} else {
		b = append(b, `{"role":"user","parts":[`...)
	}
	comma := false
	needSignature := role == RoleAssistant && !geminiTurnSigned(msgs)
	var err error
	pass := func(results bool) {
		for i := range msgs {
			for j := range msgs[i].Parts {
				p := &msgs[i].Parts[j]
				if (p.Kind == PartToolResult) != results || !geminiKeeps(p) || err != nil {
					continue
				}
				if comma {
					b = append(b, ',')
				}
				comma = true
				switch {
				case p.Kind == PartToolResult:
					b, err = appendGeminiResult(b, p, earlier)
				case p.Kind == PartToolCall && needSignature:
					b = appendGeminiCall(b, p, geminiSkipSignature)
					needSignature = false
				default:
					b = appendGeminiPart(b, p)
				}
			}
		}
	}
	if role == RoleUser {
		pass(true)
	}
	pass(false)
	return append(b, ']', '}'), err
}

// geminiTurnSigned reports whether a function call of the turn carries a
// thought signature.
func geminiTurnSigned(msgs []Message) bool {
	for i := range msgs {
		for j := range msgs[i].Parts {
			if p := &msgs[i].Parts[j]; p.Kind == PartToolCall && p.Signature != "" {
				return true
			}
		}
	}
	return false
}

func geminiHasContent(m *Message) bool {
	for j := range m.Parts {
		if geminiKeeps(&m.Parts[j]) {
			return true
		}
	}
	return false
}

// geminiKeeps reports whether a part is sent to Gemini.
func geminiKeeps(p *Part) bool {
	switch p.Kind {
	case PartText:
		return p.Text != "" || p.Signature != ""
	case PartImage:
		return p.Data != "" || p.URL != ""
	case PartToolCall, PartToolResult:
		return true
	}
	return false
}

// appendGeminiPart writes a text, image or function call part.
func appendGeminiPart(b []byte, p *Part) []byte {
	switch p.Kind {
	case PartText:
		b = append(b, `{"text":`...)
		b = wireString(b, p.Text)
		b = appendGeminiSignature(b, p.Signature)
	case PartThinking:
		b = append(b, `{"text":`...)
		b = wireString(b, p.Text)
		b = append(b, `,"thought":true`...)
		b = appendGeminiSignature(b, p.Signature)
	case PartImage:
		b = appendGeminiImage(b, p)
	case PartToolCall:
		b = appendGeminiCall(b, p, p.Signature)
	}
	return b
}

// appendGeminiSignature closes a part, with its thoughtSignature if any.
func appendGeminiSignature(b []byte, sig string) []byte {
	if sig != "" {
		b = append(b, `,"thoughtSignature":`...)
		b = wireString(b, sig)
	}
	return append(b, '}')
}

func appendGeminiCall(b []byte, p *Part, sig string) []byte {
	b = append(b, `{"functionCall":{"id":`...)
	b = wireString(b, p.ID)
	b = append(b, `,"name":`...)
	b = wireString(b, p.Name)
	b = append(b, `,"args":`...)
	b = wireArgs(b, p.Arguments)
	b = append(b, '}')
	return appendGeminiSignature(b, sig)
}

// appendGeminiImage writes inlineData for data (a data: URL too), else
// fileData with the URL, its MIME type guessed from its extension when the
// part has none.
func appendGeminiImage(b []byte, p *Part) []byte {
	media, data := p.MediaType, p.Data
	if data == "" {
		if m, d, ok := cutDataURL(p.URL); ok {
			media, data = m, d
		}
	}
	if data != "" {
		b = append(b, `{"inlineData":{"mimeType":`...)
		b = wireString(b, media)
		b = append(b, `,"data":`...)
		b = wireString(b, data)
		return append(b, '}', '}')
	}
	if media == "" {
		media = imageTypeByExtension(p.URL)
	}
	b = append(b, `{"fileData":{"mimeType":`...)
	b = wireString(b, media)
	b = append(b, `,"fileUri":`...)
	b = wireString(b, p.URL)
	return append(b, '}', '}')
}

// imageTypeByExtension guesses an image URL's MIME type; image/jpeg when
// the extension says nothing.
func imageTypeByExtension(u string) string {
	if i := strings.IndexAny(u, "?#"); i >= 0 {
		u = u[:i]
	}
	switch strings.ToLower(path.Ext(u)) {
	case ".png":
		return "image/png"
	case ".gif":
		return "image/gif"
	case ".webp":
		return "image/webp"
	case ".heic":
		return "image/heic"
	case ".heif":
		return "image/heif"
	}
	return "image/jpeg"
}

// appendGeminiResult writes a tool result as a functionResponse.
func appendGeminiResult(b []byte, p *Part, earlier []Message) ([]byte, error) {
	name := p.Name
	if name == "" {
		name = toolCallName(earlier, p.ID)
	}
	if name == "" {
		return b, fmt.Errorf("encoding gemini request: tool result %q answers no tool call of the conversation", p.ID)
	}
	b = append(b, `{"functionResponse":{"id":`...)
	b = wireString(b, p.ID)
	b = append(b, `,"name":`...)
	b = wireString(b, name)
	b = append(b, `,"response":`...)
	text := partsText(p.Content)
	switch t := strings.TrimSpace(text); {
	case strings.HasPrefix(t, "{") && gjson.Valid(t):
		b = append(b, t...)
	case p.IsError:
		b = append(b, `{"error":`...)
		b = wireString(b, text)
		b = append(b, '}')
	default:
		b = append(b, `{"result":`...)
		b = wireString(b, text)
		b = append(b, '}')
	}
	return append(b, '}', '}'), nil
}

// toolCallName is the name of the tool call with id in msgs, latest first.
func toolCallName(msgs []Message, id string) string {
	for i := len(msgs) - 1; i >= 0; i-- {
		for _, p := range msgs[i].Parts {
			if p.Kind == PartToolCall && p.ID == id {
				return p.Name
			}
		}
	}
	return ""
}

func appendGeminiSystem(b []byte, system []Part) []byte {
	started := false
	for i := range system {
		p := &system[i]
		if p.Kind != PartText || p.Text == "" {
			continue
		}
		if !started {
			b = append(b, `,"systemInstruction":{"parts":[`...)
			started = true
		} else {
			b = append(b, ',')
		}
		b = append(b, `{"text":`...)
		b = wireString(b, p.Text)
		b = append(b, '}')
	}
	if started {
		b = append(b, ']', '}')
	}
	return b
}

func appendGeminiTools(b []byte, r *Request) []byte {
	b = append(b, `,"tools":[{"functionDeclarations":[`...)
	for i := range r.Tools {
		t := &r.Tools[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = wireString(b, t.Name)
		if t.Description != "" {
			b = append(b, `,"description":`...)
			b = wireString(b, t.Description)
		}
		b = append(b, `,"parametersJsonSchema":`...)
		b = wireRawObject(b, t.Schema, `{"type":"object"}`)
		b = append(b, '}')
	}
	b = append(b, `]}]`...)
	switch r.ToolChoice.Mode {
	case ToolNone:
		b = append(b, `,"toolConfig":{"functionCallingConfig":{"mode":"NONE"}}`...)
	case ToolAny:
		b = append(b, `,"toolConfig":{"functionCallingConfig":{"mode":"ANY"}}`...)
	case ToolNamed:
		b = append(b, `,"toolConfig":{"functionCallingConfig":{"mode":"ANY","allowedFunctionNames":[`...)
		b = wireString(b, r.ToolChoice.Name)
		b = append(b, `]}}`...)
	}
	return b
}

// appendGeminiGeneration writes generationConfig when r sets any of it.
func appendGeminiGeneration(b []byte, r *Request) []byte {
	mark := len(b)
	b = append(b, `,"generationConfig":{`...)
	start := len(b)
	field := func(name string) {
		if len(b) > start {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, '"', ':')
	}
	if r.MaxTokens > 0 {
		field("maxOutputTokens")
		b = wireInt(b, r.MaxTokens)
	}
	if r.Temperature != nil {
		field("temperature")
		b = wireFloat(b, *r.Temperature)
	}
	if r.TopP != nil {
		field("topP")
		b = wireFloat(b, *r.TopP)
	}
	if r.TopK != nil {
		field("topK")
		b = wireInt(b, *r.TopK)
	}
	if len(r.Stop) > 0 {
		field("stopSequences")
		b = wireStrings(b, r.Stop[:min(len(r.Stop), geminiMaxStops)])
	}
	if t := r.Thinking; t != nil {
		budget := t.BudgetTokens
		if budget <= 0 {
			budget = thinkingBudgetFor(t.Effort)
		}
		field("thinkingConfig")
		b = append(b, `{"thinkingBudget":`...)
		b = wireInt(b, budget)
		if budget > 0 {
			b = append(b, `,"includeThoughts":true`...)
		}
		b = append(b, '}')
	}
	if len(b) == start {
		return b[:mark]
	}
	return append(b, '}')
}
