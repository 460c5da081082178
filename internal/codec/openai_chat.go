package codec

import (
	"encoding/json"
	"fmt"

	"github.com/tidwall/gjson"
)

// OpenAI Chat Completions as a translator (DESIGN.md §9): the protocol
// every translated request to an OpenAI-family upstream takes. This file
// decodes a client's request; openai_chat_encode.go writes one for an
// upstream, openai_chat_response.go the whole answers and
// openai_chat_stream.go the streams.

var _ Translator = openAIChat{}

// chatFields are the top-level fields of a Chat request the decoder reads,
// collected in one pass over the body.
type chatFields struct {
	model, messages, tools, toolChoice, parallelToolCalls            gjson.Result
	maxCompletionTokens, maxTokens, temperature, topP, stop          gjson.Result
	stream, streamOptions, reasoningEffort, user, safetyIdentifier   gjson.Result
	n, logprobs, topLogprobs, responseFormat, audio, modalities      gjson.Result
	logitBias, functions, functionCall, prediction, webSearchOptions gjson.Result
}

// collect sorts root's fields into f.
func (f *chatFields) collect(root gjson.Result) {
	root.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "model":
			f.model = v
		case "messages":
			f.messages = v
		case "tools":
			f.tools = v
		case "tool_choice":
			f.toolChoice = v
		case "parallel_tool_calls":
			f.parallelToolCalls = v
		case "max_completion_tokens":
			f.maxCompletionTokens = v
		case "max_tokens":
			f.maxTokens = v
		case "temperature":
			f.temperature = v
		case "top_p":
			f.topP = v
		case "stop":
			f.stop = v
		case "stream":
			f.stream = v
		case "stream_options":
			f.streamOptions = v
		case "reasoning_effort":
			f.reasoningEffort = v
		case "user":
			f.user = v
		case "safety_identifier":
			f.safetyIdentifier = v
		case "n":
			f.n = v
		case "logprobs":
			f.logprobs = v
		case "top_logprobs":
			f.topLogprobs = v
		case "response_format":
			f.responseFormat = v
		case "audio":
			f.audio = v
		case "modalities":
			f.modalities = v
		case "logit_bias":
			f.logitBias = v
		case "functions":
			f.functions = v
		case "function_call":
			f.functionCall = v
		case "prediction":
			f.prediction = v
		case "web_search_options":
			f.webSearchOptions = v
		}
		return true
	})
}

// DecodeRequest reads a Chat Completions request into canonical form.
// Errors name the JSON path of what is wrong ("messages[2].content: …").
func (openAIChat) DecodeRequest(body []byte) (*Request, error) {
	root, err := parseBody(body)
	if err != nil {
		return nil, err
	}
	var f chatFields
	f.collect(root)
	d := chatRequestDecoder{r: &Request{}}
	for _, step := range []func(*chatFields) error{d.scalars, d.needs, d.messages, d.tools, d.toolChoice} {
		if err := step(&f); err != nil {
			return nil, err
		}
	}
	return d.r, nil
}

// chatRequestDecoder builds one canonical request.
type chatRequestDecoder struct {
	r *Request
	// calls are the tool calls seen so far, so a tool message's result can
	// name the tool it answers.
	calls []Part
	// toolGroup: the last message holds tool messages' results, and the
	// next tool message joins it.
	toolGroup bool
}

// scalars reads the sampling and output settings.
func (d *chatRequestDecoder) scalars(f *chatFields) error {
	r := d.r
	var err error
	if r.Model, err = wantString(f.model, "model"); err != nil {
		return err
	}
	if r.MaxTokens, err = wantCount(f.maxTokens, "max_tokens"); err != nil {
		return err
	}
	if !isNull(f.maxCompletionTokens) {
		if r.MaxTokens, err = wantCount(f.maxCompletionTokens, "max_completion_tokens"); err != nil {
			return err
		}
	}
	if r.Temperature, err = wantFloat(f.temperature, "temperature"); err != nil {
		return err
	}
	if r.TopP, err = wantFloat(f.topP, "top_p"); err != nil {
		return err
	}
	if r.Stop, err = wantStops(f.stop, "stop"); err != nil {
		return err
	}
	if r.Stream, err = wantBool(f.stream, "stream"); err != nil {
		return err
	}
	if err = wantObject(f.streamOptions, "stream_options"); err != nil {
		return err
	}
	if r.IncludeUsage, err = wantBool(f.streamOptions.Get("include_usage"), "stream_options.include_usage"); err != nil {
		return err
	}
	if !isNull(f.parallelToolCalls) {
		v, err := wantBool(f.parallelToolCalls, "parallel_tool_calls")
		if err != nil {
			return err
		}
		r.ParallelToolCalls = &v
	}
	effort, err := wantString(f.reasoningEffort, "reasoning_effort")
	if err != nil {
		return err
	}
	if effort != "" {
		r.Thinking = &Thinking{Effort: effort}
	}
	if r.User, err = wantString(f.user, "user"); err != nil {
		return err
	}
	if r.User == "" {
		r.User, err = wantString(f.safetyIdentifier, "safety_identifier")
	}
	return err
}

