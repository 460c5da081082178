package codec

import (
	"encoding/json"
	"fmt"

	"github.com/tidwall/gjson"
)

// The messages of a Chat Completions request, decoded into canonical form.

// messages reads the conversation.
func (d *chatRequestDecoder) messages(f *chatFields) error {
	if !f.messages.Exists() {
		return fmt.Errorf("messages: missing")
	}
	if !f.messages.IsArray() {
		return fmt.Errorf("messages: must be an array, got %s", jsonKind(f.messages))
	}
	return eachIndexed(f.messages, d.message)
}

// chatMessageKeys are the fields of a message the decoder reads.
var chatMessageKeys = [...]string{"role", "content", "tool_calls", "tool_call_id", "reasoning_content", "refusal", "function_call"}

// chatMessage is a message's fields, read in one pass.
type chatMessage struct {
	role, content, toolCalls, toolCallID, reasoningContent, refusal, functionCall gjson.Result
}

// message reads messages[i].
func (d *chatRequestDecoder) message(i int, v gjson.Result) error {
	if !v.IsObject() {
		return fmt.Errorf("messages[%d]: must be an object, got %s", i, jsonKind(v))
	}
	var f [len(chatMessageKeys)]gjson.Result
	objectFields(v, chatMessageKeys[:], f[:])
	m := chatMessage{f[0], f[1], f[2], f[3], f[4], f[5], f[6]}
	if notString(m.role) {
		return fmt.Errorf("messages[%d].role: must be a string, got %s", i, jsonKind(m.role))
	}
	switch role := m.role.Str; role {
	case "system", "developer":
		parts, err := chatTextParts(m.content, func() string { return fmt.Sprintf("messages[%d].content", i) }, false)
		if err != nil {
			return err
		}
		d.r.System = append(d.r.System, parts...)
	case "user":
		return d.user(i, m.content)
	case "assistant":
		return d.assistant(i, &m)
	case "tool":
		return d.tool(i, &m)
	case "function":
		d.r.Need("functions", "openai-chat")
	case "":
		return fmt.Errorf("messages[%d].role: missing", i)
	default:
		return fmt.Errorf("messages[%d].role: unknown role %q", i, role)
	}
	return nil
}

// chatTextParts reads a content that may hold only text: a string or an
// array of text parts (and, when refusals is set, refusal parts). path is
// computed only for an error.
func chatTextParts(v gjson.Result, path func() string, refusals bool) ([]Part, error) {
	switch {
	case isNull(v):
		return nil, nil
	case v.Type == gjson.String:
		return []Part{{Kind: PartText, Text: v.Str}}, nil
	case !v.IsArray():
		return nil, fmt.Errorf("%s: must be a string or an array of content parts, got %s", path(), jsonKind(v))
	}
	var parts []Part
	err := eachIndexed(v, func(j int, p gjson.Result) error {
		typ := p.Get("type").Str
		field := "text"
		if typ == "refusal" && refusals {
			field = "refusal"
		} else if typ != "text" {
			return fmt.Errorf("%s[%d].type: must be \"text\" here, got %q", path(), j, typ)
		}
		text := p.Get(field)
		if text.Type != gjson.String {
			return fmt.Errorf("%s[%d].%s: must be a string, got %s", path(), j, field, jsonKind(text))
		}
		parts = append(parts, Part{Kind: PartText, Text: text.Str})
		return nil
	})
	return parts, err
}

// user reads a user message's content: text, images, and parts only Chat
// takes (audio, files), which are recorded as needs.
func (d *chatRequestDecoder) user(i int, content gjson.Result) error {
	d.turns.other()
	switch {
	case content.Type == gjson.String:
		d.r.Messages = append(d.r.Messages, Message{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: content.Str}}})
		return nil
	case !content.IsArray():
		return fmt.Errorf("messages[%d].content: must be a string or an array of content parts, got %s", i, jsonKind(content))
	}
	var parts []Part
	err := eachIndexed(content, func(j int, p gjson.Result) error {
		switch typ := p.Get("type").Str; typ {
		case "text":
			text := p.Get("text")
			if text.Type != gjson.String {
				return fmt.Errorf("messages[%d].content[%d].text: must be a string, got %s", i, j, jsonKind(text))
			}
			parts = append(parts, Part{Kind: PartText, Text: text.Str})
		case "image_url":
			u := p.Get("image_url")
			if u.IsObject() {
				u = u.Get("url")
			}
			if u.Type != gjson.String {
				return fmt.Errorf("messages[%d].content[%d].image_url.url: must be a string, got %s", i, j, jsonKind(u))
			}
			img, err := parseImageURL(d.r, u.Str, fmt.Sprintf("messages[%d].content[%d].image_url.url", i, j))
			if err != nil {
				return err
			}
			parts = append(parts, img)
		case "input_audio":
			d.r.Need("audio", "openai-chat")
		case "file":
			d.r.Need("file", "openai-chat")
		default:
			return fmt.Errorf("messages[%d].content[%d].type: unknown content part type %q", i, j, typ)
		}
		return nil
	})
	if err == nil && len(parts) > 0 {
		d.r.Messages = append(d.r.Messages, Message{Role: RoleUser, Parts: parts})
	}
	return err
}

