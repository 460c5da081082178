package mock

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"switchyard/internal/clock"
)

// discardWriter is a ResponseWriter that throws the answer away, so a
// benchmark measures the mock, not a recorder.
type discardWriter struct {
	header http.Header
	status int
}

func (w *discardWriter) Header() http.Header         { return w.header }
func (w *discardWriter) WriteHeader(code int)        { w.status = code }
func (w *discardWriter) Write(b []byte) (int, error) { return len(b), nil }
func (w *discardWriter) Flush()                      {}

// BenchmarkServe measures the mock's own cost per answer, which every
// gateway benchmark that uses it pays too.
func BenchmarkServe(b *testing.B) {
	cases := []struct {
		name, path, body string
	}{
		{"chat", "/v1/chat/completions", chatBody},
		{"chat-stream", "/v1/chat/completions", `{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`},
		{"messages-stream", "/v1/messages", `{"model":"claude-3-5-haiku","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		{"embeddings", "/v1/embeddings", `{"model":"text-embedding-3-small","input":["a","b","c","d"]}`},
		{"chat-tool-call-stream", "/v1/chat/completions", `{"model":"gpt-4o","stream":true,"tools":[{"type":"function","function":{"name":"get_weather","parameters":{"type":"object","properties":{"location":{"type":"string"}},"required":["location"]}}}],"messages":[{"role":"user","content":"weather?"}]}`},
		{"messages-thinking-stream", "/v1/messages", `{"model":"claude-sonnet-4-5","max_tokens":4096,"thinking":{"type":"enabled","budget_tokens":1024},"stream":true,"messages":[{"role":"user","content":"hi"}]}`},
		{"gemini-stream", "/v1beta/models/gemini-2.5-flash:streamGenerateContent?alt=sse&key=k", `{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}`},
	}
	for _, tokens := range []int{16, 256} {
		for _, c := range cases {
			b.Run(fmt.Sprintf("%s/tokens=%d", c.name, tokens), func(b *testing.B) {
				s := New(Options{Behavior: Behavior{CompletionTokens: tokens}})
				b.ReportAllocs()
				for b.Loop() {
					w := &discardWriter{header: http.Header{}}
					s.ServeHTTP(w, httptest.NewRequest(http.MethodPost, c.path, strings.NewReader(c.body)))
					if w.status != http.StatusOK {
						b.Fatalf("status %d", w.status)
					}
				}
			})
		}
	}
}

// BenchmarkLimiterAdmit measures the RPM/TPM window with a full minute of
// history to prune and sum.
func BenchmarkLimiterAdmit(b *testing.B) {
	for _, perSecond := range []int{10, 1000} {
		b.Run(fmt.Sprintf("rps=%d", perSecond), func(b *testing.B) {
			fc := clock.NewFake(epoch)
			var l limiter
			step := time.Second / time.Duration(perSecond)
			b.ReportAllocs()
			for b.Loop() {
				fc.Advance(step)
				l.admit(fc.Now(), 1<<30, 1<<30, 100, true)
			}
		})
	}
}
