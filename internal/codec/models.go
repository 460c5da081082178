package codec

import "encoding/json"

// ModelList renders GET /v1/models (Gemini: /v1beta/models) in family f's
// shape for the model names given, sorted.
func ModelList(f Family, names []string) []byte {
	data := make([]any, len(names))
	for i, n := range names {
		data[i] = modelObject(f, n)
	}
	var body any
	switch f {
	case FamilyAnthropic:
		first, last := "", ""
		if len(names) > 0 {
			first, last = names[0], names[len(names)-1]
		}
		body = map[string]any{"data": data, "has_more": false, "first_id": first, "last_id": last}
	case FamilyGemini:
		body = map[string]any{"models": data}
	default:
		body = map[string]any{"object": "list", "data": data}
	}
	b, _ := json.Marshal(body)
	return b
}

// ModelObject renders one model (GET /v1/models/{id}) in family f's shape.
func ModelObject(f Family, name string) []byte {
	b, _ := json.Marshal(modelObject(f, name))
	return b
}

func modelObject(f Family, n string) any {
	switch f {
	case FamilyAnthropic:
		return map[string]any{"type": "model", "id": n, "display_name": n, "created_at": "1970-01-01T00:00:00Z"}
	case FamilyGemini:
		methods := make([]string, len(geminiMethods))
		for i, m := range geminiMethods {
			methods[i] = m.name
		}
		return map[string]any{"name": "models/" + n, "displayName": n, "supportedGenerationMethods": methods}
	}
	return map[string]any{"id": n, "object": "model", "created": 0, "owned_by": "switchyard"}
}
