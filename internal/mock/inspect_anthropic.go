package mock

import (
	"slices"
	"strings"

	"github.com/tidwall/gjson"
)

// maxCacheBreakpoints is how many blocks may carry cache_control.
const maxCacheBreakpoints = 4

// extendedThinkingDocs is where Anthropic's thinking errors send the reader.
const extendedThinkingDocs = "https://docs.claude.com/en/docs/build-with-claude/extended-thinking"

// anthropicInspection is the state of one inspectMessages pass.
type anthropicInspection struct {
	cv       *convo
	thinking bool // the request enables thinking
	// breakpoints counts cache_control blocks; section is where the last
	// one is (1 tools, 2 system, 3 messages) and lastMsg its message.
	breakpoints, section, lastMsg int
}

// inspectMessages reads an Anthropic Messages request, refusing what
// Anthropic refuses: a missing max_tokens; bad roles; images whose media
// type or base64 is wrong; tool_result blocks that answer no tool_use of
// the previous message, or tool_use blocks left unanswered; thinking
// budgets below 1024 or not below max_tokens, a temperature other than 1 or
// a forced tool_choice with thinking, thinking blocks without their
// signature, a final assistant turn of a tool loop without its thinking;
// more than 4 cache_control breakpoints.
func (c *call) inspectMessages() (*convo, *apiError) {
	in := &anthropicInspection{cv: &convo{}}
	maxTokens, err := anthropicMaxTokens(c.body)
	if err != nil {
		return nil, err
	}
	if err := in.tools(c.body); err != nil {
		return nil, err
	}
	for _, b := range gjson.GetBytes(c.body, "system").Array() {
		if b.IsObject() && b.Get("cache_control").Exists() {
			in.breakpoints, in.section = in.breakpoints+1, 2
		}
	}
	if err := in.thinkingConfig(c.body, maxTokens); err != nil {
		return nil, err
	}
	msgs := gjson.GetBytes(c.body, "messages").Array()
	if err := in.messages(msgs); err != nil {
		return nil, err
	}
	if in.breakpoints > maxCacheBreakpoints {
		return nil, badRequest(protoAnthropic, "", "A maximum of 4 blocks with cache_control may be provided. Found "+itoa(in.breakpoints)+".")
	}
	if in.breakpoints > 0 {
		in.cv.cached, in.cv.prefix = true, in.prefixKey(c.model, c.body, msgs)
	}
	in.cv.stop = stopSequences(gjson.GetBytes(c.body, "stop_sequences"))
	return in.cv, nil
}

// anthropicMaxTokens reads the required max_tokens.
func anthropicMaxTokens(body []byte) (int, *apiError) {
	mt := gjson.GetBytes(body, "max_tokens")
	switch {
	case !mt.Exists():
		return 0, badRequest(protoAnthropic, "", "max_tokens: Field required")
	case mt.Type != gjson.Number || mt.Num != float64(int64(mt.Num)):
		return 0, badRequest(protoAnthropic, "", "max_tokens: Input should be a valid integer")
	case mt.Int() < 1:
		return 0, badRequest(protoAnthropic, "", "max_tokens: Input should be greater than or equal to 1")
	}
	return int(mt.Int()), nil
}

// tools reads tools (custom ones; server tools are never called) and
// tool_choice.
func (in *anthropicInspection) tools(body []byte) *apiError {
	cv := in.cv
	for i, t := range gjson.GetBytes(body, "tools").Array() {
		if t.Get("cache_control").Exists() {
			in.breakpoints, in.section = in.breakpoints+1, 1
		}
		if typ := t.Get("type").String(); typ != "" && typ != "custom" {
			continue
		}
		path := "tools." + itoa(i) + ".custom."
		name := t.Get("name").String()
		if !validToolName(name, 128, false) {
			return badRequest(protoAnthropic, "", path+"name: String should match pattern '^[a-zA-Z0-9_-]{1,128}$'")
		}
		schema := t.Get("input_schema")
		if !schema.IsObject() {
			return badRequest(protoAnthropic, "", path+"input_schema: Field required")
		}
		cv.tools = append(cv.tools, toolDef{name: name, schema: schema})
	}
	tc := gjson.GetBytes(body, "tool_choice")
	if !tc.Exists() || tc.Type == gjson.Null {
		return nil
	}
	switch typ := tc.Get("type").String(); typ {
	case "auto":
	case "none":
		cv.choice = choiceNone
	case "any":
		cv.choice = choiceAny
	case "tool":
		name := tc.Get("name").String()
		if !slices.ContainsFunc(cv.tools, func(t toolDef) bool { return t.name == name }) {
			return badRequest(protoAnthropic, "", "tool_choice.tool.name: tool '"+name+"' is not one of the request's tools")
		}
		cv.choice, cv.choiceName = choiceNamed, name
	default:
		return badRequest(protoAnthropic, "", "tool_choice: Input tag '"+typ+"' found using 'type' does not match any of the expected tags: 'auto', 'any', 'tool', 'none'")
	}
	cv.single = tc.Get("disable_parallel_tool_use").Bool()
	return nil
}

