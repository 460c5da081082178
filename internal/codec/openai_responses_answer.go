package codec

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/tidwall/gjson"
)

// DecodeResponse reads a whole Responses answer: reasoning items become
// thinking (and redacted thinking for encrypted_content), message items
// text, function_call items tool calls. A failed response is an error.
func (openAIResponses) DecodeResponse(body []byte) (*Response, error) {
	if !gjson.ValidBytes(body) {
		return nil, fmt.Errorf("response answer is not valid JSON")
	}
	root := gjson.Parse(string(body))
	var f [len(responsesAnswerKeys)]gjson.Result // id, model, created_at, status, output, usage, error
	objectFields(root, responsesAnswerKeys[:], f[:])
	if !f[4].IsArray() {
		return nil, fmt.Errorf("response answer has no output array")
	}
	if f[3].Str == "failed" {
		return nil, fmt.Errorf("response failed: %s", f[6].Get("message").Str)
	}
	resp := &Response{ID: f[0].Str, Model: f[1].Str, Created: f[2].Int()}
	refused := false
	f[4].ForEach(func(_, it gjson.Result) bool {
		resp.Parts, refused = appendResponsesItem(resp.Parts, it, refused)
		return true
	})
	resp.StopReason = responsesStopReason(root, containsKind(resp.Parts, PartToolCall), refused)
	resp.Usage = responsesUsage(f[5])
	return resp, nil
}

// responsesAnswerKeys are the fields of a response object the decoder
// reads; responsesItemKeys those of an output item.
var (
	responsesAnswerKeys = [...]string{"id", "model", "created_at", "status", "output", "usage", "error"}
	responsesItemKeys   = [...]string{"type", "content", "encrypted_content", "arguments", "call_id", "name"}
)

// appendResponsesItem appends the parts of output item it to parts and
// reports whether a refusal was seen (refused, or in it).
func appendResponsesItem(parts []Part, it gjson.Result, refused bool) ([]Part, bool) {
	var f [len(responsesItemKeys)]gjson.Result // type, content, encrypted_content, arguments, call_id, name
	objectFields(it, responsesItemKeys[:], f[:])
	switch f[0].Str {
	case "reasoning":
		if text := reasoningText(it); text != "" {
			parts = append(parts, Part{Kind: PartThinking, Text: text})
		}
		if enc := f[2]; enc.Type == gjson.String && enc.Str != "" {
			parts = append(parts, Part{Kind: PartRedactedThinking, Data: enc.Str})
		}
	case "message":
		f[1].ForEach(func(_, c gjson.Result) bool {
			switch c.Get("type").Str {
			case "output_text":
				parts = append(parts, Part{Kind: PartText, Text: c.Get("text").Str})
			case "refusal":
				parts = append(parts, Part{Kind: PartText, Text: c.Get("refusal").Str})
				refused = true
			}
			return true
		})
	case "function_call":
		parts = append(parts, Part{Kind: PartToolCall, ID: f[4].Str, Name: f[5].Str, Arguments: answerArguments(f[3].Str)})
	}
	return parts, refused
}

// responsesStopReason derives the stop reason of a response object.
func responsesStopReason(resp gjson.Result, toolCalls, refused bool) StopReason {
	if resp.Get("status").Str == "incomplete" {
		switch resp.Get("incomplete_details.reason").Str {
		case "content_filter":
			return StopContentFilter
		default: // max_output_tokens
			return StopMaxTokens
		}
	}
	switch {
	case refused:
		return StopRefusal
	case toolCalls:
		return StopToolUse
	}
	return StopEnd
}

// responsesUsage reads a Responses usage object.
func responsesUsage(u gjson.Result) Usage {
	return Usage{
		Input:     u.Get("input_tokens").Int(),
		Output:    u.Get("output_tokens").Int(),
		CacheRead: u.Get("input_tokens_details.cached_tokens").Int(),
		Reasoning: u.Get("output_tokens_details.reasoning_tokens").Int(),
	}
}

// EncodeResponse writes a whole response object: one output item per part
// (a reasoning item for thinking, a message for text, a function_call for
// a tool call), "incomplete" for a max-tokens or content-filter stop.
func (openAIResponses) EncodeResponse(r *Response) []byte {
	h := newResponsesHead(r.ID, r.Model, unixOr(r.Created))
	w := jsonWriter{b: make([]byte, 0, 1024+responseSize(r))}
	items := jsonWriter{b: make([]byte, 0, 128+responseSize(r))}
	n := 0
	for i := range r.Parts {
		p := &r.Parts[i]
		text := p.Text
		switch p.Kind {
		case PartToolCall:
			text = argumentsText(p)
		case PartRedactedThinking:
			text = p.Data
		case PartText, PartThinking:
		default:
			continue
		}
		if n > 0 {
			items.comma()
		}
		h.writeItem(&items, p.Kind, n, p.ID, p.Name, text, true)
		n++
	}
	h.writeResponse(&w, r.StopReason, true, items.b, &r.Usage)
	return w.b
}

