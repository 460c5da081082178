package codec

import (
	"fmt"

	"github.com/tidwall/gjson"
)

// The OpenAI Responses API as a translator (docs/protocols.md): this file
// decodes a client's request into canonical form (its passthrough Codec is
// in openai.go).
// openai_responses_encode.go writes a request, openai_responses_answer.go
// the whole answers and openai_responses_stream*.go the streams.

var _ Translator = openAIResponses{}

// responsesFields are the top-level fields of a Responses request the
// decoder reads, collected in one pass over the body.
type responsesFields struct {
	sharedFields
	input, instructions, maxOutputTokens, reasoning, previousResponseID gjson.Result
	conversation, background, text, topLogprobs, prompt                 gjson.Result
}

// collect sorts root's fields into f.
func (f *responsesFields) collect(root gjson.Result) {
	root.ForEach(func(k, v gjson.Result) bool {
		if f.sharedFields.collect(k.Str, v) {
			return true
		}
		switch k.Str {
		case "input":
			f.input = v
		case "instructions":
			f.instructions = v
		case "max_output_tokens":
			f.maxOutputTokens = v
		case "reasoning":
			f.reasoning = v
		case "previous_response_id":
			f.previousResponseID = v
		case "conversation":
			f.conversation = v
		case "background":
			f.background = v
		case "text":
			f.text = v
		case "top_logprobs":
			f.topLogprobs = v
		case "prompt":
			f.prompt = v
		}
		return true
	})
}

// DecodeRequest reads a Responses request into canonical form. Errors
// name the JSON path of what is wrong ("input[3].content: …").
func (openAIResponses) DecodeRequest(body []byte) (*Request, error) {
	root, err := parseBody(body)
	if err != nil {
		return nil, err
	}
	var f responsesFields
	f.collect(root)
	d := responsesRequestDecoder{r: &Request{}}
	for _, step := range []func(*responsesFields) error{d.scalars, d.needs, d.input, d.tools, d.toolChoice} {
		if err := step(&f); err != nil {
			return nil, err
		}
	}
	return d.r, nil
}

// responsesRequestDecoder builds one canonical request.
type responsesRequestDecoder struct {
	r     *Request
	turns toolTurns
}

// scalars reads the shared fields, the instructions and the output settings.
func (d *responsesRequestDecoder) scalars(f *responsesFields) error {
	r := d.r
	if err := f.sharedFields.read(r); err != nil {
		return err
	}
	instructions, err := wantString(f.instructions, "instructions")
	if err != nil {
		return err
	}
	if instructions != "" {
		r.System = append(r.System, Part{Kind: PartText, Text: instructions})
	}
	if r.MaxTokens, err = wantCount(f.maxOutputTokens, "max_output_tokens"); err != nil {
		return err
	}
	if err := wantObject(f.reasoning, "reasoning"); err != nil {
		return err
	}
	effort, err := wantString(f.reasoning.Get("effort"), "reasoning.effort")
	if effort != "" {
		r.Thinking = &Thinking{Effort: effort}
	}
	return err
}

// needs records the features only the Responses API (or a few protocols)
// can express.
func (d *responsesRequestDecoder) needs(f *responsesFields) error {
	r := d.r
	if id, err := wantString(f.previousResponseID, "previous_response_id"); err != nil {
		return err
	} else if id != "" {
		r.Need("previous_response_id", "openai-responses")
	}
	if !isNull(f.conversation) {
		r.Need("conversation", "openai-responses")
	}
	if f.background.Type == gjson.True {
		r.Need("background", "openai-responses")
	}
	if err := wantObject(f.text, "text"); err != nil {
		return err
	}
	switch f.text.Get("format.type").Str {
	case "json_schema", "json_object":
		r.Need("response_format", "openai-responses")
	}
	if f.topLogprobs.Type == gjson.Number && f.topLogprobs.Num > 0 {
		r.Need("logprobs", "openai-responses")
	}
	if !isNull(f.prompt) {
		r.Need("prompt", "openai-responses")
	}
	return nil
}

// input reads the input: a string (one user message) or a list of items.
func (d *responsesRequestDecoder) input(f *responsesFields) error {
	switch v := f.input; {
	case isNull(v):
		return nil
	case v.Type == gjson.String:
		d.r.Messages = append(d.r.Messages, Message{Role: RoleUser, Parts: []Part{{Kind: PartText, Text: v.Str}}})
		return nil
	case !v.IsArray():
		return fmt.Errorf("input: must be a string or an array of items, got %s", jsonKind(v))
	}
	return eachIndexed(f.input, d.item)
}

