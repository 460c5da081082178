package codec

import (
	"strings"

	"github.com/tidwall/gjson"
)

// appendJSONSchema appends the JSON Schema a Gemini OpenAPI-subset Schema
// (a function declaration's parameters) means: type names lowercased
// ("OBJECT" → "object"), nullable: true folded into the type as
// [type, "null"], snake_case keywords in camelCase, and Gemini's
// propertyOrdering dropped. Property names are kept as they are.
func appendJSONSchema(b []byte, v gjson.Result) []byte {
	if !v.IsObject() {
		return append(b, v.Raw...)
	}
	nullable := gjField(v, "nullable").Bool()
	b = append(b, '{')
	first := true
	v.ForEach(func(k, f gjson.Result) bool {
		key := camelKey(k.Str)
		if key == "nullable" || key == "propertyOrdering" {
			return true
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = wireString(b, key)
		b = append(b, ':')
		switch key {
		case "type":
			b = appendSchemaType(b, f, nullable)
		case "properties":
			b = appendSchemaMap(b, f)
		case "items":
			b = appendJSONSchema(b, f)
		case "anyOf":
			b = appendSchemaList(b, f)
		default:
			b = append(b, f.Raw...)
		}
		return true
	})
	if nullable && !gjField(v, "type").Exists() {
		if !first {
			b = append(b, ',')
		}
		b = append(b, `"type":"null"`...)
	}
	return append(b, '}')
}

func appendSchemaType(b []byte, t gjson.Result, nullable bool) []byte {
	if t.Type != gjson.String {
		return append(b, t.Raw...)
	}
	name := strings.ToLower(t.Str)
	if !nullable || name == "null" {
		return wireString(b, name)
	}
	b = append(b, '[')
	b = wireString(b, name)
	return append(b, `,"null"]`...)
}

// appendSchemaMap writes an object of property name → schema.
func appendSchemaMap(b []byte, m gjson.Result) []byte {
	if !m.IsObject() {
		return append(b, m.Raw...)
	}
	b = append(b, '{')
	first := true
	m.ForEach(func(k, s gjson.Result) bool {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = wireString(b, k.Str)
		b = append(b, ':')
		b = appendJSONSchema(b, s)
		return true
	})
	return append(b, '}')
}

// appendSchemaList writes an array of schemas.
func appendSchemaList(b []byte, l gjson.Result) []byte {
	if !l.IsArray() {
		return append(b, l.Raw...)
	}
	b = append(b, '[')
	first := true
	l.ForEach(func(_, s gjson.Result) bool {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendJSONSchema(b, s)
		return true
	})
	return append(b, ']')
}
