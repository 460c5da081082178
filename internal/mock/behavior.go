package mock

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// DefaultCompletionTokens is the number of tokens in each answer when
// Behavior.CompletionTokens is 0.
const DefaultCompletionTokens = 16

// maxCompletionTokens bounds Behavior.CompletionTokens so that a typo cannot
// make the mock generate gigabytes.
const maxCompletionTokens = 1_000_000

// Behavior is how a mock upstream answers. Every field can be changed at run
// time, with Server.SetBehavior or over HTTP on /_mock/behavior. In JSON the
// fields are snake_case and durations are Go duration strings ("250ms"); a
// JSON number is read as nanoseconds.
//
// A request meets the behaviour in this order: Hang, Latency, ForceStatus,
// the key check (Options.APIKey; Gemini's key; Bedrock's signature),
// request validation (400), ErrorRate, RPM/TPM (429), InvalidBody,
// EmptyBody, StallAfterHeaders, and then the answer, where TTFT, TPS,
// DropAfterEvents, MalformedStream, StreamError, OmitDone and (Bedrock's)
// StreamException shape a stream.
type Behavior struct {
	// Latency is added before a non-streaming response, and before the
	// response headers of a stream. Default 0, at least 0.
	Latency time.Duration `json:"latency"`
	// TTFT is, for a stream, the delay after Latency before the first event.
	// The headers are sent together with the first event, so a client sees
	// its first byte after Latency + TTFT. Default 0, at least 0.
	TTFT time.Duration `json:"ttft"`
	// TPS is the streaming speed in tokens per second after the first token;
	// 0 (the default) streams as fast as possible.
	TPS float64 `json:"tps"`
	// ErrorRate is the probability, in [0, 1], that a request answers 500
	// with the protocol's error body. Draws come from the seeded RNG.
	ErrorRate float64 `json:"error_rate"`
	// ForceStatus, when not 0, makes every API request answer this status
	// (400–599) with the protocol's error body; 429 adds Retry-After: 1
	// (Google's RetryInfo of "1s"; Bedrock names no wait).
	ForceStatus int `json:"force_status"`
	// NoRetryAfter makes a 429 (ForceStatus, RPM, TPM) name no wait: no
	// Retry-After header (OpenAI, Anthropic) and no RetryInfo among a
	// Google error's details (Gemini, Vertex: the QuotaFailure and Help
	// stay), as Vertex's shared-quota 429s answer. The rate-limit headers
	// of OpenAI and Anthropic are still sent. Bedrock never names a wait.
	// Default false.
	NoRetryAfter bool `json:"no_retry_after"`
	// RPM is the mock's own requests-per-minute limit over a 60 s sliding
	// window; 0 (the default) means none. Exceeding it answers 429.
	RPM int `json:"rpm"`
	// TPM is the mock's own tokens-per-minute limit over a 60 s sliding
	// window, counting prompt tokens plus the completion tokens the answer
	// will have; 0 (the default) means none. Exceeding it answers 429.
	TPM int `json:"tpm"`
	// Hang accepts the request and never answers until the client goes away
	// (or the server shuts down).
	Hang bool `json:"hang"`
	// DropAfterEvents, when not 0, closes a stream's connection abruptly
	// after that many SSE events (every event counts: role chunks, pings,
	// [DONE]). Non-streaming requests ignore it.
	DropAfterEvents int `json:"drop_after_events"`
	// KeepAliveFirst sends an SSE comment (": keep-alive") before a
	// stream's first event, as a proxy or a server holding the connection
	// open does. The comment counts as an event for DropAfterEvents: with
	// 1 the stream is that comment, then a cut connection.
	KeepAliveFirst bool `json:"keep_alive_first"`
	// CompletionTokens is the number of tokens (words) in each answer of
	// drawn words (not in tool calls, the quote of a tool result or the
	// description of images); 0 means DefaultCompletionTokens (16). A
	// smaller max_tokens in the request (less the reasoning tokens) cuts
	// the answer and reports the protocol's length stop reason.
	CompletionTokens int `json:"completion_tokens"`
	// InvalidBody answers 200 with a body that is not valid JSON (or, for a
	// stream, an event stream whose data is not valid JSON).
	InvalidBody bool `json:"invalid_body"`
	// EmptyBody answers 200 with an empty body (Content-Length: 0) and the
	// answer's Content-Type: JSON, or for a stream its event stream's.
	EmptyBody bool `json:"empty_body"`
	// StallAfterHeaders answers with the 200 headers (a stream's, for a
	// stream) and then nothing until the client goes away (or the server
	// shuts down): a stream that never sends its first event.
	StallAfterHeaders bool `json:"stall_after_headers"`
	// MalformedStream writes an SSE stream's first event without its SSE
	// fields: its JSON data alone on a line, which no SSE field starts, as
	// a server that does not speak SSE would; the rest of the stream follows
	// as usual. Non-streaming requests, Gemini's JSON-array streams (no
	// alt=sse) and Bedrock's frames ignore it.
	MalformedStream bool `json:"malformed_stream"`
	// StreamError, when not 0 (400–599), sends the protocol's error event for
	// this status in place of a stream's event number StreamErrorAfter (0,
	// the default, is the first: the answer is 200 and its first event the
	// error), and ends the stream there, as a provider does when it fails
	// after its 200: OpenAI Chat `data: {"error":{…}}`, Responses `event:
	// error` with {"type":"error","code","message","param"}, Anthropic
	// `event: error` with {"type":"error","error":{"type","message"}} (529
	// is overloaded_error "Overloaded"), Gemini `data: {"error":{"code",
	// "message","status"}}`. A stream shorter than StreamErrorAfter events
	// ends without one. Bedrock's frames ignore it (see StreamException).
	StreamError int `json:"stream_error"`
	// StreamErrorAfter is how many events precede the StreamError; default
	// 0, at least 0.
	StreamErrorAfter int `json:"stream_error_after"`
	// OmitDone ends an OpenAI Chat Completions or Completions stream after
	// its last chunk (the finish_reason chunk, or the usage chunk when the
	// client asked for one) without data: [DONE], as vLLM and other
	// OpenAI-compatible servers may; the openai-compatible provider takes
	// such a stream as complete (docs/protocols.md#how-a-stream-ends).
	// Other protocols and non-streaming requests ignore it. Default false.
	OmitDone bool `json:"omit_done"`
	// TokenStatus, when not 0, makes the OAuth2 token endpoint (POST
	// /token, Vertex's) refuse every exchange with this status (400–599):
	// 400 and 401 as invalid_grant, others as the status's OAuth2 error.
	// API requests are not affected.
	TokenStatus int `json:"token_status"`
	// StreamException, for Bedrock's ConverseStream only, sends an
	// exception frame of this type in place of the stream's event number
	// StreamExceptionAfter (0, the default, is the first: the answer is
	// 200 and its first frame the exception), and ends the stream there:
	// the error Bedrock defers into a stream that has started. One of
	// throttlingException, serviceUnavailableException,
	// modelStreamErrorException, internalServerException or
	// validationException; "" (the default) for none. A stream shorter
	// than StreamExceptionAfter events ends without one.
	StreamException string `json:"stream_exception"`
	// StreamExceptionAfter is how many frames precede the
	// StreamException; default 0, at least 0.
	StreamExceptionAfter int `json:"stream_exception_after"`
}

