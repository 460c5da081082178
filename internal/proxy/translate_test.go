package proxy

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"
	"github.com/tidwall/sjson"

	"switchyard/internal/balancer"
	"switchyard/internal/config"
)

// recorded is what an upstream received.
type recorded struct {
	mu     sync.Mutex
	path   string
	body   []byte
	header http.Header
}

func (r *recorded) get() (string, []byte, http.Header) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.path, r.body, r.header
}

// answering is an upstream that records the request and answers body
// with status and content type.
func answering(rec *recorded, status int, contentType, body string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		rec.mu.Lock()
		rec.path, rec.body, rec.header = r.URL.Path, b, r.Header.Clone()
		rec.mu.Unlock()
		w.Header().Set("Content-Type", contentType)
		w.WriteHeader(status)
		_, _ = io.WriteString(w, body)
	}
}

const (
	openAIAnswer = `{"id":"chatcmpl-9","object":"chat.completion","created":1700000000,"model":"gpt-4o-2024-08-06",` +
		`"choices":[{"index":0,"message":{"role":"assistant","content":"Hello from OpenAI"},"finish_reason":"stop"}],` +
		`"usage":{"prompt_tokens":21,"completion_tokens":4,"total_tokens":25,"prompt_tokens_details":{"cached_tokens":8}}}`
	anthropicAnswer = `{"id":"msg_01","type":"message","role":"assistant","model":"claude-sonnet-4-20250514",` +
		`"content":[{"type":"text","text":"Hello from Claude"}],"stop_reason":"end_turn","stop_sequence":null,` +
		`"usage":{"input_tokens":13,"cache_read_input_tokens":8,"cache_creation_input_tokens":0,"output_tokens":5}}`
)

