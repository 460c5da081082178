package codec

import (
	"bytes"
	"math"
	"strconv"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// JSON writing for the Anthropic and Gemini translators. Their encoders
// build bodies and stream events by appending to a byte slice rather than
// marshalling maps: one pass, no reflection, and no allocation when the
// caller's slice has room.

const wireHex = "0123456789abcdef"

// wireString appends s as a JSON string. It escapes what encoding/json
// escapes except <, > and &, which it leaves literal as the providers do;
// invalid UTF-8 becomes U+FFFD.
func wireString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', wireHex[c>>4], wireHex[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' { // valid JSON, but not valid JavaScript
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', wireHex[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

// wireInt appends n.
func wireInt(b []byte, n int64) []byte { return strconv.AppendInt(b, n, 10) }

// wireFloat appends f as a JSON number (null for NaN and infinities, which
// JSON cannot hold and no decoder produces).
func wireFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, "null"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}

// wireBool appends true or false.
func wireBool(b []byte, v bool) []byte { return strconv.AppendBool(b, v) }

// wireStringOrNull writes s, or null when it is empty.
func wireStringOrNull(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return wireString(b, s)
}

// wireStrings appends ss as a JSON array of strings.
func wireStrings(b []byte, ss []string) []byte {
	b = append(b, '[')
	for i, s := range ss {
		if i > 0 {
			b = append(b, ',')
		}
		b = wireString(b, s)
	}
	return append(b, ']')
}

// wireRawObject appends raw when it is a JSON object, else def: schemas
// and cache_control markers pass through as the client wrote them, and a
// canonical value that is not an object cannot break the body.
func wireRawObject(b []byte, raw []byte, def string) []byte {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '{' && gjson.ValidBytes(raw) {
		return append(b, raw...)
	}
	return append(b, def...)
}

// wireArgs appends a tool call's arguments as the JSON object Anthropic's
// input and Gemini's args must be. Canonical Arguments are meant to be an
// object, but a Responses or Chat upstream may send anything: none becomes
// {}, other JSON is wrapped as {"value": <it>}, and text that is not JSON
// is wrapped as {"value": "<text>"}, so the model sees what it wrote.
func wireArgs(b []byte, raw []byte) []byte {
	raw = bytes.TrimSpace(raw)
	switch {
	case len(raw) == 0:
		return append(b, '{', '}')
	case !gjson.ValidBytes(raw):
		b = append(b, `{"value":`...)
		b = wireString(b, string(raw))
		return append(b, '}')
	case raw[0] == '{':
		return append(b, raw...)
	}
	b = append(b, `{"value":`...)
	b = append(b, raw...)
	return append(b, '}')
}

// partsText joins the text parts of parts (a tool result's content), skipping
// the others, with no separator.
func partsText(parts []Part) string {
	if len(parts) == 1 && parts[0].Kind == PartText {
		return parts[0].Text
	}
	var n int
	for _, p := range parts {
		if p.Kind == PartText {
			n += len(p.Text)
		}
	}
	b := make([]byte, 0, n)
	for _, p := range parts {
		if p.Kind == PartText {
			b = append(b, p.Text...)
		}
	}
	return string(b)
}
