package codec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// Wire helpers shared by the OpenAI Chat Completions and Responses
// translators: reading the JSON shapes both protocols use (image URLs,
// argument strings, errors) and writing JSON by appending to a byte slice,
// which keeps the stream encoders free of per-event marshalling.

// maxErrorText bounds the body text an unparseable error answer becomes.
const maxErrorText = 512

// decodeOpenAIError reads {"error":{"message","type","code"}} (also the
// {"error":"text"} some OpenAI-compatible servers send); anything else
// becomes Message: the body's text, cut to maxErrorText bytes.
func decodeOpenAIError(status int, body []byte) Error {
	e := Error{Status: status}
	root := gjson.ParseBytes(body)
	errv := root.Get("error")
	switch {
	case errv.IsObject():
		e.Message = errv.Get("message").String()
		e.Type = errv.Get("type").String()
		if c := errv.Get("code"); c.Type == gjson.String || c.Type == gjson.Number {
			e.Code = c.String()
		}
		if e.Message != "" || e.Type != "" || e.Code != "" {
			return e
		}
	case errv.Type == gjson.String && errv.Str != "":
		e.Message = errv.Str
		return e
	}
	e.Message = truncateText(strings.TrimSpace(string(body)), maxErrorText)
	return e
}

// truncateText cuts s to at most n bytes without splitting a UTF-8 sequence.
func truncateText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}

// parseImageURL turns an OpenAI image URL into an image part: a data URL
// (data:<mime>;base64,<data>) becomes MediaType and Data, an http(s) URL
// stays a URL and records the image_url need on r. path names the field in
// errors.
func parseImageURL(r *Request, url, path string) (Part, error) {
	if rest, ok := strings.CutPrefix(url, "data:"); ok {
		meta, data, ok := strings.Cut(rest, ",")
		mime, isBase64 := strings.CutSuffix(meta, ";base64")
		if !ok || !isBase64 || mime == "" {
			return Part{}, fmt.Errorf("%s: a data URL must be data:<media type>;base64,<data>", path)
		}
		return Part{Kind: PartImage, MediaType: mime, Data: data}, nil
	}
	if strings.HasPrefix(url, "https://") || strings.HasPrefix(url, "http://") {
		r.Need("image_url", "openai-chat", "openai-responses", "anthropic")
		return Part{Kind: PartImage, URL: url}, nil
	}
	return Part{}, fmt.Errorf("%s: must be an http(s) URL or a base64 data URL", path)
}

// appendImageURL appends the URL image part p is sent as, a JSON
// string: its own, or a data URL of its data.
func appendImageURL(b []byte, p *Part) []byte {
	if p.URL != "" {
		return wireString(b, p.URL)
	}
	return wireString(b, "data:"+p.MediaType+";base64,"+p.Data)
}

// parseArguments reads a tool call's arguments, a JSON string holding a
// JSON object; "" (what some servers send for a call without arguments)
// is {}.
func parseArguments(s string) (json.RawMessage, bool) {
	s = strings.TrimSpace(s)
	if s == "" {
		return json.RawMessage("{}"), true
	}
	if !gjson.Valid(s) || !gjson.Parse(s).IsObject() {
		return nil, false
	}
	return json.RawMessage(s), true
}

// answerArguments reads the arguments of a tool call in an upstream's
// answer: "" is {}, anything else is kept as the model wrote it, even when
// it is not a JSON object, as a stream passes it on (the Anthropic and
// Gemini encoders wrap what is not an object, see wireArgs).
func answerArguments(s string) json.RawMessage {
	if strings.TrimSpace(s) == "" {
		return json.RawMessage("{}")
	}
	return json.RawMessage(s)
}

// argumentsText is the JSON text a tool call's arguments are sent as.
func argumentsText(p *Part) string {
	if len(p.Arguments) == 0 {
		return "{}"
	}
	return string(p.Arguments)
}

// effortForBudget maps a thinking budget to OpenAI's reasoning effort:
// ≤ 2048 tokens low, ≤ 16384 medium, else high; "" for no budget.
func effortForBudget(t *Thinking) string {
	switch {
	case t == nil:
		return ""
	case t.Effort != "":
		return t.Effort
	case t.BudgetTokens <= 0:
		return ""
	case t.BudgetTokens <= 2048:
		return "low"
	case t.BudgetTokens <= 16384:
		return "medium"
	}
	return "high"
}

// unixOr is created, or the current Unix time when it is 0 (an upstream
// that gave none).
func unixOr(created int64) int64 {
	if created != 0 {
		return created
	}
	return time.Now().Unix()
}

// withPrefix is id when it already starts with prefix, else prefix + id.
func withPrefix(prefix, id string) string {
	if strings.HasPrefix(id, prefix) {
		return id
	}
	return prefix + id
}

// containsKind reports whether parts hold a part of kind k.
func containsKind(parts []Part, k PartKind) bool {
	for i := range parts {
		if parts[i].Kind == k {
			return true
		}
	}
	return false
}

// joinText joins the text parts of parts with sep.
func joinText(parts []Part, sep string) string {
	n, count := 0, 0
	for i := range parts {
		if parts[i].Kind == PartText {
			n += len(parts[i].Text)
			count++
		}
	}
	if count == 1 {
		for i := range parts {
			if parts[i].Kind == PartText {
				return parts[i].Text
			}
		}
	}
	var sb strings.Builder
	sb.Grow(n + len(sep)*count)
	for i := range parts {
		if parts[i].Kind != PartText {
			continue
		}
		if sb.Len() > 0 {
			sb.WriteString(sep)
		}
		sb.WriteString(parts[i].Text)
	}
	return sb.String()
}

// jsonWriter appends JSON to a byte slice, with the wire* writers of
// wirejson.go. Its methods write a value or a "key": prefix; the caller
// writes the punctuation between them.
type jsonWriter struct{ b []byte }

func (w *jsonWriter) raw(s string)    { w.b = append(w.b, s...) }
func (w *jsonWriter) str(s string)    { w.b = wireString(w.b, s) }
func (w *jsonWriter) int(n int64)     { w.b = wireInt(w.b, n) }
func (w *jsonWriter) float(f float64) { w.b = wireFloat(w.b, f) }
func (w *jsonWriter) bool(v bool)     { w.b = wireBool(w.b, v) }
func (w *jsonWriter) comma()          { w.b = append(w.b, ',') }
func (w *jsonWriter) keyStr(k, v string) {
	w.b = append(append(append(w.b, '"'), k...), `":`...)
	w.str(v)
}

// object writes v, a JSON object (a schema), without insignificant
// whitespace, or fallback when v is empty or not an object.
func (w *jsonWriter) object(v []byte, fallback string) {
	w.b = wireRawObject(w.b, compactJSON(v), fallback)
}

// compactJSON is v without insignificant whitespace when it has any, so
// that a schema pasted with newlines does not bloat every request.
func compactJSON(v []byte) []byte {
	if bytes.IndexAny(v, "\n\r\t") < 0 {
		return v
	}
	var buf bytes.Buffer
	if json.Compact(&buf, v) != nil {
		return v
	}
	return buf.Bytes()
}