// assistant reads an assistant turn: its reasoning (reasoning_content),
// text (content, refusal) and tool calls, in that order.
func (d *chatRequestDecoder) assistant(i int, m *chatMessage) error {
	d.turns.other()
	var parts []Part
	switch {
	case notString(m.reasoningContent):
		return fmt.Errorf("messages[%d].reasoning_content: must be a string, got %s", i, jsonKind(m.reasoningContent))
	case notString(m.refusal):
		return fmt.Errorf("messages[%d].refusal: must be a string, got %s", i, jsonKind(m.refusal))
	case !isNull(m.toolCalls) && !m.toolCalls.IsArray():
		return fmt.Errorf("messages[%d].tool_calls: must be an array, got %s", i, jsonKind(m.toolCalls))
	}
	if m.reasoningContent.Str != "" {
		parts = append(parts, Part{Kind: PartThinking, Text: m.reasoningContent.Str})
	}
	text, err := chatTextParts(m.content, func() string { return fmt.Sprintf("messages[%d].content", i) }, true)
	if err != nil {
		return err
	}
	for _, p := range text {
		if p.Text != "" {
			parts = append(parts, p)
		}
	}
	if m.refusal.Str != "" {
		parts = append(parts, Part{Kind: PartText, Text: m.refusal.Str})
	}
	if !isNull(m.functionCall) {
		d.r.Need("functions", "openai-chat")
	}
	err = eachIndexed(m.toolCalls, func(j int, c gjson.Result) error {
		call, ok, err := d.toolCall(i, j, c)
		if ok {
			parts = append(parts, call)
			d.turns.call(call)
		}
		return err
	})
	if err == nil && len(parts) > 0 {
		d.r.Messages = append(d.r.Messages, Message{Role: RoleAssistant, Parts: parts})
	}
	return err
}

// toolCallKeys are the fields of a tool call, then of its function.
var toolCallKeys = [...]string{"type", "id", "function", "name", "arguments"}

// toolCall reads messages[i].tool_calls[j]; ok is false for a call of a
// kind the canonical form does not hold (recorded as a need).
func (d *chatRequestDecoder) toolCall(i, j int, c gjson.Result) (Part, bool, error) {
	if !c.IsObject() {
		return Part{}, false, fmt.Errorf("messages[%d].tool_calls[%d]: must be an object, got %s", i, j, jsonKind(c))
	}
	var f [5]gjson.Result
	objectFields(c, toolCallKeys[:3], f[:3])
	if typ := f[0].Str; typ != "function" && typ != "" {
		d.r.Need("tool:"+typ, "openai-chat")
		return Part{}, false, nil
	}
	objectFields(f[2], toolCallKeys[3:], f[3:])
	id, name, args := f[1], f[3], f[4]
	if id.Type != gjson.String || id.Str == "" {
		return Part{}, false, fmt.Errorf("messages[%d].tool_calls[%d].id: must be a non-empty string", i, j)
	}
	if name.Type != gjson.String || name.Str == "" {
		return Part{}, false, fmt.Errorf("messages[%d].tool_calls[%d].function.name: must be a non-empty string", i, j)
	}
	var raw json.RawMessage
	ok := false
	switch {
	case args.Type == gjson.String:
		raw, ok = parseArguments(args.Str)
	case args.IsObject(): // some clients send the object itself
		raw, ok = json.RawMessage(args.Raw), true
	case !args.Exists():
		raw, ok = json.RawMessage("{}"), true
	}
	if !ok {
		return Part{}, false, fmt.Errorf("messages[%d].tool_calls[%d].function.arguments: must be a JSON object encoded as a string", i, j)
	}
	return Part{Kind: PartToolCall, ID: id.Str, Name: name.Str, Arguments: raw}, true, nil
}

// tool reads a tool message into a tool result; consecutive tool messages
// share one user message.
func (d *chatRequestDecoder) tool(i int, m *chatMessage) error {
	id := m.toolCallID
	if id.Type != gjson.String || id.Str == "" {
		return fmt.Errorf("messages[%d].tool_call_id: must be a non-empty string", i)
	}
	content, err := chatTextParts(m.content, func() string { return fmt.Sprintf("messages[%d].content", i) }, false)
	if err != nil {
		return err
	}
	d.turns.result(d.r, id.Str, content)
	return nil
}
