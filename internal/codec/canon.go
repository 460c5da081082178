package codec

import "encoding/json"

// The canonical form (docs/protocols.md): every translation goes from the
// client's protocol into these types and from them into the upstream's, so
// that n protocols need n decoders and n encoders, not n² translators. It
// holds what the protocols have in common; what only one protocol can say is
// kept in Request.Needs so that a target that cannot say it is refused
// rather than silently dropping it.

// Role is who wrote a message.
type Role string

// Roles. System prompts are Request.System, not messages; a tool result is
// a PartToolResult in a RoleUser message (Anthropic's and Gemini's model);
// decoders of protocols with a "tool" role fold it into that.
const (
	RoleUser      Role = "user"
	RoleAssistant Role = "assistant"
)

// PartKind is the kind of one piece of a message.
type PartKind uint8

// Part kinds.
const (
	PartText PartKind = iota
	// PartImage is an image: Data (base64, with MediaType) or URL.
	PartImage
	// PartToolCall is the model's call of a tool: ID, Name, Arguments.
	PartToolCall
	// PartToolResult answers a tool call: ID (the call's), Content, IsError.
	PartToolResult
	// PartThinking is the model's reasoning: Text and, when the protocol
	// has one, Signature (Anthropic) that must come back unchanged.
	PartThinking
	// PartRedactedThinking is reasoning the provider encrypted: Data holds
	// it as opaque bytes.
	PartRedactedThinking
)

// String names the kind in errors and docs.
func (k PartKind) String() string {
	switch k {
	case PartText:
		return "text"
	case PartImage:
		return "image"
	case PartToolCall:
		return "tool_call"
	case PartToolResult:
		return "tool_result"
	case PartThinking:
		return "thinking"
	case PartRedactedThinking:
		return "redacted_thinking"
	}
	return "unknown"
}

// Part is one piece of a message or an answer.
type Part struct {
	Kind PartKind
	// Text is a text part's text or a thinking part's reasoning.
	Text string
	// MediaType is an image's MIME type ("image/png").
	MediaType string
	// Data is an image's base64 data (as it is on the wire, not decoded), or
	// redacted thinking's opaque payload.
	Data string
	// URL is an image given by address; it is passed on, never fetched.
	URL string
	// ID is a tool call's id, or the id of the call a tool result answers.
	ID string
	// Name is the tool a call names (and, for protocols that need it, the
	// tool a result answers: Gemini's functionResponse.name).
	Name string
	// Arguments are a tool call's arguments, a JSON object.
	Arguments json.RawMessage
	// Content is a tool result's content (text and images).
	Content []Part
	// IsError marks a tool result that reports a failure.
	IsError bool
	// Signature is a thinking part's signature.
	Signature string
	// CacheControl is a part's cache breakpoint, raw (Anthropic's
	// {"type":"ephemeral"}); nil when none. Only Anthropic takes it.
	CacheControl json.RawMessage
}

// Message is one turn of the conversation.
type Message struct {
	Role  Role
	Parts []Part
}

// Tool is a function the model may call.
type Tool struct {
	Name        string
	Description string
	// Schema is the JSON Schema of its arguments (an object); nil means
	// {"type":"object"}.
	Schema json.RawMessage
	// CacheControl as in Part.
	CacheControl json.RawMessage
}

// ToolChoiceMode says whether and which tool the model must call.
type ToolChoiceMode uint8

// Tool choice modes; ToolAuto is the zero value and every protocol's default.
const (
	ToolAuto ToolChoiceMode = iota
	ToolNone
	// ToolAny: the model must call some tool (OpenAI "required", Anthropic
	// "any", Gemini mode ANY).
	ToolAny
	// ToolNamed: the model must call ToolChoice.Name.
	ToolNamed
)

// ToolChoice is the request's tool_choice.
type ToolChoice struct {
	Mode ToolChoiceMode
	Name string
}

