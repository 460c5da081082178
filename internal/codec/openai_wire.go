package codec

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// Wire helpers shared by the OpenAI Chat Completions and Responses
// translators: reading the JSON shapes both protocols use (image URLs,
// argument strings, errors) and writing JSON by appending to a byte slice,
// which keeps the stream encoders free of per-event marshalling.

// openAIProtocols are the protocols of the OpenAI family, for Needs that
// both of them can express.
const (
	protoChat      = "openai-chat"
	protoResponses = "openai-responses"
	protoAnthropic = "anthropic"
	protoGemini    = "gemini"
)

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
		r.Need("image_url", protoChat, protoResponses, protoAnthropic)
		return Part{Kind: PartImage, URL: url}, nil
	}
	return Part{}, fmt.Errorf("%s: must be an http(s) URL or a base64 data URL", path)
}

// imageURL is the URL an image part is sent as: its own, or a data URL.
func appendImageURL(b []byte, p *Part) []byte {
	if p.URL != "" {
		return gjson.AppendJSONString(b, p.URL)
	}
	return gjson.AppendJSONString(b, "data:"+p.MediaType+";base64,"+p.Data)
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

// arguments is the JSON text a tool call's arguments are sent as.
func arguments(p *Part) string {
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

// textOf joins the text parts of parts with sep.
func textOf(parts []Part, sep string) string {
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

// jsonWriter appends JSON to a byte slice. Its methods write a value or a
// "key": prefix; the caller writes the punctuation between them.
type jsonWriter struct{ b []byte }

func (w *jsonWriter) raw(s string) { w.b = append(w.b, s...) }
func (w *jsonWriter) str(s string) { w.b = gjson.AppendJSONString(w.b, s) }
func (w *jsonWriter) int(n int64)  { w.b = strconv.AppendInt(w.b, n, 10) }
func (w *jsonWriter) float(f float64) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		w.b = append(w.b, "null"...)
		return
	}
	w.b = strconv.AppendFloat(w.b, f, 'g', -1, 64)
}
func (w *jsonWriter) key(k string) { w.b = append(append(append(w.b, '"'), k...), `":`...) }
func (w *jsonWriter) comma()       { w.b = append(w.b, ',') }
func (w *jsonWriter) bool(v bool)  { w.b = strconv.AppendBool(w.b, v) }

// json writes v, raw JSON, or fallback when v is empty or not JSON.
func (w *jsonWriter) json(v []byte, fallback string) {
	if len(v) == 0 || !gjson.ValidBytes(v) {
		w.b = append(w.b, fallback...)
		return
	}
	w.b = append(w.b, compactJSON(v)...)
}
func (w *jsonWriter) keyStr(k, v string) { w.key(k); w.str(v) }

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