// item reads input[i].
func (d *responsesRequestDecoder) item(i int, it gjson.Result) error {
	if !it.IsObject() {
		return fmt.Errorf("input[%d]: must be an object, got %s", i, jsonKind(it))
	}
	typ := it.Get("type").Str
	switch {
	case typ == "message" || typ == "" && it.Get("role").Exists():
		return d.message(i, it)
	case typ == "function_call":
		return d.functionCall(i, it)
	case typ == "function_call_output":
		return d.functionOutput(i, it)
	case typ == "reasoning":
		return d.reasoning(i, it)
	case typ == "":
		return fmt.Errorf("input[%d]: an item needs a type or a role", i)
	}
	// item_reference and the items of built-in tools (web_search_call,
	// computer_call_output, mcp_call, …) live only in the Responses API.
	d.r.Need("item:"+typ, "openai-responses")
	return nil
}

// message reads a message item.
func (d *responsesRequestDecoder) message(i int, it gjson.Result) error {
	role, err := wantString(it.Get("role"), fmt.Sprintf("input[%d].role", i))
	if err != nil {
		return err
	}
	parts, err := d.content(it.Get("content"), role, func() string { return fmt.Sprintf("input[%d].content", i) })
	if err != nil {
		return err
	}
	switch role {
	case "system", "developer":
		d.r.System = append(d.r.System, parts...)
	case "user":
		d.turns.other()
		if len(parts) > 0 {
			d.r.Messages = append(d.r.Messages, Message{Role: RoleUser, Parts: parts})
		}
	case "assistant":
		d.assistantParts(parts...)
	case "":
		return fmt.Errorf("input[%d].role: missing", i)
	default:
		return fmt.Errorf("input[%d].role: unknown role %q", i, role)
	}
	return nil
}

// assistantParts appends parts to the assistant turn being read: the
// reasoning, messages and function calls of one turn are separate items.
func (d *responsesRequestDecoder) assistantParts(parts ...Part) {
	d.turns.other()
	if len(parts) == 0 {
		return
	}
	if n := len(d.r.Messages); n > 0 && d.r.Messages[n-1].Role == RoleAssistant {
		d.r.Messages[n-1].Parts = append(d.r.Messages[n-1].Parts, parts...)
		return
	}
	d.r.Messages = append(d.r.Messages, Message{Role: RoleAssistant, Parts: parts})
}

// content reads a message's content: a string or an array of parts. A
// system or developer message takes only text.
func (d *responsesRequestDecoder) content(v gjson.Result, role string, path func() string) ([]Part, error) {
	switch {
	case v.Type == gjson.String:
		return []Part{{Kind: PartText, Text: v.Str}}, nil
	case !v.IsArray():
		return nil, fmt.Errorf("%s: must be a string or an array of content parts, got %s", path(), jsonKind(v))
	}
	textOnly := role == "system" || role == "developer"
	var parts []Part
	err := eachIndexed(v, func(j int, p gjson.Result) error {
		typ := p.Get("type").Str
		if textOnly && typ != "input_text" && typ != "text" {
			return fmt.Errorf("%s[%d].type: must be \"input_text\" here, got %q", path(), j, typ)
		}
		part, ok, err := d.contentPart(p, typ, func() string { return fmt.Sprintf("%s[%d]", path(), j) })
		if ok {
			parts = append(parts, part)
		}
		return err
	})
	return parts, err
}

// contentPart reads one content part (of a message or a function call's
// output); ok is false for a part only the Responses API takes, recorded
// as a need.
func (d *responsesRequestDecoder) contentPart(p gjson.Result, typ string, path func() string) (Part, bool, error) {
	switch typ {
	case "input_text", "output_text", "text", "refusal":
		field := "text"
		if typ == "refusal" {
			field = "refusal"
		}
		text := p.Get(field)
		if text.Type != gjson.String {
			return Part{}, false, fmt.Errorf("%s.%s: must be a string, got %s", path(), field, jsonKind(text))
		}
		return Part{Kind: PartText, Text: text.Str}, true, nil
	case "input_image":
		if !isNull(p.Get("file_id")) {
			d.r.Need("file_id", "openai-responses")
			return Part{}, false, nil
		}
		u := p.Get("image_url")
		if u.Type != gjson.String {
			return Part{}, false, fmt.Errorf("%s.image_url: must be a string, got %s", path(), jsonKind(u))
		}
		img, err := parseImageURL(d.r, u.Str, path()+".image_url")
		return img, err == nil, err
	case "input_file":
		d.r.Need("input_file", "openai-responses")
		return Part{}, false, nil
	case "input_audio":
		d.r.Need("audio", "openai-responses")
		return Part{}, false, nil
	}
	return Part{}, false, fmt.Errorf("%s.type: unknown content part type %q", path(), typ)
}

