package codec

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tidwall/gjson"
)

// bedrockCacheControl is the cache breakpoint a cachePoint block stands
// for, in Anthropic's words (the canonical form's).
var bedrockCacheControl = json.RawMessage(`{"type":"ephemeral"}`)

// DecodeRequest reads a Converse request into canonical form (no client
// speaks Converse; this makes the Translator total and round trips
// testable). The model is in the URL, not the body: Request.Model stays
// empty, and so does Stream (the operation says it). A cachePoint block
// becomes the cache breakpoint of the block before it. What only Bedrock
// can express (guardrails, documents, videos, images in S3, guard content,
// prompt variables, system tools) is recorded in Request.Needs; thinking
// and top_k are read from additionalModelRequestFields, and its other
// fields, requestMetadata, performanceConfig and serviceTier are dropped.
func (bedrock) DecodeRequest(body []byte) (*Request, error) {
	if !gjson.ValidBytes(body) {
		return nil, errors.New("request body: invalid JSON")
	}
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		return nil, errors.New("request body: must be a JSON object")
	}
	d := bedrockRequestDecoder{r: &Request{}}
	var err error
	root.ForEach(func(k, v gjson.Result) bool {
		if v.Type != gjson.Null {
			err = d.field(k.Str, v)
		}
		return err == nil
	})
	if err != nil {
		return nil, err
	}
	if !d.sawMessages {
		return nil, errors.New("messages: field required")
	}
	return d.r, nil
}

// bedrockRequestDecoder holds what DecodeRequest learns across fields.
type bedrockRequestDecoder struct {
	r           *Request
	sawMessages bool
}

func (d *bedrockRequestDecoder) field(key string, v gjson.Result) error {
	switch key {
	case "messages":
		d.sawMessages = true
		return d.messages(v)
	case "system":
		return d.system(v)
	case "inferenceConfig":
		return d.inference(v)
	case "toolConfig":
		return d.toolConfig(v)
	case "additionalModelRequestFields":
		return d.additional(v)
	case "guardrailConfig", "promptVariables":
		d.r.Need(key, "bedrock")
	}
	return nil
}

func (d *bedrockRequestDecoder) messages(v gjson.Result) error {
	return gjEach(v, "messages", d.message)
}

func (d *bedrockRequestDecoder) message(i int, v gjson.Result) error {
	if !v.IsObject() {
		return fmt.Errorf("messages[%d]: must be an object", i)
	}
	var m Message
	switch v.Get("role").Str {
	case "user":
		m.Role = RoleUser
	case "assistant":
		m.Role = RoleAssistant
	default:
		return fmt.Errorf(`messages[%d].role: must be "user" or "assistant"`, i)
	}
	content := v.Get("content")
	if !content.IsArray() {
		return fmt.Errorf("messages[%d].content: must be an array of content blocks", i)
	}
	var err error
	m.Parts, err = d.blocks(content, func(j int) string { return fmt.Sprintf("messages[%d].content[%d]", i, j) }, false)
	if err != nil {
		return err
	}
	d.r.Messages = append(d.r.Messages, m)
	return nil
}

// blocks reads an array of content blocks; inResult: they are a tool
// result's, which hold text, JSON and images.
func (d *bedrockRequestDecoder) blocks(v gjson.Result, path func(int) string, inResult bool) ([]Part, error) {
	var parts []Part
	var err error
	j := 0
	v.ForEach(func(_, b gjson.Result) bool {
		if !b.IsObject() {
			err = fmt.Errorf("%s: must be an object", path(j))
			return false
		}
		if b.Get("cachePoint").Exists() {
			if n := len(parts); n > 0 {
				parts[n-1].CacheControl = bedrockCacheControl
			}
			j++
			return true
		}
		var p Part
		var keep bool
		p, keep, err = d.block(b, func() string { return path(j) }, inResult)
		if keep {
			parts = append(parts, p)
		}
		j++
		return err == nil
	})
	return parts, err
}

