package config

import (
	"fmt"
	"math"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"
)

// The decoder behind Parse: the YAML tree to typed values, with every
// problem located by its key path and ${ENV} references expanded.

// decoder turns the generic YAML tree into typed values, reporting every
// problem with its path rather than stopping at the first.
type decoder struct {
	lookup func(string) (string, bool)
	cfg    *Config // partially decoded; routes inherit cfg.Defaults
	errs   Errors
}

var durationType = reflect.TypeOf(time.Duration(0))

func (d *decoder) fail(path, format string, args ...any) {
	d.errs = append(d.errs, FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
}

func (d *decoder) decode(v reflect.Value, raw any, path string) {
	if raw == nil { // `key:` with no value keeps the default
		return
	}
	switch v.Kind() {
	case reflect.Bool, reflect.Int, reflect.Int64, reflect.Float64:
		if s, ok := raw.(string); ok && v.Type() != durationType {
			raw = d.expand(s, path) // `weight: ${W}` reads the number from the environment
		}
	}
	if v.Type() == durationType {
		d.decodeDuration(v, raw, path)
		return
	}
	switch v.Kind() {
	case reflect.Struct:
		d.decodeStruct(v, raw, path, false)
	case reflect.Slice:
		d.decodeSlice(v, raw, path)
	case reflect.Map:
		d.decodeMap(v, raw, path)
	case reflect.Pointer:
		elem := reflect.New(v.Type().Elem())
		d.decode(elem.Elem(), raw, path)
		v.Set(elem)
	case reflect.String:
		s, ok := scalarString(raw)
		if !ok {
			d.fail(path, "must be a string, got %s", describe(raw))
			return
		}
		v.SetString(d.expand(s, path))
	case reflect.Bool:
		b, ok := raw.(bool)
		if s, isStr := raw.(string); isStr {
			b, ok = s == "true", s == "true" || s == "false"
		}
		if !ok {
			d.fail(path, "must be true or false, got %s", describe(raw))
			return
		}
		v.SetBool(b)
	case reflect.Int, reflect.Int64:
		n, ok := toInt(raw)
		if !ok {
			d.fail(path, "must be a whole number, got %s", describe(raw))
			return
		}
		v.SetInt(n)
	case reflect.Float64:
		f, ok := toFloat(raw)
		if !ok {
			d.fail(path, "must be a number, got %s", describe(raw))
			return
		}
		v.SetFloat(f)
	default:
		d.fail(path, "unsupported field type %s", v.Type())
	}
}

// decodeStruct decodes a block; mapValue says it is the value of a map
// entry (upstreams[].prices.PATTERN), whose path the schema does not hold,
// so an unknown key is matched against the block's own keys only.
func (d *decoder) decodeStruct(v reflect.Value, raw any, path string, mapValue bool) {
	m, ok := raw.(map[string]any)
	if !ok {
		d.fail(path, "must be a mapping, got %s", describe(raw))
		return
	}
	fields := yamlFields(v.Type())
	known := make(map[string]bool, len(fields))
	for _, f := range fields {
		known[f.name] = true
	}
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		switch {
		case known[k]:
		case mapValue:
			d.fail(join(path, k), "%s", unknownKeyOf(fields, k))
		default:
			d.fail(join(path, k), "%s", unknownKey(path, k))
		}
	}
	// Decode in declaration order so that `defaults` is known before `routes`.
	for _, f := range fields {
		if val, ok := m[f.name]; ok {
			d.decode(v.FieldByIndex(f.index), val, join(path, f.name))
		}
	}
}

func (d *decoder) decodeSlice(v reflect.Value, raw any, path string) {
	items, ok := raw.([]any)
	if !ok {
		if s, isStr := raw.(string); isStr && v.Type().Elem().Kind() == reflect.String {
			items = []any{s} // a lone string where a list is expected
		} else {
			d.fail(path, "must be a list, got %s", describe(raw))
			return
		}
	}
	out := reflect.MakeSlice(v.Type(), len(items), len(items))
	for i, item := range items {
		elem := out.Index(i)
		d.setElementDefault(elem)
		d.decode(elem, item, fmt.Sprintf("%s[%d]", path, i))
	}
	v.Set(out)
}

// setElementDefault gives list elements their per-element defaults; a route
// starts from the (already decoded) `defaults` block.
func (d *decoder) setElementDefault(elem reflect.Value) {
	switch p := elem.Addr().Interface().(type) {
	case *Upstream:
		*p = DefaultUpstream()
	case *Key:
		*p = DefaultKey()
	case *Team:
		*p = DefaultTeam()
	case *Route:
		*p = Route{RouteSettings: d.cfg.Defaults}
	}
}

func (d *decoder) decodeMap(v reflect.Value, raw any, path string) {
	m, ok := raw.(map[string]any)
	if !ok {
		d.fail(path, "must be a mapping, got %s", describe(raw))
		return
	}
	out := reflect.MakeMapWithSize(v.Type(), len(m))
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys) // report errors in a stable order
	for _, k := range keys {
		elem := reflect.New(v.Type().Elem()).Elem()
		if elem.Kind() == reflect.Struct && m[k] != nil {
			d.decodeStruct(elem, m[k], join(path, k), true)
		} else {
			d.decode(elem, m[k], join(path, k))
		}
		out.SetMapIndex(reflect.ValueOf(k), elem)
	}
	v.Set(out)
}

