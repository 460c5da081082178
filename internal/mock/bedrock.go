package mock

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/tidwall/gjson"
)

// bedrockStreamContentType is ConverseStream's Content-Type.
const bedrockStreamContentType = "application/vnd.amazon.eventstream"

// bedrockErrorTypeSuffix follows an exception's name in x-amzn-ErrorType,
// as Bedrock writes it.
const bedrockErrorTypeSuffix = ":http://internal.amazon.com/coral/com.amazon.bedrock/"

// bedrockThrottling is Bedrock's throttling exception.
const bedrockThrottling = "ThrottlingException"

// bedrockPadding stands for the "p" member with which Bedrock pads some
// events (against length side channels); clients must ignore it.
const bedrockPadding = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJ"

// bedrockException is the exception Bedrock answers status with.
func bedrockException(status int) string {
	switch {
	case status == http.StatusBadRequest:
		return "ValidationException"
	case status == http.StatusForbidden || status == http.StatusUnauthorized:
		return "AccessDeniedException"
	case status == http.StatusNotFound:
		return "ResourceNotFoundException"
	case status == http.StatusRequestTimeout:
		return "ModelTimeoutException"
	case status == http.StatusFailedDependency:
		return "ModelErrorException"
	case status == http.StatusTooManyRequests:
		return bedrockThrottling
	case status == http.StatusServiceUnavailable:
		return "ServiceUnavailableException"
	case status < 500:
		return "ValidationException"
	}
	return "InternalServerException"
}

// bedrockThrottleMessage is Bedrock's throttling message for a limit kind
// ("requests" or "tokens").
func bedrockThrottleMessage(kind string) string {
	if kind == "tokens" {
		return "Too many tokens, please wait before trying again."
	}
	return "Too many requests, please wait before trying again."
}

// bedrockRequestID is an x-amzn-RequestId: a UUID built from n.
func bedrockRequestID(n uint64) string {
	return fmt.Sprintf("b3d7c0de-%04x-4000-8000-%012x", n>>48, n&0xffff_ffff_ffff)
}

// bedrockStreamException is the exception frame of Behavior.StreamException.
func bedrockStreamException(typ string) sseEvent {
	msg := map[string]string{
		"throttlingException":         bedrockThrottleMessage("tokens"),
		"serviceUnavailableException": "Bedrock is unable to process your request.",
		"modelStreamErrorException":   "The model stream was interrupted: an error occurred while the model was generating.",
		"internalServerException":     serverErrorMessage(protoBedrock),
		"validationException":         "The model returned the following errors: input is too long for requested model.",
	}[typ]
	return sseEvent{name: typ, data: append(appendJSONString([]byte(`{"message":`), msg), '}'), exception: true}
}

// frameEncoder writes events as AWS event-stream frames.
type frameEncoder struct {
	enc *eventstream.Encoder
	out bytes.Buffer
}

func newFrameEncoder() *frameEncoder { return &frameEncoder{enc: eventstream.NewEncoder()} }

// append appends e's frame to buf.
func (f *frameEncoder) append(buf []byte, e sseEvent) []byte {
	typeHeader, messageType := ":event-type", "event"
	if e.exception {
		typeHeader, messageType = ":exception-type", "exception"
	}
	msg := eventstream.Message{
		Headers: eventstream.Headers{
			{Name: typeHeader, Value: eventstream.StringValue(e.name)},
			{Name: ":content-type", Value: eventstream.StringValue("application/json")},
			{Name: ":message-type", Value: eventstream.StringValue(messageType)},
		},
		Payload: e.data,
	}
	f.out.Reset()
	if err := f.enc.Encode(&f.out, msg); err != nil {
		panic(fmt.Sprintf("mock: encoding a frame: %v", err)) // a bug: the headers are short constants
	}
	return append(buf, f.out.Bytes()...)
}

// bedrockUsage is Converse's usage: inputTokens leaves out the tokens read
// from or written to the cache, which have their own counts (when there
// are any) and are part of totalTokens; outputTokens counts the reasoning.
func bedrockUsage(t tally) obj {
	in := t.prompt - t.cacheRead - t.cacheWrite
	u := obj{"inputTokens": in, "outputTokens": t.completion(), "totalTokens": t.prompt + t.completion()}
	if t.cacheRead > 0 {
		u["cacheReadInputTokens"] = t.cacheRead
	}
	if t.cacheWrite > 0 {
		u["cacheWriteInputTokens"] = t.cacheWrite
	}
	return u
}

