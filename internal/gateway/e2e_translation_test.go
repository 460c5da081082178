package gateway_test

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"switchyard/internal/config"
	"switchyard/internal/mock"
	"switchyard/internal/provider"
)

// The translation matrix (docs/protocols.md): every client protocol, through
// the real gateway over loopback with its official SDK, against an upstream of
// every family, plain and streamed, for text, a tool call round trip and an
// image. Each cell checks the answer, the usage against what the upstream
// itself reported (in the client's answer and in the request log), the
// translation header, the raw event stream, and that the streamed answer is
// the plain one.

// matrixUpstream is one upstream family of the matrix: a pool of one
// upstream serving one model.
type matrixUpstream struct {
	name, provider, model string
	// protocol is what a translated request to it speaks.
	protocol string
	family   string
}

var matrixUpstreams = []matrixUpstream{
	{"openai", config.ProviderOpenAI, "gpt-4o", "openai-chat", "openai"},
	{"anthropic", config.ProviderAnthropic, "claude-sonnet-4-5", "anthropic", "anthropic"},
	{"gemini", provider.NameGemini, "gemini-2.5-flash", "gemini", "gemini"},
}

// modeName names a cell's mode.
func modeName(stream bool) string {
	if stream {
		return "stream"
	}
	return "plain"
}

// familyOf is the family of a client protocol.
func familyOf(proto string) string {
	if strings.HasPrefix(proto, "openai-") {
		return "openai"
	}
	return proto
}

// stopReasons are each protocol's stop reasons for a natural end and for
// a tool call (Gemini and Responses have no separate one).
var stopReasons = map[string]struct{ end, tool string }{
	"openai-chat":      {"stop", "tool_calls"},
	"openai-responses": {"completed", "completed"},
	"anthropic":        {"end_turn", "tool_use"},
	"gemini":           {"STOP", "STOP"},
}

// logWant is what the request log must say of one request.
type logWant struct {
	upstream, translated string
	stream               bool
	usage                usage
}

// matrix is the state the cells share.
type matrix struct {
	e       *env
	taps    map[string]*upstreamTap // by upstream name
	logs    map[string]logWant      // by request id
	plain   map[string][]answer     // a plain cell's turns, by client/upstream/content
	answers int
}

func TestTranslationMatrix(t *testing.T) {
	m := &matrix{taps: map[string]*upstreamTap{}, logs: map[string]logWant{}, plain: map[string][]answer{}}
	var ups []config.Upstream
	for _, u := range matrixUpstreams {
		_, mockURL := startMock(t, "mock-"+u.name, mock.Behavior{CompletionTokens: 12})
		m.taps[u.name] = startUpstreamTap(t, mockURL)
		ups = append(ups, upstreamAt(u.name, u.provider, m.taps[u.name].URL, 0, u.model))
	}
	m.e = startGateway(t, spec{upstreams: ups})
	sdk := newSDKTap(t, "matrix")
	for _, cl := range newProtocolClients(t, m.e, sdk) {
		t.Run(cl.protocol(), func(t *testing.T) {
			for _, up := range matrixUpstreams {
				t.Run(up.name, func(t *testing.T) {
					for _, stream := range []bool{false, true} {
						t.Run(modeName(stream), func(t *testing.T) {
							for _, ct := range []content{contentText, contentTool, contentImage} {
								t.Run(string(ct), func(t *testing.T) { m.cell(t, cl, up, stream, ct) })
							}
						})
					}
				})
			}
		})
	}
	t.Run("request log", func(t *testing.T) {
		if m.answers == 0 {
			t.Fatal("no cell got an answer")
		}
		byID := map[string]bool{}
		for _, l := range m.e.RequestLogs() {
			byID[l.ID] = true
			w, ok := m.logs[l.ID]
			if !ok {
				continue // a request whose cell failed before checking it
			}
			if l.Status != 200 || l.Upstream != w.upstream || l.Attempts != 1 || l.Stream != w.stream || l.Translated != w.translated ||
				l.ErrorClass != "" || l.InputTokens != w.usage.in || l.OutputTokens != w.usage.out {
				t.Errorf("log of %s: status %d, upstream %q, %d attempts, stream %v, translated %q, error %q, tokens %d in %d out;\n"+
					"want 200 from %q, 1 attempt, stream %v, translated %q, tokens %d in %d out as the upstream reported",
					l.ID, l.Status, l.Upstream, l.Attempts, l.Stream, l.Translated, l.ErrorClass, l.InputTokens, l.OutputTokens,
					w.upstream, w.stream, w.translated, w.usage.in, w.usage.out)
			}
		}
		for id := range m.logs {
			if !byID[id] {
				t.Errorf("no request log for %s", id)
			}
		}
	})
}

// cell runs one cell: one turn, or for a tool the call and the answer to
// its result, and compares a streamed cell with its plain twin.
func (m *matrix) cell(t *testing.T, cl protocolClient, up matrixUpstream, stream bool, ct content) {
	first := cl.ask(t, up.model, convTurn{content: ct}, stream)
	m.checkExchange(t, cl.protocol(), up, stream, &first)
	checkAnswer(t, cl.protocol(), ct, 0, &first)
	turns := []answer{first}
	if ct == contentTool {
		second := cl.ask(t, up.model, convTurn{content: ct, prev: &first}, stream)
		m.checkExchange(t, cl.protocol(), up, stream, &second)
		checkAnswer(t, cl.protocol(), ct, 1, &second)
		turns = append(turns, second)
	}
	key := cl.protocol() + "/" + up.name + "/" + string(ct)
	if !stream {
		m.plain[key] = turns
		return
	}
	plain, ok := m.plain[key]
	if !ok {
		t.Fatalf("the plain cell %s failed; nothing to compare the stream with", key)
	}
	for i := range turns {
		compareStreamed(t, i, &plain[i], &turns[i])
	}
}