// StreamExceptions are the exception types a Bedrock stream may end with
// (Behavior.StreamException).
var StreamExceptions = []string{"throttlingException", "serviceUnavailableException", "modelStreamErrorException", "internalServerException", "validationException"}

// ErrInvalidBehavior is wrapped by every error Behavior.Validate returns.
var ErrInvalidBehavior = errors.New("invalid mock behavior")

// Validate reports every field that is out of bounds, each as
// "json_name: reason", wrapped with ErrInvalidBehavior.
func (b Behavior) Validate() error {
	var errs []error
	bad := func(field, format string, args ...any) {
		errs = append(errs, fmt.Errorf("%s: "+format, append([]any{field}, args...)...))
	}
	if b.Latency < 0 {
		bad("latency", "must not be negative, got %s", b.Latency)
	}
	if b.TTFT < 0 {
		bad("ttft", "must not be negative, got %s", b.TTFT)
	}
	if b.TPS < 0 || math.IsNaN(b.TPS) || math.IsInf(b.TPS, 0) {
		bad("tps", "must be a finite number ≥ 0, got %v", b.TPS)
	}
	if !(b.ErrorRate >= 0 && b.ErrorRate <= 1) {
		bad("error_rate", "must be within [0, 1], got %v", b.ErrorRate)
	}
	if b.ForceStatus != 0 && (b.ForceStatus < 400 || b.ForceStatus > 599) {
		bad("force_status", "must be 0 or 400–599, got %d", b.ForceStatus)
	}
	if b.StreamError != 0 && (b.StreamError < 400 || b.StreamError > 599) {
		bad("stream_error", "must be 0 or 400–599, got %d", b.StreamError)
	}
	if b.StreamErrorAfter < 0 {
		bad("stream_error_after", "must not be negative, got %d", b.StreamErrorAfter)
	}
	if b.TokenStatus != 0 && (b.TokenStatus < 400 || b.TokenStatus > 599) {
		bad("token_status", "must be 0 or 400–599, got %d", b.TokenStatus)
	}
	if b.RPM < 0 {
		bad("rpm", "must not be negative, got %d", b.RPM)
	}
	if b.TPM < 0 {
		bad("tpm", "must not be negative, got %d", b.TPM)
	}
	if b.DropAfterEvents < 0 {
		bad("drop_after_events", "must not be negative, got %d", b.DropAfterEvents)
	}
	if b.StreamException != "" && !slices.Contains(StreamExceptions, b.StreamException) {
		bad("stream_exception", "must be one of %s, got %q", strings.Join(StreamExceptions, ", "), b.StreamException)
	}
	if b.StreamExceptionAfter < 0 {
		bad("stream_exception_after", "must not be negative, got %d", b.StreamExceptionAfter)
	}
	if b.CompletionTokens < 0 || b.CompletionTokens > maxCompletionTokens {
		bad("completion_tokens", "must be within [0, %d], got %d", maxCompletionTokens, b.CompletionTokens)
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalidBehavior, errors.Join(errs...))
}

