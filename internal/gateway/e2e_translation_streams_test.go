package gateway_test

import (
	"fmt"
	"strings"
	"testing"

	"github.com/tidwall/gjson"
)

// The shape of a client's event stream, as each protocol's SDKs rely on it.

// checkStreamShape checks a client's raw event stream of protocol proto as
// the protocol's SDKs rely on it: block (output, tool call) indices
// contiguous from 0, and the stream ending exactly as the protocol ends one,
// with nothing after the terminal event.
func checkStreamShape(t *testing.T, proto string, body []byte) {
	t.Helper()
	if problems := streamProblems(proto, body); len(problems) > 0 {
		t.Errorf("%s stream is malformed:\n  %s\nstream:\n%s", proto, strings.Join(problems, "\n  "), body)
	}
}

// streamProblems lists what is wrong with a raw event stream of protocol
// proto (see checkStreamShape).
func streamProblems(proto string, body []byte) []string {
	events := parseSSE(body)
	if len(events) == 0 {
		return []string{"no events"}
	}
	var problems []string
	bad := func(format string, args ...any) { problems = append(problems, fmt.Sprintf(format, args...)) }
	switch proto {
	case "openai-chat":
		checkChatStream(events, bad)
	case "openai-responses":
		checkResponsesStream(events, bad)
	case "anthropic":
		checkAnthropicStream(events, bad)
	case "gemini":
		checkGeminiStream(events, bad)
	default:
		bad("no stream check for protocol %s", proto)
	}
	return problems
}

// checkChatStream: chunks of JSON, tool call indices first seen in order
// 0, 1, …, one chunk with a finish_reason, usage (include_usage), and one
// data: [DONE] that is the last event.
func checkChatStream(events []sseEvent, bad func(string, ...any)) {
	finishes, usages, seen := 0, 0, 0
	for i, ev := range events {
		if ev.data == "[DONE]" {
			if i != len(events)-1 {
				bad("[DONE] is event %d of %d", i, len(events))
			}
			continue
		}
		if !gjson.Valid(ev.data) || gjson.Get(ev.data, "error").Exists() {
			bad("event %d is not a chunk: %s", i, ev.data)
			continue
		}
		if gjson.Get(ev.data, "choices.0.finish_reason").Str != "" {
			finishes++
		}
		if gjson.Get(ev.data, "usage").IsObject() {
			usages++
		}
		for _, tc := range gjson.Get(ev.data, "choices.0.delta.tool_calls").Array() {
			switch idx := int(tc.Get("index").Int()); {
			case idx == seen:
				seen++
			case idx > seen || !tc.Get("index").Exists():
				bad("event %d: tool call index %s after %d calls", i, tc.Get("index").Raw, seen)
			}
		}
	}
	if events[len(events)-1].data != "[DONE]" {
		bad("the last event is %q, not [DONE]", events[len(events)-1].data)
	}
	if finishes != 1 || usages != 1 {
		bad("%d chunks with a finish_reason and %d with usage, want 1 and 1", finishes, usages)
	}
}

// checkResponsesStream: every event's type is its name, sequence_number
// counts 0, 1, …, output items are added at output_index 0, 1, … and
// content parts at content_index 0, 1, … within their item, and
// response.completed is the one last event.
func checkResponsesStream(events []sseEvent, bad func(string, ...any)) {
	items := 0
	parts := map[int64]int64{}
	for i, ev := range events {
		typ := gjson.Get(ev.data, "type").Str
		if typ != ev.name || typ == "" {
			bad("event %d named %q has type %q", i, ev.name, typ)
		}
		if seq := gjson.Get(ev.data, "sequence_number"); !seq.Exists() || seq.Int() != int64(i) {
			bad("event %d (%s) has sequence_number %s", i, typ, seq.Raw)
		}
		out := gjson.Get(ev.data, "output_index")
		switch {
		case typ == "response.output_item.added":
			if out.Int() != int64(items) {
				bad("event %d adds output_index %d after %d items", i, out.Int(), items)
			}
			items++
		case out.Exists() && out.Int() >= int64(items):
			bad("event %d (%s) refers to output_index %d of %d items", i, typ, out.Int(), items)
		}
		if typ == "response.content_part.added" {
			if ci := gjson.Get(ev.data, "content_index").Int(); ci != parts[out.Int()] {
				bad("event %d adds content_index %d to item %d, want %d", i, ci, out.Int(), parts[out.Int()])
			}
			parts[out.Int()]++
		}
		if (typ == "response.completed") != (i == len(events)-1) {
			bad("event %d of %d is %s", i, len(events), typ)
		}
	}
	if n := len(gjson.Get(events[len(events)-1].data, "response.output").Array()); n != items {
		bad("response.completed holds %d output items, the stream added %d", n, items)
	}
}

