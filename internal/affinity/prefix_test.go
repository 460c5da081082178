package affinity

import (
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"switchyard/internal/config"
)

// promptOf reads the canonical prompt of a request body as the proxy does:
// every top-level field through PromptField.
func promptOf(t testing.TB, body string) Prompt {
	t.Helper()
	if !gjson.Valid(body) {
		t.Fatalf("invalid JSON body: %.80s", body)
	}
	var p Prompt
	gjson.Parse(body).ForEach(func(k, v gjson.Result) bool {
		p.Set(PromptField(k.Str), v.Raw, v.Index)
		return true
	})
	return p
}

// idOf is the prefix id of body.
func idOf(t testing.TB, body string, minTokens int) string {
	t.Helper()
	return PrefixID([]byte(body), promptOf(t, body), minTokens)
}

// longSystem is a system prompt of n bytes of text.
func longSystem(n int) string { return strings.Repeat("You are a careful assistant. ", n/29+1)[:n] }

func TestPrefixID(t *testing.T) {
	sys := longSystem(600)
	tools := `[{"name":"lookup","description":"` + longSystem(200) + `","input_schema":{"type":"object"}}]`
	anthropic := func(model, tools, sys, last string, extra string) string {
		b := `{"model":"` + model + `",` + extra
		if tools != "" {
			b += `"tools":` + tools + `,`
		}
		return b + `"system":"` + sys + `","messages":[{"role":"user","content":"` + last + `"}]}`
	}
	const minTokens = 128 // 512 bytes
	base := anthropic("claude-sonnet", "", sys, "hello", "")
	tests := []struct {
		name     string
		a, b     string
		same     bool
		aHasID   bool // a gets an id at all
		minToken int
	}{
		{"identical", base, base, true, true, minTokens},
		{"different later message", base, anthropic("claude-sonnet", "", sys, "something else entirely", ""), true, true, minTokens},
		{"different model, temperature, max_tokens, stream", base,
			anthropic("claude-haiku", "", sys, "hello", `"temperature":0.2,"max_tokens":99,"stream":true,`), true, true, minTokens},
		{"field order of the body", `{"system":"` + sys + `","model":"m","messages":[]}`, `{"messages":[],"model":"n","system":"` + sys + `"}`, true, true, minTokens},
		{"different system prompt", base, anthropic("claude-sonnet", "", "X"+sys[1:], "hello", ""), false, true, minTokens},
		{"tools are part of it", anthropic("m", tools, sys, "hello", ""), base, false, true, minTokens},
		{"different tools", anthropic("m", tools, sys, "hi", ""), anthropic("m", strings.Replace(tools, "lookup", "search", 1), sys, "hi", ""), false, true, minTokens},
		{"a difference past the prefix", anthropic("m", "", sys+"A", "hi", ""), anthropic("m", "", sys+"B", "hi", ""), true, true, minTokens},
		{"the same bytes in another part", `{"system":"` + sys + `"}`, `{"messages":"` + sys + `"}`, false, true, minTokens},
		{"openai chat: the system message leads messages", `{"model":"gpt-4o","messages":[{"role":"system","content":"` + sys + `"},{"role":"user","content":"a"}]}`,
			`{"model":"gpt-4o-mini","messages":[{"role":"system","content":"` + sys + `"},{"role":"user","content":"b"}],"temperature":1}`, true, true, minTokens},
		{"responses: instructions and input", `{"model":"gpt-4o","instructions":"` + sys + `","input":"a"}`, `{"model":"gpt-4o","instructions":"` + sys + `","input":"b"}`, true, true, minTokens},
		{"gemini: systemInstruction and contents", `{"systemInstruction":{"parts":[{"text":"` + sys + `"}]},"contents":[{"parts":[{"text":"a"}]}]}`,
			`{"systemInstruction":{"parts":[{"text":"` + sys + `"}]},"contents":[{"parts":[{"text":"b"}]}]}`, true, true, minTokens},
		{"short prompt: no id", anthropic("m", "", "short", "hello", ""), "", false, false, minTokens},
		{"long body, short prompt: no id", `{"model":"m","metadata":{"note":"` + sys + `"},"messages":[]}`, "", false, false, minTokens},
		{"exactly min_tokens×4 bytes", `{"system":"` + sys[:512-3-2] + `"}`, "", false, true, minTokens},
		{"one byte short", `{"system":"` + sys[:512-3-3] + `"}`, "", false, false, minTokens},
		{"min_tokens 0: off", base, "", false, false, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := idOf(t, tc.a, tc.minToken)
			if (a != "") != tc.aHasID {
				t.Fatalf("PrefixID = %q, want an id: %v (canonical length %d, threshold %d)", a, tc.aHasID, promptOf(t, tc.a).Len(), tc.minToken*4)
			}
			if a != "" && (!IsPrefixID(a) || len(a) != len("prefix:")+16) {
				t.Fatalf("PrefixID = %q, want prefix: and 16 hex digits", a)
			}
			if tc.b == "" {
				return
			}
			b := idOf(t, tc.b, tc.minToken)
			if (a == b) != tc.same {
				t.Fatalf("ids %q and %q, want equal: %v", a, b, tc.same)
			}
		})
	}
}

