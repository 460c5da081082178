package gateway_test

import (
	"bytes"
	"fmt"
	"io"
	"net/http"
	"sync/atomic"
	"testing"

	"switchyard/internal/config"
	"switchyard/internal/mock"
)

// benchChatBody is the JSON chat request of the proxy benchmarks.
const benchChatBody = `{"model":"gpt-4o","messages":[{"role":"system","content":"You are terse."},{"role":"user","content":"Say hello to the benchmark."}]}`

// benchChat posts benchChatBody to url b.N times, serially and in parallel.
// The mock has zero latency, so BenchmarkProxyChat − BenchmarkDirectMock is
// what the gateway adds.
func benchChat(b *testing.B, url, key string, session func(worker int64) string) {
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1024}}
	do := func(worker int64) error {
		req, err := http.NewRequest(http.MethodPost, url, bytes.NewReader([]byte(benchChatBody)))
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+key)
		req.Header.Set("Content-Type", "application/json")
		if session != nil {
			req.Header.Set("X-Session-Id", session(worker))
		}
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("status %d", resp.StatusCode)
		}
		return nil
	}
	b.Run("serial", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if err := do(0); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("parallel", func(b *testing.B) {
		b.ReportAllocs()
		var workers atomic.Int64
		b.RunParallel(func(pb *testing.PB) {
			worker := workers.Add(1)
			for pb.Next() {
				if err := do(worker); err != nil {
					b.Error(err) // FailNow may not be called from a RunParallel goroutine
					return
				}
			}
		})
	})
}

// BenchmarkProxyChat: client → gateway → one zero-latency mock, JSON chat.
func BenchmarkProxyChat(b *testing.B) {
	_, url := startMock(b, "bench", mock.Behavior{})
	e := startGateway(b, spec{upstreams: []config.Upstream{upstreamAt("bench", config.ProviderOpenAI, url, 0, "gpt-4o")}})
	benchChat(b, e.URL+"/v1/chat/completions", testKey, nil)
}

// BenchmarkDirectMock: the same requests straight to the mock.
func BenchmarkDirectMock(b *testing.B) {
	_, url := startMock(b, "bench", mock.Behavior{})
	benchChat(b, url+"/v1/chat/completions", "sk-direct", nil)
}
