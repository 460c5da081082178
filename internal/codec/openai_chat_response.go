package codec

import (
	"fmt"

	"github.com/tidwall/gjson"
)

// DecodeResponse reads a whole chat.completion answer (its first choice:
// n > 1 is never translated).
func (openAIChat) DecodeResponse(body []byte) (*Response, error) {
	if !gjson.ValidBytes(body) {
		return nil, fmt.Errorf("chat completion answer is not valid JSON")
	}
	var f [len(chatAnswerKeys)]gjson.Result // id, model, created, choices, usage
	objectFields(gjson.Parse(string(body)), chatAnswerKeys[:], f[:])
	choice := f[3].Get("0")
	if !choice.IsObject() {
		return nil, fmt.Errorf("chat completion answer has no choices[0]")
	}
	var ch [len(chatAnswerChoiceKeys)]gjson.Result // index, message, finish_reason
	objectFields(choice, chatAnswerChoiceKeys[:], ch[:])
	var m [len(chatDeltaKeys)]gjson.Result // reasoning_content, reasoning, content, refusal, tool_calls
	objectFields(ch[1], chatDeltaKeys[:], m[:])
	resp := &Response{ID: f[0].Str, Model: f[1].Str, Created: f[2].Int()}
	if r := chatReasoning(m[0], m[1]); r != "" {
		resp.Parts = append(resp.Parts, Part{Kind: PartThinking, Text: r})
	}
	if c := m[2]; c.Type == gjson.String && c.Str != "" {
		resp.Parts = append(resp.Parts, Part{Kind: PartText, Text: c.Str})
	}
	refused := false
	if rf := m[3]; rf.Type == gjson.String && rf.Str != "" {
		resp.Parts = append(resp.Parts, Part{Kind: PartText, Text: rf.Str})
		refused = true
	}
	m[4].ForEach(func(_, c gjson.Result) bool {
		var t [len(chatToolDeltaKeys)]gjson.Result // index, id, function, then name, arguments
		objectFields(c, chatToolDeltaKeys[:3], t[:3])
		objectFields(t[2], chatToolDeltaKeys[3:], t[3:])
		resp.Parts = append(resp.Parts, Part{Kind: PartToolCall, ID: t[1].Str, Name: t[3].Str, Arguments: answerArguments(t[4].Str)})
		return true
	})
	resp.StopReason = chatStopReason(ch[2].Str)
	if resp.StopReason == StopEnd && containsKind(resp.Parts, PartToolCall) {
		resp.StopReason = StopToolUse // some servers say "stop" after tool calls
	}
	if refused {
		resp.StopReason = StopRefusal
	}
	resp.Usage = chatUsage(f[4])
	return resp, nil
}

// chatAnswerKeys and chatAnswerChoiceKeys are the fields of a whole
// answer and of its choice that the decoder reads; the message's are
// chatDeltaKeys.
var (
	chatAnswerKeys       = [...]string{"id", "model", "created", "choices", "usage"}
	chatAnswerChoiceKeys = [...]string{"index", "message", "finish_reason"}
)

// chatReasoning is a message's or delta's reasoning: reasoning_content
// (DeepSeek, vLLM) when it is a string, else reasoning (newer vLLM,
// OpenRouter) when that is.
func chatReasoning(reasoningContent, reasoning gjson.Result) string {
	if reasoningContent.Type == gjson.String {
		return reasoningContent.Str
	}
	if reasoning.Type == gjson.String {
		return reasoning.Str
	}
	return ""
}

// chatStopReason maps a finish_reason. Chat cannot tell a stop sequence
// from a natural end: both are StopEnd.
func chatStopReason(s string) StopReason {
	switch s {
	case "length":
		return StopMaxTokens
	case "tool_calls", "function_call":
		return StopToolUse
	case "content_filter":
		return StopContentFilter
	}
	return StopEnd
}

// chatFinishReason is the finish_reason of a stop reason.
func chatFinishReason(s StopReason) string {
	switch s {
	case StopMaxTokens:
		return "length"
	case StopToolUse:
		return "tool_calls"
	case StopContentFilter:
		return "content_filter"
	}
	return "stop"
}