// A request of one family is served whole by an upstream of another: the
// upstream gets its own protocol, the client its own, usage is counted and
// the translation is named in the header and the request log.
func TestTranslatedWholeAnswer(t *testing.T) {
	tests := []struct {
		name, path, body, provider, answer string
		hdr                                []string
		wantUpstreamPath                   string
		checkUpstream                      func(t *testing.T, body []byte)
		wantTranslated                     string
		checkClient                        func(t *testing.T, body string)
		wantIn, wantOut                    int64
	}{
		{
			name: "anthropic client, openai upstream", path: "/v1/messages",
			body:     `{"model":"m","max_tokens":100,"system":"Be brief.","messages":[{"role":"user","content":"Hi"}]}`,
			hdr:      []string{"Anthropic-Version", "2023-06-01", "Anthropic-Beta", "prompt-caching-2024-07-31"},
			provider: config.ProviderOpenAI, answer: openAIAnswer, wantUpstreamPath: "/chat/completions",
			checkUpstream: func(t *testing.T, body []byte) {
				m := gjson.GetManyBytes(body, "model", "messages.0.role", "messages.0.content", "messages.1.role", "max_tokens")
				if m[0].Str != "m" || m[1].Str != "system" || m[2].Str != "Be brief." || m[3].Str != "user" || m[4].Int() != 100 {
					t.Errorf("upstream body %s", body)
				}
			},
			wantTranslated: "anthropic->openai-chat",
			checkClient: func(t *testing.T, body string) {
				r := gjson.GetMany(body, "type", "role", "content.0.type", "content.0.text", "stop_reason", "usage.input_tokens", "usage.cache_read_input_tokens", "usage.output_tokens")
				if r[0].Str != "message" || r[1].Str != "assistant" || r[2].Str != "text" || r[3].Str != "Hello from OpenAI" ||
					r[4].Str != "end_turn" || r[5].Int() != 13 || r[6].Int() != 8 || r[7].Int() != 4 {
					t.Errorf("client body %s", body)
				}
			},
			wantIn: 21, wantOut: 4,
		},
		{
			name: "openai client, anthropic upstream", path: "/v1/chat/completions",
			body:     `{"model":"m","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi"}]}`,
			provider: config.ProviderAnthropic, answer: anthropicAnswer, wantUpstreamPath: "/messages",
			checkUpstream: func(t *testing.T, body []byte) {
				m := gjson.GetManyBytes(body, "model", "system", "messages.0.role", "max_tokens")
				sys := m[1].Str
				if m[1].IsArray() {
					sys = m[1].Get("0.text").Str
				}
				if m[0].Str != "m" || sys != "Be brief." || m[2].Str != "user" || m[3].Int() != 4096 {
					t.Errorf("upstream body %s: want the system prompt, the user turn and default_max_tokens 4096", body)
				}
			},
			wantTranslated: "openai-chat->anthropic",
			checkClient: func(t *testing.T, body string) {
				r := gjson.GetMany(body, "object", "choices.0.message.content", "choices.0.finish_reason", "usage.prompt_tokens", "usage.completion_tokens", "usage.prompt_tokens_details.cached_tokens")
				if r[0].Str != "chat.completion" || r[1].Str != "Hello from Claude" || r[2].Str != "stop" || r[3].Int() != 21 || r[4].Int() != 5 || r[5].Int() != 8 {
					t.Errorf("client body %s", body)
				}
			},
			wantIn: 21, wantOut: 5,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var rec recorded
			f := newFixture(t, []config.Upstream{
				upstreamCfg("up", tt.provider, upstreamServer(t, answering(&rec, 200, "application/json", tt.answer)), "m"),
			}, fixtureOpts{})
			resp := f.post(tt.path, tt.body, tt.hdr...)
			body := readAll(t, resp)
			if resp.StatusCode != 200 {
				t.Fatalf("status %d: %s", resp.StatusCode, body)
			}
			path, upBody, upHdr := rec.get()
			if path != tt.wantUpstreamPath {
				t.Errorf("upstream path %q, want %q", path, tt.wantUpstreamPath)
			}
			if upHdr.Get("Anthropic-Beta") != "" {
				t.Errorf("the client's anthropic-beta went to an upstream of another family")
			}
			tt.checkUpstream(t, upBody)
			tt.checkClient(t, body)
			if got := resp.Header.Get("X-Switchyard-Translated"); got != tt.wantTranslated {
				t.Errorf("X-Switchyard-Translated %q, want %q", got, tt.wantTranslated)
			}
			if cl := resp.Header.Get("Content-Length"); cl != itoa(int64(len(body))) {
				t.Errorf("Content-Length %s for %d bytes", cl, len(body))
			}
			l := f.logs.next(t)
			if l.Translated != tt.wantTranslated || l.InputTokens != tt.wantIn || l.OutputTokens != tt.wantOut || l.Status != 200 {
				t.Errorf("log %+v", l)
			}
		})
	}
}

