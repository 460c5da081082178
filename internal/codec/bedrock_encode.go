package codec

import (
	"encoding/base64"
	"fmt"
	"slices"
	"strings"
)

// bedrockEmptyResult stands for a tool result with no content: Converse
// refuses an empty text block, and a result needs one block.
const bedrockEmptyResult = "(no output)"

// EncodeRequest writes r as a Converse request, the protocol translated
// requests take to a Bedrock upstream; the model goes in the URL, and
// model (the upstream's name for it, a model or inference profile id)
// only says whether it is one of Anthropic's Claude models, which take
// extra fields.
//
// Converse's rules shape it: consecutive messages of one role are merged,
// a user turn's tool results first; blank text (Converse refuses it),
// images with neither data nor a data: URL, and thinking without a
// signature are left out, and so is a message left empty. Images go as
// data, their format the media type's subtype (Bedrock takes png, jpeg,
// gif and webp and answers another with a ValidationException, the
// client's error); an image by URL, which decoders record as a Need that
// keeps it from Bedrock, is an error. A cache
// breakpoint becomes a cachePoint block after its block. A tool result
// without content says "(no output)". temperature is clamped to [0, 1],
// Bedrock's range for every model family.
//
// Converse's toolChoice has no "none": tool_choice none sends no tools,
// unless the conversation already holds tool calls or results, which
// Converse refuses without a toolConfig; the tools are then declared (or,
// when the request has none, each called tool with an open schema) and
// the model may still call one. parallel_tool_calls and user have no
// Converse field and are dropped.
//
// For Claude models, thinking goes in additionalModelRequestFields as
// Anthropic's budget_tokens, under Anthropic's rules (see anthropic's
// EncodeRequest: maxTokens raised above the budget, temperature and topP
// left out, thinking left out with a forced tool or an unsigned last tool
// turn); so does top_k; topP is dropped when temperature is given (recent
// Claude models refuse both), and with stop sequences the matched one is
// asked for (additionalModelResponseFieldPaths /stop_sequence). Other
// models' thinking and top_k, which each family spells its own way, are
// dropped.
func (bedrock) EncodeRequest(r *Request, model string, o EncodeOptions) ([]byte, error) {
	claude := strings.Contains(strings.ToLower(model), "claude")
	b := make([]byte, 0, 256+requestBytesHint(r))
	b = append(b, `{"messages":[`...)
	var err error
	if b, err = appendBedrockMessages(b, r.Messages); err != nil {
		return nil, err
	}
	b = append(b, ']')
	b = appendBedrockSystem(b, r.System)
	var budget int64
	if claude {
		budget = anthropicThinkingBudget(r)
	}
	b = appendBedrockInference(b, r, o, budget, claude)
	b = appendBedrockTools(b, r)
	if claude {
		b = appendBedrockClaudeFields(b, r, budget)
	}
	return append(b, '}'), nil
}

func appendBedrockMessages(b []byte, msgs []Message) ([]byte, error) {
	first := true
	for i, j := range turns(msgs, bedrockHasContent) {
		if !first {
			b = append(b, ',')
		}
		first = false
		var err error
		if b, err = appendBedrockTurn(b, msgs[i].Role, msgs[i:j]); err != nil {
			return nil, err
		}
	}
	return b, nil
}

// appendBedrockTurn writes the messages of one role as one message; in a
// user turn the tool results come first.
func appendBedrockTurn(b []byte, role Role, msgs []Message) ([]byte, error) {
	if role == RoleAssistant {
		b = append(b, `{"role":"assistant","content":[`...)
	} else {
		b = append(b, `{"role":"user","content":[`...)
	}
	comma := false
	var err error
	pass := func(results bool) {
		for i := range msgs {
			for j := range msgs[i].Parts {
				p := &msgs[i].Parts[j]
				if (p.Kind == PartToolResult) != results || !bedrockKeeps(p, role) || err != nil {
					continue
				}
				if comma {
					b = append(b, ',')
				}
				comma = true
				b, err = appendBedrockPart(b, p)
			}
		}
	}
	if role == RoleUser {
		pass(true)
	}
	pass(false)
	return append(b, ']', '}'), err
}

func bedrockHasContent(m *Message) bool {
	for j := range m.Parts {
		if bedrockKeeps(&m.Parts[j], m.Role) {
			return true
		}
	}
	return false
}

// bedrockKeeps reports whether a part of a message of role is sent.
func bedrockKeeps(p *Part, role Role) bool {
	switch p.Kind {
	case PartText:
		return strings.TrimSpace(p.Text) != ""
	case PartImage:
		return p.Data != "" || p.URL != ""
	case PartThinking:
		return role == RoleAssistant && p.Signature != ""
	case PartRedactedThinking:
		return role == RoleAssistant && p.Data != ""
	case PartToolCall, PartToolResult:
		return true
	}
	return false
}

