package codec

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"unsafe"

	"github.com/tidwall/gjson"
)

// Reading for the Anthropic and Gemini translators: small gjson helpers
// that name what is wrong and where, and Gemini's two spellings of field
// names.

// camelKey returns a snake_case key in camelCase, and any other as it is.
func camelKey(k string) string {
	if strings.IndexByte(k, '_') <= 0 { // none, or a leading one (_responseJsonSchema)
		return k
	}
	b := make([]byte, 0, len(k))
	up := false
	for i := 0; i < len(k); i++ {
		switch c := k[i]; {
		case c == '_':
			up = true
		case up && c >= 'a' && c <= 'z':
			b = append(b, c-'a'+'A')
			up = false
		default:
			b = append(b, c)
			up = false
		}
	}
	return string(b)
}

// gjField returns v's field named key in camelCase, or else in snake_case.
func gjField(v gjson.Result, key string) gjson.Result {
	if f := v.Get(key); f.Exists() {
		return f
	}
	for i := 0; i < len(key); i++ {
		if c := key[i]; c >= 'A' && c <= 'Z' {
			return v.Get(snakeKey(key))
		}
	}
	return gjson.Result{}
}

// snakeKey returns a camelCase key in snake_case.
func snakeKey(k string) string {
	b := make([]byte, 0, len(k)+4)
	for i := 0; i < len(k); i++ {
		if c := k[i]; c >= 'A' && c <= 'Z' {
			b = append(b, '_', c-'A'+'a')
		} else {
			b = append(b, c)
		}
	}
	return string(b)
}

// gjOnlyKey reports whether the object v has exactly one member, key.
func gjOnlyKey(v gjson.Result, key string) bool {
	n, found := 0, false
	v.ForEach(func(k, _ gjson.Result) bool {
		n++
		found = found || k.Str == key
		return n < 2
	})
	return n == 1 && found
}

// gjCacheControl returns v's cache_control object, copied, or nil.
func gjCacheControl(v gjson.Result) json.RawMessage {
	cc := v.Get("cache_control")
	if !cc.IsObject() {
		return nil
	}
	return json.RawMessage(cc.Raw)
}

// gjString returns f, the field key of the object path names, as a
// string, or an error naming it.
func gjString(f gjson.Result, path func() string, key string) (string, error) {
	if f.Type != gjson.String {
		if !f.Exists() {
			return "", fmt.Errorf("%s.%s: field required", path(), key)
		}
		return "", fmt.Errorf("%s.%s: must be a string", path(), key)
	}
	return f.Str, nil
}

// gjPositiveInt returns v as an integer ≥ 1.
func gjPositiveInt(v gjson.Result) (int64, bool) {
	if v.Type != gjson.Number || v.Num < 1 || v.Num != float64(int64(v.Num)) {
		return 0, false
	}
	return int64(v.Num), true
}

// gjStrings returns v, an array of strings, or an error naming field.
func gjStrings(v gjson.Result, field string) ([]string, error) {
	if !v.IsArray() {
		return nil, fmt.Errorf("%s: must be an array of strings", field)
	}
	var out []string
	var err error
	v.ForEach(func(_, s gjson.Result) bool {
		if s.Type != gjson.String {
			err = fmt.Errorf("%s[%d]: must be a string", field, len(out))
			return false
		}
		out = append(out, s.Str)
		return true
	})
	return out, err
}

// gjEmptyObject reports whether the object v has no member.
func gjEmptyObject(v gjson.Result) bool {
	empty := true
	v.ForEach(func(_, _ gjson.Result) bool {
		empty = false
		return false
	})
	return empty
}

// gjEach calls fn for each element of the array v, with its index, and
// stops at the first error; v not an array is an error naming field.
func gjEach(v gjson.Result, field string, fn func(i int, e gjson.Result) error) error {
	if !v.IsArray() {
		return errors.New(field + ": must be an array")
	}
	var err error
	i := 0
	v.ForEach(func(_, e gjson.Result) bool {
		err = fn(i, e)
		i++
		return err == nil
	})
	return err
}

// peekJSON is gjson.GetBytes without its copy: the result's Raw and Str
// may point into data, so it must not outlive data nor be kept (a stream
// event's buffer is reused for the next event). For per-event peeks whose
// result is read at once: GetBytes copies every match, an allocation per
// event (docs/benchmarks.md#long-streams).
func peekJSON(data []byte, path string) gjson.Result {
	return gjson.Get(unsafe.String(unsafe.SliceData(data), len(data)), path)
}

// nonEmptyString reports whether r is a JSON string other than "", without
// unescaping it (r.Str allocates for a string with escapes).
func nonEmptyString(r gjson.Result) bool {
	return r.Type == gjson.String && len(r.Raw) > 2
}
