package codec

import (
	"strings"
)

// anthropicDefaultMaxTokens is max_tokens when neither the client nor the
// route's default_max_tokens gives one: Anthropic requires it.
const anthropicDefaultMaxTokens = 4096

// anthropicMinThinkingBudget is the least budget_tokens Anthropic takes.
const anthropicMinThinkingBudget = 1024

// EncodeRequest writes r as an Anthropic Messages request, the protocol
// every translated request to an Anthropic-family upstream takes.
//
// Anthropic's rules shape it: max_tokens is always sent (r's, else
// o.DefaultMaxTokens, else 4096); consecutive messages of one role are
// merged, and a user message's tool results come first; empty text, images
// with neither data nor URL, and thinking without a signature (which
// Anthropic refuses; other protocols' reasoning has none) are left out, and
// so is a message left empty. A first message from the assistant is sent
// as it is and Anthropic answers it. Thinking is sent as budget_tokens
// (an effort becomes 1024, 8192 or 24576) with max_tokens raised above the
// budget and temperature, top_p and top_k left out, as Anthropic requires;
// it is left out altogether when the client forces a tool (Anthropic takes
// thinking only with tool_choice auto or none) or when the last assistant
// turn called tools without a signed thinking block before them (Anthropic
// refuses such a turn while thinking is on). Temperature is capped at 1,
// Anthropic's maximum, and top_p is dropped when temperature is given
// (recent Claude models refuse both).
func (anthropic) EncodeRequest(r *Request, model string, o EncodeOptions) ([]byte, error) {
	b := make([]byte, 0, 256+requestBytesHint(r))
	b = append(b, '{')
	if model != "" {
		b = append(b, `"model":`...)
		b = wireString(b, model)
		b = append(b, ',')
	}
	budget := anthropicThinkingBudget(r)
	maxTokens := r.MaxTokens
	if maxTokens <= 0 {
		maxTokens = o.DefaultMaxTokens
	}
	if maxTokens <= 0 {
		maxTokens = anthropicDefaultMaxTokens
	}
	if budget > 0 && maxTokens <= budget {
		maxTokens += budget
	}
	b = append(b, `"max_tokens":`...)
	b = wireInt(b, maxTokens)
	b = appendAnthropicSystem(b, r.System)
	b = appendAnthropicMessages(b, r.Messages)
	if len(r.Tools) > 0 {
		b = appendAnthropicTools(b, r)
	}
	if budget == 0 {
		b = appendAnthropicSampling(b, r)
	}
	if len(r.Stop) > 0 {
		b = append(b, `,"stop_sequences":`...)
		b = wireStrings(b, r.Stop)
	}
	if r.Stream {
		b = append(b, `,"stream":true`...)
	}
	if budget > 0 {
		b = append(b, `,"thinking":{"type":"enabled","budget_tokens":`...)
		b = wireInt(b, budget)
		b = append(b, '}')
	}
	if r.User != "" {
		b = append(b, `,"metadata":{"user_id":`...)
		b = wireString(b, r.User)
		b = append(b, '}')
	}
	return append(b, '}'), nil
}

// requestBytesHint guesses the encoded size of r's text, to size the buffer once.
func requestBytesHint(r *Request) int {
	n := 0
	for _, p := range r.System {
		n += len(p.Text) + 32
	}
	for _, m := range r.Messages {
		for _, p := range m.Parts {
			n += len(p.Text) + len(p.Data) + len(p.Arguments) + 64
			for _, c := range p.Content {
				n += len(c.Text) + len(c.Data) + 48
			}
		}
	}
	for _, t := range r.Tools {
		n += len(t.Description) + len(t.Schema) + len(t.Name) + 64
	}
	return n
}

// thinkingBudgetFor turns an effort into a budget of thinking tokens: 0
// for "none", 1024 for minimal and low, 8192 for medium (and an effort not
// known), 24576 for high, 32768 beyond.
func thinkingBudgetFor(effort string) int64 {
	switch effort {
	case "none":
		return 0
	case "minimal", "low":
		return 1024
	case "high":
		return 24576
	case "xhigh", "max":
		return 32768
	}
	return 8192
}

// anthropicThinkingBudget is the budget_tokens to send, 0 for none (see
// EncodeRequest for when thinking is left out).
func anthropicThinkingBudget(r *Request) int64 {
	t := r.Thinking
	if t == nil {
		return 0
	}
	budget := t.BudgetTokens
	if budget <= 0 {
		budget = thinkingBudgetFor(t.Effort)
	}
	if budget <= 0 {
		return 0
	}
	if len(r.Tools) > 0 && (r.ToolChoice.Mode == ToolAny || r.ToolChoice.Mode == ToolNamed) {
		return 0
	}
	if lastToolTurnUnsigned(r.Messages) {
		return 0
	}
	return max(budget, anthropicMinThinkingBudget)
}

