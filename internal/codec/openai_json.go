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

// functionToolKeys are the fields of a tool definition: its type, (Chat)
// the function object, and the function's name, description and
// parameters (in Chat inside the function object, in Responses beside the
// type).
var functionToolKeys = [...]string{"type", "function", "name", "description", "parameters"}

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

// toolTurns follows the tool calls and results of a request being
// decoded: results that follow one another share one user message (a
// canonical tool turn), and each result names the tool its call named.
type toolTurns struct {
	// calls are the tool calls seen so far.
	calls []Part
	// grouping: the last message holds tool results, and the next result
	// joins it.
	grouping bool
}

// call records a tool call.
func (t *toolTurns) call(p Part) { t.calls = append(t.calls, p) }

// result appends a tool result answering call id with content to r,
// naming the tool.
func (t *toolTurns) result(r *Request, id string, content []Part) {
	p := Part{Kind: PartToolResult, ID: id, Name: t.name(id), Content: content}
	if t.grouping {
		last := &r.Messages[len(r.Messages)-1]
		last.Parts = append(last.Parts, p)
		return
	}
	r.Messages = append(r.Messages, Message{Role: RoleUser, Parts: []Part{p}})
	t.grouping = true
}

// other notes a message that is not a tool result: the next result starts
// a new turn.
func (t *toolTurns) other() { t.grouping = false }

// name is the name of the latest tool call with id, or "".
func (t *toolTurns) name(id string) string {
	for k := len(t.calls) - 1; k >= 0; k-- {
		if t.calls[k].ID == id {
			return t.calls[k].Name
		}
	}
	return ""
}

// sharedFields are the top-level request fields Chat and Responses share.
type sharedFields struct {
	model, temperature, topP, stream, parallelToolCalls, user, safetyIdentifier, tools, toolChoice gjson.Result
}

// collect keeps v when k names a shared field, and reports whether it did.
func (f *sharedFields) collect(k string, v gjson.Result) bool {
	switch k {
	case "model":
		f.model = v
	case "temperature":
		f.temperature = v
	case "top_p":
		f.topP = v
	case "stream":
		f.stream = v
	case "parallel_tool_calls":
		f.parallelToolCalls = v
	case "user":
		f.user = v
	case "safety_identifier":
		f.safetyIdentifier = v
	case "tools":
		f.tools = v
	case "tool_choice":
		f.toolChoice = v
	default:
		return false
	}
	return true
}

// read sets r's model, temperature, top_p, stream, parallel_tool_calls and
// user (or, without one, safety_identifier).
func (f *sharedFields) read(r *Request) error {
	var err error
	if r.Model, err = wantString(f.model, "model"); err != nil {
		return err
	}
	if r.Temperature, err = wantFloat(f.temperature, "temperature"); err != nil {
		return err
	}
	if r.TopP, err = wantFloat(f.topP, "top_p"); err != nil {
		return err
	}
	if r.Stream, err = wantBool(f.stream, "stream"); err != nil {
		return err
	}
	if !isNull(f.parallelToolCalls) {
		v, err := wantBool(f.parallelToolCalls, "parallel_tool_calls")
		if err != nil {
			return err
		}
		r.ParallelToolCalls = &v
	}
	if r.User, err = wantString(f.user, "user"); err != nil {
		return err
	}
	if r.User == "" {
		r.User, err = wantString(f.safetyIdentifier, "safety_identifier")
	}
	return err
}