// checkExchange checks what the gateway made of one request: the status and
// the gateway's headers, the usage against the upstream's own report, and
// a stream's raw events; it notes what the request log must say.
func (m *matrix) checkExchange(t *testing.T, proto string, up matrixUpstream, stream bool, a *answer) {
	t.Helper()
	w := a.wire
	if w.status != 200 {
		t.Fatalf("status %d: %s", w.status, w.raw())
	}
	translated := ""
	if familyOf(proto) != up.family {
		translated = proto + "->" + up.protocol
	}
	h := w.header
	if got, ok := h["X-Switchyard-Translated"]; translated == "" && ok || translated != "" && h.Get("X-Switchyard-Translated") != translated {
		t.Errorf("X-Switchyard-Translated = %q, want %q", got, translated)
	}
	if h.Get("X-Switchyard-Upstream") != up.name || h.Get("X-Switchyard-Attempts") != "1" || h.Get("X-Request-Id") != w.id {
		t.Errorf("served by %q in %s attempts as %q; want %s in 1 as %s", h.Get("X-Switchyard-Upstream"),
			h.Get("X-Switchyard-Attempts"), h.Get("X-Request-Id"), up.name, w.id)
	}
	ex := m.taps[up.name].wait(t, w.id)
	if ex.status != 200 {
		t.Fatalf("the upstream answered %d: %s", ex.status, ex.body)
	}
	reported := ex.reported(t)
	if want := reported.seenBy(proto); a.usage != want {
		t.Errorf("usage %+v, the upstream reported %+v (as %s sees it: %+v)", a.usage, reported, proto, want)
	}
	if stream {
		if w.timedOut {
			t.Errorf("the stream did not end within %s", exchangeWait)
		}
		checkStreamShape(t, proto, w.raw())
	}
	m.logs[w.id] = logWant{upstream: up.name, translated: translated, stream: stream, usage: reported}
	m.answers++
}

// checkAnswer checks that turn i of a conversation about ct got the right
// answer, as the mock gives it: words for text, a call of get_weather with
// a city, the tool's result quoted, the image described.
func checkAnswer(t *testing.T, proto string, ct content, i int, a *answer) {
	t.Helper()
	stops := stopReasons[proto]
	if ct == contentTool && i == 0 {
		var args map[string]any
		if len(a.calls) != 1 || a.calls[0].name != toolName || a.calls[0].id == "" || a.text != "" || a.stop != stops.tool {
			t.Fatalf("answer %q, stop %q, calls %+v; want one call of %s with an id, no text, stop %q",
				a.text, a.stop, a.calls, toolName, stops.tool)
		}
		if err := json.Unmarshal([]byte(a.calls[0].args), &args); err != nil {
			t.Fatalf("tool call arguments %q are not a JSON object: %v", a.calls[0].args, err)
		}
		if city, _ := args["city"].(string); city == "" {
			t.Errorf("tool call arguments %s lack the required city", a.calls[0].args)
		}
		return
	}
	var ok bool
	switch {
	case ct == contentTool:
		ok = strings.HasPrefix(a.text, "The tool returned: ") && strings.Contains(a.text, toolResult)
	case ct == contentImage:
		ok = a.text == seeImage
	default:
		ok = len(strings.Fields(a.text)) == 12
	}
	if !ok || len(a.calls) != 0 || a.stop != stops.end {
		t.Errorf("answer %q, stop %q, calls %+v; want the mock's answer to the %s turn, stop %q", a.text, a.stop, a.calls, ct, stops.end)
	}
}

// compareStreamed checks that a streamed turn says what the plain one
// said: text, tool calls (ids aside), stop reason and usage. The second
// turn of a tool cell sends back the first's call id, which differs from
// the plain cell's and may differ in length, so its prompt may differ by a
// token; its input is checked against the upstream's report instead.
func compareStreamed(t *testing.T, i int, plain, streamed *answer) {
	t.Helper()
	if streamed.text != plain.text || streamed.stop != plain.stop || len(streamed.calls) != len(plain.calls) {
		t.Errorf("turn %d streamed %q (stop %q, %d calls), plain %q (stop %q, %d calls)",
			i, streamed.text, streamed.stop, len(streamed.calls), plain.text, plain.stop, len(plain.calls))
	}
	for j := range min(len(streamed.calls), len(plain.calls)) {
		s, p := streamed.calls[j], plain.calls[j]
		var sa, pa any
		_ = json.Unmarshal([]byte(s.args), &sa)
		_ = json.Unmarshal([]byte(p.args), &pa)
		if s.name != p.name || !reflect.DeepEqual(sa, pa) {
			t.Errorf("turn %d call %d streamed %s(%s), plain %s(%s)", i, j, s.name, s.args, p.name, p.args)
		}
	}
	su, pu := streamed.usage, plain.usage
	if i > 0 {
		su.in, pu.in = 0, 0
	}
	if su != pu {
		t.Errorf("turn %d streamed usage %+v, plain %+v", i, streamed.usage, plain.usage)
	}
}
