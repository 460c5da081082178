package gateway_test

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"switchyard/internal/config"
	"switchyard/internal/gateway"
	"switchyard/internal/mock"
	"switchyard/internal/store"
	"switchyard/internal/store/sqlite"
)

// waitRequestLog polls the gateway's store until the request log with id
// has been written (the LogWriter flushes every second), at most 10 s.
func waitRequestLog(t *testing.T, e *env, id string) store.RequestLog {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		logs, err := e.G.Store().RecentRequestLogs(context.Background(), 1000)
		if err != nil {
			t.Fatalf("reading request logs: %v", err)
		}
		for _, l := range logs {
			if l.ID == id {
				return l
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no request log %q within 10 s (%d logs stored)", id, len(logs))
		}
		time.Sleep(20 * time.Millisecond) // polling the store, not timing an assertion
	}
}

// resetUpstream is an upstream that answers a stream with the protocol's
// first events and then, once cut is closed, resets the TCP connection (RST:
// SO_LINGER 0), as a crashing upstream or a middlebox does.
func resetUpstream(t *testing.T, provider string, cut <-chan struct{}) string {
	t.Helper()
	events := []string{
		"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"role\":\"assistant\",\"content\":\"\"}}]}\n\n",
		"data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"model\":\"m\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"half\"}}]}\n\n",
	}
	if provider == config.ProviderAnthropic {
		events = []string{
			"event: message_start\ndata: {\"type\":\"message_start\",\"message\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"model\":\"m\",\"content\":[],\"usage\":{\"input_tokens\":3,\"output_tokens\":0}}}\n\n",
			"event: content_block_delta\ndata: {\"type\":\"content_block_delta\",\"index\":0,\"delta\":{\"type\":\"text_delta\",\"text\":\"half\"}}\n\n",
		}
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		conn, brw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijacking: %v", err)
			return
		}
		defer conn.Close()
		_, _ = brw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n\r\n")
		for _, ev := range events {
			_, _ = brw.WriteString(ev)
		}
		_ = brw.Flush()
		select {
		case <-cut:
		case <-time.After(20 * time.Second):
		}
		_ = conn.(*net.TCPConn).SetLinger(0) // Close sends RST instead of FIN
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestFaultUpstreamResetMidStream: an upstream that resets the connection
// after the first events ends the client's stream with the protocol's error
// event, and the request log records stream_interrupted.
func TestFaultUpstreamResetMidStream(t *testing.T) {
	tests := []struct {
		name, provider, path, body string
		isError                    func(ev sseEvent) bool
		forbidden                  string // must not appear after a break
	}{
		{
			name: "openai", provider: config.ProviderOpenAI, path: "/v1/chat/completions",
			body: `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`,
			isError: func(ev sseEvent) bool {
				return ev.name == "" && gjson.Get(ev.data, "error.code").String() == "stream_interrupted" &&
					gjson.Get(ev.data, "error.type").String() == "upstream_error" && gjson.Get(ev.data, "error.message").String() != ""
			},
			forbidden: "[DONE]",
		},
		{
			name: "anthropic", provider: config.ProviderAnthropic, path: "/v1/messages",
			body: `{"model":"m","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"x"}]}`,
			isError: func(ev sseEvent) bool {
				return ev.name == "error" && gjson.Get(ev.data, "type").String() == "error" &&
					gjson.Get(ev.data, "error.type").String() == "api_error" && gjson.Get(ev.data, "error.message").String() != ""
			},
			forbidden: "message_stop",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cut := make(chan struct{})
			backup, backupURL := startMock(t, "backup", mock.Behavior{})
			e := startGateway(t, spec{upstreams: []config.Upstream{
				upstreamAt("resets", tc.provider, resetUpstream(t, tc.provider, cut), 0, "m"),
				upstreamAt("backup", tc.provider, backupURL, 1, "m"),
			}})
			resp := e.openStream(t, tc.path, tc.body, "resets")
			br := bufio.NewReader(resp.Body)
			got := readEvent(t, br) + readEvent(t, br) // both events reached the client: now reset
			close(cut)
			rest, err := io.ReadAll(br)
			if err != nil {
				t.Fatalf("the client's stream broke instead of ending with an error event: %v", err)
			}
			events := parseSSE(append([]byte(got), rest...))
			if len(events) != 3 || !tc.isError(events[2]) {
				t.Fatalf("events %+v, want the 2 relayed and the protocol's error event", events)
			}
			if strings.Contains(string(rest), tc.forbidden) {
				t.Errorf("%s after a reset: %s", tc.forbidden, rest)
			}
			if n := backup.Stats().Requests; n != 0 {
				t.Errorf("failed over after the first byte: backup saw %d requests", n)
			}
			l := waitRequestLog(t, e, resp.Header.Get("X-Request-Id"))
			if l.Status != http.StatusOK || l.ErrorClass != "stream_interrupted" || l.Upstream != "resets" ||
				!strings.Contains(l.Error, "reset") {
				t.Errorf("request log %+v, want status 200, error class stream_interrupted on resets, error naming the reset", l)
			}
		})
	}
}