// functionCall reads a function_call item into the assistant turn.
func (d *responsesRequestDecoder) functionCall(i int, it gjson.Result) error {
	id, name, args := it.Get("call_id"), it.Get("name"), it.Get("arguments")
	if id.Type != gjson.String || id.Str == "" {
		return fmt.Errorf("input[%d].call_id: must be a non-empty string", i)
	}
	if name.Type != gjson.String || name.Str == "" {
		return fmt.Errorf("input[%d].name: must be a non-empty string", i)
	}
	raw, ok := parseArguments(args.Str)
	if args.Exists() && args.Type != gjson.String || !ok {
		return fmt.Errorf("input[%d].arguments: must be a JSON object encoded as a string", i)
	}
	call := Part{Kind: PartToolCall, ID: id.Str, Name: name.Str, Arguments: raw}
	d.turns.call(call)
	d.assistantParts(call)
	return nil
}

// functionOutput reads a function_call_output item into a tool result;
// consecutive outputs share one user message.
func (d *responsesRequestDecoder) functionOutput(i int, it gjson.Result) error {
	id := it.Get("call_id")
	if id.Type != gjson.String || id.Str == "" {
		return fmt.Errorf("input[%d].call_id: must be a non-empty string", i)
	}
	var content []Part
	switch out := it.Get("output"); {
	case out.Type == gjson.String:
		content = []Part{{Kind: PartText, Text: out.Str}}
	case out.IsArray():
		err := eachIndexed(out, func(j int, p gjson.Result) error {
			part, ok, err := d.contentPart(p, p.Get("type").Str, func() string { return fmt.Sprintf("input[%d].output[%d]", i, j) })
			if ok {
				content = append(content, part)
			}
			return err
		})
		if err != nil {
			return err
		}
	default:
		return fmt.Errorf("input[%d].output: must be a string or an array of content parts, got %s", i, jsonKind(out))
	}
	d.turns.result(d.r, id.Str, content)
	return nil
}

// reasoning reads a reasoning item into the assistant turn: its summary
// (or, from open-weight models, its reasoning text) as thinking, its
// encrypted_content as redacted thinking.
func (d *responsesRequestDecoder) reasoning(i int, it gjson.Result) error {
	var parts []Part
	if text := reasoningText(it); text != "" {
		parts = append(parts, Part{Kind: PartThinking, Text: text})
	}
	enc, err := wantString(it.Get("encrypted_content"), fmt.Sprintf("input[%d].encrypted_content", i))
	if err != nil {
		return err
	}
	if enc != "" {
		parts = append(parts, Part{Kind: PartRedactedThinking, Data: enc})
	}
	d.assistantParts(parts...)
	return nil
}

// reasoningText joins a reasoning item's summary texts, or its content's
// reasoning texts when it has no summary.
func reasoningText(it gjson.Result) string {
	var text string
	for _, field := range [...]string{"summary", "content"} {
		it.Get(field).ForEach(func(_, s gjson.Result) bool {
			if t := s.Get("text"); t.Type == gjson.String && t.Str != "" {
				if text != "" {
					text += "\n\n"
				}
				text += t.Str
			}
			return true
		})
		if text != "" {
			break
		}
	}
	return text
}

// tools reads the function tools; built-in tools are needs.
func (d *responsesRequestDecoder) tools(f *responsesFields) error {
	if err := wantArray(f.tools, "tools"); err != nil {
		return err
	}
	return eachIndexed(f.tools, func(i int, t gjson.Result) error {
		if !t.IsObject() {
			return fmt.Errorf("tools[%d]: must be an object, got %s", i, jsonKind(t))
		}
		var f [len(functionToolKeys)]gjson.Result // type, (function), name, description, parameters
		objectFields(t, functionToolKeys[:], f[:])
		if typ := f[0].Str; typ != "function" {
			d.r.Need("tool:"+typ, "openai-responses")
			return nil
		}
		tool, err := functionTool(f[2], f[3], f[4], func() string { return fmt.Sprintf("tools[%d]", i) })
		if err == nil {
			d.r.Tools = append(d.r.Tools, tool)
		}
		return err
	})
}

// toolChoice reads tool_choice.
func (d *responsesRequestDecoder) toolChoice(f *responsesFields) error {
	v := f.toolChoice
	switch {
	case isNull(v):
		return nil
	case v.Type == gjson.String:
		return setToolChoiceMode(&d.r.ToolChoice, v.Str)
	case !v.IsObject():
		return fmt.Errorf("tool_choice: must be a string or an object, got %s", jsonKind(v))
	}
	typ := v.Get("type").Str
	if typ != "function" {
		// allowed_tools, mcp, custom and the built-in tools' choices
		d.r.Need("tool_choice:"+typ, "openai-responses")
		return nil
	}
	name := v.Get("name")
	if name.Type != gjson.String || name.Str == "" {
		return fmt.Errorf("tool_choice.name: must be a non-empty string")
	}
	d.r.ToolChoice = ToolChoice{Mode: ToolNamed, Name: name.Str}
	return nil
}
