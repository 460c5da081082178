package mock

import (
	"encoding/json"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// This file reads every family's answers, plain and streamed, into one
// shape, so that one table of scenarios can check all four families and
// that a stream says what the plain answer says.

// answer is an answer in the families' common terms.
type answer struct {
	text, thinking string
	calls          []gotCall
	stop           string // "end", "tool", "length", "stop_sequence"
	stopSequence   string // Anthropic's stop_sequence
	usage          gotUsage
}

type gotCall struct{ name, args string }

// gotUsage counts input tokens with the cache's (Anthropic's are added
// back) and output tokens with the reasoning's. Reasoning is -1 where the
// family does not report it (Anthropic).
type gotUsage struct {
	in, cacheRead, cacheWrite, out, reasoning int64
}

// family is one wire family as the tests drive it.
type family struct {
	name   string
	path   func(stream bool) string
	header []string
	// stream marks a body as streamed ("" for Gemini: the URL says it).
	stream string
	plain  func(t *testing.T, body []byte) answer
	events func(t *testing.T, body []byte) answer
}

var families = []family{
	{
		name:   "chat",
		path:   func(bool) string { return "/v1/chat/completions" },
		stream: `"stream":true,"stream_options":{"include_usage":true},`,
		plain:  chatAnswer, events: chatStreamAnswer,
	},
	{
		name:   "responses",
		path:   func(bool) string { return "/v1/responses" },
		stream: `"stream":true,`,
		plain:  func(t *testing.T, b []byte) answer { return responsesAnswer(gjson.ParseBytes(b)) },
		events: responsesStreamAnswer,
	},
	{
		name:   "messages",
		path:   func(bool) string { return "/v1/messages" },
		header: []string{"anthropic-version", "2023-06-01"},
		stream: `"stream":true,`,
		plain:  messagesAnswer, events: messagesStreamAnswer,
	},
	{
		name: "gemini",
		path: func(stream bool) string {
			if stream {
				return "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse"
			}
			return "/v1beta/models/gemini-2.5-flash:generateContent"
		},
		header: []string{"x-goog-api-key", "g-key"},
		plain:  func(t *testing.T, b []byte) answer { return geminiAnswer(t, [][]byte{b}) },
		events: geminiStreamAnswer,
	},
}

// ask sends body plain and streamed and returns both answers; the stream's
// body is body with f.stream after its opening brace.
func (f family) ask(t *testing.T, url, body string) (plain, streamed answer) {
	t.Helper()
	res := do(t, http.MethodPost, url+f.path(false), body, f.header...)
	if res.status != http.StatusOK {
		t.Fatalf("%s plain: status %d: %s", f.name, res.status, res.body)
	}
	plain = f.plain(t, res.body)
	res = do(t, http.MethodPost, url+f.path(true), "{"+f.stream+body[1:], f.header...)
	if res.status != http.StatusOK {
		t.Fatalf("%s stream: status %d: %s", f.name, res.status, res.body)
	}
	return plain, f.events(t, res.body)
}

func chatStop(s string) string {
	return map[string]string{"stop": "end", "tool_calls": "tool", "length": "length"}[s]
}

func chatUsage(u gjson.Result) gotUsage {
	return gotUsage{in: u.Get("prompt_tokens").Int(), cacheRead: u.Get("prompt_tokens_details.cached_tokens").Int(),
		out: u.Get("completion_tokens").Int(), reasoning: u.Get("completion_tokens_details.reasoning_tokens").Int()}
}

func chatAnswer(t *testing.T, body []byte) answer {
	r := gjson.ParseBytes(body)
	a := answer{text: r.Get("choices.0.message.content").String(), stop: chatStop(r.Get("choices.0.finish_reason").String()),
		usage: chatUsage(r.Get("usage"))}
	for _, tc := range r.Get("choices.0.message.tool_calls").Array() {
		a.calls = append(a.calls, gotCall{tc.Get("function.name").String(), tc.Get("function.arguments").String()})
	}
	return a
}

func chatStreamAnswer(t *testing.T, body []byte) answer {
	frames := parseSSE(t, body)
	if frames[len(frames)-1].data != "[DONE]" {
		t.Fatalf("chat stream does not end with [DONE]")
	}
	var a answer
	var text strings.Builder
	for _, f := range frames[:len(frames)-1] {
		ch := gjson.Get(f.data, "choices.0")
		text.WriteString(ch.Get("delta.content").String())
		for _, tc := range ch.Get("delta.tool_calls").Array() {
			i := int(tc.Get("index").Int())
			if i == len(a.calls) {
				a.calls = append(a.calls, gotCall{name: tc.Get("function.name").String()})
			}
			a.calls[i].args += tc.Get("function.arguments").String()
		}
		if fr := ch.Get("finish_reason"); fr.Type == gjson.String {
			a.stop = chatStop(fr.Str)
		}
		if u := gjson.Get(f.data, "usage"); u.IsObject() {
			a.usage = chatUsage(u)
		}
	}
	a.text = text.String()
	return a
}

func responsesAnswer(r gjson.Result) answer {
	a := answer{stop: "end"}
	if r.Get("status").String() == "incomplete" {
		a.stop = "length"
	}
	for _, it := range r.Get("output").Array() {
		switch it.Get("type").String() {
		case "reasoning":
			a.thinking += it.Get("summary.0.text").String()
		case "message":
			a.text += it.Get("content.0.text").String()
		case "function_call":
			a.calls = append(a.calls, gotCall{it.Get("name").String(), it.Get("arguments").String()})
			a.stop = "tool"
		}
	}
	u := r.Get("usage")
	a.usage = gotUsage{in: u.Get("input_tokens").Int(), cacheRead: u.Get("input_tokens_details.cached_tokens").Int(),
		out: u.Get("output_tokens").Int(), reasoning: u.Get("output_tokens_details.reasoning_tokens").Int()}
	return a
}

// responsesStreamAnswer rebuilds the answer from the deltas, checks that
// it matches the final response object, and that sequence numbers count
// from 0 without a gap.
func responsesStreamAnswer(t *testing.T, body []byte) answer {
	var a answer
	var final gjson.Result
	names := map[int64]string{}
	args := map[int64]string{}
	for i, f := range parseSSE(t, body) {
		ev := gjson.Parse(f.data)
		if n := ev.Get("sequence_number").Int(); n != int64(i) {
			t.Errorf("event %d (%s) has sequence_number %d", i, f.event, n)
		}
		switch f.event {
		case "response.reasoning_summary_text.delta":
			a.thinking += ev.Get("delta").String()
		case "response.output_text.delta":
			a.text += ev.Get("delta").String()
		case "response.output_item.added":
			if ev.Get("item.type").String() == "function_call" {
				names[ev.Get("output_index").Int()] = ev.Get("item.name").String()
			}
		case "response.function_call_arguments.delta":
			args[ev.Get("output_index").Int()] += ev.Get("delta").String()
		case "response.completed", "response.incomplete":
			final = ev.Get("response")
		}
	}
	want := responsesAnswer(final)
	for o := range int64(len(final.Get("output").Array())) {
		if name, ok := names[o]; ok {
			a.calls = append(a.calls, gotCall{name, args[o]})
		}
	}
	if a.text != want.text || a.thinking != want.thinking || !slices.Equal(a.calls, want.calls) {
		t.Errorf("deltas say %+v, the final response %+v", a, want)
	}
	a.stop, a.usage = want.stop, want.usage
	return a
}

func anthropicStopName(s string) string {
	return map[string]string{"end_turn": "end", "tool_use": "tool", "max_tokens": "length", "stop_sequence": "stop_sequence"}[s]
}

func messagesAnswer(t *testing.T, body []byte) answer {
	r := gjson.ParseBytes(body)
	a := answer{stop: anthropicStopName(r.Get("stop_reason").String()), stopSequence: r.Get("stop_sequence").String()}
	for _, b := range r.Get("content").Array() {
		switch b.Get("type").String() {
		case "thinking":
			a.thinking += b.Get("thinking").String()
			if b.Get("signature").String() != thinkingSignature(b.Get("thinking").String()) {
				t.Errorf("thinking block signature %q does not sign its text", b.Get("signature"))
			}
		case "text":
			a.text += b.Get("text").String()
		case "tool_use":
			a.calls = append(a.calls, gotCall{b.Get("name").String(), b.Get("input").Raw})
		}
	}
	a.usage = anthropicGotUsage(r.Get("usage"), r.Get("usage.output_tokens").Int())
	return a
}

func anthropicGotUsage(u gjson.Result, out int64) gotUsage {
	read, write := u.Get("cache_read_input_tokens").Int(), u.Get("cache_creation_input_tokens").Int()
	return gotUsage{in: u.Get("input_tokens").Int() + read + write, cacheRead: read, cacheWrite: write, out: out, reasoning: -1}
}

// messagesStreamAnswer rebuilds the answer from the events and checks the
// event grammar: blocks open and close in index order, one at a time, a
// ping after the first block's start, message_stop last.
func messagesStreamAnswer(t *testing.T, body []byte) answer {
	frames := parseSSE(t, body)
	var a answer
	var start gjson.Result
	open, next := -1, 0
	var sig string
	for i, f := range frames {
		ev := gjson.Parse(f.data)
		switch f.event {
		case "message_start":
			start = ev.Get("message.usage")
		case "content_block_start":
			if open != -1 || ev.Get("index").Int() != int64(next) {
				t.Fatalf("content_block_start %s while block %d is open", f.data, open)
			}
			open = next
			if cb := ev.Get("content_block"); cb.Get("type").String() == "tool_use" {
				a.calls = append(a.calls, gotCall{name: cb.Get("name").String()})
			}
			if next == 0 && frames[i+1].event != "ping" {
				t.Errorf("no ping after the first content_block_start")
			}
		case "content_block_delta":
			if ev.Get("index").Int() != int64(open) {
				t.Fatalf("delta for block %d while %d is open", ev.Get("index").Int(), open)
			}
			d := ev.Get("delta")
			switch d.Get("type").String() {
			case "thinking_delta":
				a.thinking += d.Get("thinking").String()
			case "signature_delta":
				sig = d.Get("signature").String()
			case "text_delta":
				a.text += d.Get("text").String()
			case "input_json_delta":
				a.calls[len(a.calls)-1].args += d.Get("partial_json").String()
			}
		case "content_block_stop":
			open, next = -1, next+1
		case "message_delta":
			a.stop = anthropicStopName(ev.Get("delta.stop_reason").String())
			a.stopSequence = ev.Get("delta.stop_sequence").String()
			a.usage = anthropicGotUsage(start, ev.Get("usage.output_tokens").Int())
		}
	}
	if frames[len(frames)-1].event != "message_stop" {
		t.Errorf("last event %q, want message_stop", frames[len(frames)-1].event)
	}
	if a.thinking != "" && sig != thinkingSignature(a.thinking) {
		t.Errorf("signature_delta %q does not sign the streamed thinking", sig)
	}
	return a
}

// geminiAnswer reads GenerateContentResponses: one, or a stream's chunks.
func geminiAnswer(t *testing.T, chunks [][]byte) answer {
	var a answer
	for i, c := range chunks {
		r := gjson.ParseBytes(c)
		cand := r.Get("candidates.0")
		for _, p := range cand.Get("content.parts").Array() {
			switch {
			case p.Get("functionCall").Exists():
				a.calls = append(a.calls, gotCall{p.Get("functionCall.name").String(), p.Get("functionCall.args").Raw})
				if p.Get("functionCall.id").String() == "" {
					t.Errorf("functionCall without id: %s", p.Raw)
				}
			case p.Get("thought").Bool():
				a.thinking += p.Get("text").String()
			default:
				a.text += p.Get("text").String()
			}
		}
		if fr := cand.Get("finishReason"); fr.Exists() {
			if i != len(chunks)-1 {
				t.Errorf("chunk %d of %d has finishReason", i, len(chunks))
			}
			a.stop = map[string]string{"STOP": "end", "MAX_TOKENS": "length"}[fr.String()]
		}
		u := r.Get("usageMetadata")
		a.usage = gotUsage{in: u.Get("promptTokenCount").Int(), cacheRead: u.Get("cachedContentTokenCount").Int(),
			out: u.Get("candidatesTokenCount").Int() + u.Get("thoughtsTokenCount").Int(), reasoning: u.Get("thoughtsTokenCount").Int()}
		if total := u.Get("totalTokenCount").Int(); total != a.usage.in+a.usage.out {
			t.Errorf("totalTokenCount %d ≠ prompt + candidates + thoughts in %s", total, u.Raw)
		}
	}
	if len(a.calls) > 0 && a.stop == "end" {
		a.stop = "tool"
	}
	return a
}

func geminiStreamAnswer(t *testing.T, body []byte) answer {
	var chunks [][]byte
	for _, f := range parseSSE(t, body) {
		if f.event != "" || !json.Valid([]byte(f.data)) {
			t.Fatalf("not a Gemini chunk: event %q data %s", f.event, f.data)
		}
		chunks = append(chunks, []byte(f.data))
	}
	return geminiAnswer(t, chunks)
}