// Thinking asks for the model's reasoning.
type Thinking struct {
	// BudgetTokens is Anthropic's budget_tokens and Gemini's
	// thinkingBudget; 0 when only an effort was given.
	BudgetTokens int64
	// Effort is OpenAI's reasoning_effort ("low", "medium", "high", …); ""
	// when only a budget was given.
	Effort string
}

// Request is a generation request in canonical form.
type Request struct {
	Model string
	// System is the system prompt (and OpenAI developer messages) as text
	// parts, in order.
	System   []Part
	Messages []Message
	Tools    []Tool
	// ToolChoice is meaningful only with Tools.
	ToolChoice ToolChoice
	// ParallelToolCalls is nil when the client did not say.
	ParallelToolCalls *bool
	// MaxTokens is the output limit; 0 when the client gave none (an
	// encoder whose protocol requires one uses its default_max_tokens).
	MaxTokens   int64
	Temperature *float64
	TopP        *float64
	TopK        *int64
	Stop        []string
	Stream      bool
	// IncludeUsage: the client asked for usage in the stream (OpenAI's
	// stream_options.include_usage). Other protocols always report it.
	IncludeUsage bool
	Thinking     *Thinking
	// User is the end user's id (OpenAI user, Anthropic metadata.user_id).
	User string
	// Needs lists what the request uses that only some protocols can
	// express, each with the protocols that can (see Feature).
	Needs []Feature
}

// Feature is something a request uses that not every protocol can
// express: n > 1, logprobs, previous_response_id, an image by URL, ….
type Feature struct {
	// Name is what the client error and the decision call it
	// ("n", "logprobs", "previous_response_id", "image_url").
	Name string
	// Protocols are the names of the protocols that can express it.
	Protocols []string
}

// Need records that r uses feature name, which only protocols can express.
func (r *Request) Need(name string, protocols ...string) {
	for _, f := range r.Needs {
		if f.Name == name {
			return
		}
	}
	r.Needs = append(r.Needs, Feature{Name: name, Protocols: protocols})
}

// Unsupported returns the first feature of r that protocol cannot
// express, or "".
func (r *Request) Unsupported(protocol string) string {
	for _, f := range r.Needs {
		ok := false
		for _, p := range f.Protocols {
			ok = ok || p == protocol
		}
		if !ok {
			return f.Name
		}
	}
	return ""
}

// StopReason is why the model stopped.
type StopReason uint8

// Stop reasons.
const (
	StopEnd StopReason = iota // a natural end (OpenAI stop, Anthropic end_turn, Gemini STOP)
	StopMaxTokens
	StopSequence // one of Request.Stop matched
	StopToolUse
	StopContentFilter
	StopRefusal
	StopPause // Anthropic pause_turn
)

// Usage is what an answer cost in tokens. Input counts every prompt token,
// cached or not, as OpenAI and Gemini report it; Anthropic's input_tokens
// excludes the cache's, and its codec adds and subtracts them.
type Usage struct {
	Input  int64
	Output int64
	// CacheRead are input tokens served from the prompt cache.
	CacheRead int64
	// CacheWrite are input tokens written to the prompt cache (Anthropic's
	// cache_creation_input_tokens).
	CacheWrite int64
	// Reasoning are output tokens spent on reasoning, when reported.
	Reasoning int64
}

// Response is a whole generation answer in canonical form.
type Response struct {
	ID    string
	Model string
	// Parts are the answer's content: text, thinking and tool calls, in order.
	Parts      []Part
	StopReason StopReason
	// StopSequence is the sequence that matched, for StopSequence.
	StopSequence string
	Usage        Usage
	// Created is the answer's Unix time in seconds (OpenAI's created); 0
	// when the upstream gave none, and the encoder uses the current time.
	Created int64
}

// ChunkType is the kind of a canonical stream event.
type ChunkType uint8

