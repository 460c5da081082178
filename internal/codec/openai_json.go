package codec

import (
	"encoding/json"
	"fmt"
	"math"

	"github.com/tidwall/gjson"
)

// Typed readers of gjson values for the OpenAI request decoders. Each
// takes the value and its JSON path, and returns an error that names the
// path and what was wrong; a missing value or JSON null is the zero value.

// jsonKind names v's JSON type in errors.
func jsonKind(v gjson.Result) string {
	switch v.Type {
	case gjson.String:
		return "a string"
	case gjson.Number:
		return "a number"
	case gjson.True, gjson.False:
		return "a boolean"
	case gjson.Null:
		return "null"
	}
	if v.IsArray() {
		return "an array"
	}
	return "an object"
}

// isNull reports whether v is absent or JSON null.
func isNull(v gjson.Result) bool { return v.Type == gjson.Null }

// notString reports whether v is present, not null, and not a string.
func notString(v gjson.Result) bool { return !isNull(v) && v.Type != gjson.String }

// objectFields reads, in one pass over the object v, the value of each of
// keys into out (out[i] for keys[i]); absent keys leave the zero Result.
func objectFields(v gjson.Result, keys []string, out []gjson.Result) {
	v.ForEach(func(k, val gjson.Result) bool {
		for i := range keys {
			if k.Str == keys[i] {
				out[i] = val
				break
			}
		}
		return true
	})
}

// wantString reads a string.
func wantString(v gjson.Result, path string) (string, error) {
	if isNull(v) || v.Type == gjson.String {
		return v.Str, nil
	}
	return "", fmt.Errorf("%s: must be a string, got %s", path, jsonKind(v))
}

// wantBool reads a boolean.
func wantBool(v gjson.Result, path string) (bool, error) {
	if isNull(v) || v.IsBool() {
		return v.Bool(), nil
	}
	return false, fmt.Errorf("%s: must be a boolean, got %s", path, jsonKind(v))
}

// wantFloat reads a number into a pointer, nil when absent.
func wantFloat(v gjson.Result, path string) (*float64, error) {
	if isNull(v) {
		return nil, nil
	}
	if v.Type != gjson.Number {
		return nil, fmt.Errorf("%s: must be a number, got %s", path, jsonKind(v))
	}
	f := v.Num
	return &f, nil
}

// wantCount reads a non-negative integer.
func wantCount(v gjson.Result, path string) (int64, error) {
	if isNull(v) {
		return 0, nil
	}
	if v.Type != gjson.Number || v.Num < 0 || v.Num != math.Trunc(v.Num) || v.Num > math.MaxInt64/2 {
		return 0, fmt.Errorf("%s: must be a non-negative integer, got %s", path, v.Raw)
	}
	return int64(v.Num), nil
}

// wantArray checks that v is an array (or absent).
func wantArray(v gjson.Result, path string) error {
	if isNull(v) || v.IsArray() {
		return nil
	}
	return fmt.Errorf("%s: must be an array, got %s", path, jsonKind(v))
}

// wantObject checks that v is an object (or absent).
func wantObject(v gjson.Result, path string) error {
	if isNull(v) || v.IsObject() {
		return nil
	}
	return fmt.Errorf("%s: must be an object, got %s", path, jsonKind(v))
}

// eachIndexed calls fn for each element of the array v with its index,
// stopping at the first error.
func eachIndexed(v gjson.Result, fn func(i int, e gjson.Result) error) error {
	var err error
	i := 0
	v.ForEach(func(_, e gjson.Result) bool {
		err = fn(i, e)
		i++
		return err == nil
	})
	return err
}

// wantStops reads stop sequences: a string or an array of strings.
func wantStops(v gjson.Result, path string) ([]string, error) {
	switch {
	case isNull(v):
		return nil, nil
	case v.Type == gjson.String:
		return []string{v.Str}, nil
	case !v.IsArray():
		return nil, fmt.Errorf("%s: must be a string or an array of strings, got %s", path, jsonKind(v))
	}
	var stops []string
	err := eachIndexed(v, func(i int, e gjson.Result) error {
		if e.Type != gjson.String {
			return fmt.Errorf("%s[%d]: must be a string, got %s", path, i, jsonKind(e))
		}
		stops = append(stops, e.Str)
		return nil
	})
	return stops, err
}

// parseBody checks that body is a JSON object and returns it parsed. The
// body is copied once, so the parsed values outlive it.
func parseBody(body []byte) (gjson.Result, error) {
	if !gjson.ValidBytes(body) {
		return gjson.Result{}, fmt.Errorf("request body is not valid JSON")
	}
	root := gjson.Parse(string(body))
	if !root.IsObject() {
		return gjson.Result{}, fmt.Errorf("request body must be a JSON object, got %s", jsonKind(root))
	}
	return root, nil
}

// functionTool reads a function's name, description and parameters
// schema; path (computed only for an error) names the object holding them.
func functionTool(name, desc, params gjson.Result, path func() string) (Tool, error) {
	if name.Type != gjson.String || name.Str == "" {
		return Tool{}, fmt.Errorf("%s.name: must be a non-empty string", path())
	}
	if !isNull(desc) && desc.Type != gjson.String {
		return Tool{}, fmt.Errorf("%s.description: must be a string, got %s", path(), jsonKind(desc))
	}
	t := Tool{Name: name.Str, Description: desc.Str}
	if !isNull(params) {
		if !params.IsObject() {
			return Tool{}, fmt.Errorf("%s.parameters: must be a JSON Schema object, got %s", path(), jsonKind(params))
		}
		t.Schema = json.RawMessage(params.Raw)
	}
	return t, nil
}

// setToolChoiceMode sets the mode named by OpenAI's string tool_choice.
func setToolChoiceMode(tc *ToolChoice, s string) error {
	switch s {
	case "auto":
		tc.Mode = ToolAuto
	case "none":
		tc.Mode = ToolNone
	case "required":
		tc.Mode = ToolAny
	default:
		return fmt.Errorf("tool_choice: must be \"auto\", \"none\", \"required\" or an object, got %q", s)
	}
	return nil
}
