package mock

import (
	"slices"
	"strings"

	"github.com/tidwall/gjson"
)

// inspectGemini reads a generateContent request, refusing what Google
// refuses: no contents, a role other than user or model, a content without
// parts, an image of another type or whose base64 does not decode, a
// function response that does not answer the function calls of the model
// turn just before it, and bad tool declarations.
func (c *call) inspectGemini() (*convo, *apiError) {
	cv := &convo{}
	if err := geminiTools(cv, c.body); err != nil {
		return nil, err
	}
	contents := gjson.GetBytes(c.body, "contents").Array()
	if len(contents) == 0 {
		return nil, geminiInvalid("* GenerateContentRequest.contents: contents is not specified\n")
	}
	var calls []string // function calls of the previous model turn
	for i, ct := range contents {
		path := "contents[" + itoa(i) + "]"
		role := ct.Get("role").String()
		if role != "" && role != "user" && role != "model" {
			return nil, geminiInvalid("Please use a valid role: user, model.")
		}
		parts := ct.Get("parts").Array()
		if len(parts) == 0 {
			return nil, geminiInvalid("* GenerateContentRequest." + path + ".parts: contents.parts must not be empty.\n")
		}
		var made, answered []string
		for j, p := range parts {
			pp := path + ".parts[" + itoa(j) + "]"
			switch {
			case p.Get("inlineData").Exists():
				if err := geminiImage(cv, pp, p.Get("inlineData")); err != nil {
					return nil, err
				}
			case p.Get("fileData").Exists():
				cv.images = append(cv.images, image{source: "url"})
			case p.Get("functionCall").Exists():
				made = append(made, p.Get("functionCall.name").String())
			case p.Get("functionResponse").Exists():
				answered = append(answered, p.Get("functionResponse.name").String())
			}
		}
		if err := answersCalls(calls, answered); err != nil {
			return nil, err
		}
		calls = nil
		if role == "model" {
			calls = made
		}
	}
	geminiLastTurn(cv, contents[len(contents)-1])
	geminiThinking(cv, gjson.GetBytes(c.body, "generationConfig.thinkingConfig"))
	cv.stop = stopSequences(gjson.GetBytes(c.body, "generationConfig.stopSequences"))
	return cv, nil
}

// geminiThinking reads thinkingConfig: the model thinks when it asks for
// thoughts or sets a thinking budget, unless the budget is 0 (off); the
// thoughts are shown with includeThoughts, else only counted.
func geminiThinking(cv *convo, tc gjson.Result) {
	include := tc.Get("includeThoughts").Bool()
	budget := tc.Get("thinkingBudget")
	switch {
	case budget.Exists() && budget.Int() == 0, !include && !budget.Exists():
		return
	case budget.Int() > 0:
		cv.reasoning = min(defaultReasoning, int(budget.Int()))
	default:
		cv.reasoning = defaultReasoning
	}
	cv.showReasoning = include
}

// answersCalls checks that a turn's function responses answer the
// previous model turn's function calls, one for one by name.
func answersCalls(calls, answered []string) *apiError {
	if len(answered) == 0 {
		return nil
	}
	if len(calls) == 0 {
		return geminiInvalid("Please ensure that function response turn comes immediately after a function call turn.")
	}
	if len(answered) != len(calls) {
		return geminiInvalid("Please ensure that the number of function response parts is equal to the number of function call parts of the function call turn.")
	}
	left := slices.Clone(calls)
	for _, name := range answered {
		k := slices.Index(left, name)
		if k < 0 {
			return geminiInvalid("Please ensure that the function response turn answers the function calls of the function call turn: no call of \"" + name + "\" to respond to.")
		}
		left = slices.Delete(left, k, k+1)
	}
	return nil
}

// geminiLastTurn records the last content: function responses, or the
// user's own text.
func geminiLastTurn(cv *convo, last gjson.Result) {
	if last.Get("role").String() == "model" {
		return
	}
	var texts []string
	for _, p := range last.Get("parts").Array() {
		switch {
		case p.Get("functionResponse").Exists():
			cv.toolResults = append(cv.toolResults, functionResponseText(p.Get("functionResponse.response")))
		case p.Get("text").Exists() && !p.Get("thought").Bool():
			texts = append(texts, p.Get("text").String())
		}
	}
	if cv.toolResults == nil {
		cv.userTurn, cv.userText = true, strings.Join(texts, "\n")
	}
}

