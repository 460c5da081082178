package admin

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"switchyard/internal/config"
)

// The admin API's JSON is the config types' JSON (their json tags) with one
// change: durations are Go duration strings ("5s"), as in switchyard.yaml,
// instead of nanosecond numbers. A JSON number is still read as nanoseconds.
//
// Bodies are handled as trees (map[string]any with json.Number leaves), so
// that PATCH can merge them into the stored object (RFC 7386) and fill what
// is missing from the defaults before the tree is decoded, field by field,
// into the config type with every problem reported under its key path.

var durationType = reflect.TypeFor[time.Duration]()

// tree is a decoded JSON object.
type tree = map[string]any

// toWire returns v, a config struct, as a JSON object tree with durations
// as Go duration strings and empty lists as [] (not null).
func toWire(v any) (tree, error) {
	b, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("encoding %T: %w", v, err)
	}
	var t tree
	if err := decodeJSON(bytes.NewReader(b), &t); err != nil {
		return nil, fmt.Errorf("encoding %T: %w", v, err)
	}
	normalizeWire(reflect.TypeOf(v), t)
	return t, nil
}

// decodeJSON decodes one JSON value from r with numbers kept as json.Number.
func decodeJSON(r interface{ Read([]byte) (int, error) }, v any) error {
	dec := json.NewDecoder(r)
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return err
	}
	if dec.More() {
		return fmt.Errorf("unexpected data after the JSON value")
	}
	return nil
}

// normalizeWire rewrites, in node (the JSON form of a value of type t),
// every time.Duration from nanoseconds to a duration string and every null
// list to [].
func normalizeWire(t reflect.Type, node any) any {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	switch {
	case t == durationType:
		if n, ok := node.(json.Number); ok {
			if ns, err := n.Int64(); err == nil {
				return time.Duration(ns).String()
			}
		}
	case t.Kind() == reflect.Struct:
		obj, ok := node.(tree)
		if !ok {
			return node
		}
		for _, f := range jsonFields(t) {
			if v, ok := obj[f.name]; ok {
				obj[f.name] = normalizeWire(t.FieldByIndex(f.index).Type, v)
			}
		}
	case t.Kind() == reflect.Slice:
		if node == nil {
			return []any{}
		}
		if list, ok := node.([]any); ok {
			for i := range list {
				list[i] = normalizeWire(t.Elem(), list[i])
			}
		}
	case t.Kind() == reflect.Map:
		if obj, ok := node.(tree); ok {
			for k, v := range obj {
				obj[k] = normalizeWire(t.Elem(), v)
			}
		}
	}
	return node
}

// fieldInfo is one JSON-visible field of a struct.
type fieldInfo struct {
	name  string
	index []int
}

// jsonFields lists t's fields as encoding/json sees them: by their json
// name, the fields of an untagged embedded struct promoted, "-" skipped.
func jsonFields(t reflect.Type) []fieldInfo {
	var out []fieldInfo
	for i := range t.NumField() {
		f := t.Field(i)
		if !f.IsExported() {
			continue
		}
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" {
			continue
		}
		if f.Anonymous && name == "" && f.Type.Kind() == reflect.Struct {
			for _, sub := range jsonFields(f.Type) {
				out = append(out, fieldInfo{name: sub.name, index: append([]int{i}, sub.index...)})
			}
			continue
		}
		if name == "" {
			name = f.Name
		}
		out = append(out, fieldInfo{name: name, index: []int{i}})
	}
	return out
}

// mergePatch applies patch to target as RFC 7386 JSON Merge Patch does: an
// object merges key by key, null deletes, anything else replaces. target's
// maps are modified in place.
func mergePatch(target, patch any) any {
	p, ok := patch.(tree)
	if !ok {
		return patch
	}
	t, ok := target.(tree)
	if !ok {
		t = tree{}
	}
	for k, v := range p {
		if v == nil {
			delete(t, k)
			continue
		}
		t[k] = mergePatch(t[k], v)
	}
	return t
}

// fillMissing copies into t every key of defaults that t lacks, recursing
// into objects both have.
func fillMissing(t, defaults tree) {
	for k, dv := range defaults {
		tv, ok := t[k]
		if !ok {
			t[k] = dv
			continue
		}
		to, tok := tv.(tree)
		do, dok := dv.(tree)
		if tok && dok {
			fillMissing(to, do)
		}
	}
}