// appendBedrockPart writes one content block, and a cachePoint after it
// when it is a cache breakpoint.
func appendBedrockPart(b []byte, p *Part) ([]byte, error) {
	var err error
	switch p.Kind {
	case PartText:
		b = appendBedrockText(b, p.Text)
	case PartImage:
		b, err = appendBedrockImage(b, p)
	case PartToolCall:
		b = append(b, `{"toolUse":{"toolUseId":`...)
		b = wireString(b, anthropicToolID(p.ID))
		b = append(b, `,"name":`...)
		b = wireString(b, p.Name)
		b = append(b, `,"input":`...)
		b = wireArgs(b, p.Arguments)
		b = append(b, '}', '}')
	case PartToolResult:
		b, err = appendBedrockResult(b, p)
	case PartThinking:
		b = append(b, `{"reasoningContent":{"reasoningText":{"text":`...)
		b = wireString(b, p.Text)
		b = append(b, `,"signature":`...)
		b = wireString(b, p.Signature)
		b = append(b, '}', '}', '}')
	case PartRedactedThinking:
		b = append(b, `{"reasoningContent":{"redactedContent":`...)
		b = wireString(b, stdBase64(p.Data))
		b = append(b, '}', '}')
	}
	if len(p.CacheControl) > 0 {
		b = append(b, `,{"cachePoint":{"type":"default"}}`...)
	}
	return b, err
}

func appendBedrockText(b []byte, text string) []byte {
	b = append(b, `{"text":`...)
	b = wireString(b, text)
	return append(b, '}')
}

// appendBedrockImage writes an image block from base64 data or a data: URL;
// its format is the media type's subtype, which Bedrock judges (png, jpeg,
// gif and webp pass; another is the client's 400, as Anthropic's is).
func appendBedrockImage(b []byte, p *Part) ([]byte, error) {
	media, data := p.MediaType, p.Data
	if data == "" {
		m, d, ok := cutDataURL(p.URL)
		if !ok {
			return b, fmt.Errorf("encoding bedrock request: an image by URL (%.64q) cannot be sent: Converse takes image data only", p.URL)
		}
		media, data = m, d
	}
	format := strings.ToLower(strings.TrimPrefix(media, "image/"))
	if format == "jpg" {
		format = "jpeg"
	}
	b = append(b, `{"image":{"format":`...)
	b = wireString(b, format)
	b = append(b, `,"source":{"bytes":`...)
	b = wireString(b, stdBase64(data))
	return append(b, '}', '}', '}'), nil
}

// appendBedrockResult writes a tool result: its text and images, or
// bedrockEmptyResult when it has none.
func appendBedrockResult(b []byte, p *Part) ([]byte, error) {
	b = append(b, `{"toolResult":{"toolUseId":`...)
	b = wireString(b, anthropicToolID(p.ID))
	b = append(b, `,"content":[`...)
	comma := false
	for i := range p.Content {
		c := &p.Content[i]
		if (c.Kind != PartText && c.Kind != PartImage) || !bedrockKeeps(c, RoleUser) {
			continue
		}
		if comma {
			b = append(b, ',')
		}
		comma = true
		var err error
		if c.Kind == PartText {
			b = appendBedrockText(b, c.Text)
		} else if b, err = appendBedrockImage(b, c); err != nil {
			return b, err
		}
	}
	if !comma {
		b = appendBedrockText(b, bedrockEmptyResult)
	}
	b = append(b, ']')
	if p.IsError {
		b = append(b, `,"status":"error"`...)
	}
	return append(b, '}', '}'), nil
}

// stdBase64 returns base64 data in the standard padded alphabet, which is
// what Converse's JSON blobs take: URL-safe or unpadded data (which Gemini
// clients may send) is re-encoded; anything else is returned as it is.
func stdBase64(s string) string {
	if len(s)%4 == 0 && !strings.ContainsAny(s, "-_") {
		return s
	}
	for _, enc := range []*base64.Encoding{base64.URLEncoding, base64.RawURLEncoding, base64.RawStdEncoding} {
		if raw, err := enc.DecodeString(s); err == nil {
			return base64.StdEncoding.EncodeToString(raw)
		}
	}
	return s
}

func appendBedrockSystem(b []byte, system []Part) []byte {
	started := false
	for i := range system {
		p := &system[i]
		if p.Kind != PartText || strings.TrimSpace(p.Text) == "" {
			continue
		}
		if !started {
			b = append(b, `,"system":[`...)
			started = true
		} else {
			b = append(b, ',')
		}
		b = appendBedrockText(b, p.Text)
		if len(p.CacheControl) > 0 {
			b = append(b, `,{"cachePoint":{"type":"default"}}`...)
		}
	}
	if started {
		b = append(b, ']')
	}
	return b
}