// An Anthropic client whose Anthropic upstream answers 529 is served by an
// OpenAI upstream in the same request, as one coherent Anthropic stream.
func TestCrossFamilyFailoverStream(t *testing.T) {
	var ant, oa recorded
	chunks := []string{
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}` + "\n\n",
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"Hel"},"finish_reason":null}]}` + "\n\n",
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":"lo"},"finish_reason":null}]}` + "\n\n",
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\n",
		`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[],"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}` + "\n\n",
		"data: [DONE]\n\n",
	}
	antURL := upstreamServer(t, answering(&ant, 529, "application/json", `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`))
	oaURL := upstreamServer(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		answering(&oa, 200, "text/event-stream", "")(w, r)
		for _, c := range chunks {
			_, _ = io.WriteString(w, c)
			w.(http.Flusher).Flush()
		}
	}))
	a := upstreamCfg("claude", config.ProviderAnthropic, antURL, "claude-sonnet-4")
	o := upstreamCfg("gpt", config.ProviderOpenAI, oaURL, "claude-sonnet-4")
	o.Priority = 1
	f := newFixture(t, []config.Upstream{a, o}, fixtureOpts{})
	resp := f.post("/v1/messages", `{"model":"claude-sonnet-4","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"Hi"}]}`,
		"Anthropic-Version", "2023-06-01")
	body := readAll(t, resp)
	if resp.StatusCode != 200 || resp.Header.Get("X-Switchyard-Upstream") != "gpt" || resp.Header.Get("X-Switchyard-Attempts") != "2" ||
		resp.Header.Get("X-Switchyard-Translated") != "anthropic->openai-chat" {
		t.Fatalf("status %d headers %v\n%s", resp.StatusCode, resp.Header, body)
	}
	if _, upBody, _ := oa.get(); !gjson.GetBytes(upBody, "stream").Bool() || !gjson.GetBytes(upBody, "stream_options.include_usage").Bool() {
		t.Errorf("translated stream request %s: want stream and include_usage", upBody)
	}
	var names []string
	var text strings.Builder
	for _, ev := range parseEvents(body) {
		names = append(names, ev.name)
		if ev.name == "content_block_delta" {
			if idx := gjson.Get(ev.data, "index").Int(); idx != 0 {
				t.Errorf("delta index %d", idx)
			}
			text.WriteString(gjson.Get(ev.data, "delta.text").Str)
		}
		if ev.name == "message_delta" && gjson.Get(ev.data, "usage.output_tokens").Int() != 2 {
			t.Errorf("message_delta %s: want output_tokens 2", ev.data)
		}
	}
	want := []string{"message_start", "content_block_start", "content_block_delta", "content_block_delta", "content_block_stop", "message_delta", "message_stop"}
	if strings.Join(names, ",") != strings.Join(want, ",") || text.String() != "Hello" {
		t.Errorf("events %v text %q; want %v and Hello\n%s", names, text.String(), want, body)
	}
	l := f.logs.next(t)
	if l.Attempts != 2 || l.Upstream != "gpt" || l.InputTokens != 9 || l.OutputTokens != 2 || l.Translated != "anthropic->openai-chat" {
		t.Errorf("log %+v", l)
	}
}

type sseEvent struct{ name, data string }

// parseEvents splits an SSE body into its events.
func parseEvents(body string) []sseEvent {
	var out []sseEvent
	for _, block := range strings.Split(body, "\n\n") {
		var ev sseEvent
		for _, line := range strings.Split(block, "\n") {
			if v, ok := strings.CutPrefix(line, "event: "); ok {
				ev.name = v
			} else if v, ok := strings.CutPrefix(line, "data: "); ok {
				ev.data = v
			}
		}
		if ev.name != "" || ev.data != "" {
			out = append(out, ev)
		}
	}
	return out
}

// Within a family the body passes through byte for byte but for the
// model: unknown fields and cache_control arrive as the client sent them.
func TestSameFamilyPassthroughIsByteForByte(t *testing.T) {
	const body = `{"model":"claude-sonnet-4","max_tokens":64,  "x_vendor_field":{"keep":[1,2.50,"three"]},` +
		`"system":[{"type":"text","text":"Long prompt","cache_control":{"type":"ephemeral"}}],` +
		`"messages":[{"role":"user","content":[{"type":"text","text":"Hi","cache_control":{"type":"ephemeral","ttl":"1h"}}]}]}`
	var rec recorded
	u := upstreamCfg("claude", config.ProviderAnthropic, upstreamServer(t, answering(&rec, 200, "application/json", anthropicAnswer)), "claude-sonnet-4")
	u.ModelMap = map[string]string{"claude-sonnet-4": "claude-sonnet-4-20250514"}
	o := upstreamCfg("gpt", config.ProviderOpenAI, deadURL(t), "claude-sonnet-4")
	o.Priority = 1
	f := newFixture(t, []config.Upstream{u, o}, fixtureOpts{})
	resp := f.post("/v1/messages", body, "Anthropic-Version", "2023-06-01")
	if got := readAll(t, resp); resp.StatusCode != 200 || got != anthropicAnswer {
		t.Fatalf("status %d: %s", resp.StatusCode, got)
	}
	want, _ := sjson.Set(body, "model", "claude-sonnet-4-20250514")
	if _, got, _ := rec.get(); string(got) != want {
		t.Errorf("upstream got\n%s\nwant\n%s", got, want)
	}
	if resp.Header.Get("X-Switchyard-Translated") != "" {
		t.Errorf("a passthrough says it was translated")
	}
}