// untrustedTLSUpstream is a mock behind TLS with httptest's self-signed
// certificate, which the gateway (system roots) does not trust.
func untrustedTLSUpstream(t *testing.T) string {
	t.Helper()
	srv := httptest.NewUnstartedServer(mock.New(mock.Options{Name: "tls"}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0) // the rejected handshakes
	srv.StartTLS()
	t.Cleanup(srv.Close)
	return srv.URL
}

// fixedUpstream answers every request 200 with contentType and body.
func fixedUpstream(t *testing.T, contentType, body string) string {
	t.Helper()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", contentType)
		_, _ = io.WriteString(w, body)
	}))
	t.Cleanup(srv.Close)
	return srv.URL
}

// TestFaultUpstreams: upstream faults before the first byte — invalid JSON,
// invalid SSE, an unresolvable host, an untrusted TLS certificate — fail over
// to the next upstream, and alone answer a clear 502 that names the fault
// without secrets; the request log records it.
func TestFaultUpstreams(t *testing.T) {
	const (
		upstreamSecret = "sk-upstream-" // every upstreamAt api_key starts so
		adminSecret    = "admin-faults-secret"
	)
	type upstreamFn func(t *testing.T) config.Upstream
	bad := func(name string, b mock.Behavior) upstreamFn {
		return func(t *testing.T) config.Upstream {
			_, url := startMock(t, name, b)
			return upstreamAt(name, config.ProviderOpenAI, url, 0, "gpt-4o")
		}
	}
	dns := func(*testing.T) config.Upstream { // .invalid never resolves (RFC 6761)
		return upstreamAt("dns", config.ProviderOpenAI, "http://nonexistent.invalid", 0, "gpt-4o")
	}
	tlsBad := func(t *testing.T) config.Upstream {
		return upstreamAt("tls", config.ProviderOpenAI, untrustedTLSUpstream(t), 0, "gpt-4o")
	}
	fixed := func(contentType, body string) upstreamFn {
		return func(t *testing.T) config.Upstream {
			return upstreamAt("fixed", config.ProviderOpenAI, fixedUpstream(t, contentType, body), 0, "gpt-4o")
		}
	}
	tests := []struct {
		name   string
		faulty upstreamFn
		stream bool
		// detail must appear in the 502's message and the request log's error.
		detail string
	}{
		{name: "invalid JSON", faulty: bad("badjson", mock.Behavior{InvalidBody: true}), detail: "invalid JSON"},
		{name: "invalid SSE", faulty: bad("badsse", mock.Behavior{InvalidBody: true}), stream: true, detail: "malformed"},
		{name: "HTML page as SSE", faulty: fixed("text/event-stream", "<html>\n<body>502 Bad Gateway</body>\n</html>\n"), stream: true, detail: "malformed"},
		{name: "JSON error as SSE", faulty: fixed("text/event-stream", `{"error":{"message":"overloaded"}}`+"\n"), stream: true, detail: "malformed"},
		{name: "HTML page as a 200 JSON answer", faulty: fixed("text/html", "<html><body>Service Unavailable</body></html>"), detail: "invalid JSON"},
		{name: "DNS failure", faulty: dns, detail: "no such host"},
		{name: "DNS failure stream", faulty: dns, stream: true, detail: "no such host"},
		{name: "TLS untrusted certificate", faulty: tlsBad, detail: "certificate"},
		{name: "TLS untrusted certificate stream", faulty: tlsBad, stream: true, detail: "certificate"},
	}
	for _, tc := range tests {
		body := fmt.Sprintf(`{"model":"gpt-4o","stream":%v,"messages":[{"role":"user","content":"hi"}]}`, tc.stream)
		t.Run(tc.name+"/alone", func(t *testing.T) {
			t.Parallel()
			e := startGateway(t, spec{
				upstreams: []config.Upstream{tc.faulty(t)},
				edit: func(c *config.Config) {
					c.Admin.Token = adminSecret
					c.Defaults.FirstByteTimeout = 10 * time.Second // bounds a resolver that hangs
				},
			})
			r := e.post(t, "/v1/chat/completions", body)
			if r.status != http.StatusBadGateway {
				t.Fatalf("status %d, want 502: %s", r.status, r.body)
			}
			msg := gjson.GetBytes(r.body, "error.message").String()
			if gjson.GetBytes(r.body, "error.code").String() != "no_upstream_available" ||
				gjson.GetBytes(r.body, "error.type").String() != "upstream_error" || !strings.Contains(msg, tc.detail) {
				t.Errorf("body %s, want an OpenAI no_upstream_available error naming %q", r.body, tc.detail)
			}
			for _, secret := range []string{upstreamSecret, adminSecret, testKey} {
				if strings.Contains(string(r.body), secret) {
					t.Errorf("the error leaks a secret (%q): %s", secret, r.body)
				}
			}
			if ct := r.header.Get("Content-Type"); !strings.HasPrefix(ct, "application/json") {
				t.Errorf("Content-Type %q, want JSON even for a stream request", ct)
			}
			l := waitRequestLog(t, e, r.header.Get("X-Request-Id"))
			if l.Status != http.StatusBadGateway || l.ErrorClass != "no_upstream_available" || !strings.Contains(l.Error, tc.detail) ||
				strings.Contains(l.Error, upstreamSecret) {
				t.Errorf("request log %+v, want 502 no_upstream_available naming %q", l, tc.detail)
			}
		})
		t.Run(tc.name+"/fails over", func(t *testing.T) {
			t.Parallel()
			good, goodURL := startMock(t, "good", mock.Behavior{CompletionTokens: 2})
			faulty := tc.faulty(t)
			e := startGateway(t, spec{
				upstreams: []config.Upstream{faulty, upstreamAt("good", config.ProviderOpenAI, goodURL, 1, "gpt-4o")},
				edit:      func(c *config.Config) { c.Defaults.FirstByteTimeout = 10 * time.Second },
			})
			r := e.post(t, "/v1/chat/completions", body)
			if r.status != http.StatusOK || r.header.Get("X-Switchyard-Upstream") != "good" || r.header.Get("X-Switchyard-Attempts") != "2" {
				t.Fatalf("status %d from %q after %s attempts, want 200 from good after 2: %s",
					r.status, r.header.Get("X-Switchyard-Upstream"), r.header.Get("X-Switchyard-Attempts"), r.body)
			}
			if tc.stream {
				events := parseSSE(r.body)
				if len(events) == 0 || events[len(events)-1].data != "[DONE]" || strings.Contains(string(r.body), "broken") {
					t.Errorf("the stream is not good's whole answer: %s", r.body)
				}
			} else if gjson.GetBytes(r.body, "choices.0.message.content").String() == "" {
				t.Errorf("empty answer: %s", r.body)
			}
			if n := good.Stats().Requests; n != 1 {
				t.Errorf("good saw %d requests, want 1", n)
			}
		})
	}
}

