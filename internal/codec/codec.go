// Package codec holds the wire protocols of the client API
// (docs/architecture.md, docs/protocols.md): one Codec per protocol, which
// knows where the protocol reports usage, how its streams end, and how it
// shapes errors. It is the seam where translation between protocols lives;
// today every request goes to an upstream of its own family and passes through
// byte for byte, but for the `model` value.
package codec

import (
	"errors"

	"github.com/tidwall/sjson"
)

// Family is a group of wire protocols that share upstreams: a request of a
// protocol passes through unchanged to any upstream of its family.
type Family uint8

// Families.
const (
	// FamilyOpenAI is the OpenAI REST API: Chat Completions, Completions,
	// Embeddings and Responses.
	FamilyOpenAI Family = iota
	// FamilyAnthropic is the Anthropic Messages API.
	FamilyAnthropic
	// FamilyGemini is Google's Gemini API (generateContent).
	FamilyGemini
	// FamilyBedrock is AWS Bedrock's Converse API (Converse and
	// ConverseStream). No client speaks it: requests reach it translated.
	FamilyBedrock
)

// String returns "openai", "anthropic", "gemini" or "bedrock".
func (f Family) String() string {
	switch f {
	case FamilyAnthropic:
		return "anthropic"
	case FamilyGemini:
		return "gemini"
	case FamilyBedrock:
		return "bedrock"
	}
	return "openai"
}

// ForFamily returns the protocol a translated request takes to an upstream
// of family f: OpenAI Chat Completions, Anthropic Messages, Gemini
// generateContent or Bedrock Converse; nil when there is none.
func ForFamily(f Family) Translator {
	var c Codec
	switch f {
	case FamilyOpenAI:
		c = OpenAIChat
	case FamilyAnthropic:
		c = Anthropic
	case FamilyGemini:
		c = Gemini
	case FamilyBedrock:
		c = Bedrock
	}
	t, _ := c.(Translator)
	return t
}

// ErrIncompatible: the request cannot be expressed in the target family.
var ErrIncompatible = errors.New("request cannot be expressed in the upstream's protocol")

// Codec is one client-facing wire protocol. Implementations are stateless
// and safe for concurrent use; the proxy calls them on the hot path.
type Codec interface {
	// Name is the protocol's name in headers and logs: openai-chat,
	// openai-responses, openai-completions, openai-embeddings or anthropic.
	Name() string
	// Family is the family whose upstreams take this protocol as it is.
	Family() Family
	// Op is the operation's path below an upstream's base URL
	// ("chat/completions", "messages", "generateContent", …), for a
	// streamed request when stream is set (Gemini's differs).
	Op(stream bool) string
	// Encode returns the request body to send to an upstream of family f
	// that knows the model as model. Within the family the body is
	// unchanged but for the "model" value (the same slice when that needs
	// no change); another family is ErrIncompatible until translation
	// exists.
	Encode(body []byte, model string, f Family) ([]byte, error)
	// Usage reads the tokens of a whole JSON answer in canonical form
	// (Usage: Input counts every prompt token, the cache's included).
	Usage(body []byte) Usage
	// Observe follows one stream event for usage and the protocol's
	// terminal event.
	Observe(s *StreamState, ev *Event)
	// ErrorBody renders an error the gateway answers itself.
	ErrorBody(e Error) []byte
	// StreamError is the last event of a stream broken after it started
	// (docs/reference.md#commit-and-failover).
	StreamError(msg string) []byte
}

// StreamState is what Observe learns from a stream so far.
type StreamState struct {
	// In and Out are the tokens reported so far; In counts every prompt
	// token, the cache's included (Usage.Input).
	In, Out int64
	// CacheRead and CacheWrite are the parts of In read from and written
	// to the provider's prompt cache, as reported so far.
	CacheRead, CacheWrite int64
	// Deltas counts the events that carried a piece of the answer (text,
	// reasoning, a tool call's arguments), seen whether or not the
	// stream reports usage.
	Deltas int64
	// Finished: the protocol's terminal event was seen.
	Finished bool
}

// OutSoFar is the output tokens to bill for the stream as far as it went.
// A finished stream's are those it reported. Most protocols report the
// output count only at the end, so a stream cut before then (its client
// left, docs/reference.md#client-disconnects) counts one token per delta when
// that is more: each event carries one token or more.
func (s *StreamState) OutSoFar() int64 {
	if s.Finished {
		return s.Out
	}
	return max(s.Out, s.Deltas)
}

// SoFar is the usage to bill for the stream as far as it went: the
// reported input and cache tokens, and OutSoFar's output.
func (s *StreamState) SoFar() Usage {
	return Usage{Input: s.In, Output: s.OutSoFar(), CacheRead: s.CacheRead, CacheWrite: s.CacheWrite}
}

// SetInput keeps the input tokens of u, the cache's with them.
func (s *StreamState) SetInput(u *Usage) {
	s.In, s.CacheRead, s.CacheWrite = u.Input, u.CacheRead, u.CacheWrite
}

// Error is an error the gateway answers itself, in any protocol.
type Error struct {
	// Status is the HTTP status.
	Status int
	// Type is OpenAI's error.type ("invalid_request_error", …).
	Type string
	// Code is OpenAI's error.code ("model_not_found", …).
	Code string
	// Message says what was wrong.
	Message string
}

// passthrough is Encode within a family: only the model changes.
func passthrough(own Family, body []byte, model string, f Family) ([]byte, error) {
	if f != own {
		return nil, ErrIncompatible
	}
	if model == "" {
		return body, nil
	}
	return sjson.SetBytes(body, "model", model)
}