// chatUsage reads a usage object: prompt_tokens include the cached ones,
// completion_tokens the reasoning ones, as in the canonical Usage.
func chatUsage(u gjson.Result) Usage {
	// One pass over the object: four lookups from its start read it four
	// times, and every passthrough request reads a usage (a key given twice
	// counts as given last).
	var out Usage
	u.ForEach(func(k, v gjson.Result) bool {
		switch k.Str {
		case "prompt_tokens":
			out.Input = v.Int()
		case "completion_tokens":
			out.Output = v.Int()
		case "prompt_tokens_details":
			out.CacheRead = v.Get("cached_tokens").Int()
		case "completion_tokens_details":
			out.Reasoning = v.Get("reasoning_tokens").Int()
		}
		return true
	})
	return out
}

// writeChatUsage writes a usage object with its details.
func writeChatUsage(w *jsonWriter, u *Usage) {
	w.raw(`{"prompt_tokens":`)
	w.int(u.Input)
	w.raw(`,"completion_tokens":`)
	w.int(u.Output)
	w.raw(`,"total_tokens":`)
	w.int(u.Input + u.Output)
	w.raw(`,"prompt_tokens_details":{"cached_tokens":`)
	w.int(u.CacheRead)
	w.raw(`},"completion_tokens_details":{"reasoning_tokens":`)
	w.int(u.Reasoning)
	w.raw("}}")
}

// chatID is the id a chat completion of canonical id has.
func chatID(id string) string { return withPrefix("chatcmpl-", id) }

// EncodeResponse writes a whole chat.completion object. Thinking is
// reasoning_content; content is null when the answer is only tool calls. A
// refusal's text is content, as a stream has to send it (the refusal is
// known only at its end), and finish_reason is "stop".
func (openAIChat) EncodeResponse(r *Response) []byte {
	w := jsonWriter{b: make([]byte, 0, 256+responseSize(r))}
	w.raw(`{"id":`)
	w.str(chatID(r.ID))
	w.raw(`,"object":"chat.completion","created":`)
	w.int(unixOr(r.Created))
	w.raw(`,"model":`)
	w.str(r.Model)
	w.raw(`,"choices":[{"index":0,"message":{"role":"assistant","content":`)
	if containsKind(r.Parts, PartText) {
		w.str(joinText(r.Parts, ""))
	} else {
		w.raw("null")
	}
	w.raw(`,"refusal":null`)
	writeChatToolCalls(&w, r.Parts)
	if reasoning := thinkingText(r.Parts); reasoning != "" {
		w.raw(`,"reasoning_content":`)
		w.str(reasoning)
	}
	w.raw(`},"finish_reason":`)
	w.str(chatFinishReason(r.StopReason))
	w.raw(`,"logprobs":null}],"usage":`)
	writeChatUsage(&w, &r.Usage)
	w.raw("}")
	return w.b
}

// writeChatToolCalls writes ,"tool_calls":[…] for the tool calls in parts.
func writeChatToolCalls(w *jsonWriter, parts []Part) {
	first := true
	for i := range parts {
		p := &parts[i]
		if p.Kind != PartToolCall {
			continue
		}
		if first {
			w.raw(`,"tool_calls":[`)
		} else {
			w.comma()
		}
		first = false
		w.raw(`{"id":`)
		w.str(p.ID)
		w.raw(`,"type":"function","function":{"name":`)
		w.str(p.Name)
		w.raw(`,"arguments":`)
		w.str(argumentsText(p))
		w.raw("}}")
	}
	if !first {
		w.raw("]")
	}
}

// thinkingText joins the thinking parts' text.
func thinkingText(parts []Part) string {
	var s string
	for i := range parts {
		if parts[i].Kind == PartThinking {
			s += parts[i].Text
		}
	}
	return s
}

// responseSize estimates the encoded size of r's parts.
func responseSize(r *Response) int {
	n := 0
	for i := range r.Parts {
		n += len(r.Parts[i].Text) + len(r.Parts[i].Arguments) + len(r.Parts[i].ID) + len(r.Parts[i].Name) + 64
	}
	return n
}

// DecodeError reads an OpenAI error answer.
func (openAIChat) DecodeError(status int, body []byte) Error { return decodeOpenAIError(status, body) }
