package mock

import (
	"slices"
	"strings"

	"github.com/tidwall/gjson"
)

// inspectChat reads a Chat Completions request: its tools and tool_choice,
// its messages (user images, tool messages that answer the assistant's
// tool_calls) and reasoning_effort, refusing what OpenAI refuses.
func (c *call) inspectChat() (*convo, *apiError) {
	cv := &convo{}
	if err := openAITools(cv, c.body, "function."); err != nil {
		return nil, err
	}
	msgs := gjson.GetBytes(c.body, "messages")
	if msgs.Exists() && !msgs.IsArray() {
		return nil, openAIInvalid("messages", "Invalid type for 'messages': expected an array of objects, but got "+jsonKind(msgs)+" instead.", "invalid_type")
	}
	list := msgs.Array()
	var open []string // ids of the last tool_calls not answered yet
	for i, m := range list {
		path := "messages[" + itoa(i) + "]"
		role := m.Get("role").String()
		if len(open) > 0 && role != "tool" {
			return nil, unansweredChatCalls(open)
		}
		switch role {
		case "system", "developer", "function":
		case "user":
			if err := chatImages(cv, path, m.Get("content")); err != nil {
				return nil, err
			}
		case "assistant":
			for j, tc := range m.Get("tool_calls").Array() {
				id := tc.Get("id").String()
				if id == "" {
					p := path + ".tool_calls[" + itoa(j) + "].id"
					return nil, openAIInvalid(p, "Missing required parameter: '"+p+"'.", "missing_required_parameter")
				}
				open = append(open, id)
			}
		case "tool":
			k := slices.Index(open, m.Get("tool_call_id").String())
			if k < 0 {
				return nil, openAIInvalid(path+".role", "Invalid parameter: messages with role 'tool' must be a response to a preceeding message with 'tool_calls'.", "")
			}
			open = slices.Delete(open, k, k+1)
		default:
			return nil, openAIInvalid(path+".role", "Invalid value: '"+role+"'. Supported values are: 'system', 'assistant', 'user', 'function', 'tool', and 'developer'.", "invalid_value")
		}
	}
	if len(open) > 0 {
		return nil, unansweredChatCalls(open)
	}
	if n := len(list); n > 0 {
		switch list[n-1].Get("role").String() {
		case "tool":
			start := n - 1
			for start > 0 && list[start-1].Get("role").String() == "tool" {
				start--
			}
			for _, m := range list[start:] {
				cv.toolResults = append(cv.toolResults, partsText(m.Get("content"), "text"))
			}
		case "user":
			cv.userTurn, cv.userText = true, partsText(list[n-1].Get("content"), "text")
		}
	}
	cv.stop = stopSequences(gjson.GetBytes(c.body, "stop"))
	if e := gjson.GetBytes(c.body, "reasoning_effort"); e.Exists() && e.Type != gjson.Null {
		tokens, err := effort(e, "reasoning_effort")
		if err != nil {
			return nil, err
		}
		if reasoningModel(c.model) {
			cv.reasoning = tokens
		}
	}
	return cv, nil
}

// inspectResponses reads a Responses API request: its tools and
// tool_choice, its input (a string, or items: messages with images,
// function calls and their outputs) and reasoning.effort. It refuses a
// previous_response_id the mock did not issue (checkPrevious).
func (c *call) inspectResponses() (*convo, *apiError) {
	if err := c.checkPrevious(); err != nil {
		return nil, err
	}
	cv := &convo{}
	if err := openAITools(cv, c.body, ""); err != nil {
		return nil, err
	}
	input := gjson.GetBytes(c.body, "input")
	switch {
	case input.Type == gjson.String:
		cv.userTurn, cv.userText = true, input.Str
	case input.IsArray():
		if err := responsesInput(cv, input.Array(), gjson.GetBytes(c.body, "previous_response_id").Str != ""); err != nil {
			return nil, err
		}
	case input.Exists() && input.Type != gjson.Null:
		return nil, openAIInvalid("input", "Invalid type for 'input': expected a string or an array of input items, but got "+jsonKind(input)+" instead.", "invalid_type")
	}
	if e := gjson.GetBytes(c.body, "reasoning.effort"); e.Exists() && e.Type != gjson.Null {
		tokens, err := effort(e, "reasoning.effort")
		if err != nil {
			return nil, err
		}
		cv.reasoning, cv.showReasoning = tokens, true
	}
	return cv, nil
}