// responsesHead is what every object of one answer repeats: the response's
// id, model and creation time, and the stem of its items' ids.
type responsesHead struct {
	id, model, stem string
	created         int64
}

// newResponsesHead keeps a canonical id that is a response id
// ("resp_…"), else prefixes it.
func newResponsesHead(id, model string, created int64) responsesHead {
	id = withPrefix("resp_", id)
	return responsesHead{id: id, model: model, created: created, stem: strings.TrimPrefix(id, "resp_")}
}

// itemID is the id of output item n of kind k: msg_, rs_ or fc_ + stem + _n.
func (h *responsesHead) itemID(k PartKind, n int) string {
	prefix := "msg_"
	switch k {
	case PartThinking, PartRedactedThinking:
		prefix = "rs_"
	case PartToolCall:
		prefix = "fc_"
	}
	return prefix + h.stem + "_" + strconv.Itoa(n)
}

// writeItem writes output item n: a block of kind k with its whole text
// (a tool call's arguments, redacted thinking's data). done says the item
// is finished; an unfinished one is empty and in progress, as
// response.output_item.added shows it.
func (h *responsesHead) writeItem(w *jsonWriter, k PartKind, n int, callID, name, text string, done bool) {
	w.raw(`{"id":`)
	w.str(h.itemID(k, n))
	switch k {
	case PartText:
		if !done {
			w.raw(`,"type":"message","status":"in_progress","role":"assistant","content":[]}`)
			return
		}
		w.raw(`,"type":"message","status":"completed","role":"assistant","content":[`)
		writeOutputText(w, text)
		w.raw("]}")
	case PartThinking, PartRedactedThinking:
		w.raw(`,"type":"reasoning","summary":[`)
		if done && k == PartThinking {
			writeSummaryText(w, text)
		}
		w.raw("]")
		if done && k == PartRedactedThinking {
			w.raw(`,"encrypted_content":`)
			w.str(text)
		}
		w.raw("}")
	case PartToolCall:
		status := `,"type":"function_call","status":"in_progress","call_id":`
		if done {
			status = `,"type":"function_call","status":"completed","call_id":`
		} else {
			text = ""
		}
		w.raw(status)
		w.str(callID)
		w.raw(`,"name":`)
		w.str(name)
		w.raw(`,"arguments":`)
		w.str(text)
		w.raw("}")
	}
}

// writeOutputText writes an output_text content part.
func writeOutputText(w *jsonWriter, text string) {
	w.raw(`{"type":"output_text","text":`)
	w.str(text)
	w.raw(`,"annotations":[],"logprobs":[]}`)
}

// writeSummaryText writes a summary_text part.
func writeSummaryText(w *jsonWriter, text string) {
	w.raw(`{"type":"summary_text","text":`)
	w.str(text)
	w.raw("}")
}

// writeResponse writes the response object: in progress (done false:
// no output, no usage) or finished with stop, its output items (JSON,
// comma-separated) and usage.
func (h *responsesHead) writeResponse(w *jsonWriter, stop StopReason, done bool, items []byte, u *Usage) {
	w.raw(`{"id":`)
	w.str(h.id)
	w.raw(`,"object":"response","created_at":`)
	w.int(h.created)
	switch {
	case !done:
		w.raw(`,"status":"in_progress","error":null,"incomplete_details":null`)
	case stop == StopMaxTokens:
		w.raw(`,"status":"incomplete","error":null,"incomplete_details":{"reason":"max_output_tokens"}`)
	case stop == StopContentFilter:
		w.raw(`,"status":"incomplete","error":null,"incomplete_details":{"reason":"content_filter"}`)
	default:
		w.raw(`,"status":"completed","error":null,"incomplete_details":null`)
	}
	w.raw(`,"instructions":null,"max_output_tokens":null,"model":`)
	w.str(h.model)
	w.raw(`,"output":[`)
	w.b = append(w.b, items...)
	w.raw(`],"parallel_tool_calls":true,"previous_response_id":null,"reasoning":{"effort":null,"summary":null},` +
		`"store":false,"temperature":null,"text":{"format":{"type":"text"}},"tool_choice":"auto","tools":[],"top_p":null,` +
		`"truncation":"disabled","usage":`)
	if done {
		writeResponsesUsage(w, u)
	} else {
		w.raw("null")
	}
	w.raw(`,"user":null,"metadata":{}}`)
}

// writeResponsesUsage writes a Responses usage object.
func writeResponsesUsage(w *jsonWriter, u *Usage) {
	w.raw(`{"input_tokens":`)
	w.int(u.Input)
	w.raw(`,"input_tokens_details":{"cached_tokens":`)
	w.int(u.CacheRead)
	w.raw(`},"output_tokens":`)
	w.int(u.Output)
	w.raw(`,"output_tokens_details":{"reasoning_tokens":`)
	w.int(u.Reasoning)
	w.raw(`},"total_tokens":`)
	w.int(u.Input + u.Output)
	w.raw("}")
}

// DecodeError reads an OpenAI error answer.
func (openAIResponses) DecodeError(status int, body []byte) Error {
	return decodeOpenAIError(status, body)
}