// bedrockStop is the reply's stopReason.
func bedrockStop(r *reply) string {
	switch {
	case len(r.calls) > 0:
		return "tool_use"
	case r.truncated:
		return "max_tokens"
	case r.stopSequence != "":
		return "stop_sequence"
	}
	return "end_turn"
}

// converse answers /converse with a ConverseResponse whose content is a
// reasoningContent block (with thinking enabled), then text or toolUse
// blocks; and /converse-stream with ConverseStream's AWS event-stream:
// messageStart, per block its contentBlockDelta frames (a toolUse block
// opened by contentBlockStart; reasoning ends with a signature delta) and
// contentBlockStop, messageStop (stopReason), then metadata (usage,
// metrics). The matched stop sequence is in additionalModelResponseFields
// when additionalModelResponseFieldPaths asks for /stop_sequence, as
// Claude on Bedrock answers.
func (c *call) converse() {
	r := &c.rep
	c.rememberPrefix(c.cv)
	stop := bedrockStop(r)
	metrics := obj{"latencyMs": (c.b.Latency + c.b.TTFT) / time.Millisecond}
	var extra obj
	if r.stopSequence != "" && slices.ContainsFunc(gjson.GetBytes(c.body, "additionalModelResponseFieldPaths").Array(),
		func(p gjson.Result) bool { return p.Str == "/stop_sequence" }) {
		extra = obj{"stop_sequence": r.stopSequence}
	}
	withText := len(r.pieces) > 0 || (len(r.calls) == 0 && r.thinking == nil)
	if !c.stream {
		content := []obj{}
		if r.thinking != nil {
			content = append(content, obj{"reasoningContent": obj{"reasoningText": obj{"text": r.thinkingText(), "signature": r.signature}}})
		}
		if withText {
			content = append(content, obj{"text": r.text()})
		}
		for _, tc := range r.calls {
			content = append(content, obj{"toolUse": obj{"toolUseId": tc.id, "name": tc.name, "input": json.RawMessage(tc.args)}})
		}
		resp := obj{
			"output":     obj{"message": obj{"role": "assistant", "content": content}},
			"stopReason": stop, "usage": bedrockUsage(r.usage), "metrics": metrics,
		}
		if extra != nil {
			resp["additionalModelResponseFields"] = extra
		}
		c.writeJSON(http.StatusOK, resp)
		return
	}
	var segs []segment
	pre := []sseEvent{jsonEvent("messageStart", obj{"p": bedrockPadding, "role": "assistant"})}
	index := 0
	block := func(delta func(slot string) obj, ps []string) {
		tmpl := newEventTemplate("contentBlockDelta", obj{"contentBlockIndex": index, "delta": delta(slotPiece)})
		segs = append(segs, segment{pre: pre, n: len(ps), token: func(i int) sseEvent { return tmpl.fill(ps[i], 0) }})
		pre = nil
	}
	stopBlock := func() {
		pre = append(pre, jsonEvent("contentBlockStop", obj{"contentBlockIndex": index}))
		index++
	}
	if r.thinking != nil {
		block(func(s string) obj { return obj{"reasoningContent": obj{"text": s}} }, r.thinking)
		pre = append(pre, jsonEvent("contentBlockDelta", obj{"contentBlockIndex": index, "delta": obj{"reasoningContent": obj{"signature": r.signature}}}))
		stopBlock()
	}
	if withText {
		block(func(s string) obj { return obj{"text": s} }, r.pieces)
		stopBlock()
	}
	for _, tc := range r.calls {
		pre = append(pre, jsonEvent("contentBlockStart", obj{"contentBlockIndex": index, "start": obj{"toolUse": obj{"toolUseId": tc.id, "name": tc.name}}}))
		block(func(s string) obj { return obj{"toolUse": obj{"input": s}} }, argPieces(tc.args))
		stopBlock()
	}
	end := obj{"p": bedrockPadding[:7], "stopReason": stop}
	if extra != nil {
		end["additionalModelResponseFields"] = extra
	}
	post := append(pre,
		jsonEvent("messageStop", end),
		jsonEvent("metadata", obj{"usage": bedrockUsage(r.usage), "metrics": metrics}))
	c.streamSegments(segs, func() []sseEvent { return post })
}
