package gateway_test

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/anthropics/anthropic-sdk-go/v2"
	aoption "github.com/anthropics/anthropic-sdk-go/v2/option"
	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/mock"
)

func chatParams(model, prompt string) openai.ChatCompletionNewParams {
	return openai.ChatCompletionNewParams{
		Model:    model,
		Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
	}
}

// TestFailoverAbsorbsBrokenUpstreams: one tier of a dead port, a mock that
// answers 500 and a healthy mock; 1,000 SDK requests from 4 workers all
// succeed.
func TestFailoverAbsorbsBrokenUpstreams(t *testing.T) {
	broken, brokenURL := startMock(t, "broken", mock.Behavior{ForceStatus: http.StatusInternalServerError})
	healthy, healthyURL := startMock(t, "healthy", mock.Behavior{CompletionTokens: 2})
	e := startGateway(t, spec{upstreams: []config.Upstream{
		upstreamAt("dead", config.ProviderOpenAI, deadURL(t), 0, "gpt-4o"),
		upstreamAt("broken", config.ProviderOpenAI, brokenURL, 0, "gpt-4o"),
		upstreamAt("healthy", config.ProviderOpenAI, healthyURL, 0, "gpt-4o"),
	}})
	client := e.openAI(testKey)

	const total, workers = 1000, 4
	var (
		next, failovers atomic.Int64
		wg              sync.WaitGroup
		errMu           sync.Mutex
		errs            []string
	)
	for range workers {
		wg.Go(func() {
			for next.Add(1) <= total {
				var raw *http.Response
				got, err := client.Chat.Completions.New(context.Background(), chatParams("gpt-4o", "hi"), option.WithResponseInto(&raw))
				var problem string
				switch {
				case err != nil:
					problem = err.Error()
				case len(got.Choices) == 0 || got.Choices[0].Message.Content == "":
					problem = "empty answer " + got.RawJSON()
				case raw.Header.Get("X-Switchyard-Upstream") != "healthy":
					problem = "served by " + raw.Header.Get("X-Switchyard-Upstream")
				}
				if problem != "" {
					errMu.Lock()
					errs = append(errs, problem)
					errMu.Unlock()
					continue
				}
				if n, _ := strconv.Atoi(raw.Header.Get("X-Switchyard-Attempts")); n > 1 {
					failovers.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if len(errs) > 0 {
		t.Fatalf("%d of %d requests failed; first: %s", len(errs), total, errs[0])
	}
	if got := healthy.Stats().Requests; got != total {
		t.Errorf("healthy upstream answered %d requests, want %d", got, total)
	}
	if broken.Stats().Requests == 0 || failovers.Load() == 0 {
		t.Errorf("the broken upstreams were never tried (broken got %d requests, %d failovers): the test proves nothing",
			broken.Stats().Requests, failovers.Load())
	}
}

// TestFailoverBeforeFirstByte: a bad upstream in tier 0 is tried first and
// every request is still answered by the healthy upstream of tier 1.
func TestFailoverBeforeFirstByte(t *testing.T) {
	tests := []struct {
		name     string
		behavior mock.Behavior
		stream   bool
		// hang: serve the mock behind a handler that, once a request has
		// arrived, advances the gateway's fake clock past first_byte_timeout.
		hang bool
		// coolsDown: after its first 429 the upstream is skipped until its cooldown ends.
		coolsDown bool
	}{
		{name: "server error", behavior: mock.Behavior{ForceStatus: http.StatusInternalServerError}},
		{name: "service unavailable stream", behavior: mock.Behavior{ForceStatus: http.StatusServiceUnavailable}, stream: true},
		{name: "invalid JSON body", behavior: mock.Behavior{InvalidBody: true}},
		{name: "hang past first_byte_timeout", behavior: mock.Behavior{Hang: true}, hang: true},
		{name: "hang past first_byte_timeout stream", behavior: mock.Behavior{Hang: true}, hang: true, stream: true},
		// A 429 also starts a cooldown (Retry-After: 1 s on the fake clock,
		// which does not move): only the first request tries it.
		{name: "upstream rate limited", behavior: mock.Behavior{ForceStatus: http.StatusTooManyRequests}, coolsDown: true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fc := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			var (
				badURL string
				tried  func() int64 // requests the bad upstream received
			)
			if tc.hang {
				bad := mock.New(mock.Options{Name: "bad", Behavior: tc.behavior})
				var arrived atomic.Int64
				tried = arrived.Load
				srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					arrived.Add(1)
					// Read the body first so that the server notices when the
					// gateway gives up and hangs up; then time out the attempt.
					body, _ := io.ReadAll(r.Body)
					r.Body = io.NopCloser(bytes.NewReader(body))
					fc.Advance(time.Second)
					bad.ServeHTTP(w, r)
				}))
				t.Cleanup(srv.Close)
				badURL = srv.URL
			} else {
				var bad *mock.Server
				bad, badURL = startMock(t, "bad", tc.behavior)
				tried = func() int64 { return bad.Stats().Requests }
			}
			good, goodURL := startMock(t, "good", mock.Behavior{CompletionTokens: 3})
			e := startGateway(t, spec{
				clock: fc,
				upstreams: []config.Upstream{
					upstreamAt("bad", config.ProviderOpenAI, badURL, 0, "gpt-4o"),
					upstreamAt("good", config.ProviderOpenAI, goodURL, 1, "gpt-4o"),
				},
				edit: func(c *config.Config) {
					c.Defaults.FirstByteTimeout = time.Second
					c.Circuit.FailureThreshold = 1000 // keep trying the bad upstream first
				},
			})
			client := e.openAI(testKey)
			const n = 10
			for i := range n {
				var raw *http.Response
				var content string
				if tc.stream {
					s := client.Chat.Completions.NewStreaming(context.Background(), chatParams("gpt-4o", "hi"), option.WithResponseInto(&raw))
					var acc openai.ChatCompletionAccumulator
					for s.Next() {
						acc.AddChunk(s.Current())
					}
					if err := s.Err(); err != nil {
						t.Fatalf("request %d: %v", i, err)
					}
					if len(acc.Choices) > 0 {
						content = acc.Choices[0].Message.Content
					}
				} else {
					got, err := client.Chat.Completions.New(context.Background(), chatParams("gpt-4o", "hi"), option.WithResponseInto(&raw))
					if err != nil {
						t.Fatalf("request %d: %v", i, err)
					}
					content = got.Choices[0].Message.Content
				}
				if content == "" {
					t.Fatalf("request %d: empty answer", i)
				}
				want := "2"
				if tc.coolsDown && i > 0 {
					want = "1"
				}
				if up, n := raw.Header.Get("X-Switchyard-Upstream"), raw.Header.Get("X-Switchyard-Attempts"); up != "good" || n != want {
					t.Fatalf("request %d: served by %q after %s attempts, want good after %s", i, up, n, want)
				}
			}
			wantTried := int64(n)
			if tc.coolsDown {
				wantTried = 1
			}
			if got := tried(); got != wantTried {
				t.Errorf("bad upstream saw %d requests, want %d", got, wantTried)
			}
			if got := good.Stats().Requests; got != n {
				t.Errorf("good upstream saw %d requests, want %d", got, n)
			}
		})
	}
}

// TestClientErrorIsNotFailedOver: an upstream 400 reaches the client as the
// upstream sent it, and no other upstream is tried.
func TestClientErrorIsNotFailedOver(t *testing.T) {
	tests := []struct {
		name, provider, path, body, model string
	}{
		{"openai", config.ProviderOpenAI, "/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"x"}]}`, "gpt-4o"},
		{"anthropic", config.ProviderAnthropic, "/v1/messages", `{"model":"claude-3-5-haiku","max_tokens":5,"messages":[{"role":"user","content":"x"}]}`, "claude-3-5-haiku"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			bad, badURL := startMock(t, "bad", mock.Behavior{ForceStatus: http.StatusBadRequest})
			other, otherURL := startMock(t, "other", mock.Behavior{})
			e := startGateway(t, spec{upstreams: []config.Upstream{
				upstreamAt("bad", tc.provider, badURL, 0, tc.model),
				upstreamAt("other", tc.provider, otherURL, 1, tc.model),
			}})
			hdr := []string{"anthropic-version", "2023-06-01"}
			got := e.post(t, tc.path, tc.body, hdr...)
			direct := rawRequest(t, http.MethodPost, badURL+tc.path, strings.NewReader(tc.body), hdr...)
			if got.status != http.StatusBadRequest {
				t.Fatalf("status %d, want 400: %s", got.status, got.body)
			}
			if !bytes.Equal(got.body, direct.body) || len(got.body) == 0 {
				t.Errorf("body changed on the way:\n gateway %s\n upstream %s", got.body, direct.body)
			}
			if got.header.Get("Content-Type") != direct.header.Get("Content-Type") {
				t.Errorf("content type %q, upstream sent %q", got.header.Get("Content-Type"), direct.header.Get("Content-Type"))
			}
			if got.header.Get("X-Switchyard-Upstream") != "bad" || got.header.Get("X-Switchyard-Attempts") != "1" {
				t.Errorf("upstream %q attempts %q, want bad and 1",
					got.header.Get("X-Switchyard-Upstream"), got.header.Get("X-Switchyard-Attempts"))
			}
			if n := other.Stats().Requests; n != 0 {
				t.Errorf("the other upstream saw %d requests, want 0", n)
			}
			if n := bad.Stats().Requests; n != 2 { // the gateway's and the direct one
				t.Errorf("the bad upstream saw %d requests, want 2", n)
			}
		})
	}
}

// TestTiers: tier 1 gets nothing while tier 0 is healthy and takes over,
// with no client-visible error, when tier 0 fails.
func TestTiers(t *testing.T) {
	primary, primaryURL := startMock(t, "primary", mock.Behavior{CompletionTokens: 2})
	backup, backupURL := startMock(t, "backup", mock.Behavior{CompletionTokens: 2})
	e := startGateway(t, spec{upstreams: []config.Upstream{
		upstreamAt("primary-a", config.ProviderOpenAI, primaryURL, 0, "gpt-4o"),
		upstreamAt("primary-b", config.ProviderOpenAI, primaryURL, 0, "gpt-4o"),
		upstreamAt("backup", config.ProviderOpenAI, backupURL, 1, "gpt-4o"),
	}})
	client := e.openAI(testKey)
	send := func(phase string, n int, wantUpstream func(string) bool) {
		t.Helper()
		for i := range n {
			var raw *http.Response
			if _, err := client.Chat.Completions.New(context.Background(), chatParams("gpt-4o", "hi"), option.WithResponseInto(&raw)); err != nil {
				t.Fatalf("%s: request %d: %v", phase, i, err)
			}
			if up := raw.Header.Get("X-Switchyard-Upstream"); !wantUpstream(up) {
				t.Fatalf("%s: request %d served by %q", phase, i, up)
			}
		}
	}
	send("tier 0 healthy", 100, func(up string) bool { return strings.HasPrefix(up, "primary-") })
	if n := backup.Stats().Requests; n != 0 {
		t.Fatalf("tier 1 saw %d requests while tier 0 was healthy", n)
	}
	if n := primary.Stats().Requests; n != 100 {
		t.Fatalf("tier 0 saw %d requests, want 100", n)
	}
	primary.SetBehavior(mock.Behavior{ForceStatus: http.StatusServiceUnavailable})
	send("tier 0 failing", 100, func(up string) bool { return up == "backup" })
	if n := backup.Stats().Requests; n != 100 {
		t.Fatalf("tier 1 answered %d of 100 requests", n)
	}
	if primary.Stats().ByStatus[http.StatusServiceUnavailable] == 0 {
		t.Fatal("tier 0 was never tried after it failed")
	}
}

// TestStreamDroppedMidway: after the first event the stream stays on its
// upstream; when that upstream cuts the connection the client sees the
// protocol's error event last, and the SDK reports an error.
func TestStreamDroppedMidway(t *testing.T) {
	tests := []struct {
		name, provider, path, model, body string
		drop                              int
		sdk                               func(t *testing.T, e *env) (text string, err error)
		checkLast                         func(t *testing.T, last sseEvent, body string)
	}{
		{
			name: "openai", provider: config.ProviderOpenAI, path: "/v1/chat/completions", model: "gpt-4o",
			body: `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"x"}]}`,
			drop: 3, // the role chunk and two tokens
			sdk: func(t *testing.T, e *env) (string, error) {
				client := e.openAI(testKey)
				s := client.Chat.Completions.NewStreaming(context.Background(), chatParams("gpt-4o", "x"))
				var acc openai.ChatCompletionAccumulator
				for s.Next() {
					acc.AddChunk(s.Current())
				}
				text := ""
				if len(acc.Choices) > 0 {
					text = acc.Choices[0].Message.Content
				}
				return text, s.Err()
			},
			checkLast: func(t *testing.T, last sseEvent, body string) {
				if last.name != "" || gjson.Get(last.data, "error.code").String() != "stream_interrupted" ||
					gjson.Get(last.data, "error.type").String() != "upstream_error" || gjson.Get(last.data, "error.message").String() == "" {
					t.Errorf("last event %+v, want data: {\"error\":{…,\"type\":\"upstream_error\",\"code\":\"stream_interrupted\"}}", last)
				}
				if strings.Contains(body, "[DONE]") {
					t.Errorf("[DONE] in a broken stream:\n%s", body)
				}
			},
		},
		{
			name: "anthropic", provider: config.ProviderAnthropic, path: "/v1/messages", model: "claude-3-5-haiku",
			body: `{"model":"claude-3-5-haiku","max_tokens":100,"stream":true,"messages":[{"role":"user","content":"x"}]}`,
			drop: 5, // message_start, content_block_start, ping and two deltas
			sdk: func(t *testing.T, e *env) (string, error) {
				client := e.anthropic(testKey)
				s := client.Messages.NewStreaming(context.Background(), anthropic.MessageNewParams{
					Model: "claude-3-5-haiku", MaxTokens: 100,
					Messages: []anthropic.MessageParam{anthropic.NewUserMessage(anthropic.NewTextBlock("x"))},
				}, aoption.WithMaxRetries(0))
				var acc anthropic.Message
				for s.Next() {
					_ = acc.Accumulate(s.Current())
				}
				text := ""
				if len(acc.Content) > 0 {
					text = acc.Content[0].Text
				}
				return text, s.Err()
			},
			checkLast: func(t *testing.T, last sseEvent, body string) {
				if last.name != "error" || gjson.Get(last.data, "type").String() != "error" ||
					gjson.Get(last.data, "error.type").String() != "api_error" || gjson.Get(last.data, "error.message").String() == "" {
					t.Errorf("last event %+v, want event: error with {\"type\":\"error\",\"error\":{\"type\":\"api_error\",…}}", last)
				}
				if strings.Contains(body, "message_stop") {
					t.Errorf("message_stop in a broken stream:\n%s", body)
				}
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, dropURL := startMock(t, "dropper", mock.Behavior{DropAfterEvents: tc.drop, CompletionTokens: 10})
			backup, backupURL := startMock(t, "backup", mock.Behavior{})
			e := startGateway(t, spec{upstreams: []config.Upstream{
				upstreamAt("dropper", tc.provider, dropURL, 0, tc.model),
				upstreamAt("backup", tc.provider, backupURL, 1, tc.model),
			}})

			text, err := tc.sdk(t, e)
			if err == nil {
				t.Error("the SDK stream ended without an error")
			}
			if text == "" {
				t.Error("the events before the cut did not reach the SDK")
			}

			r := e.post(t, tc.path, tc.body, "anthropic-version", "2023-06-01")
			if r.status != http.StatusOK || r.header.Get("X-Switchyard-Upstream") != "dropper" {
				t.Fatalf("status %d upstream %q", r.status, r.header.Get("X-Switchyard-Upstream"))
			}
			events := parseSSE(r.body)
			if len(events) != tc.drop+1 {
				t.Fatalf("%d events, want the %d sent before the cut and the error event:\n%s", len(events), tc.drop, r.body)
			}
			tc.checkLast(t, events[len(events)-1], string(r.body))

			if n := backup.Stats().Requests; n != 0 {
				t.Errorf("failed over after the first byte: backup saw %d requests", n)
			}
			logs := e.RequestLogs()
			if len(logs) != 2 {
				t.Fatalf("%d request logs, want 2", len(logs))
			}
			for _, l := range logs {
				if l.ErrorClass != "stream_interrupted" || l.Upstream != "dropper" || l.Status != 200 {
					t.Errorf("log %+v, want error class stream_interrupted on dropper", l)
				}
			}
		})
	}
}

// TestStreamIdleTimeout: an upstream that stops sending after its first
// events is cut after stream_idle_timeout, and the client's stream ends with
// the protocol's error event. The mock and the gateway share a fake clock, so
// the mock's next token never comes while the gateway's idle timer fires.
func TestStreamIdleTimeout(t *testing.T) {
	tests := []struct {
		name, provider, path, body string
		before                     int // events the client reads before time moves
		isError                    func(ev sseEvent) bool
	}{
		{
			name: "openai", provider: config.ProviderOpenAI, path: "/v1/chat/completions",
			body:   `{"model":"m","stream":true,"messages":[{"role":"user","content":"x"}]}`,
			before: 2, // the role chunk and the first token
			isError: func(ev sseEvent) bool {
				return gjson.Get(ev.data, "error.code").String() == "stream_interrupted" &&
					strings.Contains(gjson.Get(ev.data, "error.message").String(), "idle")
			},
		},
		{
			name: "anthropic", provider: config.ProviderAnthropic, path: "/v1/messages",
			body:   `{"model":"m","max_tokens":50,"stream":true,"messages":[{"role":"user","content":"x"}]}`,
			before: 4, // message_start, content_block_start, ping, the first delta
			isError: func(ev sseEvent) bool {
				return ev.name == "error" && gjson.Get(ev.data, "error.type").String() == "api_error" &&
					strings.Contains(gjson.Get(ev.data, "error.message").String(), "idle")
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fc := clock.NewFake(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			ctx, cancel := context.WithCancel(context.Background())
			t.Cleanup(cancel)
			_, url, err := mock.Start(ctx, "127.0.0.1:0", mock.Options{
				Name: "stalls", Clock: fc, Behavior: mock.Behavior{TPS: 1, CompletionTokens: 5},
			})
			if err != nil {
				t.Fatal(err)
			}
			e := startGateway(t, spec{
				clock:     fc,
				upstreams: []config.Upstream{upstreamAt("stalls", tc.provider, url, 0, "m")},
				edit: func(c *config.Config) {
					c.Defaults.StreamIdleTimeout = 500 * time.Millisecond
					// Bounds the test if the idle timer never fires.
					c.Defaults.Timeout, c.Defaults.FirstByteTimeout = 20*time.Second, 10*time.Second
				},
			})
			req, err := http.NewRequest(http.MethodPost, e.URL+tc.path, strings.NewReader(tc.body))
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("Authorization", "Bearer "+testKey)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			br := bufio.NewReader(resp.Body)
			var got []byte
			for range tc.before {
				got = append(got, readEvent(t, br)...)
			}
			// The mock's next token is due 1 s after the first; the gateway
			// gives up after 500 ms of silence.
			fc.Advance(500 * time.Millisecond)
			rest, err := io.ReadAll(br)
			if err != nil {
				t.Fatal(err)
			}
			events := parseSSE(append(got, rest...))
			if len(events) != tc.before+1 || !tc.isError(events[len(events)-1]) {
				t.Fatalf("events %+v, want %d then the idle-timeout error event", events, tc.before)
			}
		})
	}
}