// responsesInput reads the items of a Responses input. A function call's
// output must answer a function call of the input, unless the request
// continues a stored response (previous), which the mock does not keep.
func responsesInput(cv *convo, items []gjson.Result, previous bool) *apiError {
	calls := map[string]bool{}
	for i, it := range items {
		path := "input[" + itoa(i) + "]"
		switch itemType(it) {
		case "message":
			switch role := it.Get("role").String(); role {
			case "user":
				if err := responsesImages(cv, path, it.Get("content")); err != nil {
					return err
				}
			case "system", "developer", "assistant":
			default:
				return openAIInvalid(path+".role", "Invalid value: '"+role+"'. Supported values are: 'assistant', 'system', 'developer', and 'user'.", "invalid_value")
			}
		case "function_call":
			calls[it.Get("call_id").String()] = true
		case "function_call_output":
			if id := it.Get("call_id").String(); !calls[id] && !previous {
				return openAIInvalid("input", "No tool call found for function call output with call_id "+id+".", "")
			}
		}
	}
	n := len(items)
	if n == 0 {
		return nil
	}
	last := items[n-1]
	switch itemType(last) {
	case "function_call_output":
		start := n - 1
		for start > 0 && itemType(items[start-1]) == "function_call_output" {
			start--
		}
		for _, it := range items[start:] {
			cv.toolResults = append(cv.toolResults, partsText(it.Get("output"), "input_text"))
		}
	case "message":
		if last.Get("role").String() == "user" {
			cv.userTurn, cv.userText = true, partsText(last.Get("content"), "input_text")
		}
	}
	return nil
}

// itemType is a Responses input item's type; an item with a role and no
// type is a message.
func itemType(it gjson.Result) string {
	if t := it.Get("type").String(); t != "" {
		return t
	}
	if it.Get("role").Exists() {
		return "message"
	}
	return ""
}

// openAITools reads tools and tool_choice, and parallel_tool_calls. Chat
// nests a function's name and parameters under "function." (nest);
// Responses has them at the top of the tool. Tools of other types (web
// search, custom) are never called.
func openAITools(cv *convo, body []byte, nest string) *apiError {
	tools := gjson.GetBytes(body, "tools")
	for i, t := range tools.Array() {
		if t.Get("type").String() != "function" {
			continue
		}
		path := "tools[" + itoa(i) + "]." + nest + "name"
		name := t.Get(nest + "name").String()
		if name == "" {
			return openAIInvalid(path, "Missing required parameter: '"+path+"'.", "missing_required_parameter")
		}
		if !validToolName(name, 64, false) {
			return openAIInvalid(path, "Invalid '"+path+"': string does not match pattern. Expected a string that matches the pattern '^[a-zA-Z0-9_-]{1,64}$'.", "invalid_value")
		}
		cv.tools = append(cv.tools, toolDef{name: name, schema: t.Get(nest + "parameters")})
	}
	if p := gjson.GetBytes(body, "parallel_tool_calls"); p.Exists() && p.Type != gjson.Null && !p.Bool() {
		cv.single = true
	}
	tc := gjson.GetBytes(body, "tool_choice")
	if !tc.Exists() || tc.Type == gjson.Null {
		return nil
	}
	if !tools.Exists() || len(tools.Array()) == 0 {
		return openAIInvalid("tool_choice", "Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.", "")
	}
	switch {
	case tc.Type == gjson.String:
		switch tc.Str {
		case "auto":
		case "none":
			cv.choice = choiceNone
		case "required":
			cv.choice = choiceAny
		default:
			return openAIInvalid("tool_choice", "Invalid value: '"+tc.Str+"'. Supported values are: 'none', 'auto', and 'required'.", "invalid_value")
		}
	case tc.Get("type").String() == "function":
		name := tc.Get(nest + "name").String()
		if !slices.ContainsFunc(cv.tools, func(t toolDef) bool { return t.name == name }) {
			return openAIInvalid("tool_choice", "Invalid value for 'tool_choice': function '"+name+"' is not one of the functions in 'tools'.", "invalid_value")
		}
		cv.choice, cv.choiceName = choiceNamed, name
	}
	return nil
}

// chatImages validates the image_url parts of a user message.
func chatImages(cv *convo, path string, content gjson.Result) *apiError {
	for j, part := range content.Array() {
		if part.Get("type").String() != "image_url" {
			continue
		}
		p := path + ".content[" + itoa(j) + "].image_url.url"
		if err := openAIImage(cv, p, part.Get("image_url.url").String()); err != nil {
			return err
		}
	}
	return nil
}