// completionTokens is CompletionTokens with its default applied.
func (b Behavior) completionTokens() int {
	if b.CompletionTokens <= 0 {
		return DefaultCompletionTokens
	}
	return b.CompletionTokens
}

// behaviorAlias has Behavior's fields without its methods, so that the
// wire form can embed it without recursing into MarshalJSON.
type behaviorAlias Behavior

// behaviorWire is the JSON form of Behavior: its duration fields shadow the
// embedded ones (a shallower field wins in encoding/json).
type behaviorWire struct {
	Latency duration `json:"latency"`
	TTFT    duration `json:"ttft"`
	*behaviorAlias
}

func (b *Behavior) wire() behaviorWire {
	return behaviorWire{behaviorAlias: (*behaviorAlias)(b), Latency: duration(b.Latency), TTFT: duration(b.TTFT)}
}

func (b *Behavior) fromWire(w behaviorWire) {
	b.Latency = time.Duration(w.Latency)
	b.TTFT = time.Duration(w.TTFT)
}

// MarshalJSON encodes b with snake_case names and durations as Go duration
// strings.
func (b Behavior) MarshalJSON() ([]byte, error) {
	return json.Marshal(b.wire())
}

// UnmarshalJSON decodes the form MarshalJSON writes. Fields absent from data
// keep their current value, so decoding into an existing Behavior merges.
func (b *Behavior) UnmarshalJSON(data []byte) error {
	w := b.wire()
	if err := json.Unmarshal(data, &w); err != nil {
		return err
	}
	b.fromWire(w)
	return nil
}

// decodeStrict merges the JSON object data into b like UnmarshalJSON, but
// rejects unknown fields and trailing data, as the control API should.
func (b *Behavior) decodeStrict(data []byte) error {
	w := b.wire()
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&w); err != nil {
		return err
	}
	if dec.More() {
		return errors.New("unexpected data after the JSON object")
	}
	b.fromWire(w)
	return nil
}

// duration is a time.Duration that is a Go duration string in JSON.
type duration time.Duration

// MarshalJSON writes d as a duration string such as "250ms".
func (d duration) MarshalJSON() ([]byte, error) {
	return json.Marshal(time.Duration(d).String())
}

// UnmarshalJSON reads a duration string ("1.5s", "" = 0) or a number of
// nanoseconds; null leaves d unchanged.
func (d *duration) UnmarshalJSON(data []byte) error {
	if string(data) == "null" {
		return nil
	}
	if len(data) > 0 && data[0] == '"' {
		var s string
		if err := json.Unmarshal(data, &s); err != nil {
			return err
		}
		if s == "" {
			*d = 0
			return nil
		}
		v, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		*d = duration(v)
		return nil
	}
	var n int64
	if err := json.Unmarshal(data, &n); err != nil {
		return fmt.Errorf("a duration must be a string like \"250ms\" or integer nanoseconds: %w", err)
	}
	*d = duration(n)
	return nil
}