// block reads one content block; keep is false for one recorded only as
// a Need.
func (d *bedrockRequestDecoder) block(v gjson.Result, path func() string, inResult bool) (Part, bool, error) {
	var key string
	var val gjson.Result
	v.ForEach(func(k, fv gjson.Result) bool { // a union: its one member
		key, val = k.Str, fv
		return false
	})
	switch key {
	case "text":
		if val.Type != gjson.String {
			return Part{}, false, fmt.Errorf("%s.text: must be a string", path())
		}
		return Part{Kind: PartText, Text: val.Str}, true, nil
	case "json":
		if !inResult {
			break
		}
		return Part{Kind: PartText, Text: val.Raw}, true, nil
	case "image":
		return d.image(val, path)
	case "toolUse":
		if inResult {
			break
		}
		return d.toolUse(val, path)
	case "toolResult":
		if inResult {
			break
		}
		return d.toolResult(val, path)
	case "reasoningContent":
		if inResult {
			break
		}
		return d.reasoning(val, path)
	case "document", "video", "guardContent", "citationsContent", "searchResult":
		d.r.Need(key, "bedrock")
		return Part{}, false, nil
	case "":
		return Part{}, false, fmt.Errorf("%s: an empty content block", path())
	}
	if inResult {
		return Part{}, false, fmt.Errorf("%s: a tool result holds text, json and image blocks, not %s", path(), key)
	}
	d.r.Need(key, "bedrock") // a block newer than this code: Bedrock's to judge
	return Part{}, false, nil
}

func (d *bedrockRequestDecoder) image(v gjson.Result, path func() string) (Part, bool, error) {
	format := v.Get("format").Str
	switch format {
	case "png", "jpeg", "gif", "webp":
	default:
		return Part{}, false, fmt.Errorf(`%s.image.format: must be "png", "jpeg", "gif" or "webp"`, path())
	}
	src := v.Get("source")
	if src.Get("s3Location").Exists() {
		d.r.Need("image_s3_location", "bedrock")
		return Part{}, false, nil
	}
	data := src.Get("bytes")
	if data.Type != gjson.String {
		return Part{}, false, fmt.Errorf("%s.image.source.bytes: must be a base64 string", path())
	}
	return Part{Kind: PartImage, MediaType: "image/" + format, Data: data.Str}, true, nil
}

func (d *bedrockRequestDecoder) toolUse(v gjson.Result, path func() string) (Part, bool, error) {
	p := Part{Kind: PartToolCall, Arguments: json.RawMessage("{}")}
	var err error
	sub := func() string { return path() + ".toolUse" }
	if p.ID, err = gjString(v.Get("toolUseId"), sub, "toolUseId"); err != nil {
		return p, false, err
	}
	if p.Name, err = gjString(v.Get("name"), sub, "name"); err != nil {
		return p, false, err
	}
	if p.Name == "" { // Bedrock requires a tool name, as every protocol it may be translated to does
		return p, false, fmt.Errorf("%s.name: field required", sub())
	}
	if in := v.Get("input"); in.Exists() && in.Type != gjson.Null {
		p.Arguments = json.RawMessage(in.Raw)
	}
	return p, true, nil
}

func (d *bedrockRequestDecoder) toolResult(v gjson.Result, path func() string) (Part, bool, error) {
	p := Part{Kind: PartToolResult, IsError: v.Get("status").Str == "error"}
	var err error
	sub := func() string { return path() + ".toolResult" }
	if p.ID, err = gjString(v.Get("toolUseId"), sub, "toolUseId"); err != nil {
		return p, false, err
	}
	content := v.Get("content")
	if content.Exists() && !content.IsArray() {
		return p, false, fmt.Errorf("%s.content: must be an array of content blocks", sub())
	}
	p.Content, err = d.blocks(content, func(k int) string { return fmt.Sprintf("%s.content[%d]", sub(), k) }, true)
	return p, err == nil, err
}

func (d *bedrockRequestDecoder) reasoning(v gjson.Result, path func() string) (Part, bool, error) {
	if rt := v.Get("reasoningText"); rt.Exists() {
		text := rt.Get("text")
		if text.Type != gjson.String {
			return Part{}, false, fmt.Errorf("%s.reasoningContent.reasoningText.text: must be a string", path())
		}
		return Part{Kind: PartThinking, Text: text.Str, Signature: rt.Get("signature").Str}, true, nil
	}
	if rc := v.Get("redactedContent"); rc.Type == gjson.String {
		return Part{Kind: PartRedactedThinking, Data: rc.Str}, true, nil
	}
	return Part{}, false, fmt.Errorf("%s.reasoningContent: has neither reasoningText nor redactedContent", path())
}

func (d *bedrockRequestDecoder) system(v gjson.Result) error {
	if !v.IsArray() {
		return errors.New("system: must be an array of system content blocks")
	}
	var err error
	i := 0
	v.ForEach(func(_, b gjson.Result) bool {
		switch {
		case b.Get("text").Type == gjson.String:
			d.r.System = append(d.r.System, Part{Kind: PartText, Text: b.Get("text").Str})
		case b.Get("cachePoint").Exists():
			if n := len(d.r.System); n > 0 {
				d.r.System[n-1].CacheControl = bedrockCacheControl
			}
		case b.Get("guardContent").Exists():
			d.r.Need("guardContent", "bedrock")
		default:
			err = fmt.Errorf("system[%d]: must be a text, cachePoint or guardContent block", i)
		}
		i++
		return err == nil
	})
	return err
}

