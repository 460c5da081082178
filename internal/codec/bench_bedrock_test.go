package codec

import (
	"testing"
)

// Benchmarks of the Bedrock translator's hot paths: a Chat client's
// request encoded for Converse, a whole answer decoded, and one
// ConverseStream event decoded and re-encoded for a Chat client. Goals as
// for the OpenAI translators: ≤ 20 µs per request, ≤ 2 µs per event.

func BenchmarkBedrockRequest(b *testing.B) {
	r, err := OpenAIChat.(Translator).DecodeRequest([]byte(benchChatRequest))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Bedrock.(Translator).EncodeRequest(r, "us.anthropic.claude-sonnet-4-20250514-v1:0", EncodeOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkBedrockResponse(b *testing.B) {
	body := agFixture(b, "bedrock-response.json")
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := Bedrock.(Translator).DecodeResponse(body); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBedrockStreamEvent decodes a text delta, as a ConverseStream
// sends one per token, and encodes its chunk for a Chat client.
func BenchmarkBedrockStreamEvent(b *testing.B) {
	evs, err := brEvents(brFrames(`messageStart {"role":"assistant"}`,
		`contentBlockDelta {"contentBlockIndex":0,"delta":{"text":" the"},"p":"abcdefgh"}`))
	if err != nil {
		b.Fatal(err)
	}
	dec := Bedrock.(Translator).NewStreamDecoder()
	enc := OpenAIChat.(Translator).NewStreamEncoder(&Request{Model: "claude-sonnet-4"})
	chunks, _ := dec.Decode(&evs[0], nil)
	var out []byte
	for i := range chunks {
		out = enc.Encode(&chunks[i], out)
	}
	delta := &evs[1]
	b.ReportAllocs()
	for b.Loop() {
		chunks, err = dec.Decode(delta, chunks[:0])
		if err != nil {
			b.Fatal(err)
		}
		out = out[:0]
		for i := range chunks {
			out = enc.Encode(&chunks[i], out)
		}
	}
}