// Chunk types. A decoder emits, in order: one ChunkStart; for each content
// block, one ChunkBlockStart, its ChunkDeltas and one ChunkBlockStop, blocks
// one after another with Index 0, 1, 2, … (never two open at once); then one
// ChunkEnd with the stop reason and the usage. ChunkUsage may come anywhere
// after ChunkStart and carries the usage known so far (the latest wins);
// ChunkError ends a stream the upstream broke with an error event.
const (
	ChunkStart ChunkType = iota
	ChunkBlockStart
	ChunkDelta
	ChunkBlockStop
	ChunkUsage
	ChunkEnd
	ChunkError
)

// Chunk is one canonical stream event.
type Chunk struct {
	Type ChunkType
	// Index is the block's position in the answer, for block chunks.
	Index int
	// Block is the block a ChunkBlockStart opens: its Kind, and for a tool
	// call its ID and Name (Arguments empty: they come as deltas).
	Block Part
	// Text is a delta's text: answer text, reasoning, a tool call's
	// arguments as a JSON fragment, or a thinking signature (Signature).
	Text string
	// Signature marks a delta that carries a thinking block's signature.
	Signature bool
	// ID and Model are the answer's, on ChunkStart.
	ID, Model string
	// StopReason and StopSequence are the answer's, on ChunkEnd.
	StopReason   StopReason
	StopSequence string
	// Usage is on ChunkStart (input known so far), ChunkUsage and ChunkEnd.
	Usage Usage
	// Err is a ChunkError's error.
	Err *Error
}

// Translator is a protocol that translates to and from the canonical form.
// The client's protocol decodes the request and encodes the answer; the
// upstream's encodes the request and decodes the answer. Implementations are
// stateless and safe for concurrent use; stream coders are per stream.
type Translator interface {
	Codec
	// DecodeRequest reads a client's request body. An error is the client's
	// (HTTP 400) and says what is wrong.
	DecodeRequest(body []byte) (*Request, error)
	// EncodeRequest writes r for an upstream that knows the model as model
	// (empty for a protocol that takes the model in the URL); o carries the
	// route's settings.
	EncodeRequest(r *Request, model string, o EncodeOptions) ([]byte, error)
	// DecodeResponse reads an upstream's whole success answer.
	DecodeResponse(body []byte) (*Response, error)
	// EncodeResponse writes r for the client.
	EncodeResponse(r *Response) []byte
	// NewStreamDecoder follows an upstream stream of this protocol.
	NewStreamDecoder() StreamDecoder
	// NewStreamEncoder writes a stream of this protocol for the client of
	// request r.
	NewStreamEncoder(r *Request) StreamEncoder
	// DecodeError reads an upstream's error answer (any status) into the
	// gateway's Error, so the client's protocol can render it.
	DecodeError(status int, body []byte) Error
}

// EncodeOptions are the route's settings an encoder needs.
type EncodeOptions struct {
	// DefaultMaxTokens is the max_tokens to send when the client gave none
	// and the protocol requires one (Anthropic).
	DefaultMaxTokens int64
}

// StreamDecoder turns an upstream's SSE events into canonical chunks.
type StreamDecoder interface {
	// Decode appends the chunks ev yields to out and returns it; ev is
	// valid only during the call. An error means the event is not of this
	// protocol (the stream is broken).
	Decode(ev *Event, out []Chunk) ([]Chunk, error)
	// Done reports whether the protocol's terminal event was seen.
	Done() bool
	// End appends the chunks that close a stream that ended (EOF) without
	// the protocol's terminal event, as that event would have: the open
	// block's stop and the ChunkEnd with the stop reason and usage the
	// decoder saw (an OpenAI-compatible server's stream that ends after its
	// finish_reason chunk without [DONE] keeps its tool_calls or length).
	// The proxy calls it only for an upstream whose streams may end so
	// (provider.Endpoint.OpenStreamEnd, docs/protocols.md#how-a-stream-ends).
	// After the terminal event or an error it appends nothing; after it,
	// Done reports true.
	End(out []Chunk) []Chunk
}

// StreamEncoder turns canonical chunks into the client's SSE events.
type StreamEncoder interface {
	// Encode appends the wire bytes of c (whole SSE events) to out.
	Encode(c *Chunk, out []byte) []byte
}
