package proxy

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"switchyard/internal/benchutil"
	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/health"
	"switchyard/internal/state"
)

// streamEvents is the number of text deltas in a benchmark stream: the
// bench/run.sh streams mode's 50 chunks.
const streamEvents = 50

// sseTransport answers every request at once with the same SSE body.
type sseTransport struct{ body []byte }

func (c sseTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	_, _ = io.Copy(io.Discard, req.Body)
	h := http.Header{"Content-Type": {"text/event-stream"}}
	return &http.Response{StatusCode: 200, Header: h, Body: io.NopCloser(bytes.NewReader(c.body)),
		ContentLength: -1, Request: req}, nil
}

// openAIStreamBody is a Chat Completions stream of n one-word deltas,
// then the finish reason, the usage chunk and [DONE].
func openAIStreamBody(n int) []byte {
	var b strings.Builder
	chunk := func(delta, finish, usage string) {
		b.WriteString(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"gpt-4o","choices":[`)
		if delta != "" || finish != "null" {
			b.WriteString(`{"index":0,"delta":` + delta + `,"finish_reason":` + finish + `}`)
		}
		b.WriteString(`]` + usage + "}\n\n")
	}
	chunk(`{"role":"assistant","content":""}`, "null", "")
	for i := range n {
		chunk(`{"content":"word`+strconv.Itoa(i)+` "}`, "null", "")
	}
	chunk(`{}`, `"stop"`, "")
	chunk("", "null", `,"usage":{"prompt_tokens":12,"completion_tokens":`+strconv.Itoa(n)+`,"total_tokens":`+strconv.Itoa(12+n)+`}`)
	b.WriteString("data: [DONE]\n\n")
	return []byte(b.String())
}

// anthropicStreamBody is a Messages stream of n one-word text deltas.
func anthropicStreamBody(n int) []byte {
	var b strings.Builder
	ev := func(name, data string) { b.WriteString("event: " + name + "\ndata: " + data + "\n\n") }
	ev("message_start", `{"type":"message_start","message":{"id":"msg_1","type":"message","role":"assistant","model":"claude-sonnet-4","content":[],"stop_reason":null,"stop_sequence":null,"usage":{"input_tokens":12,"output_tokens":1}}}`)
	ev("content_block_start", `{"type":"content_block_start","index":0,"content_block":{"type":"text","text":""}}`)
	for i := range n {
		ev("content_block_delta", `{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"word`+strconv.Itoa(i)+` "}}`)
	}
	ev("content_block_stop", `{"type":"content_block_stop","index":0}`)
	ev("message_delta", `{"type":"message_delta","delta":{"stop_reason":"end_turn","stop_sequence":null},"usage":{"output_tokens":`+strconv.Itoa(n)+`}}`)
	ev("message_stop", `{"type":"message_stop"}`)
	return []byte(b.String())
}

// BenchmarkServeHTTPStream measures the gateway's work per stream event
// (docs/benchmarks.md#long-streams): one streaming request of
// streamEvents text deltas through the whole request path, the upstream
// in memory and the client a ResponseRecorder. ns/event and allocs/event
// divide the stream's cost by its events; the difference between a
// translated pair and the passthrough of the same client is the
// translation's cost per event.
func BenchmarkServeHTTPStream(b *testing.B) {
	chat := `{"model":"%s","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"Hello"}]}`
	msgs := `{"model":"%s","stream":true,"max_tokens":256,"messages":[{"role":"user","content":"Hello"}]}`
	cases := []struct {
		name     string
		client   string // path
		body     string
		provider string
		upstream []byte
	}{
		{"openai-passthrough", "/v1/chat/completions", chat, config.ProviderOpenAI, openAIStreamBody(streamEvents)},
		{"anthropic-passthrough", "/v1/messages", msgs, config.ProviderAnthropic, anthropicStreamBody(streamEvents)},
		{"anthropic-to-openai", "/v1/messages", msgs, config.ProviderOpenAI, openAIStreamBody(streamEvents)},
		{"openai-to-anthropic", "/v1/chat/completions", chat, config.ProviderAnthropic, anthropicStreamBody(streamEvents)},
	}
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			d := config.Default()
			model := "m-bench"
			cat, err := NewCatalog(CatalogInput{Upstreams: []config.Upstream{upstreamCfg("u0", c.provider, "http://upstream.invalid/v1", model)},
				Keys: []config.Key{{Name: "k", Key: testKey}}, Defaults: d.Defaults, Affinity: d.Affinity, Seed: 1, Now: clock.Real{}.Now})
			if err != nil {
				b.Fatal(err)
			}
			srv := New(Options{Clock: clock.Real{}, State: state.NewLocal(state.LocalOptions{Clock: clock.Real{}, Breakers: health.NewBreakers(d.Circuit, clock.Real{})}),
				Transport: sseTransport{body: c.upstream}, Logs: discardLogs{}}, cat)
			body := []byte(strings.Replace(c.body, "%s", model, 1))
			w := httptest.NewRecorder()
			b.ReportAllocs()
			b.ResetTimer()
			cpu := benchutil.CPUNow()
			for b.Loop() {
				req := httptest.NewRequest(http.MethodPost, c.client, bytes.NewReader(body))
				req.Header.Set("Authorization", "Bearer "+testKey)
				req.Header.Set("X-Api-Key", testKey)
				req.Header.Set("Anthropic-Version", "2023-06-01")
				req.Header.Set("Content-Type", "application/json")
				w.Body.Reset() // the recorder's buffer is reused: its growth is not the gateway's
				*w = httptest.ResponseRecorder{HeaderMap: make(http.Header), Body: w.Body, Code: 200}
				srv.ServeHTTP(w, req)
				if w.Code != 200 || w.Body.Len() == 0 {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
			benchutil.ReportCPU(b, cpu)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/streamEvents, "ns/event")
		})
	}
}