// TestPrefixIDReadsOnlyThePrefix: the hash covers min_tokens×4 bytes, so a
// prompt a thousand times longer costs no more to hash.
func TestPrefixIDReadsOnlyThePrefix(t *testing.T) {
	sys := longSystem(4096)
	short := `{"system":"` + sys + `","messages":[]}`
	long := `{"system":"` + sys + `","messages":["` + strings.Repeat("x", 4<<20) + `"]}`
	if idOf(t, short, 1024) != idOf(t, long, 1024) {
		t.Fatal("a longer suffix changed the id")
	}
	body, p := []byte(long), promptOf(t, long)
	if id := PrefixID([]byte(short), p, 1024); id != "" {
		t.Fatalf("PrefixID of a body shorter than its prompt's spans = %q, want none", id)
	}
	if n := testing.AllocsPerRun(100, func() { PrefixID(body, p, 1024) }); n > 1 {
		t.Fatalf("PrefixID allocates %v times, want 1 (the id)", n)
	}
}

func TestPrefixPolicy(t *testing.T) {
	off := false
	global := config.Default().Affinity
	pol, _ := PolicyFor(global, config.RouteAffinity{})
	tests := []struct {
		name  string
		route config.RoutePrefixAffinity
		want  Prefix
		on    bool
	}{
		{"defaults", config.RoutePrefixAffinity{}, Prefix{MinTokens: 1024, MaxShare: 0.5,
			Policy: Policy{Sliding: 5 * time.Minute, Absolute: 30 * time.Minute, FailBack: true}}, true},
		{"overrides", config.RoutePrefixAffinity{MinTokens: 64, TTL: time.Minute, MaxShare: 1}, Prefix{MinTokens: 64, MaxShare: 1,
			Policy: Policy{Sliding: time.Minute, Absolute: 30 * time.Minute, FailBack: true}}, true},
		{"off for the route", config.RoutePrefixAffinity{Enabled: &off}, Prefix{MinTokens: 1024, MaxShare: 0.5,
			Policy: Policy{Sliding: 5 * time.Minute, Absolute: 30 * time.Minute, FailBack: true}}, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got, on := PrefixPolicy(global, config.RouteAffinity{Prefix: tc.route}, pol)
			if got != tc.want || on != tc.on {
				t.Fatalf("PrefixPolicy = %+v, %v; want %+v, %v", got, on, tc.want, tc.on)
			}
		})
	}
}

func BenchmarkPrefixID(b *testing.B) {
	body := `{"system":"` + longSystem(64<<10) + `"}`
	p, raw := promptOf(b, body), []byte(body)
	b.ReportAllocs()
	b.SetBytes(4096)
	for b.Loop() {
		PrefixID(raw, p, 1024)
	}
}