// A candidate whose protocol cannot express the request is filtered with
// its reason; with none left the client gets 400 naming the feature; a
// route with translate: false keeps to the client's family.
func TestIncompatibleCandidates(t *testing.T) {
	const nBody = `{"model":"m","n":2,"messages":[{"role":"user","content":"Hi"}]}`
	t.Run("filtered and routed to a compatible one", func(t *testing.T) {
		var ant, oa recorded
		a := upstreamCfg("claude", config.ProviderAnthropic, upstreamServer(t, answering(&ant, 200, "application/json", anthropicAnswer)), "m")
		o := upstreamCfg("gpt", config.ProviderOpenAI, upstreamServer(t, answering(&oa, 200, "application/json", openAIAnswer)), "m")
		o.Priority = 1
		f := newFixture(t, []config.Upstream{a, o}, fixtureOpts{})
		decisions := make(chan *balancer.Decision, 1)
		f.srv.opts.OnDecision = func(d *balancer.Decision) { decisions <- d }
		resp := f.post("/v1/chat/completions", nBody)
		if body := readAll(t, resp); resp.StatusCode != 200 || resp.Header.Get("X-Switchyard-Upstream") != "gpt" {
			t.Fatalf("status %d upstream %q: %s", resp.StatusCode, resp.Header.Get("X-Switchyard-Upstream"), body)
		}
		d := <-decisions
		b, _ := json.Marshal(d)
		r := gjson.GetBytes(b, `tiers.0.candidates.0`)
		if r.Get("filter").Str != "incompatible" || r.Get("reason").Str != "incompatible: n" || r.Get("translate").Str != "openai-chat" && r.Get("translate").Str != "anthropic" {
			t.Errorf("decision record %s", r.Raw)
		}
		if p, _, _ := ant.get(); p != "" {
			t.Errorf("the incompatible upstream was sent %s", p)
		}
	})
	t.Run("none left is 400 naming the feature", func(t *testing.T) {
		a := upstreamCfg("claude", config.ProviderAnthropic, deadURL(t), "m")
		f := newFixture(t, []config.Upstream{a}, fixtureOpts{})
		resp := f.post("/v1/chat/completions", nBody)
		body := readAll(t, resp)
		if resp.StatusCode != 400 || gjson.Get(body, "error.code").Str != "incompatible_request" || !strings.Contains(gjson.Get(body, "error.message").Str, "incompatible: n") {
			t.Errorf("status %d: %s", resp.StatusCode, body)
		}
	})
	t.Run("the 503 of a pool with nothing else left says why", func(t *testing.T) {
		a := upstreamCfg("claude", config.ProviderAnthropic, deadURL(t), "m")
		o := upstreamCfg("gpt", config.ProviderOpenAI, deadURL(t), "m")
		o.Active = false
		f := newFixture(t, []config.Upstream{a, o}, fixtureOpts{})
		resp := f.post("/v1/chat/completions", nBody)
		body := readAll(t, resp)
		if resp.StatusCode != 503 || !strings.Contains(gjson.Get(body, "error.message").Str, "claude: incompatible: n") {
			t.Errorf("status %d: %s; want 503 naming claude's incompatibility", resp.StatusCode, body)
		}
	})
	t.Run("translate false keeps the family", func(t *testing.T) {
		d := config.Default().Defaults
		d.Translate = false
		a := upstreamCfg("claude", config.ProviderAnthropic, deadURL(t), "m")
		f := newFixture(t, []config.Upstream{a}, fixtureOpts{defaults: &d})
		resp := f.post("/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"Hi"}]}`)
		if body := readAll(t, resp); resp.StatusCode != 404 {
			t.Errorf("status %d: %s; want 404: no upstream of the client's family serves m", resp.StatusCode, body)
		}
	})
}

// An upstream's own 4xx is the client's answer, in the client's shape.
func TestTranslatedClientErrorKeepsStatusInClientShape(t *testing.T) {
	var rec recorded
	o := upstreamCfg("gpt", config.ProviderOpenAI, upstreamServer(t, answering(&rec, 400, "application/json",
		`{"error":{"message":"messages: too long","type":"invalid_request_error","code":"context_length_exceeded"}}`)), "m")
	f := newFixture(t, []config.Upstream{o}, fixtureOpts{})
	resp := f.post("/v1/messages", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"Hi"}]}`, "Anthropic-Version", "2023-06-01")
	body := readAll(t, resp)
	if resp.StatusCode != 400 || gjson.Get(body, "type").Str != "error" || gjson.Get(body, "error.type").Str != "invalid_request_error" ||
		gjson.Get(body, "error.message").Str != "messages: too long" {
		t.Errorf("status %d: %s", resp.StatusCode, body)
	}
}

// An upstream's error event after commit reaches the client once, in its
// protocol, and the request is logged as an interrupted stream.
func TestTranslatedStreamErrorEventAfterCommit(t *testing.T) {
	events := []string{
		`data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":"Hel"},"finish_reason":null}]}` + "\n\n",
		`data: {"error":{"message":"the model crashed","type":"server_error","code":null}}` + "\n\n",
	}
	o := upstreamCfg("gpt", config.ProviderOpenAI, upstreamServer(t, sseUpstream(events, false)), "m")
	f := newFixture(t, []config.Upstream{o}, fixtureOpts{})
	resp := f.post("/v1/messages", `{"model":"m","max_tokens":64,"stream":true,"messages":[{"role":"user","content":"Hi"}]}`,
		"Anthropic-Version", "2023-06-01")
	body := readAll(t, resp)
	var errs int
	for _, ev := range parseEvents(body) {
		if ev.name == "error" {
			errs++
		}
		if ev.name == "message_stop" {
			t.Errorf("a broken stream ended with message_stop:\n%s", body)
		}
	}
	if errs != 1 {
		t.Errorf("%d error events, want 1:\n%s", errs, body)
	}
	if l := f.logs.next(t); l.ErrorClass != "stream_interrupted" {
		t.Errorf("log %+v, want stream_interrupted", l)
	}
}

