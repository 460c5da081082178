package codec

import (
	"switchyard/internal/benchutil"
	"testing"
)

// Benchmarks of the Anthropic and Gemini translators' hot paths: one
// typical request decoded and encoded, one whole answer, and one stream
// event (a text delta) decoded and encoded. Goals: ≤ 20 µs per request,
// ≤ 2 µs per event. Each also reports cpu-ns/op, the process's CPU time
// per operation, which a busy machine does not inflate as it does ns/op.

// agAnthropicRequestBody is a typical agent turn: a system prompt, a tool
// loop, two tools.
var agAnthropicRequestBody = []byte(`{"model":"claude-sonnet-4-5","max_tokens":4096,"stream":true,
"system":[{"type":"text","text":"You are a helpful travel assistant. Answer briefly, cite the tools you used, and never invent a forecast.","cache_control":{"type":"ephemeral"}}],
"messages":[
 {"role":"user","content":"What is the weather in Paris and in London today? I am deciding where to spend the afternoon."},
 {"role":"assistant","content":[{"type":"text","text":"Let me check both cities."},
  {"type":"tool_use","id":"toolu_01A09q90qw90lq917835lq9","name":"get_weather","input":{"location":"Paris, France","unit":"celsius"}},
  {"type":"tool_use","id":"toolu_01B7zqXkP3mG2hVwYtR8sLcN","name":"get_weather","input":{"location":"London, UK","unit":"celsius"}}]},
 {"role":"user","content":[{"type":"tool_result","tool_use_id":"toolu_01A09q90qw90lq917835lq9","content":"18C, sunny, light wind from the west"},
  {"type":"tool_result","tool_use_id":"toolu_01B7zqXkP3mG2hVwYtR8sLcN","content":"12C, showers until 16:00"}]},
 {"role":"assistant","content":"Paris is sunny at 18C; London has showers until 16:00 at 12C."},
 {"role":"user","content":"Great. Book me a table for two in Paris at 19:30, somewhere near the Louvre."}],
"tools":[
 {"name":"get_weather","description":"Get the current weather in a given location","input_schema":{"type":"object","properties":{"location":{"type":"string","description":"The city and country"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["location"]}},
 {"name":"book_table","description":"Book a restaurant table","input_schema":{"type":"object","properties":{"city":{"type":"string"},"time":{"type":"string"},"party":{"type":"integer"},"near":{"type":"string"}},"required":["city","time","party"]}}],
"temperature":0.7}`)

// agGeminiRequestBody is the same turn in Gemini's shape.
var agGeminiRequestBody = []byte(`{
"systemInstruction":{"parts":[{"text":"You are a helpful travel assistant. Answer briefly, cite the tools you used, and never invent a forecast."}]},
"contents":[
 {"role":"user","parts":[{"text":"What is the weather in Paris and in London today? I am deciding where to spend the afternoon."}]},
 {"role":"model","parts":[{"text":"Let me check both cities."},
  {"functionCall":{"name":"get_weather","args":{"location":"Paris, France","unit":"celsius"}},"thoughtSignature":"ot5irstrspgbwlm97LOLTkui1kAbs8046weWwMmhUn8SNA=="},
  {"functionCall":{"name":"get_weather","args":{"location":"London, UK","unit":"celsius"}}}]},
 {"role":"user","parts":[{"functionResponse":{"name":"get_weather","response":{"result":"18C, sunny, light wind from the west"}}},
  {"functionResponse":{"name":"get_weather","response":{"result":"12C, showers until 16:00"}}}]},
 {"role":"model","parts":[{"text":"Paris is sunny at 18C; London has showers until 16:00 at 12C."}]},
 {"role":"user","parts":[{"text":"Great. Book me a table for two in Paris at 19:30, somewhere near the Louvre."}]}],
"tools":[{"functionDeclarations":[
 {"name":"get_weather","description":"Get the current weather in a given location","parametersJsonSchema":{"type":"object","properties":{"location":{"type":"string","description":"The city and country"},"unit":{"type":"string","enum":["celsius","fahrenheit"]}},"required":["location"]}},
 {"name":"book_table","description":"Book a restaurant table","parameters":{"type":"OBJECT","properties":{"city":{"type":"STRING"},"time":{"type":"STRING"},"party":{"type":"INTEGER"},"near":{"type":"STRING","nullable":true}},"required":["city","time","party"]}}]}],
"generationConfig":{"temperature":0.7,"maxOutputTokens":4096}}`)

