package codec

import (
	"testing"

	"github.com/tidwall/gjson"
)

// TestAskUsage: a streamed OpenAI request is made to ask for usage unless
// it already does, its other fields untouched.
func TestAskUsage(t *testing.T) {
	tests := []struct {
		name, body string
		added      bool
	}{
		{"not asked", `{"model":"m","stream":true,"messages":[]}`, true},
		{"asked false", `{"model":"m","stream":true,"stream_options":{"include_usage":false,"x":1}}`, true},
		{"asked", `{"model":"m","stream":true,"stream_options":{"include_usage":true}}`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			su := OpenAIChat.(StreamUsage)
			got, added, err := su.AskUsage([]byte(tc.body))
			if err != nil || added != tc.added {
				t.Fatalf("added %v, err %v; want %v", added, err, tc.added)
			}
			if !gjson.GetBytes(got, "stream_options.include_usage").Bool() || gjson.GetBytes(got, "model").Str != "m" {
				t.Errorf("body %s", got)
			}
			if x := gjson.GetBytes(got, "stream_options.x"); gjson.Get(tc.body, "stream_options.x").Exists() && x.Int() != 1 {
				t.Errorf("stream_options.x lost: %s", got)
			}
		})
	}
}

// TestUsageOnly: only the chunk with a usage object and no choice is the
// usage chunk include_usage adds.
func TestUsageOnly(t *testing.T) {
	tests := []struct {
		name, data string
		want       bool
	}{
		{"usage chunk", `{"id":"c","choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2}}`, true},
		{"usage chunk, spaced", `{"id":"c", "choices": [ ], "usage": {"prompt_tokens": 5}}`, true},
		{"usage chunk without choices", `{"id":"c","usage":{"prompt_tokens":5}}`, true},
		{"content with null usage", `{"choices":[{"delta":{"content":"a"}}],"usage":null}`, false},
		{"content with usage (per-chunk stats)", `{"choices":[{"delta":{"content":"a"}}],"usage":{"prompt_tokens":5}}`, false},
		{"no usage", `{"choices":[]}`, false},
		{"done", `[DONE]`, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := OpenAIChat.(StreamUsage).UsageOnly(&Event{Data: []byte(tc.data)}); got != tc.want {
				t.Errorf("UsageOnly = %v, want %v", got, tc.want)
			}
		})
	}
}

// BenchmarkUsageOnly is the per-event cost of a stream whose client did
// not ask for usage: every chunk carries "usage":null once the gateway
// asks (docs/reference.md#request-cost).
func BenchmarkUsageOnly(b *testing.B) {
	ev := &Event{Data: []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":" word"},"finish_reason":null}],"usage":null}`)}
	su := OpenAIChat.(StreamUsage)
	b.ReportAllocs()
	for b.Loop() {
		if su.UsageOnly(ev) {
			b.Fatal("a content chunk is not the usage chunk")
		}
	}
}