// responsesImages validates the input_image parts of a user message.
func responsesImages(cv *convo, path string, content gjson.Result) *apiError {
	for j, part := range content.Array() {
		if part.Get("type").String() != "input_image" {
			continue
		}
		p := path + ".content[" + itoa(j) + "]"
		if u := part.Get("image_url"); u.Exists() {
			if err := openAIImage(cv, p+".image_url", u.String()); err != nil {
				return err
			}
			continue
		}
		if part.Get("file_id").String() == "" {
			return openAIInvalid(p, "Invalid '"+p+"': an input_image needs an image_url or a file_id.", "missing_required_parameter")
		}
		cv.images = append(cv.images, image{source: "file"})
	}
	return nil
}

// openAIImage validates an image URL at param and records the image.
func openAIImage(cv *convo, param, u string) *apiError {
	img, problem := urlImage(u)
	switch problem {
	case imageOK:
		cv.images = append(cv.images, img)
		return nil
	case imageBadType:
		return openAIInvalid(param, "You uploaded an unsupported image. Please make sure your image is below 20 MB in size and is of one the following formats: ['png', 'jpeg', 'gif', 'webp'].", "invalid_image_format")
	case imageBadBase64:
		return openAIInvalid(param, "Invalid '"+param+"': the data URL's base64 data does not decode.", "invalid_image")
	}
	return openAIInvalid(param, "Invalid '"+param+"'. Expected a base64-encoded data URL with an image MIME type (e.g. 'data:image/png;base64,aW1nIGJ5dGVzIGhlcmU='), or an http(s) URL, but got an invalid value.", "invalid_value")
}

// unansweredChatCalls is OpenAI's 400 for tool calls without tool messages.
func unansweredChatCalls(ids []string) *apiError {
	return openAIInvalid("messages", "An assistant message with 'tool_calls' must be followed by tool messages responding to each 'tool_call_id'. The following tool_call_ids did not have response messages: "+strings.Join(ids, ", "), "")
}

// effort reads a reasoning effort at param into its reasoning tokens.
func effort(e gjson.Result, param string) (int, *apiError) {
	tokens, ok := effortTokens[e.String()]
	if !ok || e.Type != gjson.String {
		return 0, openAIInvalid(param, "Invalid value: '"+e.String()+"'. Supported values are: 'none', 'minimal', 'low', 'medium', 'high', and 'xhigh'.", "invalid_value")
	}
	return tokens, nil
}

// reasoningModel reports whether an OpenAI model reasons: its name starts
// with "o" (o1, o3, o4-mini) or has "reason" in it.
func reasoningModel(model string) bool {
	m := strings.ToLower(model)
	return strings.HasPrefix(m, "o") || strings.Contains(m, "reason")
}

// openAIInvalid is a 400 invalid_request_error about param.
func openAIInvalid(param, message, code string) *apiError {
	e := badRequest(protoOpenAI, param, message)
	e.code = code
	return e
}

// partsText is a content's text: a string, or the text of its parts of
// type textType (and "text") joined by newlines.
func partsText(content gjson.Result, textType string) string {
	if content.Type == gjson.String {
		return content.Str
	}
	var texts []string
	for _, p := range content.Array() {
		if t := p.Get("type").String(); t == textType || t == "text" {
			texts = append(texts, p.Get("text").String())
		}
	}
	return strings.Join(texts, "\n")
}

// jsonKind names a JSON value's kind for type errors.
func jsonKind(v gjson.Result) string {
	switch {
	case v.IsArray():
		return "an array"
	case v.IsObject():
		return "an object"
	case v.Type == gjson.String:
		return "a string"
	case v.Type == gjson.Number:
		return "a number"
	case v.Type == gjson.True || v.Type == gjson.False:
		return "a boolean"
	}
	return "null"
}

// validToolName reports whether name is 1 to n letters, digits, '_' and
// '-' (and, with dots, '.' and ':' as Gemini allows).
func validToolName(name string, n int, dots bool) bool {
	if name == "" || len(name) > n {
		return false
	}
	for _, r := range name {
		ok := r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' ||
			dots && (r == '.' || r == ':')
		if !ok {
			return false
		}
	}
	return true
}
