package codec

import (
	"encoding/json"
	"errors"
	"fmt"

	"github.com/tidwall/gjson"
)

// DecodeResponse reads a ConverseResponse: output.message's text, toolUse
// and reasoningContent blocks become parts (reasoningText with its
// signature a thinking part, redactedContent a redacted one; citations,
// images and guard content are dropped), with stopReason and usage; the
// matched stop sequence comes from additionalModelResponseFields when the
// request asked for it. Converse answers carry neither an id nor the
// model: both stay empty.
func (bedrock) DecodeResponse(body []byte) (*Response, error) {
	if !gjson.ValidBytes(body) {
		return nil, errors.New("decoding bedrock answer: invalid JSON")
	}
	root := gjson.ParseBytes(body)
	if !root.IsObject() {
		return nil, errors.New("decoding bedrock answer: not a JSON object")
	}
	content := root.Get("output.message.content")
	if !content.IsArray() {
		if msg := root.Get("message"); msg.Type == gjson.String {
			return nil, fmt.Errorf("decoding bedrock answer: it is an error: %s", msg.Str)
		}
		return nil, errors.New("decoding bedrock answer: no output.message.content array")
	}
	resp := &Response{
		StopReason:   bedrockStop(root.Get("stopReason").Str),
		StopSequence: root.Get("additionalModelResponseFields.stop_sequence").Str,
		Usage:        bedrockUsage(root.Get("usage")),
	}
	content.ForEach(func(_, b gjson.Result) bool {
		if p, ok := bedrockAnswerPart(b); ok {
			resp.Parts = append(resp.Parts, p)
		}
		return true
	})
	return resp, nil
}

// bedrockAnswerPart reads one content block of an answer.
func bedrockAnswerPart(b gjson.Result) (Part, bool) {
	if t := b.Get("text"); t.Type == gjson.String {
		return Part{Kind: PartText, Text: t.Str}, true
	}
	if tu := b.Get("toolUse"); tu.IsObject() {
		p := Part{Kind: PartToolCall, ID: tu.Get("toolUseId").Str, Name: tu.Get("name").Str, Arguments: json.RawMessage("{}")}
		if in := tu.Get("input"); in.IsObject() {
			p.Arguments = json.RawMessage(in.Raw)
		}
		return p, true
	}
	rc := b.Get("reasoningContent")
	if rt := rc.Get("reasoningText"); rt.IsObject() {
		return Part{Kind: PartThinking, Text: rt.Get("text").Str, Signature: rt.Get("signature").Str}, true
	}
	if red := rc.Get("redactedContent"); red.Type == gjson.String {
		return Part{Kind: PartRedactedThinking, Data: red.Str}, true
	}
	return Part{}, false
}

// EncodeResponse writes r as a ConverseResponse. Images and tool results
// have no place in an answer and are left out, and so is redacted
// thinking whose data is not base64 (Converse's redactedContent is bytes).
// metrics.latencyMs is 0: the gateway did not time a model.
func (bedrock) EncodeResponse(r *Response) []byte {
	b := make([]byte, 0, 256+responseBytesHint(r))
	b = append(b, `{"output":{"message":{"role":"assistant","content":[`...)
	comma := false
	for i := range r.Parts {
		p := &r.Parts[i]
		switch p.Kind {
		case PartText, PartToolCall, PartThinking:
		case PartRedactedThinking:
			if !looksBase64(p.Data) || p.Data == "" {
				continue
			}
		default:
			continue
		}
		if comma {
			b = append(b, ',')
		}
		comma = true
		b = appendBedrockAnswerPart(b, p)
	}
	b = append(b, `]}},"stopReason":"`...)
	b = append(b, bedrockStopName(r.StopReason)...)
	b = append(b, `","usage":`...)
	b = appendBedrockUsage(b, r.Usage)
	b = append(b, `,"metrics":{"latencyMs":0}`...)
	if r.StopSequence != "" {
		b = append(b, `,"additionalModelResponseFields":{"stop_sequence":`...)
		b = wireString(b, r.StopSequence)
		b = append(b, '}')
	}
	return append(b, '}')
}

// appendBedrockAnswerPart writes one block of an answer: unlike a
// request's, text may be empty, thinking may lack a signature, and ids are
// kept as they are.
func appendBedrockAnswerPart(b []byte, p *Part) []byte {
	switch p.Kind {
	case PartText:
		return appendBedrockText(b, p.Text)
	case PartToolCall:
		b = append(b, `{"toolUse":{"toolUseId":`...)
		b = wireString(b, p.ID)
		b = append(b, `,"name":`...)
		b = wireString(b, p.Name)
		b = append(b, `,"input":`...)
		b = wireArgs(b, p.Arguments)
		return append(b, '}', '}')
	case PartThinking:
		b = append(b, `{"reasoningContent":{"reasoningText":{"text":`...)
		b = wireString(b, p.Text)
		if p.Signature != "" {
			b = append(b, `,"signature":`...)
			b = wireString(b, p.Signature)
		}
		return append(b, '}', '}', '}')
	}
	b = append(b, `{"reasoningContent":{"redactedContent":`...)
	b = wireString(b, p.Data)
	return append(b, '}', '}')
}
