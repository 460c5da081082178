package codec

import (
	"fmt"

	"github.com/tidwall/gjson"
)

// OpenAI Chat Completions as a translator (DESIGN.md §9): the protocol
// every translated request to an OpenAI-family upstream takes. This file
// decodes a client's request (openai_chat_messages.go its messages);
// openai_chat_encode.go writes one for an
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
