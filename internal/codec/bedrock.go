package codec

import (
	"bytes"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws/protocol/eventstream"
	"github.com/tidwall/gjson"
)

// Bedrock is AWS Bedrock's Converse API: POST /model/{modelId}/converse
// answers a whole ConverseResponse, /converse-stream an AWS event-stream
// (binary frames, not SSE; provider.Framer turns them into Events) of
// messageStart, content block events, messageStop and metadata, the last
// carrying the usage. Usage is inputTokens, which leaves out the prompt
// cache's tokens as Anthropic's input_tokens does, plus
// cacheReadInputTokens and cacheWriteInputTokens; and outputTokens. No
// client speaks Converse: requests reach Bedrock translated, and Encode
// only passes a body on within the family (the model goes in the URL).
var Bedrock Codec = bedrock{}

var (
	_ Codec      = bedrock{}
	_ Translator = bedrock{}
)

type bedrock struct{}

func (bedrock) Name() string   { return "bedrock" }
func (bedrock) Family() Family { return FamilyBedrock }

// Op is the operation after /model/{modelId}/.
func (bedrock) Op(stream bool) string {
	if stream {
		return "converse-stream"
	}
	return "converse"
}

// Encode passes the body through: the model goes in the URL, not the body.
func (bedrock) Encode(body []byte, _ string, f Family) ([]byte, error) {
	if f != FamilyBedrock {
		return nil, ErrIncompatible
	}
	return body, nil
}

// Usage reads inputTokens plus the cache's reads and writes
// (cacheReadInputTokens, cacheWriteInputTokens), and outputTokens.
func (bedrock) Usage(body []byte) Usage { return bedrockUsage(gjson.GetBytes(body, "usage")) }

// Observe reads the usage of the metadata event, which ends the stream,
// as does an exception, and counts the contentBlockDelta events.
func (bedrock) Observe(s *StreamState, ev *Event) {
	switch {
	case ev.Exception:
		s.Finished = true
	case string(ev.Name) == bedrockEvBlockDelta:
		s.Deltas++
	case string(ev.Name) == bedrockEvMetadata:
		u := bedrockUsage(gjson.GetBytes(ev.Data, "usage"))
		s.SetInput(&u)
		s.Out, s.Finished = u.Output, true
	}
}

// ErrorBody renders Bedrock's {"message": …}; the exception's name goes in
// the x-amzn-ErrorType header, which a body cannot carry.
func (bedrock) ErrorBody(e Error) []byte {
	b := append(make([]byte, 0, 16+len(e.Message)), `{"message":`...)
	b = wireString(b, e.Message)
	return append(b, '}')
}

// StreamError is an internalServerException frame.
func (bedrock) StreamError(msg string) []byte {
	return appendBedrockException(nil, eventstream.NewEncoder(), &Error{Status: http.StatusInternalServerError, Message: msg})
}

// ConverseStream event types (the frames' :event-type).
const (
	bedrockEvMessageStart = "messageStart"
	bedrockEvBlockStart   = "contentBlockStart"
	bedrockEvBlockDelta   = "contentBlockDelta"
	bedrockEvBlockStop    = "contentBlockStop"
	bedrockEvMessageStop  = "messageStop"
	bedrockEvMetadata     = "metadata"
)

// bedrockUsage reads a usage object: Input is inputTokens plus the cache's
// reads and writes.
func bedrockUsage(u gjson.Result) Usage {
	return excludedCacheUsage{"inputTokens", "cacheReadInputTokens", "cacheWriteInputTokens", "outputTokens"}.read(u)
}

// appendBedrockUsage writes a usage object: inputTokens without the
// cache's tokens (never negative), totalTokens counting them, and the
// cache's counts when there are any.
func appendBedrockUsage(b []byte, u Usage) []byte {
	b = append(b, `{"inputTokens":`...)
	b = wireInt(b, max(u.Input-u.CacheRead-u.CacheWrite, 0))
	b = append(b, `,"outputTokens":`...)
	b = wireInt(b, u.Output)
	b = append(b, `,"totalTokens":`...)
	b = wireInt(b, u.Input+u.Output)
	if u.CacheRead > 0 {
		b = append(b, `,"cacheReadInputTokens":`...)
		b = wireInt(b, u.CacheRead)
	}
	if u.CacheWrite > 0 {
		b = append(b, `,"cacheWriteInputTokens":`...)
		b = wireInt(b, u.CacheWrite)
	}
	return append(b, '}')
}

// bedrockStop maps a stopReason; one not known is a natural end.
func bedrockStop(s string) StopReason {
	switch s {
	case "max_tokens", "model_context_window_exceeded":
		return StopMaxTokens
	case "stop_sequence":
		return StopSequence
	case "tool_use":
		return StopToolUse
	case "guardrail_intervened", "content_filtered":
		return StopContentFilter
	}
	return StopEnd
}

// bedrockStopName is the stopReason of s; a refusal is content_filtered.
func bedrockStopName(s StopReason) string {
	switch s {
	case StopMaxTokens:
		return "max_tokens"
	case StopSequence:
		return "stop_sequence"
	case StopToolUse:
		return "tool_use"
	case StopContentFilter, StopRefusal:
		return "content_filtered"
	}
	return "end_turn"
}

