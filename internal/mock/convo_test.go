package mock

import (
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

func TestArgsFor(t *testing.T) {
	tests := []struct {
		name, schema, want string
	}{
		{"no schema", ``, `{}`},
		{"nothing required", `{"type":"object","properties":{"a":{"type":"string"}}}`, `{}`},
		{"location and city", `{"properties":{"location":{"type":"string"},"home_city":{"type":"string"},"name":{"type":"string"}},"required":["location","home_city","name"]}`,
			`{"location":"Paris","home_city":"Paris","name":"test"}`},
		{"every type", `{"properties":{"n":{"type":"number"},"i":{"type":"integer"},"b":{"type":"boolean"},"a":{"type":"array","items":{"type":"string"}},"o":{"type":"object"},"z":{"type":"null"}},"required":["n","i","b","a","o","z"]}`,
			`{"n":1,"i":1,"b":true,"a":[],"o":{},"z":null}`},
		{"Gemini's upper-case types", `{"type":"OBJECT","properties":{"count":{"type":"INTEGER"},"ok":{"type":"BOOLEAN"}},"required":["count","ok"]}`,
			`{"count":1,"ok":true}`},
		{"enum", `{"properties":{"unit":{"type":"string","enum":["celsius","fahrenheit"]},"level":{"enum":[3,4]}},"required":["unit","level"]}`,
			`{"unit":"celsius","level":3}`},
		{"nullable type list", `{"properties":{"q":{"type":["null","integer"]}},"required":["q"]}`, `{"q":1}`},
		{"anyOf", `{"properties":{"q":{"anyOf":[{"type":"boolean"},{"type":"string"}]}},"required":["q"]}`, `{"q":true}`},
		{"nested required", `{"properties":{"where":{"type":"object","properties":{"city":{"type":"string"}},"required":["city"]}},"required":["where"]}`,
			`{"where":{"city":"Paris"}}`},
		{"untyped with properties is an object", `{"properties":{"o":{"properties":{"x":{"type":"number"}},"required":["x"]}},"required":["o"]}`, `{"o":{"x":1}}`},
		{"names with path syntax", `{"properties":{"a.b":{"type":"integer"},"c*":{"type":"boolean"}},"required":["a.b","c*"]}`, `{"a.b":1,"c*":true}`},
		{"required but not described", `{"required":["x"]}`, `{"x":"test"}`},
		{"quotes in a name", `{"properties":{"say \"hi\"":{"type":"string"}},"required":["say \"hi\""]}`, `{"say \"hi\"":"test"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := string(argsFor(gjson.Parse(tt.schema))); got != tt.want {
				t.Errorf("argsFor = %s, want %s", got, tt.want)
			}
		})
	}
	deep := `{"type":"object"}`
	for range 20 {
		deep = `{"type":"object","properties":{"d":` + deep + `},"required":["d"]}`
	}
	if got := argsFor(gjson.Parse(deep)); !gjson.ValidBytes(got) || strings.Count(string(got), "{") > maxSchemaDepth+1 {
		t.Errorf("a deep schema gave %s", got)
	}
}

func TestChooseTools(t *testing.T) {
	a, b, c := toolDef{name: "a"}, toolDef{name: "b"}, toolDef{name: "c"}
	var toolbox []toolDef // more than maxEagerTools: an agent's
	for i := range maxEagerTools + 1 {
		toolbox = append(toolbox, toolDef{name: "t" + strconv.Itoa(i)})
	}
	tests := []struct {
		name string
		cv   convo
		want []string
	}{
		{"no tools", convo{userTurn: true}, nil},
		{"first tool", convo{tools: []toolDef{a, b}, userTurn: true, userText: "go"}, []string{"a"}},
		{"parallel", convo{tools: []toolDef{a, b, c}, userTurn: true, userText: "Run them in Parallel!"}, []string{"a", "b"}},
		{"parallel is a word", convo{tools: []toolDef{a, b}, userTurn: true, userText: "parallelism"}, []string{"a"}},
		{"parallel needs two tools", convo{tools: []toolDef{a}, userTurn: true, userText: "parallel"}, []string{"a"}},
		{"parallel disabled", convo{tools: []toolDef{a, b}, userTurn: true, userText: "parallel", single: true}, []string{"a"}},
		{"named", convo{tools: []toolDef{a, b}, userTurn: true, userText: "parallel", choice: choiceNamed, choiceName: "b"}, []string{"b"}},
		{"any", convo{tools: []toolDef{a, b}, userTurn: true, choice: choiceAny}, []string{"a"}},
		{"none", convo{tools: []toolDef{a, b}, userTurn: true, choice: choiceNone}, nil},
		{"after a tool result", convo{tools: []toolDef{a}, toolResults: []string{"x"}}, nil},
		{"after the assistant", convo{tools: []toolDef{a}}, nil},
		{"agent toolbox, not asked", convo{tools: toolbox, userTurn: true, userText: "Say hello"}, nil},
		{"agent toolbox, tool named", convo{tools: toolbox, userTurn: true, userText: "use the t3 tool"}, nil},
		{"agent toolbox, named choice", convo{tools: toolbox, userTurn: true, choice: choiceNamed, choiceName: "t3"}, []string{"t3"}},
		{"agent toolbox, any", convo{tools: toolbox, userTurn: true, choice: choiceAny}, []string{"t0"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got []string
			for _, tool := range chooseTools(&tt.cv) {
				got = append(got, tool.name)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("chooseTools = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestPieces(t *testing.T) {
	for _, s := range []string{"", "one", "The tool returned: Sunny, 21°C", "  lead and  double  spaces ", "line\nbreak and\ttab"} {
		ps := splitPieces(s)
		if strings.Join(ps, "") != s {
			t.Errorf("splitPieces(%q) = %q does not rebuild it", s, ps)
		}
		for i, p := range ps {
			if i > 0 && !strings.HasPrefix(p, " ") {
				t.Errorf("splitPieces(%q): piece %d %q does not start a word", s, i, p)
			}
		}
	}
	args := []byte(`{"city":"Zürich","note":"日本語のテキスト"}`)
	ps := argPieces(args)
	if strings.Join(ps, "") != string(args) || len(ps) < 3 {
		t.Errorf("argPieces = %q", ps)
	}
	for _, p := range ps {
		if !utf8.ValidString(p) || len(p) > argPieceBytes+utf8.UTFMax-1 {
			t.Errorf("piece %q cuts a character or is too long", p)
		}
	}
}

func TestDescribeImages(t *testing.T) {
	tests := []struct {
		imgs []image
		want string
	}{
		{[]image{{mediaType: "image/png", size: 68}}, "I see 1 image (image/png, 68 bytes)."},
		{[]image{{source: "url"}}, "I see 1 image (url)."},
		{[]image{{mediaType: "image/jpeg", size: 3}, {source: "file"}, {source: "url"}}, "I see 3 images (image/jpeg, 3 bytes; file; url)."},
	}
	for _, tt := range tests {
		if got := describeImages(tt.imgs); got != tt.want {
			t.Errorf("describeImages = %q, want %q", got, tt.want)
		}
	}
}

func TestImageInputs(t *testing.T) {
	tests := []struct {
		name    string
		url     string
		want    image
		problem imageProblem
	}{
		{"data", "data:image/png;base64," + pngBase64, image{mediaType: "image/png", size: len(onePixelPNG)}, imageOK},
		{"http", "https://example.com/a.png", image{source: "url"}, imageOK},
		{"bmp", "data:image/bmp;base64," + pngBase64, image{}, imageBadType},
		{"not base64", "data:image/png;base64,@@", image{}, imageBadBase64},
		{"url-safe is not standard", "data:image/png;base64,_-_-", image{}, imageBadBase64},
		{"not a data URL", "data:image/png,raw", image{}, imageBadURL},
		{"relative", "/a.png", image{}, imageBadURL},
		{"file scheme", "file:///a.png", image{}, imageBadURL},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			img, problem := urlImage(tt.url)
			if img != tt.want || problem != tt.problem {
				t.Errorf("urlImage = %+v %q, want %+v %q", img, problem, tt.want, tt.problem)
			}
		})
	}
	if n, ok := decodedSize("_-_-", true); !ok || n != 3 {
		t.Errorf("lenient decodedSize of URL-safe base64 = %d %v", n, ok)
	}
}

func TestPromptTokensIgnoreStreaming(t *testing.T) {
	plain := `{"model":"gpt-4o","messages":[{"role":"user","content":"hello there"}]}`
	tests := []string{
		`{"stream":true,"model":"gpt-4o","messages":[{"role":"user","content":"hello there"}]}`,
		`{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hello there"}]}`,
		`{"model":"gpt-4o","messages":[{"role":"user","content":"hello there"}],"stream":false}`,
	}
	for _, body := range tests {
		if got, want := promptTokens([]byte(body)), promptTokens([]byte(plain)); got != want {
			t.Errorf("promptTokens(%s) = %d, want %d as without streaming", body, got, want)
		}
	}
	if promptTokens(nil) != 1 {
		t.Error("an empty body costs at least 1 token")
	}
}

func TestCachedPart(t *testing.T) {
	for prompt, want := range map[int]int{0: 0, 127: 0, 128: 64, 1024: 512, 1100: 512, 2047: 960} {
		if got := cachedPart(prompt); got != want {
			t.Errorf("cachedPart(%d) = %d, want %d", prompt, got, want)
		}
	}
}

func TestFunctionResponseText(t *testing.T) {
	for resp, want := range map[string]string{
		`{"result":"Sunny"}`:          "Sunny",
		`{"output":"x"}`:              "x",
		`{"temp":21}`:                 `{"temp":21}`,
		`{"a":"x","b":"y"}`:           `{"a":"x","b":"y"}`,
		`{"content":{"text":"deep"}}`: `{"content":{"text":"deep"}}`,
	} {
		if got := functionResponseText(gjson.Parse(resp)); got != want {
			t.Errorf("functionResponseText(%s) = %q, want %q", resp, got, want)
		}
	}
}

func TestCutAtStop(t *testing.T) {
	ps := splitPieces("the green signal and the yard")
	tests := []struct {
		name   string
		stops  []string
		want   string
		wantSq string
	}{
		{"none", nil, "the green signal and the yard", ""},
		{"absent", []string{"red"}, "the green signal and the yard", ""},
		{"a word", []string{"signal"}, "the green ", "signal"},
		{"inside a piece", []string{"ree"}, "the g", "ree"},
		{"the earliest wins", []string{"yard", "green"}, "the ", "green"},
		{"at the start", []string{"the"}, "", "the"},
		{"empty is ignored", []string{""}, "the green signal and the yard", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, seq := cutAtStop(ps, tt.stops)
			if strings.Join(got, "") != tt.want || seq != tt.wantSq {
				t.Errorf("cutAtStop = %q %q, want %q %q", got, seq, tt.want, tt.wantSq)
			}
		})
	}
	if strings.Join(ps, "") != "the green signal and the yard" {
		t.Error("cutAtStop changed its input")
	}
}
