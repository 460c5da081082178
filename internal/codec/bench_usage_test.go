package codec

import "testing"

// chatBody is a whole chat.completion as the benchmark's mock answers it.
var chatBody = []byte(`{"choices":[{"finish_reason":"stop","index":0,"logprobs":null,"message":{"annotations":[],"content":"slow watch answers allow over yard answers by mock latency elsewhere board board elsewhere upstream that","refusal":null,"role":"assistant"}}],"created":1796609792,"id":"chatcmpl-6539794eebf71","model":"gpt-4o","object":"chat.completion","service_tier":"default","system_fingerprint":"fp_mock","usage":{"completion_tokens":16,"completion_tokens_details":{"accepted_prediction_tokens":0,"audio_tokens":0,"reasoning_tokens":3,"rejected_prediction_tokens":0},"prompt_tokens":15,"prompt_tokens_details":{"audio_tokens":0,"cached_tokens":7},"total_tokens":31}}`)

// BenchmarkOpenAIUsage is reading the usage of a whole answer, which every
// passthrough Chat Completions request does for its log and its bill.
func BenchmarkOpenAIUsage(b *testing.B) {
	b.ReportAllocs()
	var u Usage
	for b.Loop() {
		u = openAI{}.Usage(chatBody)
	}
	if u != (Usage{Input: 15, Output: 16, CacheRead: 7, Reasoning: 3}) {
		b.Fatalf("usage = %+v", u)
	}
}