// bedrockErrorCode is the name of the exception Bedrock answers status
// with (the x-amzn-ErrorType header's), for bodies that do not name one.
func bedrockErrorCode(status int) string {
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
		return "ThrottlingException"
	case status == http.StatusServiceUnavailable:
		return "ServiceUnavailableException"
	case status >= 400 && status < 500:
		return "ValidationException"
	}
	return "InternalServerException"
}

// BedrockErrorStatus is the HTTP status of a Bedrock exception, named as
// in x-amzn-ErrorType (ThrottlingException) or as a stream's
// :exception-type (throttlingException); 0 for a name not known.
func BedrockErrorStatus(name string) int {
	switch strings.ToLower(strings.TrimSuffix(name, "Exception")) {
	case "validation", "serialization", "incompletesignature":
		return http.StatusBadRequest
	case "accessdenied", "unrecognizedclient", "invalidsignature", "expiredtoken", "missingauthenticationtoken":
		return http.StatusForbidden
	case "resourcenotfound":
		return http.StatusNotFound
	case "modeltimeout":
		return http.StatusRequestTimeout
	case "modelerror":
		return http.StatusFailedDependency
	case "throttling", "servicequotaexceeded":
		return http.StatusTooManyRequests
	case "serviceunavailable", "modelnotready":
		return http.StatusServiceUnavailable
	case "internalserver", "modelstreamerror", "internalfailure":
		return http.StatusInternalServerError
	}
	return 0
}

// BedrockErrorType is the bare name of an exception as Bedrock reports it
// in x-amzn-ErrorType ("ThrottlingException:http://internal.amazon.com/…")
// or a body's __type ("com.amazon.coral.service#ThrottlingException"):
// "ThrottlingException".
func BedrockErrorType(s string) string {
	if i := strings.LastIndexByte(s, '#'); i >= 0 {
		s = s[i+1:]
	}
	if i := strings.IndexByte(s, ':'); i >= 0 {
		s = s[:i]
	}
	return strings.TrimSpace(s)
}

// DecodeError reads Bedrock's {"message": …} (or {"Message": …}); the
// exception is the body's __type when it has one, else the status's. Code
// is the exception's name, Type OpenAI's error type for it; with no status
// (an exception frame) the status is the exception's.
func (bedrock) DecodeError(status int, body []byte) Error {
	r := gjson.GetManyBytes(body, "message", "Message", "__type")
	msg := r[0].Str
	if msg == "" {
		msg = r[1].Str
	}
	if msg == "" && !r[0].Exists() && !r[1].Exists() {
		msg = untypedErrorMessage(body)
	}
	return bedrockError(status, BedrockErrorType(r[2].Str), msg)
}

// bedrockError is the gateway's Error for an exception code (may be "")
// with status (0 to take the code's).
func bedrockError(status int, code, msg string) Error {
	if status == 0 {
		status = BedrockErrorStatus(code)
	}
	if status == 0 {
		status = http.StatusInternalServerError
	}
	if code == "" {
		code = bedrockErrorCode(status)
	}
	code = strings.ToUpper(code[:1]) + code[1:] // a stream's throttlingException
	e := Error{Status: status, Code: code, Message: msg}
	switch BedrockErrorStatus(code) {
	case http.StatusBadRequest:
		e.Type = "invalid_request_error"
	case http.StatusForbidden:
		e.Type = "permission_error"
	case http.StatusNotFound:
		e.Type = "not_found_error"
	case http.StatusTooManyRequests:
		e.Type = "rate_limit_error"
	case 0:
		e.Type = statusErrorType(status)
	default:
		e.Type = "server_error"
	}
	return e
}

// bedrockExceptionName is the :exception-type a stream reports e with.
func bedrockExceptionName(e *Error) string {
	switch e.Status {
	case http.StatusTooManyRequests:
		return "throttlingException"
	case http.StatusServiceUnavailable, 529:
		return "serviceUnavailableException"
	case http.StatusBadRequest:
		return "validationException"
	}
	return "internalServerException"
}

// appendBedrockFrame appends an AWS event-stream frame: an event of type
// name, or with exception set an exception of that type, whose payload is
// JSON.
func appendBedrockFrame(out []byte, enc *eventstream.Encoder, name string, exception bool, payload []byte) []byte {
	typeHeader, messageType := ":event-type", "event"
	if exception {
		typeHeader, messageType = ":exception-type", "exception"
	}
	msg := eventstream.Message{
		Headers: eventstream.Headers{
			{Name: typeHeader, Value: eventstream.StringValue(name)},
			{Name: ":content-type", Value: eventstream.StringValue("application/json")},
			{Name: ":message-type", Value: eventstream.StringValue(messageType)},
		},
		Payload: payload,
	}
	buf := bytes.NewBuffer(out)
	if err := enc.Encode(buf, msg); err != nil {
		return out // only a header name or value over 255 bytes fails, and ours are short
	}
	return buf.Bytes()
}

// appendBedrockException appends the exception frame that reports e.
func appendBedrockException(out []byte, enc *eventstream.Encoder, e *Error) []byte {
	var err Error
	if e != nil {
		err = *e
	}
	return appendBedrockFrame(out, enc, bedrockExceptionName(&err), true, Bedrock.ErrorBody(err))
}
