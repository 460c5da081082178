package gateway_test

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"switchyard/internal/config"
	"switchyard/internal/mock"
)

// TestGracefulShutdownFinishesStreams: cancelling Serve's context in the
// middle of a slow stream (HTTP/1.1 and h2c) makes the port refuse new
// connections at once, lets the stream finish whole, and Serve returns nil.
func TestGracefulShutdownFinishesStreams(t *testing.T) {
	const tokens = 16
	tests := []struct {
		name, provider, path, model, body string
		isToken                           func(ev sseEvent) bool
		last                              func(ev sseEvent) bool
	}{
		{
			name: "openai", provider: config.ProviderOpenAI, path: "/v1/chat/completions", model: "gpt-4o",
			body:    `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"slow please"}]}`,
			isToken: func(ev sseEvent) bool { return gjson.Get(ev.data, "choices.0.delta.content").String() != "" },
			last:    func(ev sseEvent) bool { return ev.data == "[DONE]" },
		},
		{
			name: "anthropic", provider: config.ProviderAnthropic, path: "/v1/messages", model: "claude-3-5-haiku",
			body:    `{"model":"claude-3-5-haiku","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"slow please"}]}`,
			isToken: func(ev sseEvent) bool { return ev.name == "content_block_delta" },
			last:    func(ev sseEvent) bool { return ev.name == "message_stop" },
		},
	}
	for _, tc := range tests {
		for _, h2c := range []bool{false, true} {
			name := tc.name + "/http1"
			if h2c {
				name = tc.name + "/h2c"
			}
			t.Run(name, func(t *testing.T) {
				// About half a second: 100 ms to the first event, then 15 tokens at 40/s.
				_, url := startMock(t, "slow", mock.Behavior{TTFT: 100 * time.Millisecond, TPS: 40, CompletionTokens: tokens})
				e := startGateway(t, spec{upstreams: []config.Upstream{upstreamAt("slow", tc.provider, url, 0, tc.model)}})

				req, err := http.NewRequest(http.MethodPost, e.URL+tc.path, strings.NewReader(tc.body))
				if err != nil {
					t.Fatal(err)
				}
				req.Header.Set("Authorization", "Bearer "+testKey)
				req.Header.Set("Content-Type", "application/json")
				tr := &http.Transport{}
				if h2c {
					tr.Protocols = new(http.Protocols)
					tr.Protocols.SetUnencryptedHTTP2(true)
				}
				client := &http.Client{Transport: tr}
				resp, err := client.Do(req)
				if err != nil {
					t.Fatal(err)
				}
				defer resp.Body.Close()
				if resp.StatusCode != http.StatusOK || (resp.ProtoMajor == 2) != h2c {
					t.Fatalf("status %d over %s", resp.StatusCode, resp.Proto)
				}
				br := bufio.NewReader(resp.Body)
				first := readEvent(t, br) // the stream is in flight

				shutdown := make(chan error, 1)
				go func() { shutdown <- e.Shutdown() }()
				// Shutdown closes the listener first: wait until new
				// connections are refused, then read the rest of the stream.
				for deadline := time.Now().Add(5 * time.Second); ; {
					c, err := net.Dial("tcp", e.Addr)
					if err != nil {
						break
					}
					c.Close()
					if time.Now().After(deadline) {
						t.Fatal("the listener still accepts connections 5 s after shutdown began")
					}
				}

				rest, err := io.ReadAll(br)
				if err != nil {
					t.Fatalf("the stream broke during shutdown: %v", err)
				}
				events := parseSSE(append([]byte(first), rest...))
				n := 0
				for _, ev := range events {
					if tc.isToken(ev) {
						n++
					}
				}
				if n != tokens || !tc.last(events[len(events)-1]) {
					t.Fatalf("stream cut by shutdown: %d of %d tokens, last event %+v", n, tokens, events[len(events)-1])
				}
				if err := <-shutdown; err != nil {
					t.Fatalf("Serve returned %v, want nil", err)
				}
				if c, err := net.Dial("tcp", e.Addr); err == nil {
					c.Close()
					t.Fatal("a new connection was accepted after shutdown")
				}
			})
		}
	}
}
