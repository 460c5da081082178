package provider

import (
	"bytes"
	"context"
	"net/http"
	"testing"
)

// BenchmarkBedrockNewRequest builds and SigV4-signs a Converse request of
// a typical 4 KiB body, with the headers a client's request forwards.
func BenchmarkBedrockNewRequest(b *testing.B) {
	ep := Bedrock{}.New(sigV4Upstream("https://bedrock-runtime.eu-west-3.amazonaws.com"))
	body := bytes.Repeat([]byte("x"), 4<<10)
	h := http.Header{"Traceparent": {"00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"}, "X-Request-Id": {"r1"}, "User-Agent": {"OpenAI/Go 3.0"}}
	b.ReportAllocs()
	b.SetBytes(int64(len(body)))
	for b.Loop() {
		if _, err := ep.NewRequest(context.Background(), "converse", "us.anthropic.claude-sonnet-4-20250514-v1:0", body, h.Clone()); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkEventStreamReader reads ConverseStream text-delta frames, one
// per token.
func BenchmarkEventStreamReader(b *testing.B) {
	one := esEvent(b, "contentBlockDelta", `{"contentBlockIndex":0,"delta":{"text":" the"},"p":"abcdefgh"}`)
	stream := bytes.Repeat(one, 1000)
	b.ReportAllocs()
	b.SetBytes(int64(len(stream)))
	for b.Loop() {
		r := NewEventStreamReader(bytes.NewReader(stream))
		for range 1000 {
			if _, err := r.Next(); err != nil {
				b.Fatal(err)
			}
		}
	}
}
