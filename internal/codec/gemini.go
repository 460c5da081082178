package codec

import (
	"bytes"
	"encoding/json"
	"net/http"

	"github.com/tidwall/gjson"
)

// Gemini is Google's Gemini API: generateContent and
// streamGenerateContent?alt=sse with the model in the URL. Usage is
// usageMetadata (promptTokenCount, candidatesTokenCount plus
// thoughtsTokenCount); a stream has no terminal event, it ends after the
// chunk that carries a finishReason. It is a Translator too
// (gemini_translate.go, gemini_stream.go).
var Gemini Codec = gemini{}

var _ Codec = gemini{}

type gemini struct{}

func (gemini) Name() string   { return "gemini" }
func (gemini) Family() Family { return FamilyGemini }

// Op is the method after the model in the URL.
func (gemini) Op(stream bool) string {
	if stream {
		return "streamGenerateContent?alt=sse"
	}
	return "generateContent"
}

// geminiMethods are the methods of /v1beta/models/{model}:{method} the
// gateway serves, in the order a model lists them (supportedGenerationMethods).
var geminiMethods = [...]struct {
	name   string
	codec  Codec
	stream bool
}{
	{"generateContent", Gemini, false},
	{"streamGenerateContent", Gemini, true},
	{"countTokens", GeminiCountTokens, false},
}

// GeminiMethod returns the codec of Gemini's method name and whether it
// streams; ok is false for a method the gateway does not serve
// (embedContent, …).
func GeminiMethod(name string) (c Codec, stream, ok bool) {
	for _, m := range geminiMethods {
		if m.name == name {
			return m.codec, m.stream, true
		}
	}
	return nil, false, false
}

// Encode passes the body through: the model goes in the URL, not the body.
func (gemini) Encode(body []byte, _ string, f Family) ([]byte, error) {
	if f != FamilyGemini {
		return nil, ErrIncompatible
	}
	return body, nil
}

// Usage reads usageMetadata (geminiUsage): promptTokenCount, the cached
// ones among them (cachedContentTokenCount), and the candidates' and
// thoughts' tokens.
func (gemini) Usage(body []byte) Usage { return geminiUsage(gjson.GetBytes(body, "usageMetadata")) }

// Observe reads each chunk's usageMetadata (the latest is the total),
// counts the chunks with parts, and finishes on a finishReason.
func (g gemini) Observe(s *StreamState, ev *Event) {
	if bytes.Contains(ev.Data, []byte(`"parts"`)) {
		s.Deltas++
	}
	if bytes.Contains(ev.Data, []byte(`"usageMetadata"`)) {
		u := g.Usage(ev.Data)
		s.SetInput(&u)
		s.Out = u.Output
	}
	if bytes.Contains(ev.Data, []byte(`"finishReason"`)) && gjson.GetBytes(ev.Data, "candidates.0.finishReason").Str != "" {
		s.Finished = true
	}
	if bytes.HasPrefix(bytes.TrimSpace(ev.Data), []byte(`{"error"`)) {
		s.Finished = true
	}
}

// ErrorBody renders Google's {"error":{"code","message","status"}}.
func (gemini) ErrorBody(e Error) []byte {
	b, _ := json.Marshal(map[string]any{"error": map[string]any{"code": e.Status, "message": e.Message, "status": GoogleStatus(e.Status)}})
	return b
}

// StreamError is a data event holding Google's error object.
func (g gemini) StreamError(msg string) []byte {
	b := g.ErrorBody(Error{Status: http.StatusInternalServerError, Message: msg})
	return append(append([]byte("data: "), b...), "\n\n"...)
}

// GoogleStatus maps an HTTP status to the google.rpc.Code name Google's
// APIs put in error.status.
func GoogleStatus(status int) string {
	switch status {
	case 400, 413:
		return "INVALID_ARGUMENT"
	case 401:
		return "UNAUTHENTICATED"
	case 403:
		return "PERMISSION_DENIED"
	case 404:
		return "NOT_FOUND"
	case 429:
		return "RESOURCE_EXHAUSTED"
	case 499:
		return "CANCELLED"
	case 501:
		return "UNIMPLEMENTED"
	case 503, 529:
		return "UNAVAILABLE"
	case 504:
		return "DEADLINE_EXCEEDED"
	}
	return "INTERNAL"
}
