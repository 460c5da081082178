package codec

import (
	"testing"
)

// Benchmarks of the OpenAI translators' hot paths: one typical request,
// one whole answer, and one stream event. Goals: ≤ 20 µs per request,
// ≤ 2 µs per event.

// benchChatRequest is a typical agent request: a system prompt, a few
// turns with a tool call and its result, two tools.
const benchChatRequest = `{"model":"gpt-4.1","stream":true,"stream_options":{"include_usage":true},"max_completion_tokens":1024,"temperature":0.2,
"messages":[
{"role":"system","content":"You are a helpful assistant for a travel agency. Answer briefly and use the tools when you need live data. Never invent prices."},
{"role":"user","content":"What's the weather in Paris tomorrow, and is there a direct train from London?"},
{"role":"assistant","content":null,"tool_calls":[{"id":"call_Xq1YHnLqgPOMmBvnB6HV3Odp","type":"function","function":{"name":"get_weather","arguments":"{\"location\":\"Paris, France\",\"date\":\"2025-06-02\"}"}},{"id":"call_Kx9c2zTBq2bEJ9uQ2R3bdpXl","type":"function","function":{"name":"find_trains","arguments":"{\"from\":\"London\",\"to\":\"Paris\",\"direct\":true}"}}]},
{"role":"tool","tool_call_id":"call_Xq1YHnLqgPOMmBvnB6HV3Odp","content":"{\"forecast\":\"sunny\",\"high_c\":24,\"low_c\":14}"},
{"role":"tool","tool_call_id":"call_Kx9c2zTBq2bEJ9uQ2R3bdpXl","content":"{\"trains\":[{\"operator\":\"Eurostar\",\"departs\":\"07:01\",\"arrives\":\"10:20\"},{\"operator\":\"Eurostar\",\"departs\":\"09:01\",\"arrives\":\"12:17\"}]}"},
{"role":"assistant","content":"Tomorrow Paris will be sunny, 14–24 °C. Eurostar runs direct trains, e.g. 07:01 → 10:20 and 09:01 → 12:17."},
{"role":"user","content":[{"type":"text","text":"Great. Which one gets me there before 11?"}]}],
"tools":[
{"type":"function","function":{"name":"get_weather","description":"Get the weather forecast for a place and date.","parameters":{"type":"object","properties":{"location":{"type":"string","description":"City and country"},"date":{"type":"string","format":"date"}},"required":["location"]}}},
{"type":"function","function":{"name":"find_trains","description":"Find train connections.","parameters":{"type":"object","properties":{"from":{"type":"string"},"to":{"type":"string"},"direct":{"type":"boolean"}},"required":["from","to"]}}}],
"tool_choice":"auto","parallel_tool_calls":true,"user":"user-1234"}`

// benchResponsesRequest is benchChatRequest's conversation as a Responses request.
const benchResponsesRequest = `{"model":"gpt-4.1","stream":true,"max_output_tokens":1024,"temperature":0.2,
"instructions":"You are a helpful assistant for a travel agency. Answer briefly and use the tools when you need live data. Never invent prices.",
"input":[
{"role":"user","content":"What's the weather in Paris tomorrow, and is there a direct train from London?"},
{"type":"function_call","call_id":"call_Xq1YHnLqgPOMmBvnB6HV3Odp","name":"get_weather","arguments":"{\"location\":\"Paris, France\",\"date\":\"2025-06-02\"}"},
{"type":"function_call","call_id":"call_Kx9c2zTBq2bEJ9uQ2R3bdpXl","name":"find_trains","arguments":"{\"from\":\"London\",\"to\":\"Paris\",\"direct\":true}"},
{"type":"function_call_output","call_id":"call_Xq1YHnLqgPOMmBvnB6HV3Odp","output":"{\"forecast\":\"sunny\",\"high_c\":24,\"low_c\":14}"},
{"type":"function_call_output","call_id":"call_Kx9c2zTBq2bEJ9uQ2R3bdpXl","output":"{\"trains\":[{\"operator\":\"Eurostar\",\"departs\":\"07:01\",\"arrives\":\"10:20\"}]}"},
{"type":"message","role":"assistant","content":[{"type":"output_text","text":"Tomorrow Paris will be sunny, 14–24 °C. Eurostar runs direct trains."}]},
{"role":"user","content":[{"type":"input_text","text":"Great. Which one gets me there before 11?"}]}],
"tools":[
{"type":"function","name":"get_weather","description":"Get the weather forecast for a place and date.","parameters":{"type":"object","properties":{"location":{"type":"string"},"date":{"type":"string","format":"date"}},"required":["location"]}},
{"type":"function","name":"find_trains","description":"Find train connections.","parameters":{"type":"object","properties":{"from":{"type":"string"},"to":{"type":"string"},"direct":{"type":"boolean"}},"required":["from","to"]}}],
"tool_choice":"auto","parallel_tool_calls":true,"user":"user-1234"}`