// A translated stream whose first event is a throttling error (Anthropic's
// rate_limit_error event, as Bedrock's throttlingException frame) is a 429
// that names no wait: each one in a row doubles the cooldown, 1 s, 2 s,
// 4 s, as 429 answers do. The stream's 200 headers do not end the run.
func TestStreamThrottlingFirstEventBacksOff(t *testing.T) {
	events := []string{"event: error\ndata: {\"type\":\"error\",\"error\":{\"type\":\"rate_limit_error\",\"message\":\"slow down\"}}\n\n"}
	a := upstreamCfg("claude", config.ProviderAnthropic, upstreamServer(t, sseUpstream(events, false)), "m")
	f := newFixture(t, []config.Upstream{a}, fixtureOpts{})
	for i, want := range []time.Duration{time.Second, 2 * time.Second, 4 * time.Second} {
		resp := f.post("/v1/chat/completions", `{"model":"m","stream":true,"messages":[{"role":"user","content":"Hi"}]}`)
		if body := readAll(t, resp); resp.StatusCode != http.StatusServiceUnavailable { // every upstream rate limited
			t.Fatalf("request %d: status %d: %s", i, resp.StatusCode, body)
		}
		lv := f.srv.opts.State.Upstream("claude", 0).Limits
		if got := lv.CoolingUntil.Sub(f.clock.Now()); got != want {
			t.Errorf("request %d: cooling down for %v, want %v", i, got, want)
		}
		f.clock.Advance(want)
	}
}

// TestAnswerID: the id stem of an answer that names none is the request's
// id without "req_", each byte outside [A-Za-z0-9_-] made '_'.
func TestAnswerID(t *testing.T) {
	tests := []struct{ reqID, want string }{
		{"req_6ea721e9e3d16f4b382b516521308858", "6ea721e9e3d16f4b382b516521308858"},
		{"trace-42_a", "trace-42_a"},
		{"a/b:c.d", "a_b_c_d"},
		{"req_x=y", "x_y"},
	}
	for _, tc := range tests {
		t.Run(tc.reqID, func(t *testing.T) {
			if got := answerID(tc.reqID); got != tc.want {
				t.Errorf("answerID(%q) = %q, want %q", tc.reqID, got, tc.want)
			}
		})
	}
}