// needs records the features only some protocols can express.
func (d *chatRequestDecoder) needs(f *chatFields) error {
	r := d.r
	n, err := wantCount(f.n, "n")
	if err != nil {
		return err
	}
	if n > 1 {
		r.Need("n", protoChat, protoGemini)
	}
	if f.logprobs.Type == gjson.True || !isNull(f.topLogprobs) {
		r.Need("logprobs", protoChat)
	}
	if err := wantObject(f.responseFormat, "response_format"); err != nil {
		return err
	}
	switch t := f.responseFormat.Get("type").Str; t {
	case "json_object", "json_schema":
		r.Need("response_format", protoChat, protoResponses, protoGemini)
	}
	if !isNull(f.audio) || modalitiesHaveAudio(f.modalities) {
		r.Need("audio", protoChat)
	}
	if f.logitBias.IsObject() && len(f.logitBias.Map()) > 0 {
		r.Need("logit_bias", protoChat)
	}
	if !isNull(f.functions) || !isNull(f.functionCall) {
		r.Need("functions", protoChat)
	}
	if !isNull(f.prediction) {
		r.Need("prediction", protoChat)
	}
	if !isNull(f.webSearchOptions) {
		r.Need("tool:web_search", protoChat)
	}
	return nil
}

// modalitiesHaveAudio reports whether the modalities array asks for audio.
func modalitiesHaveAudio(v gjson.Result) bool {
	found := false
	v.ForEach(func(_, m gjson.Result) bool {
		found = m.Str == "audio"
		return !found
	})
	return found
}

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

