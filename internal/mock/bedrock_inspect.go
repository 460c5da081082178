package mock

import (
	"slices"
	"strings"

	"github.com/tidwall/gjson"
)

// bedrockInspection is the state of one inspectBedrock pass.
type bedrockInspection struct {
	cv       *convo
	tools    bool // the request has a toolConfig
	thinking bool
	// cachePoints counts cachePoint blocks; section is where the last one
	// is (1 tools, 2 system, 3 messages) and lastMsg its message.
	cachePoints, section, lastMsg int
}

// inspectBedrock reads a Converse request, refusing (400
// ValidationException) what Bedrock refuses: no messages, a conversation
// that does not start with the user or alternate roles, empty content or
// blank text, images of another format or whose bytes are not base64,
// toolUse or toolResult blocks without a toolConfig, tool results that do
// not answer the previous turn's tool uses one for one, bad tool names or
// schemas, a toolChoice naming no tool, maxTokens below 1, temperature or
// topP outside [0, 1]; with Claude's thinking (additionalModelRequestFields)
// a budget below 1024 or not below maxTokens, a temperature other than 1,
// a forced tool, reasoning blocks whose signature is not the mock's; and
// more than 4 cachePoint blocks. An image in S3 counts as an image by
// address.
func (c *call) inspectBedrock() (*convo, *apiError) {
	in := &bedrockInspection{cv: &convo{}}
	if err := in.toolConfig(c.body); err != nil {
		return nil, err
	}
	for _, b := range gjson.GetBytes(c.body, "system").Array() {
		if b.Get("cachePoint").Exists() {
			in.cachePoints, in.section = in.cachePoints+1, 2
		}
	}
	if err := in.inference(c.body); err != nil {
		return nil, err
	}
	msgs := gjson.GetBytes(c.body, "messages").Array()
	if err := in.messages(msgs); err != nil {
		return nil, err
	}
	if in.cachePoints > maxCacheBreakpoints {
		return nil, bedrockInvalid("The number of cache points exceeds the maximum of 4.")
	}
	if in.cachePoints > 0 {
		in.cv.cached, in.cv.prefix = true, in.prefixKey(c.model, c.body, msgs)
	}
	in.cv.stop = stopSequences(gjson.GetBytes(c.body, "inferenceConfig.stopSequences"))
	return in.cv, nil
}

// bedrockInvalid is Bedrock's 400 ValidationException.
func bedrockInvalid(message string) *apiError {
	return badRequest(protoBedrock, "", message)
}

// toolConfig reads toolConfig.tools and toolChoice.
func (in *bedrockInspection) toolConfig(body []byte) *apiError {
	tc := gjson.GetBytes(body, "toolConfig")
	if !tc.Exists() {
		return nil
	}
	in.tools = true
	cv := in.cv
	for i, t := range tc.Get("tools").Array() {
		if t.Get("cachePoint").Exists() {
			in.cachePoints, in.section = in.cachePoints+1, 1
			continue
		}
		spec := t.Get("toolSpec")
		name := spec.Get("name").String()
		if !validToolName(name, 64, false) {
			return bedrockInvalid("1 validation error detected: Value at 'toolConfig.tools." + itoa(i+1) + ".member.toolSpec.name' failed to satisfy constraint: Member must satisfy regular expression pattern: [a-zA-Z0-9_-]+")
		}
		schema := spec.Get("inputSchema.json")
		if !schema.IsObject() {
			return bedrockInvalid("The value at toolConfig.tools." + itoa(i) + ".toolSpec.inputSchema.json is not a valid JSON Schema object.")
		}
		cv.tools = append(cv.tools, toolDef{name: name, schema: schema})
	}
	choice := tc.Get("toolChoice")
	switch {
	case !choice.Exists(), choice.Get("auto").Exists():
	case choice.Get("any").Exists():
		cv.choice = choiceAny
	case choice.Get("tool").Exists():
		name := choice.Get("tool.name").String()
		if !slices.ContainsFunc(cv.tools, func(t toolDef) bool { return t.name == name }) {
			return bedrockInvalid("The tool " + name + " named by toolConfig.toolChoice is not one of toolConfig.tools.")
		}
		cv.choice, cv.choiceName = choiceNamed, name
	default:
		return bedrockInvalid("toolConfig.toolChoice must be one of auto, any or tool.")
	}
	return nil
}

