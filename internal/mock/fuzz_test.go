package mock

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"
)

// FuzzGenerate sends arbitrary bodies to every generating endpoint: the
// mock must answer 200 or 400 with valid JSON in the family's shape (in
// every frame of a Bedrock stream), and never panic.
func FuzzGenerate(f *testing.F) {
	for _, sc := range []scenario{
		{user: "hi"},
		{user: "both in parallel", tools: []string{"get_weather", "get_time"}},
		{user: "x", tools: []string{"get_weather"}, toolRound: true, reasoning: true},
		{user: "x", imageData: pngBase64, imageURL: "https://example.com/a.png", stop: []string{"a"}},
		{user: "x", choice: "get_time", tools: []string{"get_time"}, maxTokens: 2},
	} {
		for _, fam := range families {
			f.Add(uint8(0), sc.body(fam.name))
		}
	}
	f.Add(uint8(2), `{"model":"c","max_tokens":9,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"a"}]},{"role":"user","content":[{"type":"tool_result","tool_use_id":"a","content":[{"type":"image","source":{"type":"base64"}}]}]}]}`)
	f.Add(uint8(3), `{"contents":[{"parts":[{"functionResponse":{}}]}],"tools":[{"functionDeclarations":[{"name":""}]}]}`)
	f.Add(uint8(5), `{"anthropic_version":"vertex-2023-10-16","max_tokens":9,"messages":[{"role":"user","content":"hi"}]}`)
	paths := []struct{ path, key string }{
		{"/v1/chat/completions", ""},
		{"/v1/responses", ""},
		{"/v1/messages", ""},
		{"/v1beta/models/g:generateContent", "k"},
		{"/v1/projects/p/locations/l/publishers/google/models/g:generateContent", ""},
		{"/v1/projects/p/locations/l/publishers/anthropic/models/claude-x:rawPredict", ""},
		{"/model/anthropic.claude-v2/converse", ""},
		{"/model/anthropic.claude-v2/converse-stream", ""},
	}
	s := New(Options{Behavior: Behavior{CompletionTokens: 3}, ServiceAccount: testAccount()})
	bearer := "Bearer " + directToken(f, s) // Vertex's paths want a token
	f.Fuzz(func(t *testing.T, which uint8, body string) {
		p := paths[int(which)%len(paths)]
		rec := serveDirect(s, http.MethodPost, p.path, body, "x-goog-api-key", p.key, "Authorization", bearer)
		if rec.Code != http.StatusOK && rec.Code != http.StatusBadRequest {
			t.Fatalf("%s: status %d: %s", p.path, rec.Code, rec.Body)
		}
		if rec.Header().Get("Content-Type") == bedrockStreamContentType {
			for _, fr := range bedrockFrames(t, rec.Body.Bytes()) {
				if !json.Valid([]byte(fr.data)) {
					t.Fatalf("%s: frame %s carries invalid JSON %s", p.path, fr.name, fr.data)
				}
			}
			return
		}
		if !strings.HasPrefix(rec.Header().Get("Content-Type"), "text/event-stream") {
			if !json.Valid(rec.Body.Bytes()) {
				t.Fatalf("%s: answer is not JSON: %s", p.path, rec.Body)
			}
			return
		}
		for _, line := range strings.Split(rec.Body.String(), "\n") {
			if data, ok := strings.CutPrefix(line, "data: "); ok && data != "[DONE]" && !json.Valid([]byte(data)) {
				t.Fatalf("%s: event data is not JSON: %s", p.path, data)
			}
		}
	})
}