func BenchmarkOpenAIChatRequest(b *testing.B) {
	c := OpenAIChat.(Translator)
	body := []byte(benchChatRequest)
	r, err := c.DecodeRequest(body)
	if err != nil {
		b.Fatal(err)
	}
	b.Run("decode+encode", func(b *testing.B) {
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			r, _ := c.DecodeRequest(body)
			if _, err := c.EncodeRequest(r, "gpt-4.1-2025-04-14", EncodeOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("decode", func(b *testing.B) { // a Chat client served by another family
		b.ReportAllocs()
		b.SetBytes(int64(len(body)))
		for b.Loop() {
			if _, err := c.DecodeRequest(body); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("encode", func(b *testing.B) { // another family's client served by an OpenAI upstream
		b.ReportAllocs()
		for b.Loop() {
			if _, err := c.EncodeRequest(r, "gpt-4.1-2025-04-14", EncodeOptions{}); err != nil {
				b.Fatal(err)
			}
		}
	})
}

func BenchmarkOpenAIResponsesRequest(b *testing.B) {
	c := OpenAIResponses.(Translator)
	body := []byte(benchResponsesRequest)
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() { // a Responses client served by another family
		if _, err := c.DecodeRequest(body); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkOpenAIWholeAnswer(b *testing.B) {
	chat, resp := OpenAIChat.(Translator), OpenAIResponses.(Translator)
	chatBody := oaiFixture(b, "chat_tools_interleaved.json")
	respBody := oaiFixture(b, "resp_reasoning_tools.json")
	b.Run("chat decode+encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r, err := chat.DecodeResponse(chatBody)
			if err != nil {
				b.Fatal(err)
			}
			chat.EncodeResponse(r)
		}
	})
	b.Run("responses decode+encode", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			r, err := resp.DecodeResponse(respBody)
			if err != nil {
				b.Fatal(err)
			}
			resp.EncodeResponse(r)
		}
	})
}

// BenchmarkOpenAIStreamEvent decodes one upstream text-delta event and
// encodes its chunks for the client, in steady state (a text block open,
// buffers reused).
func BenchmarkOpenAIStreamEvent(b *testing.B) {
	chatDelta := &Event{Data: []byte(`{"id":"chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG","object":"chat.completion.chunk","created":1741570283,"model":"gpt-4o-2024-08-06","service_tier":"default","system_fingerprint":"fp_eb9dce56a8","choices":[{"index":0,"delta":{"content":" can I help"},"logprobs":null,"finish_reason":null}],"usage":null}`)}
	respDelta := &Event{Name: []byte("response.output_text.delta"), Data: []byte(`{"type":"response.output_text.delta","sequence_number":4,"item_id":"msg_68af40310a1c8193b0c1c8e5d3a0d4a705438e46b5f69a3b","output_index":0,"content_index":0,"delta":" can I help","logprobs":[],"obfuscation":"x1Yz"}`)}
	respStart := []*Event{
		{Data: []byte(`{"type":"response.created","response":{"id":"resp_1","model":"m"}}`)},
		{Data: []byte(`{"type":"response.content_part.added","output_index":0,"content_index":0,"part":{"type":"output_text","text":""}}`)},
	}
	chatStart := []*Event{{Data: []byte(`{"id":"chatcmpl-1","model":"m","choices":[{"index":0,"delta":{"content":"Hi"}}]}`)}}
	tests := []struct {
		name   string
		up     Translator
		start  []*Event
		ev     *Event
		client Translator
	}{
		{"chat to chat", OpenAIChat.(Translator), chatStart, chatDelta, OpenAIChat.(Translator)},
		{"chat to responses", OpenAIChat.(Translator), chatStart, chatDelta, OpenAIResponses.(Translator)},
		{"responses to chat", OpenAIResponses.(Translator), respStart, respDelta, OpenAIChat.(Translator)},
		{"responses to responses", OpenAIResponses.(Translator), respStart, respDelta, OpenAIResponses.(Translator)},
	}
	for _, tt := range tests {
		b.Run(tt.name, func(b *testing.B) {
			dec, enc := tt.up.NewStreamDecoder(), tt.client.NewStreamEncoder(&Request{})
			var chunks []Chunk
			var out []byte
			for _, ev := range tt.start {
				chunks, _ = dec.Decode(ev, chunks[:0])
				for i := range chunks {
					out = enc.Encode(&chunks[i], out[:0])
				}
			}
			b.ReportAllocs()
			for b.Loop() {
				var err error
				if chunks, err = dec.Decode(tt.ev, chunks[:0]); err != nil || len(chunks) != 1 {
					b.Fatalf("decoded %d chunks, %v", len(chunks), err)
				}
				out = enc.Encode(&chunks[0], out[:0])
			}
		})
	}
}
