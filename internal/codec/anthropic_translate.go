package codec

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tidwall/gjson"
)

var _ Translator = anthropic{}

// DecodeRequest reads an Anthropic Messages request (POST /v1/messages)
// into canonical form. What only Anthropic can express (server tools,
// documents, search results, containers, MCP servers, structured output,
// images by file id) is recorded in Request.Needs and left out of the
// canonical messages: such a request only goes to Anthropic upstreams,
// which receive the client's body unchanged. A malformed shape is an error
// naming its JSON path; a request without max_tokens is refused as
// Anthropic refuses it.
func (anthropic) DecodeRequest(body []byte) (*Request, error) {
	if !gjson.ValidBytes(body) {
		return nil, errors.New("request body: invalid JSON")
	}
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		return nil, errors.New("request body: must be a JSON object")
	}
	d := anthropicRequestDecoder{r: &Request{}}
	var err error
	root.ForEach(func(k, v gjson.Result) bool {
		if v.Type != gjson.Null {
			err = d.field(k.Str, v)
		}
		return err == nil
	})
	switch {
	case err != nil:
		return nil, err
	case d.r.MaxTokens == 0:
		return nil, errors.New("max_tokens: field required")
	case !d.sawMessages:
		return nil, errors.New("messages: field required")
	}
	if d.adaptive {
		effort := d.effort
		if effort == "" {
			effort = "high" // Anthropic's default effort
		}
		d.r.Thinking = &Thinking{Effort: effort}
	}
	return d.r, nil
}

// anthropicRequestDecoder holds what DecodeRequest learns from fields that
// depend on one another, whatever their order.
type anthropicRequestDecoder struct {
	r           *Request
	sawMessages bool
	// adaptive: thinking {type: adaptive}, whose effort is output_config's.
	adaptive bool
	effort   string
}

// field reads one top-level field of the request.
func (d *anthropicRequestDecoder) field(key string, v gjson.Result) error {
	r := d.r
	switch key {
	case "model":
		if v.Type != gjson.String {
			return errors.New("model: must be a string")
		}
		r.Model = v.Str
	case "max_tokens":
		n, ok := gjPositiveInt(v)
		if !ok {
			return errors.New("max_tokens: must be a positive integer")
		}
		r.MaxTokens = n
	case "system":
		return d.system(v)
	case "messages":
		d.sawMessages = true
		return d.messages(v)
	case "tools":
		return d.tools(v)
	case "tool_choice":
		return d.toolChoice(v)
	case "temperature", "top_p":
		if v.Type != gjson.Number {
			return fmt.Errorf("%s: must be a number", key)
		}
		f := v.Num
		if key == "temperature" {
			r.Temperature = &f
		} else {
			r.TopP = &f
		}
	case "top_k":
		n, ok := gjPositiveInt(v)
		if !ok {
			return errors.New("top_k: must be a positive integer")
		}
		r.TopK = &n
	case "stop_sequences":
		stop, err := gjStrings(v, "stop_sequences")
		r.Stop = stop
		return err
	case "stream":
		if !v.IsBool() {
			return errors.New("stream: must be a boolean")
		}
		r.Stream = v.Bool()
	case "thinking":
		return d.thinking(v)
	case "output_config":
		if e := v.Get("effort"); e.Type == gjson.String {
			d.effort = e.Str
		}
		if v.Get("format").Exists() {
			r.Need("output_format", "anthropic")
		}
	case "metadata":
		if u := v.Get("user_id"); u.Type == gjson.String {
			r.User = u.Str
		}
	case "container", "mcp_servers", "output_format":
		r.Need(key, "anthropic")
	}
	// Anything else (service_tier, a top-level cache_control, speed,
	// context_management, …) only tunes an Anthropic upstream and is
	// dropped when translated: context_management lets Anthropic clear old
	// tool results server-side (Claude Code sends it on every turn); without
	// it the upstream sees the whole context, which changes cost, not the
	// answer.
	return nil
}

func (d *anthropicRequestDecoder) system(v gjson.Result) error {
	if v.Type == gjson.String {
		if v.Str != "" {
			d.r.System = append(d.r.System, Part{Kind: PartText, Text: v.Str})
		}
		return nil
	}
	if !v.IsArray() {
		return errors.New("system: must be a string or an array of text blocks")
	}
	var err error
	i := 0
	v.ForEach(func(_, b gjson.Result) bool {
		if b.Get("type").Str != "text" || b.Get("text").Type != gjson.String {
			err = fmt.Errorf("system[%d]: must be a text block {\"type\":\"text\",\"text\":…}", i)
			return false
		}
		d.r.System = append(d.r.System, Part{Kind: PartText, Text: b.Get("text").Str, CacheControl: gjCacheControl(b)})
		i++
		return true
	})
	return err
}