// inference reads inferenceConfig and Claude's thinking.
func (in *bedrockInspection) inference(body []byte) *apiError {
	ic := gjson.GetBytes(body, "inferenceConfig")
	mt := ic.Get("maxTokens")
	if mt.Exists() && (mt.Type != gjson.Number || mt.Int() < 1 || mt.Num != float64(mt.Int())) {
		return bedrockInvalid("1 validation error detected: Value at 'inferenceConfig.maxTokens' failed to satisfy constraint: Member must have value greater than or equal to 1")
	}
	for _, f := range [...]string{"temperature", "topP"} {
		if v := ic.Get(f); v.Exists() && (v.Type != gjson.Number || v.Num < 0 || v.Num > 1) {
			return bedrockInvalid("1 validation error detected: Value at 'inferenceConfig." + f + "' failed to satisfy constraint: Member must have value less than or equal to 1")
		}
	}
	th := gjson.GetBytes(body, "additionalModelRequestFields.thinking")
	if !th.Exists() || th.Get("type").String() != "enabled" {
		return nil
	}
	budget := th.Get("budget_tokens").Int()
	maxTokens := mt.Int()
	if !mt.Exists() {
		maxTokens = anthropicDefaultMaxTokensOnBedrock
	}
	switch {
	case budget < 1024:
		return bedrockInvalid("The model returned the following errors: thinking.enabled.budget_tokens: Input should be greater than or equal to 1024")
	case budget >= int64(maxTokens):
		return bedrockInvalid("The model returned the following errors: `max_tokens` must be greater than `thinking.budget_tokens`. Please consult our documentation at " + extendedThinkingDocs + "#max-tokens-and-context-window-size")
	}
	if t := ic.Get("temperature"); t.Exists() && t.Float() != 1 {
		return bedrockInvalid("The model returned the following errors: `temperature` may only be set to 1 when thinking is enabled.")
	}
	if in.cv.choice == choiceAny || in.cv.choice == choiceNamed {
		return bedrockInvalid("The model returned the following errors: Thinking may not be enabled when tool_choice forces tool use.")
	}
	in.thinking = true
	in.cv.reasoning, in.cv.showReasoning = defaultReasoning, true
	return nil
}

// anthropicDefaultMaxTokensOnBedrock is the maxTokens Claude on Bedrock
// takes when a request sets none.
const anthropicDefaultMaxTokensOnBedrock = 4096

// messages reads the conversation: roles, blocks, tool pairing, the last turn.
func (in *bedrockInspection) messages(msgs []gjson.Result) *apiError {
	if len(msgs) == 0 || msgs[0].Get("role").String() != "user" {
		return bedrockInvalid("A conversation must start with a user message. Try again with a conversation that starts with a user message.")
	}
	var uses []string // toolUse ids of the previous assistant message
	for i, m := range msgs {
		role := m.Get("role").String()
		switch {
		case role != "user" && role != "assistant":
			return bedrockInvalid("1 validation error detected: Value at 'messages." + itoa(i+1) + ".member.role' failed to satisfy constraint: Member must satisfy enum value set: [user, assistant]")
		case i > 0 && role == msgs[i-1].Get("role").String():
			return bedrockInvalid("A conversation must alternate between user and assistant roles. Make sure the conversation alternates between user and assistant roles and try again.")
		}
		content := m.Get("content").Array()
		if len(content) == 0 {
			return bedrockInvalid("The content field in the Message object at messages." + itoa(i) + " is empty. Add a ContentBlock object to the content field and try again.")
		}
		made, answered, err := in.blocks(i, content)
		if err != nil {
			return err
		}
		if (len(made) > 0 || len(answered) > 0) && !in.tools {
			return bedrockInvalid("The toolConfig field must be defined when using toolUse and toolResult content blocks.")
		}
		if err := pairResults(i, uses, answered); err != nil {
			return err
		}
		uses = made
	}
	if len(uses) > 0 {
		return bedrockInvalid("Expected toolResult blocks at messages." + itoa(len(msgs)) + ".content for the following Ids: " + strings.Join(uses, ", "))
	}
	return in.lastTurn(msgs)
}

// blocks checks message i's content blocks and returns its toolUse ids and
// the toolUseIds its results answer.
func (in *bedrockInspection) blocks(i int, content []gjson.Result) (made, answered []string, err *apiError) {
	for j, b := range content {
		path := "messages." + itoa(i) + ".content." + itoa(j)
		switch {
		case b.Get("cachePoint").Exists():
			in.cachePoints, in.section, in.lastMsg = in.cachePoints+1, 3, i
		case b.Get("text").Exists():
			if strings.TrimSpace(b.Get("text").String()) == "" {
				return nil, nil, bedrockInvalid("The text field in the ContentBlock object at " + path + " is blank. Add text to the text field, and try again.")
			}
		case b.Get("image").Exists():
			if err := in.image(path, b.Get("image")); err != nil {
				return nil, nil, err
			}
		case b.Get("toolUse").Exists():
			made = append(made, b.Get("toolUse.toolUseId").String())
		case b.Get("toolResult").Exists():
			answered = append(answered, b.Get("toolResult.toolUseId").String())
			for k, rb := range b.Get("toolResult.content").Array() {
				if rb.Get("text").Exists() && strings.TrimSpace(rb.Get("text").String()) == "" {
					return nil, nil, bedrockInvalid("The text field in the ToolResultContentBlock object at " + path + ".toolResult.content." + itoa(k) + " is blank. Add text to the text field, and try again.")
				}
				if rb.Get("image").Exists() {
					if err := in.image(path+".toolResult.content."+itoa(k), rb.Get("image")); err != nil {
						return nil, nil, err
					}
				}
			}
		case b.Get("reasoningContent.reasoningText").Exists():
			rt := b.Get("reasoningContent.reasoningText")
			if rt.Get("signature").String() != thinkingSignature(rt.Get("text").String()) {
				return nil, nil, bedrockInvalid("The model returned the following errors: " + path + ": Invalid `signature` in `thinking` block")
			}
		}
	}
	return made, answered, nil
}

