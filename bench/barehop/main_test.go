package main

import (
	"bufio"
	"context"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"switchyard/internal/mock"
)

// TestProxy sends a JSON and a streaming chat completion through the hop to
// a mock and checks that the stream's first event arrives before the mock
// has finished it.
func TestProxy(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	_, base, err := mock.Start(ctx, "127.0.0.1:0", mock.Options{Name: "m", Behavior: mock.Behavior{TPS: 20, CompletionTokens: 6}})
	if err != nil {
		t.Fatal(err)
	}
	target, _ := url.Parse(base)
	hop := httptest.NewServer(newProxy(target))
	t.Cleanup(hop.Close)

	post := func(body string) *http.Response {
		t.Helper()
		resp, err := http.Post(hop.URL+"/v1/chat/completions", "application/json", strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { resp.Body.Close() })
		if resp.StatusCode != http.StatusOK || resp.Header.Get(mock.HeaderUpstream) != "m" {
			t.Fatalf("status %d, upstream %q", resp.StatusCode, resp.Header.Get(mock.HeaderUpstream))
		}
		return resp
	}
	post(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)

	start := time.Now()
	resp := post(`{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	line, err := bufio.NewReader(resp.Body).ReadString('\n')
	if err != nil || !strings.HasPrefix(line, "data:") {
		t.Fatalf("first line %q, %v", line, err)
	}
	// 6 tokens at 20/s take 250 ms after the first; a buffered relay would
	// deliver the first event only at the end.
	if first := time.Since(start); first > 200*time.Millisecond {
		t.Errorf("first event after %v: not flushed at once", first)
	}
}