func (d *anthropicRequestDecoder) messages(v gjson.Result) error {
	return gjEach(v, "messages", d.message)
}

func (d *anthropicRequestDecoder) message(i int, v gjson.Result) error {
	if !v.IsObject() {
		return fmt.Errorf("messages[%d]: must be an object", i)
	}
	var role, content gjson.Result
	v.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "role":
			role = f
		case "content":
			content = f
		}
		return true
	})
	var m Message
	switch role.Str {
	case "user":
		m.Role = RoleUser
	case "assistant":
		m.Role = RoleAssistant
	default:
		return fmt.Errorf(`messages[%d].role: must be "user" or "assistant"`, i)
	}
	switch {
	case content.Type == gjson.String:
		m.Parts = []Part{{Kind: PartText, Text: content.Str}}
	case content.IsArray():
		var err error
		j := 0
		content.ForEach(func(_, b gjson.Result) bool {
			var p Part
			var keep bool
			p, keep, err = d.block(b, func() string { return fmt.Sprintf("messages[%d].content[%d]", i, j) })
			if keep {
				m.Parts = append(m.Parts, p)
			}
			j++
			return err == nil
		})
		if err != nil {
			return err
		}
	default:
		return fmt.Errorf("messages[%d].content: must be a string or an array of content blocks", i)
	}
	d.r.Messages = append(d.r.Messages, m)
	return nil
}

// anthropicBlock holds the fields of one content block, read in one pass.
type anthropicBlock struct {
	typ, text, source, id, name, input, toolUseID, content, isError gjson.Result
	thinking, signature, data, cacheControl                         gjson.Result
}

// read fills b from the block v.
func (b *anthropicBlock) read(v gjson.Result) {
	v.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "type":
			b.typ = f
		case "text":
			b.text = f
		case "source":
			b.source = f
		case "id":
			b.id = f
		case "name":
			b.name = f
		case "input":
			b.input = f
		case "tool_use_id":
			b.toolUseID = f
		case "content":
			b.content = f
		case "is_error":
			b.isError = f
		case "thinking":
			b.thinking = f
		case "signature":
			b.signature = f
		case "data":
			b.data = f
		case "cache_control":
			b.cacheControl = f
		}
		return true
	})
}

// block reads one content block; keep is false for a block recorded only
// as a Need. path names the block in errors.
func (d *anthropicRequestDecoder) block(v gjson.Result, path func() string) (p Part, keep bool, err error) {
	if !v.IsObject() {
		return p, false, fmt.Errorf("%s: must be an object", path())
	}
	var b anthropicBlock
	b.read(v)
	if b.typ.Type != gjson.String {
		return p, false, fmt.Errorf("%s.type: must be a string naming the block's type", path())
	}
	if b.cacheControl.IsObject() {
		p.CacheControl = json.RawMessage(b.cacheControl.Raw)
	}
	switch b.typ.Str {
	case "text":
		p.Kind = PartText
		p.Text, err = gjString(b.text, path, "text")
	case "image":
		return d.image(b.source, p, path)
	case "tool_use":
		p.Kind = PartToolCall
		if p.ID, err = gjString(b.id, path, "id"); err != nil {
			return p, false, err
		}
		if p.Name, err = gjString(b.name, path, "name"); err != nil || p.Name == "" {
			if err == nil {
				err = fmt.Errorf("%s.name: field required", path())
			}
			return p, false, err
		}
		if !b.input.IsObject() {
			return p, false, fmt.Errorf("%s.input: must be an object", path())
		}
		p.Arguments = json.RawMessage(b.input.Raw)
	case "tool_result":
		return d.toolResult(&b, p, path)
	case "thinking":
		p.Kind = PartThinking
		if p.Text, err = gjString(b.thinking, path, "thinking"); err != nil {
			return p, false, err
		}
		p.Signature = b.signature.Str
	case "redacted_thinking":
		p.Kind = PartRedactedThinking
		p.Data, err = gjString(b.data, path, "data")
	default:
		// document, search_result, server_tool_use, web_search_tool_result,
		// container_upload, … and blocks newer than this code: Anthropic's
		// own, and Anthropic judges them.
		d.r.Need(b.typ.Str, "anthropic")
		return p, false, nil
	}
	return p, err == nil, err
}