// pairResults checks that message i's tool results answer the previous
// message's tool uses, one for one.
func pairResults(i int, uses, answered []string) *apiError {
	for _, id := range answered {
		if !slices.Contains(uses, id) {
			return bedrockInvalid("The toolResult at messages." + itoa(i) + " has a toolUseId " + id + " that matches no toolUse block of the previous turn.")
		}
	}
	if missing := slices.DeleteFunc(slices.Clone(uses), func(id string) bool { return slices.Contains(answered, id) }); len(missing) > 0 {
		return bedrockInvalid("Expected toolResult blocks at messages." + itoa(i) + ".content for the following Ids: " + strings.Join(missing, ", "))
	}
	return nil
}

// image validates an image block and records it.
func (in *bedrockInspection) image(path string, img gjson.Result) *apiError {
	format := img.Get("format").String()
	if !slices.Contains([]string{"png", "jpeg", "gif", "webp"}, format) {
		return bedrockInvalid("1 validation error detected: Value '" + format + "' at '" + path + ".image.format' failed to satisfy constraint: Member must satisfy enum value set: [png, jpeg, gif, webp]")
	}
	if img.Get("source.s3Location").Exists() {
		in.cv.images = append(in.cv.images, image{source: "url"})
		return nil
	}
	got, problem := dataImage("image/"+format, img.Get("source.bytes").String(), false)
	if problem != imageOK {
		return bedrockInvalid("Invalid input: " + path + ".image.source.bytes is not valid base64.")
	}
	in.cv.images = append(in.cv.images, got)
	return nil
}

// lastTurn records the conversation's last turn: tool results, or the
// user's own text. With thinking, the assistant turn a tool result
// answers must start with its reasoning, as Claude requires.
func (in *bedrockInspection) lastTurn(msgs []gjson.Result) *apiError {
	last := msgs[len(msgs)-1]
	if last.Get("role").String() != "user" {
		return nil
	}
	var texts []string
	for _, b := range last.Get("content").Array() {
		switch {
		case b.Get("toolResult").Exists():
			var parts []string
			for _, rb := range b.Get("toolResult.content").Array() {
				if t := rb.Get("text"); t.Exists() {
					parts = append(parts, t.String())
				} else if j := rb.Get("json"); j.Exists() {
					parts = append(parts, j.Raw)
				}
			}
			in.cv.toolResults = append(in.cv.toolResults, strings.Join(parts, "\n"))
		case b.Get("text").Exists():
			texts = append(texts, b.Get("text").String())
		}
	}
	if in.cv.toolResults == nil {
		in.cv.userTurn, in.cv.userText = true, strings.Join(texts, "\n")
		return nil
	}
	if n := len(msgs); in.thinking && n >= 2 {
		if first := msgs[n-2].Get("content.0"); !first.Get("reasoningContent").Exists() {
			return bedrockInvalid("The model returned the following errors: messages." + itoa(n-2) + ".content.0.type: Expected `thinking` or `redacted_thinking`, but found `" +
				bedrockBlockType(first) + "`. When `thinking` is enabled, a final `assistant` message must start with a thinking block (preceeding the lastmost set of `tool_use` and `tool_result` blocks).")
		}
	}
	return nil
}

// bedrockBlockType names a content block by its member, in Anthropic's
// words, for Claude's errors.
func bedrockBlockType(b gjson.Result) string {
	switch {
	case b.Get("toolUse").Exists():
		return "tool_use"
	case b.Get("image").Exists():
		return "image"
	}
	return "text"
}

// prefixKey identifies the prompt up to its last cachePoint, in Bedrock's
// cache order: tools, system, messages.
func (in *bedrockInspection) prefixKey(model string, body []byte, msgs []gjson.Result) uint64 {
	parts := []string{model, gjson.GetBytes(body, "toolConfig.tools").Raw}
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