// functionResponseText is what a functionResponse's response says: the
// string of an object with one string member ({"result": "Sunny"}), else
// the object's JSON.
func functionResponseText(resp gjson.Result) string {
	var only gjson.Result
	n := 0
	resp.ForEach(func(_, v gjson.Result) bool {
		only = v
		n++
		return n < 2
	})
	if n == 1 && only.Type == gjson.String {
		return only.Str
	}
	return resp.Raw
}

// geminiTools reads tools[].functionDeclarations and toolConfig.
func geminiTools(cv *convo, body []byte) *apiError {
	for i, t := range gjson.GetBytes(body, "tools").Array() {
		for j, fd := range t.Get("functionDeclarations").Array() {
			name := fd.Get("name").String()
			if !validToolName(name, 128, true) || !(name[0] == '_' || name[0] >= 'a' && name[0] <= 'z' || name[0] >= 'A' && name[0] <= 'Z') {
				return geminiInvalid("* GenerateContentRequest.tools[" + itoa(i) + "].function_declarations[" + itoa(j) + "].name: Invalid function name. Must start with a letter or an underscore. Must be alphameric (a-z, A-Z, 0-9), underscores (_), dots (.), colons (:), or dashes (-), with a maximum length of 128.\n")
			}
			schema := fd.Get("parameters")
			if !schema.Exists() {
				schema = fd.Get("parametersJsonSchema")
			}
			cv.tools = append(cv.tools, toolDef{name: name, schema: schema})
		}
	}
	fc := gjson.GetBytes(body, "toolConfig.functionCallingConfig")
	mode := fc.Get("mode").String()
	allowed := fc.Get("allowedFunctionNames").Array()
	switch mode {
	case "", "MODE_UNSPECIFIED", "AUTO":
	case "NONE":
		cv.choice = choiceNone
	case "ANY", "VALIDATED":
		cv.choice = choiceAny
	default:
		return geminiInvalid("Invalid value at 'tool_config.function_calling_config.mode' (type.googleapis.com/google.ai.generativelanguage.v1beta.FunctionCallingConfig.Mode), \"" + mode + "\"")
	}
	if len(allowed) == 0 {
		return nil
	}
	if cv.choice != choiceAny {
		return geminiInvalid("* GenerateContentRequest.tool_config.function_calling_config.allowed_function_names: allowed_function_names should only be set when the Mode is ANY.\n")
	}
	var kept []toolDef
	for _, a := range allowed {
		k := slices.IndexFunc(cv.tools, func(t toolDef) bool { return t.name == a.String() })
		if k < 0 {
			return geminiInvalid("* GenerateContentRequest.tool_config.function_calling_config.allowed_function_names: \"" + a.String() + "\" is not a declared function.\n")
		}
		kept = append(kept, cv.tools[k])
	}
	cv.tools = kept
	if len(kept) == 1 {
		cv.choice, cv.choiceName = choiceNamed, kept[0].name
	}
	return nil
}

// geminiImage validates an inlineData part and records its image.
func geminiImage(cv *convo, path string, d gjson.Result) *apiError {
	mt := d.Get("mimeType").String()
	img, problem := dataImage(mt, d.Get("data").String(), true)
	switch problem {
	case imageBadType:
		return geminiInvalid("Unsupported MIME type: " + mt)
	case imageBadBase64:
		return geminiInvalid("Invalid value at '" + snakeCase(path) + ".inline_data.data' (TYPE_BYTES), Base64 decoding failed")
	}
	cv.images = append(cv.images, img)
	return nil
}

// geminiInvalid is Google's 400 INVALID_ARGUMENT.
func geminiInvalid(message string) *apiError {
	return badRequest(protoGemini, "", message)
}

// snakeCase writes a field path as Google's errors do ("inlineData" →
// "inline_data").
func snakeCase(s string) string {
	var b strings.Builder
	for _, r := range s {
		if r >= 'A' && r <= 'Z' {
			b.WriteByte('_')
			r += 'a' - 'A'
		}
		b.WriteRune(r)
	}
	return b.String()
}
