package mock

import (
	"strings"

	"github.com/tidwall/gjson"
)

// chooseTools returns the tools the answer calls: none unless the request
// offers tools, its last turn is the user's own and tool_choice allows a
// call; then the named tool, or the first two when the user's text has the
// word "parallel" and parallel calls are allowed, or else the first one —
// except that more than maxEagerTools tools offered with tool_choice auto
// (an agent's toolbox) get no call.
func chooseTools(cv *convo) []toolDef {
	if len(cv.tools) == 0 || !cv.userTurn || cv.choice == choiceNone {
		return nil
	}
	if cv.choice == choiceNamed {
		for _, t := range cv.tools {
			if t.name == cv.choiceName {
				return []toolDef{t}
			}
		}
		return nil // the inspector refuses an unknown name
	}
	if !cv.single && len(cv.tools) >= 2 && containsWord(cv.userText, "parallel") {
		return cv.tools[:2]
	}
	if cv.choice == choiceAny || len(cv.tools) <= maxEagerTools {
		return cv.tools[:1]
	}
	// auto with an agent's toolbox (Claude Code and Codex offer a dozen
	// tools on every turn, and their prompts talk about them): no call, so
	// that an agent CLI pointed at the demo gets an answer instead of a
	// loop of tool calls. tool_choice any or a named tool still calls.
	return nil
}

// maxEagerTools is the most tools a request may offer for the mock to call
// the first one unasked.
const maxEagerTools = 4

// maxSchemaDepth bounds how deep argsFor follows nested required objects.
const maxSchemaDepth = 8

// argsFor builds a call's arguments from the tool's JSON Schema: an object
// with every required property filled with an example of its type (see
// appendExample), in the order "required" lists them.
func argsFor(schema gjson.Result) []byte {
	return appendObjectExample(make([]byte, 0, 64), schema, 0)
}

func appendObjectExample(buf []byte, schema gjson.Result, depth int) []byte {
	buf = append(buf, '{')
	props := schema.Get("properties")
	for i, name := range schema.Get("required").Array() {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendJSONString(buf, name.String())
		buf = append(buf, ':')
		buf = appendExample(buf, name.String(), member(props, name.String()), depth+1)
	}
	return append(buf, '}')
}

// appendExample appends a value of the schema's type for a property called
// name: its first enum value; a string ("Paris" for a property named like
// a location or city, else "test"); 1 for a number or integer; true; [];
// an object with its own required properties filled; null. The first
// non-null type of a type list, and the first alternative of anyOf/oneOf,
// are used. Gemini's upper-case types are read too.
func appendExample(buf []byte, name string, schema gjson.Result, depth int) []byte {
	if e := schema.Get("enum.0"); e.Exists() {
		return append(buf, e.Raw...)
	}
	for _, alt := range [...]string{"anyOf.0", "oneOf.0"} {
		if a := schema.Get(alt); a.IsObject() {
			return appendExample(buf, name, a, depth)
		}
	}
	switch schemaType(schema) {
	case "number", "integer":
		return append(buf, '1')
	case "boolean":
		return append(buf, "true"...)
	case "array":
		return append(buf, "[]"...)
	case "object":
		if depth >= maxSchemaDepth {
			return append(buf, "{}"...)
		}
		return appendObjectExample(buf, schema, depth)
	case "null":
		return append(buf, "null"...)
	}
	lower := strings.ToLower(name)
	if strings.Contains(lower, "location") || strings.Contains(lower, "city") {
		return append(buf, `"Paris"`...)
	}
	return append(buf, `"test"`...)
}

// schemaType is a schema's type in lower case: the first non-null one of
// a list, "object" for an untyped schema with properties, else "string".
func schemaType(schema gjson.Result) string {
	t := schema.Get("type")
	if t.IsArray() {
		for _, v := range t.Array() {
			if s := strings.ToLower(v.String()); s != "null" {
				return s
			}
		}
		return "null"
	}
	if t.Type == gjson.String {
		return strings.ToLower(t.Str)
	}
	if schema.Get("properties").IsObject() {
		return "object"
	}
	return "string"
}

// member returns obj's member called key, which may hold characters that a
// gjson path would read as syntax.
func member(obj gjson.Result, key string) gjson.Result {
	var out gjson.Result
	obj.ForEach(func(k, v gjson.Result) bool {
		if k.String() == key {
			out = v
			return false
		}
		return true
	})
	return out
}