// lastToolTurnUnsigned reports whether the last assistant message calls
// tools without a signed (or redacted) thinking block first.
func lastToolTurnUnsigned(msgs []Message) bool {
	for i := len(msgs) - 1; i >= 0; i-- {
		m := &msgs[i]
		if m.Role != RoleAssistant || !anthropicHasContent(m) {
			continue
		}
		calls, signedFirst, first := false, false, true
		for j := range m.Parts {
			p := &m.Parts[j]
			if !anthropicKeeps(p, m.Role) {
				continue
			}
			if first {
				signedFirst = p.Kind == PartThinking || p.Kind == PartRedactedThinking
				first = false
			}
			calls = calls || p.Kind == PartToolCall
		}
		return calls && !signedFirst
	}
	return false
}

func appendAnthropicSampling(b []byte, r *Request) []byte {
	if r.Temperature != nil {
		b = append(b, `,"temperature":`...)
		b = wireFloat(b, min(max(*r.Temperature, 0), 1))
	} else if r.TopP != nil {
		b = append(b, `,"top_p":`...)
		b = wireFloat(b, *r.TopP)
	}
	if r.TopK != nil {
		b = append(b, `,"top_k":`...)
		b = wireInt(b, *r.TopK)
	}
	return b
}

func appendAnthropicSystem(b []byte, system []Part) []byte {
	started := false
	for i := range system {
		p := &system[i]
		if p.Kind != PartText || p.Text == "" {
			continue
		}
		if !started {
			b = append(b, `,"system":[`...)
			started = true
		} else {
			b = append(b, ',')
		}
		b = appendAnthropicText(b, p)
	}
	if started {
		b = append(b, ']')
	}
	return b
}

// appendAnthropicMessages writes "messages", one Anthropic message per run
// of canonical messages of one role that have something to say.
func appendAnthropicMessages(b []byte, msgs []Message) []byte {
	b = append(b, `,"messages":[`...)
	first := true
	for i, j := range turns(msgs, anthropicHasContent) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendAnthropicTurn(b, msgs[i].Role, msgs[i:j])
	}
	return append(b, ']')
}

// appendAnthropicTurn writes the messages of one role as one message; in a
// user turn the tool results come first, as Anthropic requires.
func appendAnthropicTurn(b []byte, role Role, msgs []Message) []byte {
	if role == RoleAssistant {
		b = append(b, `{"role":"assistant","content":[`...)
	} else {
		b = append(b, `{"role":"user","content":[`...)
	}
	comma := false
	pass := func(results bool) {
		for i := range msgs {
			for j := range msgs[i].Parts {
				p := &msgs[i].Parts[j]
				if (p.Kind == PartToolResult) != results || !anthropicKeeps(p, role) {
					continue
				}
				if comma {
					b = append(b, ',')
				}
				comma = true
				b = appendAnthropicPart(b, p)
			}
		}
	}
	if role == RoleUser {
		pass(true)
	}
	pass(false)
	return append(b, ']', '}')
}

// anthropicHasContent reports whether m has a part Anthropic takes.
func anthropicHasContent(m *Message) bool {
	for j := range m.Parts {
		if anthropicKeeps(&m.Parts[j], m.Role) {
			return true
		}
	}
	return false
}

// anthropicKeeps reports whether a part of a message of role is sent.
func anthropicKeeps(p *Part, role Role) bool {
	switch p.Kind {
	case PartText:
		return p.Text != ""
	case PartImage:
		return p.Data != "" || p.URL != ""
	case PartThinking:
		return role == RoleAssistant && p.Signature != ""
	case PartRedactedThinking:
		return role == RoleAssistant && p.Data != ""
	case PartToolCall, PartToolResult:
		return true
	}
	return false
}

func appendAnthropicPart(b []byte, p *Part) []byte {
	switch p.Kind {
	case PartText:
		return appendAnthropicText(b, p)
	case PartImage:
		return appendAnthropicImage(b, p)
	case PartToolCall:
		b = append(b, `{"type":"tool_use","id":`...)
		b = wireString(b, anthropicToolID(p.ID))
		b = append(b, `,"name":`...)
		b = wireString(b, p.Name)
		b = append(b, `,"input":`...)
		b = wireArgs(b, p.Arguments)
	case PartToolResult:
		b = append(b, `{"type":"tool_result","tool_use_id":`...)
		b = wireString(b, anthropicToolID(p.ID))
		b = appendAnthropicResultContent(b, p.Content)
		if p.IsError {
			b = append(b, `,"is_error":true`...)
		}
	case PartThinking:
		b = append(b, `{"type":"thinking","thinking":`...)
		b = wireString(b, p.Text)
		b = append(b, `,"signature":`...)
		b = wireString(b, p.Signature)
	case PartRedactedThinking:
		b = append(b, `{"type":"redacted_thinking","data":`...)
		b = wireString(b, p.Data)
	}
	return appendAnthropicCacheControl(b, p.CacheControl)
}