func (d *anthropicRequestDecoder) image(src gjson.Result, p Part, path func() string) (Part, bool, error) {
	p.Kind = PartImage
	if !src.IsObject() {
		return p, false, fmt.Errorf("%s.source: must be an object", path())
	}
	srcPath := func() string { return path() + ".source" }
	var err error
	switch src.Get("type").Str {
	case "base64":
		if p.MediaType, err = gjString(src.Get("media_type"), srcPath, "media_type"); err != nil {
			return p, false, err
		}
		p.Data, err = gjString(src.Get("data"), srcPath, "data")
	case "url":
		p.URL, err = gjString(src.Get("url"), srcPath, "url")
		d.r.Need("image_url", "openai-chat", "openai-responses", "anthropic")
	case "file":
		d.r.Need("file_id", "anthropic")
		return p, false, nil
	default:
		return p, false, fmt.Errorf(`%s.source.type: must be "base64", "url" or "file"`, path())
	}
	return p, err == nil, err
}

func (d *anthropicRequestDecoder) toolResult(b *anthropicBlock, p Part, path func() string) (Part, bool, error) {
	p.Kind = PartToolResult
	var err error
	if p.ID, err = gjString(b.toolUseID, path, "tool_use_id"); err != nil {
		return p, false, err
	}
	p.IsError = b.isError.Bool()
	switch content := b.content; {
	case !content.Exists() || content.Type == gjson.Null:
	case content.Type == gjson.String:
		p.Content = []Part{{Kind: PartText, Text: content.Str}}
	case content.IsArray():
		k := 0
		content.ForEach(func(_, cv gjson.Result) bool {
			var c Part
			var keep bool
			c, keep, err = d.block(cv, func() string { return fmt.Sprintf("%s.content[%d]", path(), k) })
			if err == nil && keep && c.Kind != PartText && c.Kind != PartImage {
				err = fmt.Errorf("%s.content[%d]: a tool result holds text and image blocks, not %s", path(), k, c.Kind)
			}
			if keep {
				p.Content = append(p.Content, c)
			}
			k++
			return err == nil
		})
	default:
		return p, false, fmt.Errorf("%s.content: must be a string or an array of content blocks", path())
	}
	return p, err == nil, err
}

func (d *anthropicRequestDecoder) tools(v gjson.Result) error {
	return gjEach(v, "tools", d.tool)
}

func (d *anthropicRequestDecoder) tool(i int, v gjson.Result) error {
	if !v.IsObject() {
		return fmt.Errorf("tools[%d]: must be an object", i)
	}
	var typ, name, description, schema, cacheControl gjson.Result
	v.ForEach(func(k, f gjson.Result) bool {
		switch k.Str {
		case "type":
			typ = f
		case "name":
			name = f
		case "description":
			description = f
		case "input_schema":
			schema = f
		case "cache_control":
			cacheControl = f
		}
		return true
	})
	if typ.Str != "" && typ.Str != "custom" {
		// bash_…, text_editor_…, web_search_…, computer_…: Anthropic's own tools.
		d.r.Need("tool:"+typ.Str, "anthropic")
		return nil
	}
	if name.Type != gjson.String || name.Str == "" {
		return fmt.Errorf("tools[%d].name: field required", i)
	}
	if !schema.IsObject() {
		return fmt.Errorf("tools[%d].input_schema: must be an object (a JSON Schema)", i)
	}
	t := Tool{Name: name.Str, Description: description.Str, Schema: json.RawMessage(schema.Raw)}
	if cacheControl.IsObject() {
		t.CacheControl = json.RawMessage(cacheControl.Raw)
	}
	d.r.Tools = append(d.r.Tools, t)
	return nil
}

func (d *anthropicRequestDecoder) toolChoice(v gjson.Result) error {
	if !v.IsObject() {
		return errors.New("tool_choice: must be an object")
	}
	tc := &d.r.ToolChoice
	switch v.Get("type").Str {
	case "auto":
		tc.Mode = ToolAuto
	case "any":
		tc.Mode = ToolAny
	case "none":
		tc.Mode = ToolNone
	case "tool":
		name := v.Get("name")
		if name.Type != gjson.String || name.Str == "" {
			return errors.New("tool_choice.name: field required when type is \"tool\"")
		}
		tc.Mode, tc.Name = ToolNamed, name.Str
	default:
		return errors.New(`tool_choice.type: must be "auto", "any", "tool" or "none"`)
	}
	if dp := v.Get("disable_parallel_tool_use"); dp.IsBool() {
		parallel := !dp.Bool()
		d.r.ParallelToolCalls = &parallel
	}
	return nil
}

func (d *anthropicRequestDecoder) thinking(v gjson.Result) error {
	switch v.Get("type").Str {
	case "enabled":
		n, ok := gjPositiveInt(v.Get("budget_tokens"))
		if !ok {
			return errors.New("thinking.budget_tokens: must be a positive integer")
		}
		d.r.Thinking = &Thinking{BudgetTokens: n}
	case "disabled":
		d.r.Thinking = nil
	case "adaptive":
		d.adaptive = true
	default:
		return errors.New(`thinking.type: must be "enabled", "disabled" or "adaptive"`)
	}
	return nil
}