// TestFaultUpstreamStreamPreludes: what an upstream may legitimately send
// before its first data event (SSE comments, retry and id fields, a BOM) is
// not mistaken for the malformed streams TestFaultUpstreams fails over from.
func TestFaultUpstreamStreamPreludes(t *testing.T) {
	const events = "data: {\"id\":\"c1\",\"object\":\"chat.completion.chunk\",\"choices\":[{\"index\":0,\"delta\":{\"content\":\"ok\"},\"finish_reason\":\"stop\"}]}\n\n" +
		"data: [DONE]\n\n"
	tests := []struct{ name, prelude string }{
		{name: "comment keep-alive", prelude: ": PROCESSING\n\n"},
		{name: "retry field", prelude: "retry: 3000\n\n"},
		{name: "id and comment", prelude: "id: 1\n: hello\n\n"},
		{name: "byte order mark", prelude: "\uFEFF"},
		{name: "CRLF lines", prelude: ": ping\r\n\r\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			e := startGateway(t, spec{upstreams: []config.Upstream{
				upstreamAt("fixed", config.ProviderOpenAI, fixedUpstream(t, "text/event-stream", tc.prelude+events), 0, "gpt-4o"),
			}})
			r := e.post(t, "/v1/chat/completions", `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
			if r.status != http.StatusOK || !strings.HasSuffix(string(r.body), events) {
				t.Fatalf("status %d, body %q; want 200 relaying the stream", r.status, r.body)
			}
		})
	}
}

// errReadOnly is what a store on a read-only disk answers to every write.
var errReadOnly = errors.New("attempt to write a readonly database (simulated read-only disk)")

// readOnlyStore is a store whose disk turned read-only after start: reads
// work, every write fails. Tests run as root in CI, where chmod does not
// stop writes (and an open file descriptor keeps its write access anyway),
// so the fault is injected here instead (gateway.Options.Store).
type readOnlyStore struct {
	store.Store
	mu       sync.Mutex // guards readOnly
	readOnly bool
}

var _ store.Store = (*readOnlyStore)(nil)

func (s *readOnlyStore) setReadOnly() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.readOnly = true
}

func (s *readOnlyStore) failing() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.readOnly
}

func (s *readOnlyStore) InsertRequestLogs(ctx context.Context, logs []store.RequestLog) error {
	if s.failing() {
		return errReadOnly
	}
	return s.Store.InsertRequestLogs(ctx, logs)
}

func (s *readOnlyStore) AddSpend(ctx context.Context, deltas []store.SpendDelta) error {
	if s.failing() {
		return errReadOnly
	}
	return s.Store.AddSpend(ctx, deltas)
}

// TestFaultStoreReadOnly: when the store's disk turns read-only under a
// running gateway, every request is still served, the lost request logs are
// dropped and counted in switchyard_request_logs_dropped_total, and /readyz
// stays ready (the store is reachable).
func TestFaultStoreReadOnly(t *testing.T) {
	_, url := startMock(t, "oa", mock.Behavior{})
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ro.db"))
	if err != nil {
		t.Fatal(err)
	}
	ro := &readOnlyStore{Store: st}
	e := startGatewayWith(t, spec{upstreams: []config.Upstream{upstreamAt("oa", config.ProviderOpenAI, url, 0, "gpt-4o")}},
		gateway.Options{Store: ro})

	// Before: logs are written.
	first := e.post(t, "/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
	if first.status != http.StatusOK {
		t.Fatalf("status %d: %s", first.status, first.body)
	}
	waitRequestLog(t, e, first.header.Get("X-Request-Id"))

	ro.setReadOnly()
	const n = 50
	for i := range n {
		r := e.post(t, "/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
		if r.status != http.StatusOK {
			t.Fatalf("request %d on a read-only store: status %d: %s", i, r.status, r.body)
		}
	}
	// The LogWriter flushes every second: poll /metrics for the drops.
	var dropped float64
	for deadline := time.Now().Add(10 * time.Second); dropped < n; {
		r := rawRequest(t, http.MethodGet, e.URL+"/metrics", nil)
		for line := range strings.Lines(string(r.body)) {
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "switchyard_request_logs_dropped_total "); ok {
				_, _ = fmt.Sscan(v, &dropped)
			}
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(50 * time.Millisecond) // polling, not timing an assertion
	}
	if dropped < n || uint64(dropped) != e.G.DroppedLogs() {
		t.Fatalf("switchyard_request_logs_dropped_total = %v (DroppedLogs %d), want ≥ %d", dropped, e.G.DroppedLogs(), n)
	}
	logs, err := st.RecentRequestLogs(context.Background(), 1000)
	if err != nil {
		t.Fatal(err)
	}
	if len(logs) != 1 {
		t.Errorf("%d request logs stored, want only the one from before the disk turned read-only", len(logs))
	}
	if r := rawRequest(t, http.MethodGet, e.URL+"/readyz", nil); r.status != http.StatusOK {
		t.Errorf("/readyz %d on a readable store, want 200", r.status)
	}
}

// TestSIGTERMFinishesInFlightUnderLoad: SIGTERM while 32 non-streaming
// requests and 4 streams are in flight lets every one of them complete
// with its whole answer; the process exits 0 within the grace period.
// (TestSIGTERMFinishesStreams covers streams alone.)
func TestSIGTERMFinishesInFlightUnderLoad(t *testing.T) {
	bin := buildSwitchyard(t)
	// Every answer waits 1 s before its headers; a stream then sends 8
	// tokens at 16/s.
	slow, url := startMock(t, "slow", mock.Behavior{Latency: time.Second, TPS: 16, CompletionTokens: 8})
	cfg := writeProcessConfig(t, url, filepath.Join(t.TempDir(), "switchyard.db"))
	const grace = 10 * time.Second
	p := startProcess(t, bin, cfg, "--grace", grace.String())

	const plain, streams = 32, 4
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: plain + streams}}
	errs := make(chan error, plain+streams)
	var wg sync.WaitGroup
	for i := range plain + streams {
		stream := i >= plain
		wg.Go(func() {
			req, err := http.NewRequest(http.MethodPost, p.url+"/v1/chat/completions",
				strings.NewReader(fmt.Sprintf(`{"model":"gpt-4o","stream":%v,"messages":[{"role":"user","content":"hi"}]}`, stream)))
			if err != nil {
				errs <- err
				return
			}
			req.Header.Set("Authorization", "Bearer "+testKey)
			req.Header.Set("Content-Type", "application/json")
			resp, err := client.Do(req)
			if err != nil {
				errs <- fmt.Errorf("request %d: %w", i, err)
				return
			}
			defer resp.Body.Close()
			b, err := io.ReadAll(resp.Body)
			switch {
			case err != nil:
				errs <- fmt.Errorf("request %d broke: %w", i, err)
			case resp.StatusCode != http.StatusOK:
				errs <- fmt.Errorf("request %d: status %d: %s", i, resp.StatusCode, b)
			case stream && !strings.HasSuffix(strings.TrimSpace(string(b)), "data: [DONE]"):
				errs <- fmt.Errorf("stream %d cut: %q", i, b)
			case !stream && gjson.GetBytes(b, "choices.0.message.content").String() == "":
				errs <- fmt.Errorf("request %d: incomplete answer %q", i, b)
			}
		})
	}
	// Every request has reached the upstream (and waits there) before SIGTERM.
	for deadline := time.Now().Add(20 * time.Second); slow.Stats().InFlight < plain+streams; {
		if time.Now().After(deadline) {
			t.Fatalf("only %d of %d requests in flight after 20 s", slow.Stats().InFlight, plain+streams)
		}
		time.Sleep(5 * time.Millisecond) // polling, not timing an assertion
	}
	signaled := time.Now()
	if err := p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if err := p.wait(t, grace+10*time.Second); err != nil {
		t.Fatalf("switchyard exited with %v after SIGTERM, want status 0", err)
	}
	if d := time.Since(signaled); d > grace {
		t.Errorf("exit %v after SIGTERM, beyond the %v grace", d, grace)
	}
	if got := slow.Stats().ByStatus[http.StatusOK]; got != plain+streams {
		t.Errorf("the upstream completed %d answers, want %d", got, plain+streams)
	}
}