func (d *bedrockRequestDecoder) inference(v gjson.Result) error {
	if !v.IsObject() {
		return errors.New("inferenceConfig: must be an object")
	}
	r := d.r
	var err error
	v.ForEach(func(k, f gjson.Result) bool {
		if f.Type == gjson.Null {
			return true
		}
		switch k.Str {
		case "maxTokens":
			var ok bool
			if r.MaxTokens, ok = gjPositiveInt(f); !ok {
				err = errors.New("inferenceConfig.maxTokens: must be a positive integer")
			}
		case "temperature", "topP":
			if f.Type != gjson.Number {
				err = fmt.Errorf("inferenceConfig.%s: must be a number", k.Str)
				break
			}
			x := f.Num
			if k.Str == "temperature" {
				r.Temperature = &x
			} else {
				r.TopP = &x
			}
		case "stopSequences":
			r.Stop, err = gjStrings(f, "inferenceConfig.stopSequences")
		}
		return err == nil
	})
	return err
}

func (d *bedrockRequestDecoder) toolConfig(v gjson.Result) error {
	if !v.IsObject() {
		return errors.New("toolConfig: must be an object")
	}
	tools := v.Get("tools")
	if tools.Exists() && !tools.IsArray() {
		return errors.New("toolConfig.tools: must be an array")
	}
	var err error
	i := 0
	tools.ForEach(func(_, t gjson.Result) bool {
		err = d.tool(i, t)
		i++
		return err == nil
	})
	if err != nil {
		return err
	}
	return d.toolChoice(v.Get("toolChoice"))
}

func (d *bedrockRequestDecoder) tool(i int, v gjson.Result) error {
	switch {
	case v.Get("cachePoint").Exists():
		if n := len(d.r.Tools); n > 0 {
			d.r.Tools[n-1].CacheControl = bedrockCacheControl
		}
		return nil
	case v.Get("systemTool").Exists():
		d.r.Need("systemTool", "bedrock")
		return nil
	}
	spec := v.Get("toolSpec")
	if !spec.IsObject() {
		return fmt.Errorf("toolConfig.tools[%d]: must be a toolSpec or cachePoint", i)
	}
	name := spec.Get("name")
	if name.Type != gjson.String || name.Str == "" {
		return fmt.Errorf("toolConfig.tools[%d].toolSpec.name: field required", i)
	}
	schema := spec.Get("inputSchema.json")
	if !schema.IsObject() {
		return fmt.Errorf("toolConfig.tools[%d].toolSpec.inputSchema.json: must be an object (a JSON Schema)", i)
	}
	d.r.Tools = append(d.r.Tools, Tool{Name: name.Str, Description: spec.Get("description").Str, Schema: json.RawMessage(schema.Raw)})
	return nil
}

func (d *bedrockRequestDecoder) toolChoice(v gjson.Result) error {
	tc := &d.r.ToolChoice
	switch {
	case !v.Exists() || v.Type == gjson.Null, v.Get("auto").Exists():
		tc.Mode = ToolAuto
	case v.Get("any").Exists():
		tc.Mode = ToolAny
	case v.Get("tool").Exists():
		name := v.Get("tool.name")
		if name.Type != gjson.String || name.Str == "" {
			return errors.New("toolConfig.toolChoice.tool.name: field required")
		}
		tc.Mode, tc.Name = ToolNamed, name.Str
	default:
		return errors.New("toolConfig.toolChoice: must be {\"auto\":{}}, {\"any\":{}} or {\"tool\":{\"name\":…}}")
	}
	return nil
}

// additional reads the Anthropic fields Bedrock passes on to Claude:
// thinking and top_k.
func (d *bedrockRequestDecoder) additional(v gjson.Result) error {
	if !v.IsObject() {
		return errors.New("additionalModelRequestFields: must be an object")
	}
	if th := v.Get("thinking"); th.Exists() {
		switch th.Get("type").Str {
		case "enabled":
			n, ok := gjPositiveInt(th.Get("budget_tokens"))
			if !ok {
				return errors.New("additionalModelRequestFields.thinking.budget_tokens: must be a positive integer")
			}
			d.r.Thinking = &Thinking{BudgetTokens: n}
		case "disabled":
		default:
			return errors.New(`additionalModelRequestFields.thinking.type: must be "enabled" or "disabled"`)
		}
	}
	if k := v.Get("top_k"); k.Exists() {
		n, ok := gjPositiveInt(k)
		if !ok {
			return errors.New("additionalModelRequestFields.top_k: must be a positive integer")
		}
		d.r.TopK = &n
	}
	return nil
}