// thinkingConfig reads thinking and the settings thinking constrains.
func (in *anthropicInspection) thinkingConfig(body []byte, maxTokens int) *apiError {
	th := gjson.GetBytes(body, "thinking")
	if !th.Exists() || th.Type == gjson.Null {
		return nil
	}
	switch typ := th.Get("type").String(); typ {
	case "disabled":
		return nil
	case "adaptive":
	case "enabled":
		b := th.Get("budget_tokens")
		switch {
		case !b.Exists():
			return badRequest(protoAnthropic, "", "thinking.enabled.budget_tokens: Field required")
		case b.Type != gjson.Number || b.Int() < 1024:
			return badRequest(protoAnthropic, "", "thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
		case int(b.Int()) >= maxTokens:
			return badRequest(protoAnthropic, "", "`max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at "+extendedThinkingDocs+"#max-tokens-and-context-window-size")
		}
	default:
		return badRequest(protoAnthropic, "", "thinking: Input tag '"+typ+"' found using 'type' does not match any of the expected tags: 'adaptive', 'disabled', 'enabled'")
	}
	if t := gjson.GetBytes(body, "temperature"); t.Exists() && t.Type != gjson.Null && t.Float() != 1 {
		return badRequest(protoAnthropic, "", "`temperature` may only be set to 1 when thinking is enabled. Please consult our documentation at "+extendedThinkingDocs+"#important-considerations-when-using-extended-thinking")
	}
	if k := gjson.GetBytes(body, "top_k"); k.Exists() && k.Type != gjson.Null {
		return badRequest(protoAnthropic, "", "`top_k` must be unset when thinking is enabled. Please consult our documentation at "+extendedThinkingDocs+"#important-considerations-when-using-extended-thinking")
	}
	if in.cv.choice == choiceAny || in.cv.choice == choiceNamed {
		return badRequest(protoAnthropic, "", "Thinking may not be enabled when tool_choice forces tool use.")
	}
	in.thinking = true
	in.cv.reasoning, in.cv.showReasoning = defaultReasoning, true
	return nil
}

// messages reads the conversation and its last turn.
func (in *anthropicInspection) messages(msgs []gjson.Result) *apiError {
	var calls []string // tool_use ids of the previous assistant message
	for i, m := range msgs {
		path := "messages." + itoa(i)
		role := m.Get("role").String()
		if role != "user" && role != "assistant" {
			return badRequest(protoAnthropic, "", path+".role: Input should be 'user' or 'assistant'")
		}
		var uses, results []string
		for j, b := range blocks(m.Get("content")) {
			bp := path + ".content." + itoa(j)
			if b.Get("cache_control").Exists() {
				in.breakpoints, in.section, in.lastMsg = in.breakpoints+1, 3, i
			}
			switch b.Get("type").String() {
			case "image":
				if err := in.image(bp, b); err != nil {
					return err
				}
			case "tool_use":
				uses = append(uses, b.Get("id").String())
			case "tool_result":
				results = append(results, b.Get("tool_use_id").String())
				for k, rb := range blocks(b.Get("content")) {
					if rb.Get("type").String() == "image" {
						if err := in.image(bp+".content."+itoa(k), rb); err != nil {
							return err
						}
					}
				}
			case "thinking":
				if err := thinkingBlock(bp, b); err != nil {
					return err
				}
			case "redacted_thinking":
				if b.Get("data").String() == "" {
					return badRequest(protoAnthropic, "", bp+".redacted_thinking.data: Field required")
				}
			}
		}
		for _, id := range results {
			if !slices.Contains(calls, id) {
				return badRequest(protoAnthropic, "", path+": unexpected `tool_use_id` found in `tool_result` blocks: "+id+". Each `tool_result` block must have a corresponding `tool_use` block in the previous message.")
			}
		}
		if missing := slices.DeleteFunc(slices.Clone(calls), func(id string) bool { return slices.Contains(results, id) }); len(missing) > 0 {
			return badRequest(protoAnthropic, "", path+": `tool_use` ids were found without `tool_result` blocks immediately after: "+strings.Join(missing, ", ")+". Each `tool_use` block must have a corresponding `tool_result` block in the next message.")
		}
		calls = uses
		if role == "user" {
			calls = nil
		}
	}
	if len(calls) > 0 {
		return badRequest(protoAnthropic, "", "messages."+itoa(len(msgs)-1)+": `tool_use` ids were found without `tool_result` blocks immediately after: "+strings.Join(calls, ", ")+". Each `tool_use` block must have a corresponding `tool_result` block in the next message.")
	}
	return in.lastTurn(msgs)
}

// lastTurn records the conversation's last turn: tool results, or the
// user's own text. With thinking, the assistant turn a tool result answers
// must start with its thinking.
func (in *anthropicInspection) lastTurn(msgs []gjson.Result) *apiError {
	n := len(msgs)
	if n == 0 || msgs[n-1].Get("role").String() != "user" {
		return nil
	}
	last := blocks(msgs[n-1].Get("content"))
	var texts []string
	for _, b := range last {
		switch b.Get("type").String() {
		case "tool_result":
			in.cv.toolResults = append(in.cv.toolResults, partsText(b.Get("content"), "text"))
		case "text":
			texts = append(texts, b.Get("text").String())
		}
	}
	if in.cv.toolResults == nil {
		in.cv.userTurn, in.cv.userText = true, strings.Join(texts, "\n")
		return nil
	}
	if in.thinking && n >= 2 {
		first := blocks(msgs[n-2].Get("content"))
		if len(first) > 0 {
			if t := first[0].Get("type").String(); t != "thinking" && t != "redacted_thinking" {
				return badRequest(protoAnthropic, "", "messages."+itoa(n-2)+".content.0.type: Expected `thinking` or `redacted_thinking`, but found `"+t+"`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks). We recommend you include thinking blocks from previous turns. To avoid this requirement, disable `thinking`. Please consult our documentation at "+extendedThinkingDocs)
			}
		}
	}
	return nil
}

// image validates an image block at path and records it.
func (in *anthropicInspection) image(path string, b gjson.Result) *apiError {
	src := b.Get("source")
	switch typ := src.Get("type").String(); typ {
	case "base64":
		img, problem := dataImage(src.Get("media_type").String(), src.Get("data").String(), false)
		switch problem {
		case imageBadType:
			return badRequest(protoAnthropic, "", path+".image.source.base64.media_type: Input should be 'image/jpeg', 'image/png', 'image/gif' or 'image/webp'")
		case imageBadBase64:
			return badRequest(protoAnthropic, "", path+".image.source.base64.data: The image data is not valid base64.")
		}
		in.cv.images = append(in.cv.images, img)
	case "url":
		if !isHTTPURL(src.Get("url").String()) {
			return badRequest(protoAnthropic, "", path+".image.source.url.url: Input should be a valid http(s) URL")
		}
		in.cv.images = append(in.cv.images, image{source: "url"})
	case "file":
		in.cv.images = append(in.cv.images, image{source: "file"})
	default:
		return badRequest(protoAnthropic, "", path+".image.source: Input tag '"+typ+"' found using 'type' does not match any of the expected tags: 'base64', 'url', 'file'")
	}
	return nil
}

// thinkingBlock checks that a thinking block came back with the signature
// the mock gave it.
func thinkingBlock(path string, b gjson.Result) *apiError {
	sig := b.Get("signature")
	if !sig.Exists() || sig.Str == "" {
		return badRequest(protoAnthropic, "", path+".thinking.signature: Field required")
	}
	if sig.Str != thinkingSignature(b.Get("thinking").String()) {
		return badRequest(protoAnthropic, "", path+": Invalid `signature` in `thinking` block")
	}
	return nil
}

// prefixKey identifies the prompt up to its last cache_control breakpoint,
// in Anthropic's cache order: tools, system, messages.
func (in *anthropicInspection) prefixKey(model string, body []byte, msgs []gjson.Result) uint64 {
	parts := []string{model, gjson.GetBytes(body, "tools").Raw}
	if in.section >= 2 {
		parts = append(parts, gjson.GetBytes(body, "system").Raw)
	}
	if in.section == 3 {
		for _, m := range msgs[:in.lastMsg+1] {
			parts = append(parts, m.Raw)
		}
	}
	return hash64(parts...)
}

// blocks are a content's blocks; a string is one text block.
func blocks(content gjson.Result) []gjson.Result {
	if content.Type == gjson.String {
		return []gjson.Result{gjson.Parse(`{"type":"text","text":` + content.Raw + `}`)}
	}
	return content.Array()
}