// checkAnthropicStream: message_start first, content blocks started at
// index 0, 1, … one at a time, deltas and stops for the open block, one
// message_delta, and message_stop the one last event.
func checkAnthropicStream(events []sseEvent, bad func(string, ...any)) {
	open, started, deltas := -1, 0, 0
	for i, ev := range events {
		if typ := gjson.Get(ev.data, "type").Str; typ != ev.name {
			bad("event %d named %q has type %q", i, ev.name, typ)
		}
		idx := int(gjson.Get(ev.data, "index").Int())
		switch ev.name {
		case "message_start":
			if i != 0 {
				bad("message_start is event %d", i)
			}
		case "content_block_start":
			if open >= 0 || idx != started {
				bad("event %d starts block %d with block %d open after %d blocks", i, idx, open, started)
			}
			open, started = idx, started+1
		case "content_block_delta":
			if idx != open {
				bad("event %d is a delta of block %d while block %d is open", i, idx, open)
			}
		case "content_block_stop":
			if idx != open {
				bad("event %d stops block %d while block %d is open", i, idx, open)
			}
			open = -1
		case "message_delta":
			deltas++
		case "message_stop":
			if i != len(events)-1 {
				bad("message_stop is event %d of %d", i, len(events))
			}
		case "ping":
		default:
			bad("event %d is %q", i, ev.name)
		}
	}
	if last := events[len(events)-1].name; last != "message_stop" || deltas != 1 || open >= 0 || started == 0 {
		bad("the stream ends with %q after %d message_delta events and %d blocks (block %d open)", last, deltas, started, open)
	}
}

// checkGeminiStream: every event a GenerateContentResponse, and only the
// last one has a finishReason.
func checkGeminiStream(events []sseEvent, bad func(string, ...any)) {
	for i, ev := range events {
		if !gjson.Valid(ev.data) || gjson.Get(ev.data, "error").Exists() || !gjson.Get(ev.data, "candidates").IsArray() {
			bad("event %d is not a GenerateContentResponse: %s", i, ev.data)
			continue
		}
		if finished := gjson.Get(ev.data, "candidates.0.finishReason").Str != ""; finished != (i == len(events)-1) {
			bad("event %d of %d has finishReason %q", i, len(events), gjson.Get(ev.data, "candidates.0.finishReason").Str)
		}
	}
}