// message reads messages[i].
func (d *chatRequestDecoder) message(i int, m gjson.Result) error {
	if !m.IsObject() {
		return fmt.Errorf("messages[%d]: must be an object, got %s", i, jsonKind(m))
	}
	role, err := wantString(m.Get("role"), fmt.Sprintf("messages[%d].role", i))
	if err != nil {
		return err
	}
	content := m.Get("content")
	switch role {
	case "system", "developer":
		parts, err := chatTextParts(content, func() string { return fmt.Sprintf("messages[%d].content", i) }, false)
		if err != nil {
			return err
		}
		d.r.System = append(d.r.System, parts...)
	case "user":
		return d.user(i, content)
	case "assistant":
		return d.assistant(i, m)
	case "tool":
		return d.tool(i, m)
	case "function":
		d.r.Need("functions", protoChat)
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
	d.toolGroup = false
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
			d.r.Need("audio", protoChat)
		case "file":
			d.r.Need("file", protoChat)
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
func (d *chatRequestDecoder) assistant(i int, m gjson.Result) error {
	d.toolGroup = false
	var parts []Part
	reasoning, err := wantString(m.Get("reasoning_content"), fmt.Sprintf("messages[%d].reasoning_content", i))
	if err != nil {
		return err
	}
	if reasoning != "" {
		parts = append(parts, Part{Kind: PartThinking, Text: reasoning})
	}
	text, err := chatTextParts(m.Get("content"), func() string { return fmt.Sprintf("messages[%d].content", i) }, true)
	if err != nil {
		return err
	}
	for _, p := range text {
		if p.Text != "" {
			parts = append(parts, p)
		}
	}
	refusal, err := wantString(m.Get("refusal"), fmt.Sprintf("messages[%d].refusal", i))
	if err != nil {
		return err
	}
	if refusal != "" {
		parts = append(parts, Part{Kind: PartText, Text: refusal})
	}
	if !isNull(m.Get("function_call")) {
		d.r.Need("functions", protoChat)
	}
	calls := m.Get("tool_calls")
	if err := wantArray(calls, fmt.Sprintf("messages[%d].tool_calls", i)); err != nil {
		return err
	}
	err = eachIndexed(calls, func(j int, c gjson.Result) error {
		call, ok, err := d.toolCall(i, j, c)
		if ok {
			parts = append(parts, call)
			d.calls = append(d.calls, call)
		}
		return err
	})
	if err == nil && len(parts) > 0 {
		d.r.Messages = append(d.r.Messages, Message{Role: RoleAssistant, Parts: parts})
	}
	return err
}

// toolCall reads messages[i].tool_calls[j]; ok is false for a call of a
// kind the canonical form does not hold (recorded as a need).
func (d *chatRequestDecoder) toolCall(i, j int, c gjson.Result) (Part, bool, error) {
	if !c.IsObject() {
		return Part{}, false, fmt.Errorf("messages[%d].tool_calls[%d]: must be an object, got %s", i, j, jsonKind(c))
	}
	if typ := c.Get("type").Str; typ != "function" && typ != "" {
		d.r.Need("tool:"+typ, protoChat)
		return Part{}, false, nil
	}
	id, name, args := c.Get("id"), c.Get("function.name"), c.Get("function.arguments")
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
func (d *chatRequestDecoder) tool(i int, m gjson.Result) error {
	id := m.Get("tool_call_id")
	if id.Type != gjson.String || id.Str == "" {
		return fmt.Errorf("messages[%d].tool_call_id: must be a non-empty string", i)
	}
	content, err := chatTextParts(m.Get("content"), func() string { return fmt.Sprintf("messages[%d].content", i) }, false)
	if err != nil {
		return err
	}
	result := Part{Kind: PartToolResult, ID: id.Str, Name: d.callName(id.Str), Content: content}
	if d.toolGroup {
		last := &d.r.Messages[len(d.r.Messages)-1]
		last.Parts = append(last.Parts, result)
		return nil
	}
	d.r.Messages = append(d.r.Messages, Message{Role: RoleUser, Parts: []Part{result}})
	d.toolGroup = true
	return nil
}

// callName is the name of the latest tool call with id, or "".
func (d *chatRequestDecoder) callName(id string) string {
	for k := len(d.calls) - 1; k >= 0; k-- {
		if d.calls[k].ID == id {
			return d.calls[k].Name
		}
	}
	return ""
}

// tools reads the function tools; other tool types are needs.
func (d *chatRequestDecoder) tools(f *chatFields) error {
	if err := wantArray(f.tools, "tools"); err != nil {
		return err
	}
	return eachIndexed(f.tools, func(i int, t gjson.Result) error {
		if !t.IsObject() {
			return fmt.Errorf("tools[%d]: must be an object, got %s", i, jsonKind(t))
		}
		if typ := t.Get("type").Str; typ != "function" {
			d.r.Need("tool:"+typ, protoChat)
			return nil
		}
		fn := t.Get("function")
		tool, err := functionTool(fn.Get("name"), fn.Get("description"), fn.Get("parameters"), func() string { return fmt.Sprintf("tools[%d].function", i) })
		if err == nil {
			d.r.Tools = append(d.r.Tools, tool)
		}
		return err
	})
}

// functionTool reads a function's name, description and parameters
// schema; path (computed only for an error) names the object holding them.
func functionTool(name, desc, params gjson.Result, path func() string) (Tool, error) {
	if name.Type != gjson.String || name.Str == "" {
		return Tool{}, fmt.Errorf("%s.name: must be a non-empty string", path())
	}
	if !isNull(desc) && desc.Type != gjson.String {
		return Tool{}, fmt.Errorf("%s.description: must be a string, got %s", path(), jsonKind(desc))
	}
	t := Tool{Name: name.Str, Description: desc.Str}
	if !isNull(params) {
		if !params.IsObject() {
			return Tool{}, fmt.Errorf("%s.parameters: must be a JSON Schema object, got %s", path(), jsonKind(params))
		}
		t.Schema = json.RawMessage(params.Raw)
	}
	return t, nil
}

// toolChoice reads tool_choice.
func (d *chatRequestDecoder) toolChoice(f *chatFields) error {
	v := f.toolChoice
	switch {
	case isNull(v):
		return nil
	case v.Type == gjson.String:
		return setToolChoiceMode(&d.r.ToolChoice, v.Str)
	case !v.IsObject():
		return fmt.Errorf("tool_choice: must be a string or an object, got %s", jsonKind(v))
	}
	switch typ := v.Get("type").Str; typ {
	case "function":
		name := v.Get("function.name")
		if name.Type != gjson.String || name.Str == "" {
			return fmt.Errorf("tool_choice.function.name: must be a non-empty string")
		}
		d.r.ToolChoice = ToolChoice{Mode: ToolNamed, Name: name.Str}
	case "allowed_tools", "custom":
		d.r.Need("tool_choice:"+typ, protoChat)
	default:
		return fmt.Errorf("tool_choice.type: unknown type %q", typ)
	}
	return nil
}

// setToolChoiceMode sets the mode named by OpenAI's string tool_choice.
func setToolChoiceMode(tc *ToolChoice, s string) error {
	switch s {
	case "auto":
		tc.Mode = ToolAuto
	case "none":
		tc.Mode = ToolNone
	case "required":
		tc.Mode = ToolAny
	default:
		return fmt.Errorf("tool_choice: must be \"auto\", \"none\", \"required\" or an object, got %q", s)
	}
	return nil
}