func appendAnthropicText(b []byte, p *Part) []byte {
	b = append(b, `{"type":"text","text":`...)
	b = wireString(b, p.Text)
	return appendAnthropicCacheControl(b, p.CacheControl)
}

// appendAnthropicImage writes an image by base64 data, or by URL (a data:
// URL becomes base64 data).
func appendAnthropicImage(b []byte, p *Part) []byte {
	media, data := p.MediaType, p.Data
	if data == "" {
		if m, d, ok := cutDataURL(p.URL); ok {
			media, data = m, d
		}
	}
	if data != "" {
		b = append(b, `{"type":"image","source":{"type":"base64","media_type":`...)
		b = wireString(b, media)
		b = append(b, `,"data":`...)
		b = wireString(b, data)
	} else {
		b = append(b, `{"type":"image","source":{"type":"url","url":`...)
		b = wireString(b, p.URL)
	}
	b = append(b, '}')
	return appendAnthropicCacheControl(b, p.CacheControl)
}

// appendAnthropicResultContent writes a tool result's text and images.
func appendAnthropicResultContent(b []byte, content []Part) []byte {
	started := false
	for i := range content {
		c := &content[i]
		if (c.Kind != PartText && c.Kind != PartImage) || !anthropicKeeps(c, RoleUser) {
			continue
		}
		if !started {
			b = append(b, `,"content":[`...)
			started = true
		} else {
			b = append(b, ',')
		}
		b = appendAnthropicPart(b, c)
	}
	if started {
		b = append(b, ']')
	}
	return b
}

// appendAnthropicCacheControl closes a block, with its cache_control if any.
func appendAnthropicCacheControl(b []byte, cc []byte) []byte {
	if len(cc) > 0 {
		b = append(b, `,"cache_control":`...)
		b = wireRawObject(b, cc, `{"type":"ephemeral"}`)
	}
	return append(b, '}')
}

func appendAnthropicTools(b []byte, r *Request) []byte {
	b = append(b, `,"tools":[`...)
	for i := range r.Tools {
		t := &r.Tools[i]
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"name":`...)
		b = wireString(b, t.Name)
		if t.Description != "" {
			b = append(b, `,"description":`...)
			b = wireString(b, t.Description)
		}
		b = append(b, `,"input_schema":`...)
		b = wireRawObject(b, t.Schema, `{"type":"object"}`)
		b = appendAnthropicCacheControl(b, t.CacheControl)
	}
	b = append(b, ']')
	noParallel := r.ParallelToolCalls != nil && !*r.ParallelToolCalls
	switch r.ToolChoice.Mode {
	case ToolAuto:
		if !noParallel {
			return b
		}
		b = append(b, `,"tool_choice":{"type":"auto"`...)
	case ToolNone:
		return append(b, `,"tool_choice":{"type":"none"}`...)
	case ToolAny:
		b = append(b, `,"tool_choice":{"type":"any"`...)
	case ToolNamed:
		b = append(b, `,"tool_choice":{"type":"tool","name":`...)
		b = wireString(b, r.ToolChoice.Name)
	}
	if noParallel {
		b = append(b, `,"disable_parallel_tool_use":true`...)
	}
	return append(b, '}')
}

// anthropicToolID returns id with every character Anthropic refuses in a
// tool_use id (it takes [A-Za-z0-9_-]) replaced by '_', so that a call and
// the result answering it still match; id itself when it needs no change.
func anthropicToolID(id string) string {
	ok := func(c byte) bool {
		return c == '_' || c == '-' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
	}
	for i := 0; i < len(id); i++ {
		if !ok(id[i]) {
			return strings.Map(func(r rune) rune {
				if r < 0x80 && ok(byte(r)) {
					return r
				}
				return '_'
			}, id)
		}
	}
	return id
}

// cutDataURL splits "data:<media type>;base64,<data>".
func cutDataURL(u string) (mediaType, data string, ok bool) {
	rest, found := strings.CutPrefix(u, "data:")
	if !found {
		return "", "", false
	}
	meta, data, found := strings.Cut(rest, ",")
	if !found {
		return "", "", false
	}
	mediaType, found = strings.CutSuffix(meta, ";base64")
	return mediaType, data, found && data != ""
}
