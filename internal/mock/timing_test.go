package mock

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"
)

// Timing tests run in a synctest bubble: the handler's waits use the Real
// clock, whose timers the bubble fakes, so the measured offsets are exact.

const ms = time.Millisecond

func TestStreamTiming(t *testing.T) {
	behavior := Behavior{Latency: 50 * ms, TTFT: 200 * ms, TPS: 10, CompletionTokens: 4}
	tests := []struct {
		name      string
		path      string
		body      string
		behavior  Behavior
		wantHdr   time.Duration
		wantFlush []time.Duration // offset of each flushed event
	}{
		{
			name: "chat", path: "/v1/chat/completions", body: `{"model":"m","stream":true}`, behavior: behavior,
			wantHdr: 250 * ms,
			// role chunk and first token after Latency+TTFT, then 100 ms per token, finish chunk, [DONE]
			wantFlush: []time.Duration{250 * ms, 250 * ms, 350 * ms, 450 * ms, 550 * ms, 550 * ms, 550 * ms},
		},
		{
			name: "messages", path: "/v1/messages", body: `{"model":"c","stream":true,"max_tokens":100}`, behavior: behavior,
			wantHdr: 250 * ms,
			// message_start, content_block_start, ping, delta ×4, content_block_stop, message_delta, message_stop
			wantFlush: []time.Duration{250 * ms, 250 * ms, 250 * ms, 250 * ms, 350 * ms, 450 * ms, 550 * ms, 550 * ms, 550 * ms, 550 * ms},
		},
		{
			name: "as fast as possible", path: "/v1/completions", body: `{"model":"m","stream":true}`,
			behavior:  Behavior{TTFT: 30 * ms, CompletionTokens: 3},
			wantHdr:   30 * ms,
			wantFlush: []time.Duration{30 * ms, 30 * ms, 30 * ms, 30 * ms, 30 * ms},
		},
		{
			name: "non-streaming waits Latency only", path: "/v1/chat/completions", body: `{"model":"m"}`, behavior: behavior,
			wantHdr: 50 * ms,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := New(Options{Behavior: tt.behavior})
				rec := newTimedRecorder()
				start := time.Now()
				s.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, tt.path, strings.NewReader(tt.body)))
				status, headerAt, flushes := rec.snapshot()
				if status != http.StatusOK {
					t.Fatalf("status = %d", status)
				}
				if got := headerAt.Sub(start); got != tt.wantHdr {
					t.Errorf("headers after %v, want %v", got, tt.wantHdr)
				}
				var got []time.Duration
				for _, f := range flushes {
					got = append(got, f.at.Sub(start))
					if strings.Count(f.data, "data: ") != 1 {
						t.Errorf("flush %q holds %d events, want 1", f.data, strings.Count(f.data, "data: "))
					}
				}
				if len(got) != len(tt.wantFlush) {
					t.Fatalf("flushes at %v, want %v", got, tt.wantFlush)
				}
				for i := range got {
					if got[i] != tt.wantFlush[i] {
						t.Errorf("flushes at %v, want %v", got, tt.wantFlush)
						break
					}
				}
			})
		})
	}
}

func TestClientGoneStopsWork(t *testing.T) {
	tests := []struct {
		name        string
		body        string
		behavior    Behavior
		cancelAt    time.Duration
		wantFlushes int
	}{
		{"during latency", `{"model":"m","stream":true}`, Behavior{Latency: 100 * ms}, 20 * ms, 0},
		{"during ttft", `{"model":"m","stream":true}`, Behavior{TTFT: 100 * ms}, 20 * ms, 0},
		{"mid stream", `{"model":"m","stream":true}`, Behavior{TTFT: 100 * ms, TPS: 10, CompletionTokens: 50}, 320 * ms, 4}, // role, t0@100, t1@200, t2@300
		{"non-streaming latency", `{"model":"m"}`, Behavior{Latency: time.Hour}, time.Second, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				s := New(Options{Behavior: tt.behavior})
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				go func() {
					time.Sleep(tt.cancelAt)
					cancel()
				}()
				rec := newTimedRecorder()
				req := httptest.NewRequestWithContext(ctx, http.MethodPost, "/v1/chat/completions", strings.NewReader(tt.body))
				start := time.Now()
				s.ServeHTTP(rec, req)
				if took := time.Since(start); took != tt.cancelAt {
					t.Errorf("handler returned after %v, want %v (when the client left)", took, tt.cancelAt)
				}
				if _, _, flushes := rec.snapshot(); len(flushes) != tt.wantFlushes {
					t.Errorf("%d events sent, want %d", len(flushes), tt.wantFlushes)
				}
				if st := s.Stats(); st.Canceled != 1 || st.InFlight != 0 {
					t.Errorf("stats = %+v", st)
				}
			})
		})
	}
}