// TestTranslationStreamChecks proves that the stream checks of the matrix
// can fail: each protocol's well-formed stream passes, and each way of
// breaking it is caught.
func TestTranslationStreamChecks(t *testing.T) {
	sse := func(events ...string) []byte { return []byte(strings.Join(events, "")) }
	data := func(d string) string { return "data: " + d + "\n\n" }
	named := func(name, d string) string {
		if !strings.Contains(d, `"type"`) {
			d = `{"type":"` + name + `",` + strings.TrimPrefix(d, "{")
		}
		return "event: " + name + "\n" + data(d)
	}
	chatCall := func(i int) string {
		return data(fmt.Sprintf(`{"choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,"id":"c%d","function":{"name":"f","arguments":"{}"}}]}}]}`, i, i))
	}
	var (
		chatStart  = data(`{"choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`)
		chatFinish = data(`{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`)
		chatUsage  = data(`{"choices":[],"usage":{"prompt_tokens":1,"completion_tokens":1}}`)
		done       = data("[DONE]")
	)
	resp := func(seq int, typ, rest string) string {
		return named(typ, fmt.Sprintf(`{"type":%q,"sequence_number":%d%s}`, typ, seq, rest))
	}
	completed := func(seq, items int) string {
		return resp(seq, "response.completed", `,"response":{"output":[`+strings.Repeat(`{},`, items-1)+`{}]}`)
	}
	var (
		antStart = named("message_start", `{"message":{"usage":{"input_tokens":1}}}`)
		block    = func(i int) string {
			return named("content_block_start", fmt.Sprintf(`{"index":%d}`, i)) + named("content_block_delta", fmt.Sprintf(`{"index":%d}`, i)) +
				named("content_block_stop", fmt.Sprintf(`{"index":%d}`, i))
		}
		antDelta = named("message_delta", `{"usage":{"output_tokens":1}}`)
		antStop  = named("message_stop", `{}`)
	)
	gem := func(finish string) string {
		if finish != "" {
			finish = `,"finishReason":"` + finish + `"`
		}
		return data(`{"candidates":[{"content":{"parts":[{"text":"hi"}]}` + finish + `}]}`)
	}
	tests := []struct {
		name, proto string
		stream      []byte
		want        string // a problem's text; "" for a good stream
	}{
		{"chat good", "openai-chat", sse(chatStart, chatCall(0), chatCall(1), chatFinish, chatUsage, done), ""},
		{"chat tool call index gap", "openai-chat", sse(chatStart, chatCall(0), chatCall(2), chatFinish, chatUsage, done), "tool call index 2 after 1 calls"},
		{"chat event after DONE", "openai-chat", sse(chatStart, chatFinish, chatUsage, done, chatUsage), "[DONE] is event 3 of 5"},
		{"chat without DONE", "openai-chat", sse(chatStart, chatFinish, chatUsage), "not [DONE]"},
		{"chat without usage", "openai-chat", sse(chatStart, chatFinish, done), "0 with usage"},
		{"responses good", "openai-responses", sse(resp(0, "response.created", ""), resp(1, "response.output_item.added", `,"output_index":0`),
			resp(2, "response.content_part.added", `,"output_index":0,"content_index":0`), resp(3, "response.output_item.added", `,"output_index":1`),
			completed(4, 2)), ""},
		{"responses sequence gap", "openai-responses", sse(resp(0, "response.created", ""), resp(2, "response.output_item.added", `,"output_index":0`),
			completed(3, 1)), "event 1 (response.output_item.added) has sequence_number 2"},
		{"responses output index gap", "openai-responses", sse(resp(0, "response.created", ""), resp(1, "response.output_item.added", `,"output_index":1`),
			completed(2, 1)), "adds output_index 1 after 0 items"},
		{"responses content index gap", "openai-responses", sse(resp(0, "response.created", ""), resp(1, "response.output_item.added", `,"output_index":0`),
			resp(2, "response.content_part.added", `,"output_index":0,"content_index":1`), completed(3, 1)), "adds content_index 1 to item 0, want 0"},
		{"responses event after completed", "openai-responses", sse(resp(0, "response.created", ""), resp(1, "response.output_item.added", `,"output_index":0`),
			completed(2, 1), resp(3, "response.in_progress", "")), "event 2 of 4 is response.completed"},
		{"anthropic good", "anthropic", sse(antStart, named("ping", `{}`), block(0), block(1), antDelta, antStop), ""},
		{"anthropic block index gap", "anthropic", sse(antStart, block(0), block(2), antDelta, antStop), "starts block 2 with block -1 open after 1 blocks"},
		{"anthropic overlapping blocks", "anthropic", sse(antStart, named("content_block_start", `{"index":0}`), block(1), antDelta, antStop), "starts block 1 with block 0 open"},
		{"anthropic event after message_stop", "anthropic", sse(antStart, block(0), antDelta, antStop, antDelta), "message_stop is event 5 of 7"},
		{"anthropic without message_stop", "anthropic", sse(antStart, block(0), antDelta), `ends with "message_delta"`},
		{"gemini good", "gemini", sse(gem(""), gem(""), gem("STOP")), ""},
		{"gemini finish before the end", "gemini", sse(gem("STOP"), gem("")), `event 0 of 2 has finishReason "STOP"`},
		{"gemini without finish", "gemini", sse(gem(""), gem("")), `event 1 of 2 has finishReason ""`},
		{"gemini error event", "gemini", sse(gem(""), data(`{"error":{"code":500}}`)), "is not a GenerateContentResponse"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			problems := strings.Join(streamProblems(tt.proto, tt.stream), "\n")
			if tt.want == "" && problems != "" || !strings.Contains(problems, tt.want) {
				t.Errorf("problems:\n%s\nwant one with %q in:\n%s", problems, tt.want, tt.stream)
			}
		})
	}
}
