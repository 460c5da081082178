package provider

import (
	"context"
	"net/http"
	"testing"

	"switchyard/internal/codec"
	"switchyard/internal/mock"
)

// BenchmarkVertexNewRequest measures building one upstream request with a
// cached token: Gemini's passes the body through, Claude's rewrites it
// (model out, anthropic_version in).
func BenchmarkVertexNewRequest(b *testing.B) {
	_, _, u := vertexMock(b, mock.Options{})
	ep := Vertex{}.New(u)
	cases := []struct {
		name, op, model, body string
	}{
		{"gemini", codec.Gemini.Op(false), "gemini-2.5-flash", geminiBody},
		{"claude", codec.Anthropic.Op(false), "claude-sonnet-4@20250514", claudeBody},
		{"claude stream", codec.Anthropic.Op(true), "claude-sonnet-4@20250514", `{"stream":true,` + claudeBody[1:]},
	}
	for _, c := range cases {
		body := []byte(c.body)
		if _, err := ep.NewRequest(context.Background(), c.op, c.model, body, http.Header{}); err != nil {
			b.Fatal(err)
		}
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ep.NewRequest(context.Background(), c.op, c.model, body, http.Header{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