func (d *decoder) decodeDuration(v reflect.Value, raw any, path string) {
	switch x := raw.(type) {
	case string:
		s := d.expand(x, path)
		dur, err := time.ParseDuration(s)
		if err != nil {
			d.fail(path, "must be a duration such as 500ms, 30s or 5m, got %q", s)
			return
		}
		v.SetInt(int64(dur))
	case uint64, int64, int, float64:
		if n, ok := toInt(x); ok && n == 0 {
			v.SetInt(0)
			return
		}
		d.fail(path, "must be a duration with a unit such as 500ms, 30s or 5m, got %v", x)
	default:
		d.fail(path, "must be a duration such as 30s, got %s", describe(raw))
	}
}

// expand replaces ${NAME} with the environment's value and ${NAME:-fallback}
// with the value, or fallback when the variable is unset or empty; $${
// yields a literal ${. A value is inserted as it is, never expanded again.
// An unset variable without a fallback expands to "" and adds a warning; a
// malformed reference is an error.
func (d *decoder) expand(s, path string) string {
	if !strings.Contains(s, "${") {
		return s
	}
	var b strings.Builder
	for {
		start := strings.Index(s, "${")
		if start < 0 {
			b.WriteString(s)
			return b.String()
		}
		if start > 0 && s[start-1] == '$' { // $${ is an escaped ${
			b.WriteString(s[:start-1] + "${")
			s = s[start+2:]
			continue
		}
		end := strings.IndexByte(s[start:], '}')
		if end < 0 {
			d.fail(path, "unterminated ${ in value")
			return s
		}
		b.WriteString(s[:start])
		ref := s[start+2 : start+end]
		name, fallback, hasFallback := strings.Cut(ref, ":-")
		if !validEnvName(name) {
			d.fail(path, "invalid environment variable reference ${%s}", ref)
			s = s[start+end+1:]
			continue
		}
		val, ok := d.lookup(name)
		switch {
		case ok && val != "":
			b.WriteString(val)
		case hasFallback:
			b.WriteString(fallback)
		case !ok:
			d.cfg.Warnings = append(d.cfg.Warnings, FieldError{Path: path,
				Msg: fmt.Sprintf("environment variable %s is not set; using an empty value", name)})
		}
		s = s[start+end+1:]
	}
}

// validEnvName reports whether name is a shell variable name: a letter or
// underscore followed by letters, digits and underscores.
func validEnvName(name string) bool {
	if name == "" {
		return false
	}
	for i, r := range name {
		switch {
		case r == '_', r >= 'A' && r <= 'Z', r >= 'a' && r <= 'z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// yamlField is one key of a struct type: its name and the field's index
// path, through the inline structs the key was flattened from.
type yamlField struct {
	name  string
	index []int
	typ   reflect.Type
}

// yamlFields returns t's keys in declaration order, the keys of inline
// structs in their place. The decoder and the unknown-key suggestions
// (suggest.go) both read the schema through it.
func yamlFields(t reflect.Type) []yamlField {
	var out []yamlField
	for i := 0; i < t.NumField(); i++ {
		f := t.Field(i)
		name, inline := yamlName(f)
		if inline {
			for _, sub := range yamlFields(f.Type) {
				sub.index = append([]int{i}, sub.index...)
				out = append(out, sub)
			}
			continue
		}
		if name != "" {
			out = append(out, yamlField{name: name, index: []int{i}, typ: f.Type})
		}
	}
	return out
}

func yamlName(f reflect.StructField) (name string, inline bool) {
	tag := f.Tag.Get("yaml")
	if tag == "-" || !f.IsExported() {
		return "", false
	}
	name, opts, _ := strings.Cut(tag, ",")
	return name, strings.Contains(opts, "inline")
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func scalarString(raw any) (string, bool) {
	switch x := raw.(type) {
	case string:
		return x, true
	case uint64, int64, int, float64:
		return fmt.Sprint(x), true // `api_version: 2024` reads as text
	}
	return "", false
}

func toInt(raw any) (int64, bool) {
	switch x := raw.(type) {
	case int:
		return int64(x), true
	case int64:
		return x, true
	case uint64:
		if x > math.MaxInt64 {
			return 0, false
		}
		return int64(x), true
	case float64:
		if x != math.Trunc(x) || math.Abs(x) > 1<<53 {
			return 0, false
		}
		return int64(x), true
	case string:
		n, err := strconv.ParseInt(x, 10, 64)
		return n, err == nil
	}
	return 0, false
}

func toFloat(raw any) (float64, bool) {
	switch x := raw.(type) {
	case float64:
		return x, true
	case string:
		f, err := strconv.ParseFloat(x, 64)
		return f, err == nil
	}
	n, ok := toInt(raw)
	return float64(n), ok
}

func describe(raw any) string {
	switch x := raw.(type) {
	case map[string]any:
		return "a mapping"
	case []any:
		return "a list"
	case string:
		return fmt.Sprintf("%q", x)
	default:
		return fmt.Sprintf("%v", x)
	}
}