func BenchmarkAGRequest(b *testing.B) {
	anth, gem := Anthropic.(Translator), Gemini.(Translator)
	cases := []struct {
		name     string
		from, to Translator
		body     []byte
	}{
		{"anthropic-to-anthropic", anth, anth, agAnthropicRequestBody},
		{"anthropic-to-gemini", anth, gem, agAnthropicRequestBody},
		{"gemini-to-gemini", gem, gem, agGeminiRequestBody},
		{"gemini-to-anthropic", gem, anth, agGeminiRequestBody},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(c.body)))
			cpu := benchutil.CPUNow()
			for b.Loop() {
				r, err := c.from.DecodeRequest(c.body)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := c.to.EncodeRequest(r, "upstream-model", EncodeOptions{}); err != nil {
					b.Fatal(err)
				}
			}
			benchutil.ReportCPU(b, cpu)
		})
	}
}

func BenchmarkAGResponse(b *testing.B) {
	anth, gem := Anthropic.(Translator), Gemini.(Translator)
	cases := []struct {
		name     string
		from, to Translator
		fixture  string
	}{
		{"anthropic-to-anthropic", anth, anth, "anthropic-message.json"},
		{"anthropic-to-gemini", anth, gem, "anthropic-message.json"},
		{"gemini-to-gemini", gem, gem, "gemini-response.json"},
		{"gemini-to-anthropic", gem, anth, "gemini-response.json"},
	}
	for _, c := range cases {
		body := agFixture(b, c.fixture)
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			cpu := benchutil.CPUNow()
			for b.Loop() {
				r, err := c.from.DecodeResponse(body)
				if err != nil {
					b.Fatal(err)
				}
				_ = c.to.EncodeResponse(r)
			}
			benchutil.ReportCPU(b, cpu)
		})
	}
}

// BenchmarkAGStreamEvent decodes one text delta event mid-stream and
// encodes the chunk it yields.
func BenchmarkAGStreamEvent(b *testing.B) {
	anth, gem := Anthropic.(Translator), Gemini.(Translator)
	anthropicPrefix := agSSE(`message_start {"type":"message_start","message":{"id":"msg_1","model":"claude","usage":{"input_tokens":10,"output_tokens":1}}}`,
		`content_block_start {"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	anthropicDelta := Event{Name: []byte("content_block_delta"),
		Data: []byte(`{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":" the weather in both cities is mild, with"}}`)}
	geminiPrefix := agData(`{"candidates":[{"content":{"role":"model","parts":[{"text":"Let me"}]},"index":0}],"modelVersion":"gemini-2.5-flash","responseId":"r1"}`)
	geminiDelta := Event{Data: []byte(`{"candidates":[{"content":{"parts":[{"text":" the weather in both cities is mild, with"}],"role":"model"},"index":0}],"usageMetadata":{"promptTokenCount":1290,"candidatesTokenCount":17,"totalTokenCount":1307},"modelVersion":"gemini-2.5-flash","responseId":"r1"}`)}
	cases := []struct {
		name     string
		from, to Translator
		prefix   []byte
		ev       *Event
	}{
		{"anthropic-to-anthropic", anth, anth, anthropicPrefix, &anthropicDelta},
		{"anthropic-to-gemini", anth, gem, anthropicPrefix, &anthropicDelta},
		{"gemini-to-gemini", gem, gem, geminiPrefix, &geminiDelta},
		{"gemini-to-anthropic", gem, anth, geminiPrefix, &geminiDelta},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			dec, enc := c.from.NewStreamDecoder(), c.to.NewStreamEncoder(&Request{})
			chunks, err := agDecodeStream(dec, c.prefix)
			if err != nil {
				b.Fatal(err)
			}
			out := agEncodeStream(enc, chunks)
			chunks = chunks[:0]
			b.ReportAllocs()
			cpu := benchutil.CPUNow()
			for b.Loop() {
				chunks, err = dec.Decode(c.ev, chunks[:0])
				if err != nil || len(chunks) == 0 {
					b.Fatalf("%d chunks, %v", len(chunks), err)
				}
				out = out[:0]
				for i := range chunks {
					out = enc.Encode(&chunks[i], out)
				}
			}
			benchutil.ReportCPU(b, cpu)
		})
	}
}