// appendBedrockInference writes inferenceConfig when r sets any of it (or
// thinking needs maxTokens).
func appendBedrockInference(b []byte, r *Request, o EncodeOptions, budget int64, claude bool) []byte {
	mark := len(b)
	b = append(b, `,"inferenceConfig":{`...)
	start := len(b)
	field := func(name string) {
		if len(b) > start {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, name...)
		b = append(b, '"', ':')
	}
	maxTokens := r.MaxTokens
	if budget > 0 {
		if maxTokens <= 0 {
			maxTokens = o.DefaultMaxTokens
		}
		if maxTokens <= 0 {
			maxTokens = anthropicDefaultMaxTokens
		}
		if maxTokens <= budget {
			maxTokens += budget
		}
	}
	if maxTokens > 0 {
		field("maxTokens")
		b = wireInt(b, maxTokens)
	}
	if budget == 0 && r.Temperature != nil {
		field("temperature")
		b = wireFloat(b, min(max(*r.Temperature, 0), 1))
	}
	if budget == 0 && r.TopP != nil && !(claude && r.Temperature != nil) {
		field("topP")
		b = wireFloat(b, *r.TopP)
	}
	if len(r.Stop) > 0 {
		field("stopSequences")
		b = wireStrings(b, r.Stop)
	}
	if len(b) == start {
		return b[:mark]
	}
	return append(b, '}')
}

// appendBedrockTools writes toolConfig: the request's tools and choice,
// or the tools the conversation's calls need (see EncodeRequest).
func appendBedrockTools(b []byte, r *Request) []byte {
	none := r.ToolChoice.Mode == ToolNone
	history := bedrockToolHistory(r.Messages)
	if (len(r.Tools) == 0 || none) && !history {
		return b
	}
	b = append(b, `,"toolConfig":{"tools":[`...)
	if len(r.Tools) == 0 {
		b = appendBedrockStubTools(b, r.Messages)
	}
	for i := range r.Tools {
		t := &r.Tools[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"toolSpec":{"name":`...)
		b = wireString(b, t.Name)
		if t.Description != "" {
			b = append(b, `,"description":`...)
			b = wireString(b, t.Description)
		}
		b = append(b, `,"inputSchema":{"json":`...)
		b = wireRawObject(b, t.Schema, `{"type":"object"}`)
		b = append(b, `}}}`...)
		if len(t.CacheControl) > 0 {
			b = append(b, `,{"cachePoint":{"type":"default"}}`...)
		}
	}
	b = append(b, ']')
	if len(r.Tools) > 0 && !none {
		switch r.ToolChoice.Mode {
		case ToolAny:
			b = append(b, `,"toolChoice":{"any":{}}`...)
		case ToolNamed:
			b = append(b, `,"toolChoice":{"tool":{"name":`...)
			b = wireString(b, r.ToolChoice.Name)
			b = append(b, `}}`...)
		}
	}
	return append(b, '}')
}

// bedrockToolHistory reports whether msgs hold a tool call or result.
func bedrockToolHistory(msgs []Message) bool {
	for i := range msgs {
		for j := range msgs[i].Parts {
			if k := msgs[i].Parts[j].Kind; k == PartToolCall || k == PartToolResult {
				return true
			}
		}
	}
	return false
}

// appendBedrockStubTools declares each tool msgs call, once, with an open
// schema; a conversation whose calls name no tool gets one called "tool".
func appendBedrockStubTools(b []byte, msgs []Message) []byte {
	var names []string
	for i := range msgs {
		for _, p := range msgs[i].Parts {
			if p.Kind == PartToolCall && p.Name != "" && !slices.Contains(names, p.Name) {
				names = append(names, p.Name)
			}
		}
	}
	if len(names) == 0 {
		names = append(names, "tool")
	}
	for i, n := range names {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"toolSpec":{"name":`...)
		b = wireString(b, n)
		b = append(b, `,"inputSchema":{"json":{"type":"object"}}}}`...)
	}
	return b
}

// appendBedrockClaudeFields writes what Bedrock passes on to a Claude
// model as it is: thinking and top_k in additionalModelRequestFields, and
// the request for the matched stop sequence.
func appendBedrockClaudeFields(b []byte, r *Request, budget int64) []byte {
	if budget > 0 || (r.TopK != nil && budget == 0) {
		b = append(b, `,"additionalModelRequestFields":{`...)
		if budget > 0 {
			b = append(b, `"thinking":{"type":"enabled","budget_tokens":`...)
			b = wireInt(b, budget)
			b = append(b, '}')
		} else {
			b = append(b, `"top_k":`...)
			b = wireInt(b, *r.TopK)
		}
		b = append(b, '}')
	}
	if len(r.Stop) > 0 {
		b = append(b, `,"additionalModelResponseFieldPaths":["/stop_sequence"]`...)
	}
	return b
}