func TestMaxInFlight(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		s := New(Options{Behavior: Behavior{Latency: 100 * ms}})
		var wg sync.WaitGroup
		for range 5 {
			wg.Go(func() {
				serveDirect(s, http.MethodPost, "/v1/chat/completions", chatBody)
			})
		}
		synctest.Wait() // all five are waiting out the latency
		if st := s.Stats(); st.InFlight != 5 || st.MaxInFlight != 5 || st.Requests != 5 {
			t.Errorf("while waiting: %+v", st)
		}
		wg.Wait()
		st := s.Stats()
		if st.InFlight != 0 || st.MaxInFlight != 5 || st.ByStatus[200] != 5 {
			t.Errorf("after: %+v", st)
		}
		s.ResetStats()
		if st := s.Stats(); st.MaxInFlight != 0 || st.Requests != 0 {
			t.Errorf("after reset: %+v", st)
		}
	})
}

func TestStartAndServe(t *testing.T) {
	t.Run("start", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		s, base, err := Start(ctx, "127.0.0.1:0", Options{Name: "started"})
		if err != nil {
			t.Fatal(err)
		}
		if !strings.HasPrefix(base, "http://127.0.0.1:") {
			t.Errorf("base URL = %q", base)
		}
		res := do(t, http.MethodGet, base+"/v1/models", "")
		if res.status != 200 || res.header.Get(HeaderUpstream) != "started" || s.Stats().Requests != 1 {
			t.Errorf("GET /v1/models: %d %v", res.status, res.header)
		}
	})
	t.Run("bad address", func(t *testing.T) {
		if _, _, err := Start(context.Background(), "127.0.0.1:99999", Options{}); err == nil {
			t.Error("no error")
		}
	})
	t.Run("serve stops with its context", func(t *testing.T) {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		s := New(Options{})
		ctx, cancel := context.WithCancel(context.Background())
		errc := make(chan error, 1)
		go func() { errc <- s.Serve(ctx, ln) }()
		base := BaseURL(ln.Addr())
		if res := do(t, http.MethodPost, base+"/v1/chat/completions", chatBody); res.status != 200 {
			t.Fatalf("status %d", res.status)
		}
		cancel()
		if err := <-errc; err != nil {
			t.Errorf("Serve = %v, want nil after a shutdown", err)
		}
		client := &http.Client{Transport: &http.Transport{}} // no kept-alive connection
		if resp, err := client.Get(base + "/v1/models"); err == nil {
			resp.Body.Close()
			t.Error("still serving after shutdown")
		}
	})
}

func TestBaseURL(t *testing.T) {
	tests := []struct {
		addr net.Addr
		want string
	}{
		{&net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9001}, "http://127.0.0.1:9001"},
		{&net.TCPAddr{IP: net.IPv4(10, 1, 2, 3), Port: 80}, "http://10.1.2.3:80"},
		{&net.TCPAddr{IP: net.IPv4zero, Port: 8080}, "http://127.0.0.1:8080"},
		{&net.TCPAddr{IP: net.IPv6unspecified, Port: 8080}, "http://127.0.0.1:8080"},
		{&net.TCPAddr{Port: 8080}, "http://127.0.0.1:8080"},
		{&net.TCPAddr{IP: net.IPv6loopback, Port: 8080}, "http://[::1]:8080"},
	}
	for _, tt := range tests {
		if got := BaseURL(tt.addr); got != tt.want {
			t.Errorf("BaseURL(%v) = %q, want %q", tt.addr, got, tt.want)
		}
	}
}