// fromWire decodes the object tree t into a new T, reporting each unknown
// key and each value of the wrong type under its path ("queue.timeout",
// "models[1]").
func fromWire[T any](t tree) (T, config.Errors) {
	var out T
	var errs config.Errors
	decodeValue(reflect.ValueOf(&out).Elem(), t, "", &errs)
	return out, errs
}

// decodeValue sets v from node, the JSON form of a value of v's type.
func decodeValue(v reflect.Value, node any, path string, errs *config.Errors) {
	bad := func(want string) {
		*errs = append(*errs, config.FieldError{Path: path, Msg: "must be " + want + ", got " + describe(node)})
	}
	if node == nil {
		v.SetZero()
		return
	}
	if v.Type() == durationType {
		switch n := node.(type) {
		case string:
			d, err := time.ParseDuration(n)
			if err != nil {
				*errs = append(*errs, config.FieldError{Path: path, Msg: fmt.Sprintf("must be a duration such as \"30s\", got %q", n)})
				return
			}
			v.SetInt(int64(d))
		case json.Number:
			ns, err := n.Int64()
			if err != nil {
				bad(`a duration such as "30s"`)
				return
			}
			v.SetInt(ns)
		default:
			bad(`a duration such as "30s"`)
		}
		return
	}
	switch v.Kind() {
	case reflect.Pointer:
		elem := reflect.New(v.Type().Elem())
		decodeValue(elem.Elem(), node, path, errs)
		v.Set(elem)
	case reflect.Bool:
		b, ok := node.(bool)
		if !ok {
			bad("true or false")
			return
		}
		v.SetBool(b)
	case reflect.String:
		s, ok := node.(string)
		if !ok {
			bad("a string")
			return
		}
		v.SetString(s)
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		n, ok := node.(json.Number)
		if !ok {
			bad("an integer")
			return
		}
		i, err := strconv.ParseInt(n.String(), 10, 64)
		if err != nil || v.OverflowInt(i) {
			bad("an integer")
			return
		}
		v.SetInt(i)
	case reflect.Float32, reflect.Float64:
		n, ok := node.(json.Number)
		if !ok {
			bad("a number")
			return
		}
		f, err := n.Float64()
		if err != nil {
			bad("a number")
			return
		}
		v.SetFloat(f)
	case reflect.Slice:
		list, ok := node.([]any)
		if !ok {
			bad("a list")
			return
		}
		s := reflect.MakeSlice(v.Type(), len(list), len(list))
		for i, item := range list {
			decodeValue(s.Index(i), item, fmt.Sprintf("%s[%d]", path, i), errs)
		}
		v.Set(s)
	case reflect.Map:
		obj, ok := node.(tree)
		if !ok || v.Type().Key().Kind() != reflect.String {
			bad("an object")
			return
		}
		m := reflect.MakeMapWithSize(v.Type(), len(obj))
		for k, item := range obj {
			elem := reflect.New(v.Type().Elem()).Elem()
			decodeValue(elem, item, join(path, k), errs)
			m.SetMapIndex(reflect.ValueOf(k).Convert(v.Type().Key()), elem)
		}
		v.Set(m)
	case reflect.Struct:
		obj, ok := node.(tree)
		if !ok {
			bad("an object")
			return
		}
		fields := map[string][]int{}
		for _, f := range jsonFields(v.Type()) {
			fields[f.name] = f.index
		}
		for _, k := range sortedKeys(obj) {
			idx, known := fields[k]
			if !known {
				*errs = append(*errs, config.FieldError{Path: join(path, k), Msg: "unknown field"})
				continue
			}
			decodeValue(v.FieldByIndex(idx), obj[k], join(path, k), errs)
		}
	default:
		bad("a supported value")
	}
}

// join appends key to a dotted path.
func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

// describe names a JSON value's type for an error message.
func describe(node any) string {
	switch n := node.(type) {
	case string:
		return strconv.Quote(n)
	case json.Number:
		return n.String()
	case bool:
		return strconv.FormatBool(n)
	case []any:
		return "a list"
	case tree:
		return "an object"
	}
	return "null"
}

// redactSecret is how the admin API shows an upstream api_key: "sk-…" and
// the last four characters for an "sk-" key, "…" and the last four for
// other keys of 8 or more characters, "…" alone for shorter ones (four
// characters would be half of them), "" for none.
func redactSecret(s string) string {
	switch {
	case s == "":
		return ""
	case len(s) < 8:
		return "…"
	case strings.HasPrefix(s, "sk-") && len(s) >= 12:
		return "sk-…" + s[len(s)-4:]
	default:
		return "…" + s[len(s)-4:]
	}
}
