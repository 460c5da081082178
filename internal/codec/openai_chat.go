package codec

import (
	"fmt"

	"github.com/tidwall/gjson"
)

// OpenAI Chat Completions as a translator (docs/protocols.md): the protocol
// every translated request to an OpenAI-family upstream takes. This file
// decodes a client's request (openai_chat_messages.go its messages);
// openai_chat_encode.go writes one for an
// upstream, openai_chat_response.go the whole answers and
// openai_chat_stream.go the streams.

var _ Translator = openAIChat{}

// chatFields are the top-level fields of a Chat request the decoder reads,
// collected in one pass over the body.
type chatFields struct {
	sharedFields
	messages, maxCompletionTokens, maxTokens, stop, streamOptions, reasoningEffort gjson.Result
	n, logprobs, topLogprobs, responseFormat, audio, modalities, logitBias         gjson.Result
	functions, functionCall, prediction, webSearchOptions                          gjson.Result
}

// collect sorts root's fields into f.
func (f *chatFields) collect(root gjson.Result) {
	root.ForEach(func(k, v gjson.Result) bool {
		if f.sharedFields.collect(k.Str, v) {
			return true
		}
		switch k.Str {
		case "messages":
			f.messages = v
		case "max_completion_tokens":
			f.maxCompletionTokens = v
		case "max_tokens":
			f.maxTokens = v
		case "stop":
			f.stop = v
		case "stream_options":
			f.streamOptions = v
		case "reasoning_effort":
			f.reasoningEffort = v
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
	r     *Request
	turns toolTurns
}

// scalars reads the shared fields and the output settings.
func (d *chatRequestDecoder) scalars(f *chatFields) error {
	r := d.r
	if err := f.sharedFields.read(r); err != nil {
		return err
	}
	var err error
	if r.MaxTokens, err = wantCount(f.maxTokens, "max_tokens"); err != nil {
		return err
	}
	if !isNull(f.maxCompletionTokens) {
		if r.MaxTokens, err = wantCount(f.maxCompletionTokens, "max_completion_tokens"); err != nil {
			return err
		}
	}
	if r.Stop, err = wantStops(f.stop, "stop"); err != nil {
		return err
	}
	if err = wantObject(f.streamOptions, "stream_options"); err != nil {
		return err
	}
	if r.IncludeUsage, err = wantBool(f.streamOptions.Get("include_usage"), "stream_options.include_usage"); err != nil {
		return err
	}
	effort, err := wantString(f.reasoningEffort, "reasoning_effort")
	if effort != "" {
		r.Thinking = &Thinking{Effort: effort}
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
		r.Need("n", "openai-chat")
	}
	if f.logprobs.Type == gjson.True || !isNull(f.topLogprobs) {
		r.Need("logprobs", "openai-chat")
	}
	if err := wantObject(f.responseFormat, "response_format"); err != nil {
		return err
	}
	switch t := f.responseFormat.Get("type").Str; t {
	case "json_object", "json_schema":
		r.Need("response_format", "openai-chat")
	}
	if !isNull(f.audio) || modalitiesHaveAudio(f.modalities) {
		r.Need("audio", "openai-chat")
	}
	if f.logitBias.IsObject() && len(f.logitBias.Map()) > 0 {
		r.Need("logit_bias", "openai-chat")
	}
	if !isNull(f.functions) || !isNull(f.functionCall) {
		r.Need("functions", "openai-chat")
	}
	if !isNull(f.prediction) {
		r.Need("prediction", "openai-chat")
	}
	if !isNull(f.webSearchOptions) {
		r.Need("tool:web_search", "openai-chat")
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

// tools reads the function tools; other tool types are needs.
func (d *chatRequestDecoder) tools(f *chatFields) error {
	if err := wantArray(f.tools, "tools"); err != nil {
		return err
	}
	return eachIndexed(f.tools, func(i int, t gjson.Result) error {
		if !t.IsObject() {
			return fmt.Errorf("tools[%d]: must be an object, got %s", i, jsonKind(t))
		}
		var f [len(functionToolKeys)]gjson.Result // type, function, name, description, parameters
		objectFields(t, functionToolKeys[:2], f[:2])
		if typ := f[0].Str; typ != "function" {
			d.r.Need("tool:"+typ, "openai-chat")
			return nil
		}
		objectFields(f[1], functionToolKeys[2:], f[2:])
		tool, err := functionTool(f[2], f[3], f[4], func() string { return fmt.Sprintf("tools[%d].function", i) })
		if err == nil {
			d.r.Tools = append(d.r.Tools, tool)
		}
		return err
	})
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
		d.r.Need("tool_choice:"+typ, "openai-chat")
	default:
		return fmt.Errorf("tool_choice.type: unknown type %q", typ)
	}
	return nil
}
