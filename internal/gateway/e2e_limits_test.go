package gateway_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/openai/openai-go/v3/option"
	"github.com/tidwall/gjson"

	"switchyard/internal/balancer"
	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/gateway"
	"switchyard/internal/mock"
	"switchyard/internal/proxy"
)

// End-to-end tests of docs/reference.md#health-limits-and-quotas (health, rate
// limits, queues and quotas) through real loopback HTTP. The gateway and its
// mocks share a fake clock, so minutes of traffic take no wall time and nothing
// is timed.

// limitsEpoch is where the fake clocks start: a whole second in the middle of
// a month, so that rate windows and spend periods line up predictably.
var limitsEpoch = time.Date(2026, 3, 10, 12, 0, 0, 0, time.UTC)

const (
	chatPath = "/v1/chat/completions"
	// limitsChatBody is a small chat request for raw posts.
	limitsChatBody = `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`
	// hangGuard bounds a wait on a channel so that a broken gateway fails the
	// test with a message instead of hanging it. It is never a measurement.
	hangGuard = 30 * time.Second
)

// watchClock is a fake clock that reports every timer armed for exactly
// watch, so that a test advances time only once a request has started to
// wait (for a queue slot, for max_wait) instead of guessing when it has.
type watchClock struct {
	*clock.Fake
	watch time.Duration
	armed chan struct{}
}

var _ clock.Clock = (*watchClock)(nil)

func newWatchClock(watch time.Duration) *watchClock {
	return &watchClock{Fake: clock.NewFake(limitsEpoch), watch: watch, armed: make(chan struct{}, 1024)}
}

// After is clock.Fake's, reported when d is the watched duration.
func (c *watchClock) After(d time.Duration) <-chan time.Time {
	ch := c.Fake.After(d)
	c.note(d)
	return ch
}

// AfterFunc is clock.Fake's, reported when d is the watched duration.
func (c *watchClock) AfterFunc(d time.Duration, f func()) clock.Timer {
	tm := c.Fake.AfterFunc(d, f)
	c.note(d)
	return tm
}

// note runs after the timer is registered, so an Advance after the report
// fires it.
func (c *watchClock) note(d time.Duration) {
	if d == c.watch {
		select {
		case c.armed <- struct{}{}:
		default:
		}
	}
}

// hookWriter calls before with the status and headers once, right before the
// response header is written: a wrapper edits the headers there, or holds
// the response while the mock counts it as in flight.
type hookWriter struct {
	http.ResponseWriter
	before func(status int, h http.Header)
	done   bool
}

func (w *hookWriter) WriteHeader(code int) {
	if !w.done {
		w.done = true
		w.before(code, w.Header())
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *hookWriter) Write(b []byte) (int, error) {
	if !w.done {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

// Flush keeps streaming working through the wrapper.
func (w *hookWriter) Flush() {
	if !w.done {
		w.WriteHeader(http.StatusOK)
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

func (w *hookWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// withHeaderHook wraps h so that before sees every response's request,
// status and headers just before they are sent.
func withHeaderHook(h http.Handler, before func(r *http.Request, status int, hdr http.Header)) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		h.ServeHTTP(&hookWriter{ResponseWriter: w, before: func(status int, hdr http.Header) { before(r, status, hdr) }}, r)
	})
}

// rateHeaders makes a mock's 429s carry Retry-After: retryAfter and, with
// strip, removes every provider rate-limit header (x-ratelimit-*,
// anthropic-ratelimit-*), so that the gateway learns nothing from them.
func rateHeaders(retryAfter string, strip bool) func(http.Handler) http.Handler {
	return func(h http.Handler) http.Handler {
		return withHeaderHook(h, func(_ *http.Request, status int, hdr http.Header) {
			if status == http.StatusTooManyRequests {
				hdr.Set("Retry-After", retryAfter)
			}
			if !strip {
				return
			}
			for k := range hdr {
				if lk := strings.ToLower(k); strings.HasPrefix(lk, "x-ratelimit-") || strings.HasPrefix(lk, "anthropic-ratelimit-") {
					delete(hdr, k)
				}
			}
		})
	}
}

// startMockOn serves a mock upstream timed by clk (nil: the wall clock) on a
// loopback server, through wrap when it is not nil. It stops at the end of
// the test.
func startMockOn(t testing.TB, name string, b mock.Behavior, clk clock.Clock, wrap func(http.Handler) http.Handler) (*mock.Server, string) {
	t.Helper()
	m := mock.New(mock.Options{Name: name, Behavior: b, Clock: clk, Seed: 42})
	var h http.Handler = m
	if wrap != nil {
		h = wrap(m)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	return m, srv.URL
}

// limitsConfig builds the config startGateway would (a per-test sqlite file,
// no active probes, the test key unless keys are given), so that a test can
// serve it twice: before and after a restart.
func limitsConfig(t testing.TB, ups []config.Upstream, keys []config.Key) *config.Config {
	t.Helper()
	cfg := config.Default()
	cfg.Listen = "127.0.0.1:0"
	cfg.Store.DSN = filepath.Join(t.TempDir(), "switchyard.db")
	cfg.Health.Interval = 0
	cfg.Keys = keys
	if cfg.Keys == nil {
		cfg.Keys = []config.Key{clientKey("e2e", testKey)}
	}
	cfg.Upstreams = ups
	if errs := cfg.Validate(); len(errs) > 0 {
		t.Fatalf("test config is invalid:\n%v", errs)
	}
	return &cfg
}

// clientKey is a client key with the defaults.
func clientKey(name, secret string) config.Key {
	k := config.DefaultKey()
	k.Name, k.Key = name, secret
	return k
}

// postAs posts body to path with the client key secret.
func (e *env) postAs(t testing.TB, secret, path, body string) result {
	t.Helper()
	return rawRequest(t, http.MethodPost, e.URL+path, strings.NewReader(body), "Authorization", "Bearer "+secret)
}

// goPost posts body to the gateway's chat endpoint with the test key from a
// new goroutine and delivers the result; a transport error arrives as status
// 0 with the error as body (t.Fatal may not be called off the test goroutine).
func (e *env) goPost(body string) <-chan result {
	out := make(chan result, 1)
	go func() {
		req, err := http.NewRequest(http.MethodPost, e.URL+chatPath, strings.NewReader(body))
		if err != nil {
			out <- result{body: []byte(err.Error())}
			return
		}
		req.Header.Set("Authorization", "Bearer "+testKey)
		req.Header.Set("Content-Type", "application/json")
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			out <- result{body: []byte(err.Error())}
			return
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			b = []byte(err.Error())
		}
		out <- result{status: resp.StatusCode, header: resp.Header, body: b}
	}()
	return out
}

// errCode is the OpenAI error.code of a gateway error body.
func errCode(r result) string { return gjson.GetBytes(r.body, "error.code").String() }

// record returns the decision record of upstream name.
func record(t testing.TB, d *balancer.Decision, name string) balancer.CandidateRecord {
	t.Helper()
	for _, r := range d.Candidates {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no candidate %s in the decision", name)
	return balancer.CandidateRecord{}
}

// TestRateLimitStorm: upstream a is an account limited to 60 RPM that
// answers 429 with Retry-After: 30; b is unlimited; equal weights. 600
// requests at 40 req/s (15 s of fake time) all succeed, and a's 429s are
// bounded: after the first one its 30 s cooldown routes around it; learned
// x-ratelimit headers or a configured rate_limit.rpm route around it before
// it ever answers 429. Either way a serves its whole quota.
func TestRateLimitStorm(t *testing.T) {
	tests := []struct {
		name   string
		rpm    int  // rate_limit.rpm configured on a; 0 = not configured
		strip  bool // a sends no x-ratelimit-* headers
		max429 int64
	}{
		{name: "not configured, 429s only", strip: true, max429: 3},
		{name: "not configured, limits learned from headers", max429: 0},
		{name: "rate_limit.rpm 60", rpm: 60, strip: true, max429: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			const quota, total = 60, 600
			fc := clock.NewFake(limitsEpoch)
			a, aURL := startMockOn(t, "a", mock.Behavior{RPM: quota, CompletionTokens: 2}, fc, rateHeaders("30", tc.strip))
			b, bURL := startMockOn(t, "b", mock.Behavior{CompletionTokens: 2}, fc, nil)
			upA := upstreamAt("a", config.ProviderOpenAI, aURL, 0, "gpt-4o")
			upA.RateLimit.RPM = tc.rpm
			e := startGateway(t, spec{clock: fc, upstreams: []config.Upstream{
				upA, upstreamAt("b", config.ProviderOpenAI, bURL, 0, "gpt-4o"),
			}})
			client := e.openAI(testKey)
			served := map[string]int64{}
			for i := range total {
				var raw *http.Response
				if _, err := client.Chat.Completions.New(context.Background(), chatParams("gpt-4o", "hi"), option.WithResponseInto(&raw)); err != nil {
					t.Fatalf("request %d at +%s: %v", i, fc.Now().Sub(limitsEpoch), err)
				}
				served[raw.Header.Get("X-Switchyard-Upstream")]++
				fc.Advance(25 * time.Millisecond)
			}
			sa := a.Stats()
			if got := sa.ByStatus[http.StatusTooManyRequests]; got > tc.max429 {
				t.Errorf("a answered 429 %d times, want at most %d", got, tc.max429)
			}
			if got := sa.ByStatus[http.StatusOK]; got != quota || served["a"] != quota {
				t.Errorf("a answered %d requests with 200 (%d reached the client), want its whole quota of %d", got, served["a"], quota)
			}
			if got := b.Stats().ByStatus[http.StatusOK]; got != total-quota || served["b"] != total-quota {
				t.Errorf("b answered %d requests (%d reached the client), want %d", got, served["b"], total-quota)
			}
		})
	}
}

// TestLearnedRateLimits: an upstream with no rate_limit configured that
// reports its quota only in its x-ratelimit-{limit,remaining,reset}-*
// headers is routed around before its remaining count reaches 0 — it never
// answers 429 — and gets traffic again once the quota resets.
func TestLearnedRateLimits(t *testing.T) {
	// body is 78 bytes: the gateway estimates 78/4 + max_tokens = 24 tokens,
	// the mock counts 19 prompt + 5 completion tokens.
	const body = `{"model":"gpt-4o","max_tokens":5,"messages":[{"role":"user","content":"hi"}]}`
	const perMinute = 20 // requests the quota admits per minute
	tests := []struct {
		name     string
		behavior mock.Behavior
	}{
		{name: "requests", behavior: mock.Behavior{RPM: perMinute, CompletionTokens: 5}},
		{name: "tokens", behavior: mock.Behavior{TPM: perMinute * 24, CompletionTokens: 5}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fc := clock.NewFake(limitsEpoch)
			// The mock's own Retry-After is dropped: only the rate-limit
			// headers of its successful answers can keep it from 429s.
			limited, lURL := startMockOn(t, "limited", tc.behavior, fc, func(h http.Handler) http.Handler {
				return withHeaderHook(h, func(_ *http.Request, _ int, hdr http.Header) { hdr.Del("Retry-After") })
			})
			_, oURL := startMockOn(t, "other", mock.Behavior{CompletionTokens: 5}, fc, nil)
			e := startGateway(t, spec{clock: fc, upstreams: []config.Upstream{
				upstreamAt("limited", config.ProviderOpenAI, lURL, 0, "gpt-4o"),
				upstreamAt("other", config.ProviderOpenAI, oURL, 0, "gpt-4o"),
			}})
			const total = 1500 // 150 s at 10 req/s: two full windows and a half
			var lastMinute int // requests limited served in the last 60 s
			for i := range total {
				r := e.post(t, chatPath, body)
				if r.status != http.StatusOK {
					t.Fatalf("request %d: status %d: %s", i, r.status, r.body)
				}
				if i >= total-600 && r.header.Get("X-Switchyard-Upstream") == "limited" {
					lastMinute++
				}
				fc.Advance(100 * time.Millisecond)
			}
			st := limited.Stats()
			t.Logf("limited served %d requests in 150 s, %d in the last minute", st.ByStatus[http.StatusOK], lastMinute)
			if n := st.ByStatus[http.StatusTooManyRequests]; n != 0 {
				t.Errorf("the limited upstream answered 429 %d times; its headers should have kept it from any", n)
			}
			// 150 s from a whole minute hold three quota windows.
			if ok := st.ByStatus[http.StatusOK]; ok < 3*perMinute {
				t.Errorf("the limited upstream served %d requests in 150 s, want %d: its quota is not used up", ok, 3*perMinute)
			}
			if lastMinute == 0 {
				t.Error("the limited upstream got no traffic in the last minute: it was never let back in after its reset")
			}
		})
	}
}

// TestBreakerIsolatesAndRecovers: an upstream failing every request
// receives at most failure_threshold requests plus one probe per
// probe_interval over 1,000 requests (100 s of fake time); every client
// request succeeds via the other upstream. Once it recovers, a probe closes
// its breaker and its share of traffic ramps up over slow_start.
func TestBreakerIsolatesAndRecovers(t *testing.T) {
	circuit := config.Circuit{
		FailureThreshold: 5, Window: 30 * time.Second, OpenDuration: 5 * time.Second,
		ProbeInterval: 10 * time.Second, SuccessThreshold: 1, SlowStart: 30 * time.Second,
	}
	const step = 100 * time.Millisecond
	fc := clock.NewFake(limitsEpoch)
	bad, badURL := startMock(t, "bad", mock.Behavior{ForceStatus: http.StatusInternalServerError})
	good, goodURL := startMock(t, "good", mock.Behavior{CompletionTokens: 2})
	e := startGateway(t, spec{
		clock: fc,
		upstreams: []config.Upstream{
			upstreamAt("bad", config.ProviderOpenAI, badURL, 0, "gpt-4o"),
			upstreamAt("good", config.ProviderOpenAI, goodURL, 0, "gpt-4o"),
		},
		edit: func(c *config.Config) { c.Circuit = circuit },
	})
	send := func(i int) string {
		t.Helper()
		r := e.post(t, chatPath, limitsChatBody)
		if r.status != http.StatusOK {
			t.Fatalf("request %d at +%s: status %d: %s", i, fc.Now().Sub(limitsEpoch), r.status, r.body)
		}
		return r.header.Get("X-Switchyard-Upstream")
	}

	const failing = 1000
	for i := range failing {
		if up := send(i); up != "good" {
			t.Fatalf("request %d served by %q while bad fails", i, up)
		}
		fc.Advance(step)
	}
	elapsed := time.Duration(failing) * step
	maxBad := int64(circuit.FailureThreshold) + int64(elapsed/circuit.ProbeInterval)
	got := bad.Stats().Requests
	if got > maxBad {
		t.Errorf("the failing upstream received %d requests in %s, want at most failure_threshold %d + one probe per %s = %d",
			got, elapsed, circuit.FailureThreshold, circuit.ProbeInterval, maxBad)
	}
	if got <= int64(circuit.FailureThreshold) {
		t.Errorf("the failing upstream received %d requests: no half-open probe was ever sent", got)
	}
	if n := good.Stats().Requests; n != failing {
		t.Errorf("good served %d of %d requests", n, failing)
	}

	// Recovery: the next probe succeeds and closes the breaker.
	bad.SetBehavior(mock.Behavior{CompletionTokens: 2})
	const early, late, lateFrom = 100, 400, 300 // requests after closing: the first 10 s; 30–70 s
	var ups []string
	closedAt := -1
	for i := 0; closedAt < 0 || len(ups) < closedAt+lateFrom+late+1; i++ {
		if i > 5000 {
			t.Fatalf("the recovered upstream got no request in %s of fake time", time.Duration(i)*step)
		}
		up := send(failing + i)
		ups = append(ups, up)
		if up == "bad" && closedAt < 0 {
			closedAt = i
			d, err := e.G.Explain(context.Background(), proxy.ExplainRequest{Model: "gpt-4o"})
			if err != nil {
				t.Fatal(err)
			}
			if r := record(t, d, "bad"); r.Filter != "" || r.Scores.SlowStart > 0.2 {
				t.Errorf("just after closing, bad has filter %q and slow start %v; want no filter and a factor near 0.1", r.Filter, r.Scores.SlowStart)
			}
		}
		fc.Advance(step)
	}
	share := func(from, n int) float64 {
		k := 0
		for _, up := range ups[from : from+n] {
			if up == "bad" {
				k++
			}
		}
		return float64(k) / float64(n)
	}
	// Slow start ramps bad's weight from 10% to 100% over 30 s: about 20% of
	// the traffic in its first 10 s (expected ~0.2, σ ≈ 0.04), 50% after.
	earlyShare, lateShare := share(closedAt+1, early), share(closedAt+lateFrom, late)
	t.Logf("bad: %d requests while failing; closed after %d recovery requests; share %.2f in its first 10 s, %.2f after slow start",
		got, closedAt+1, earlyShare, lateShare)
	if earlyShare >= 0.35 {
		t.Errorf("bad took %.2f of the traffic in the first 10 s after recovering; slow start should hold it near 0.2", earlyShare)
	}
	if lateShare < 0.4 || lateShare > 0.6 {
		t.Errorf("bad took %.2f of the traffic after slow start, want about 0.5 (equal weights)", lateShare)
	}
	if n := bad.Stats().ByStatus[http.StatusInternalServerError]; n != got {
		t.Errorf("bad answered 500 %d times, want the %d failures of before it recovered", n, got)
	}
}

// TestHangingUpstream: an upstream that accepts requests and never answers
// costs each client request at most first_byte_timeout, once, in fake time;
// after failure_threshold such requests its breaker opens and it gets no
// more. The hanging upstream advances the shared fake clock by
// first_byte_timeout when a request reaches it, which is what fires the
// gateway's timer.
func TestHangingUpstream(t *testing.T) {
	const (
		fbt       = 2 * time.Second
		threshold = 5
		total     = 30
	)
	tests := []struct {
		name string
		body string
		ok   func(body []byte) bool
	}{
		{name: "json", body: limitsChatBody, ok: func(b []byte) bool { return gjson.GetBytes(b, "choices.0.message.content").String() != "" }},
		{
			name: "stream", body: `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			ok: func(b []byte) bool { return strings.Contains(string(b), "data: [DONE]") },
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fc := clock.NewFake(limitsEpoch)
			// arrived counts before the clock moves, so before the gateway
			// can give up and answer the client.
			var arrived atomic.Int64
			_, hangURL := startMockOn(t, "hang", mock.Behavior{Hang: true}, nil, func(h http.Handler) http.Handler {
				return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					arrived.Add(1)
					// Read the body first so that the server notices when the
					// gateway hangs up; then let first_byte_timeout pass.
					body, _ := io.ReadAll(r.Body)
					r.Body = io.NopCloser(bytes.NewReader(body))
					fc.Advance(fbt)
					h.ServeHTTP(w, r)
				})
			})
			good, goodURL := startMock(t, "good", mock.Behavior{CompletionTokens: 2})
			e := startGateway(t, spec{
				clock: fc,
				upstreams: []config.Upstream{
					upstreamAt("hang", config.ProviderOpenAI, hangURL, 0, "gpt-4o"),
					upstreamAt("good", config.ProviderOpenAI, goodURL, 1, "gpt-4o"),
				},
				edit: func(c *config.Config) {
					c.Defaults.FirstByteTimeout = fbt
					c.Circuit.FailureThreshold = threshold
				},
			})
			slow := 0
			for i := range total {
				start := fc.Now()
				r := e.post(t, chatPath, tc.body)
				took := fc.Now().Sub(start)
				if r.status != http.StatusOK || !tc.ok(r.body) || r.header.Get("X-Switchyard-Upstream") != "good" {
					t.Fatalf("request %d: status %d from %q: %s", i, r.status, r.header.Get("X-Switchyard-Upstream"), r.body)
				}
				if took > fbt {
					t.Errorf("request %d took %s of fake time, more than one first_byte_timeout (%s)", i, took, fbt)
				}
				wantAttempts := "1"
				if took > 0 {
					slow++
					wantAttempts = "2"
				}
				if got := r.header.Get("X-Switchyard-Attempts"); got != wantAttempts {
					t.Errorf("request %d: %s attempts in %s, want %s", i, got, took, wantAttempts)
				}
			}
			if n := arrived.Load(); n != threshold || slow != threshold {
				t.Errorf("the hanging upstream received %d requests and %d client requests waited for it; want failure_threshold = %d of each",
					n, slow, threshold)
			}
			if n := good.Stats().Requests; n != total {
				t.Errorf("good served %d of %d requests", n, total)
			}
		})
	}
}

// gate holds a mock's responses inside the mock (counted in flight by it)
// until the test lets them through.
type gate struct {
	arrived chan struct{} // one value per response being held
	open    chan struct{} // closed to let every response through
}

func newGate() *gate { return &gate{arrived: make(chan struct{}, 100), open: make(chan struct{})} }

func (g *gate) wrap(h http.Handler) http.Handler {
	return withHeaderHook(h, func(r *http.Request, _ int, _ http.Header) {
		g.arrived <- struct{}{}
		select {
		case <-g.open:
		case <-r.Context().Done():
		}
	})
}

// TestConcurrencyQueue: max_concurrency 2 with a queue of 2. Of 10
// concurrent requests the mock never has more than 2 in flight, 2 wait in
// the queue and are served, and the other 6 get 503 queue_full at once. A
// request that waits longer than queue.timeout gets 503 queue_timeout.
func TestConcurrencyQueue(t *testing.T) {
	const queueTimeout = 7 * time.Second // unique among the gateway's timers
	type outcome struct {
		status int
		code   string
		retry  string
	}
	start := func(t *testing.T, maxConc, maxLen int, logger *slog.Logger) (*env, *mock.Server, *gate, *watchClock) {
		wc := newWatchClock(queueTimeout)
		g := newGate()
		m, url := startMockOn(t, "slow", mock.Behavior{CompletionTokens: 2}, wc.Fake, g.wrap)
		up := upstreamAt("slow", config.ProviderOpenAI, url, 0, "gpt-4o")
		up.MaxConcurrency = maxConc
		up.Queue = config.Queue{Enabled: true, Timeout: queueTimeout, MaxLength: maxLen}
		e := startGateway(t, spec{clock: wc, upstreams: []config.Upstream{up}, logger: logger})
		t.Cleanup(func() {
			select {
			case <-g.open:
			default:
				close(g.open) // never leave a request held
			}
		})
		return e, m, g, wc
	}
	fire := func(e *env, n int) <-chan outcome {
		out := make(chan outcome, n)
		for range n {
			go func() {
				r := <-e.goPost(limitsChatBody)
				out <- outcome{r.status, errCode(r), r.header.Get("Retry-After")}
			}()
		}
		return out
	}
	wait := func(t *testing.T, what string, ch <-chan struct{}) {
		t.Helper()
		select {
		case <-ch:
		case <-time.After(hangGuard):
			t.Fatalf("still waiting for %s", what)
		}
	}

	t.Run("queue full", func(t *testing.T) {
		const total, maxConc, maxLen = 10, 2, 2
		e, m, g, wc := start(t, maxConc, maxLen, nil)
		out := fire(e, total)
		// Wait until 2 requests are held by the mock and the other 8 are
		// either queued (their queue timer armed) or answered.
		var held, queued int
		var early []outcome
		for held < maxConc || queued+len(early) < total-maxConc {
			select {
			case <-g.arrived:
				held++
			case <-wc.armed:
				queued++
			case o := <-out:
				early = append(early, o)
			case <-time.After(hangGuard):
				t.Fatalf("stuck with %d held, %d queued, %d answered", held, queued, len(early))
			}
		}
		if held != maxConc || queued != maxLen {
			t.Errorf("%d requests in flight and %d queued, want %d and %d", held, queued, maxConc, maxLen)
		}
		for _, o := range early {
			if o.status != http.StatusServiceUnavailable || o.code != "queue_full" || o.retry == "" {
				t.Errorf("surplus request answered %+v, want 503 queue_full with Retry-After", o)
			}
		}
		close(g.open)
		ok := 0
		for range total - len(early) {
			select {
			case o := <-out:
				if o.status == http.StatusOK {
					ok++
				} else {
					t.Errorf("held or queued request answered %+v, want 200", o)
				}
			case <-time.After(hangGuard):
				t.Fatal("a held or queued request never finished")
			}
		}
		if ok != maxConc+maxLen {
			t.Errorf("%d requests served, want %d", ok, maxConc+maxLen)
		}
		st := m.Stats()
		if st.MaxInFlight != maxConc || st.Requests != int64(ok) {
			t.Errorf("the mock saw %d requests, at most %d at once; want %d, at most %d", st.Requests, st.MaxInFlight, ok, maxConc)
		}
	})

	// Requests planned while a slot was free, that find the upstream full
	// when they dispatch, queue like the ones planned once it was full.
	t.Run("full since planning", func(t *testing.T) {
		const total, maxConc = 3, 2
		// Every request is planned (seeing 0 in flight) before any dispatches.
		barrier := newPlanBarrier(total)
		e, m, g, wc := start(t, maxConc, 2, slog.New(barrier))
		out := fire(e, total)
		var held, queued int
		for held < maxConc || queued < total-maxConc {
			select {
			case <-g.arrived:
				held++
			case <-wc.armed:
				queued++
			case o := <-out:
				t.Fatalf("with %d held and %d queued, a request was answered %+v; it should have queued", held, queued, o)
			case <-time.After(hangGuard):
				t.Fatalf("stuck with %d held, %d queued", held, queued)
			}
		}
		close(g.open)
		for range total {
			if o := <-out; o.status != http.StatusOK {
				t.Errorf("request answered %+v, want 200", o)
			}
		}
		if st := m.Stats(); st.MaxInFlight != maxConc || st.Requests != total {
			t.Errorf("the mock saw %d requests, at most %d at once; want %d, at most %d", st.Requests, st.MaxInFlight, total, maxConc)
		}
	})

	t.Run("queue timeout", func(t *testing.T) {
		e, m, g, wc := start(t, 1, 1, nil)
		first := fire(e, 1)
		wait(t, "the first request to reach the mock", g.arrived)
		second := fire(e, 1)
		wait(t, "the second request to queue", wc.armed)
		wc.Advance(queueTimeout)
		select {
		case o := <-second:
			if o.status != http.StatusServiceUnavailable || o.code != "queue_timeout" || o.retry == "" {
				t.Errorf("queued request answered %+v, want 503 queue_timeout with Retry-After", o)
			}
		case <-time.After(hangGuard):
			t.Fatal("the queued request outlived queue.timeout")
		}
		close(g.open)
		if o := <-first; o.status != http.StatusOK {
			t.Errorf("the request in flight answered %+v, want 200", o)
		}
		if st := m.Stats(); st.Requests != 1 || st.MaxInFlight != 1 {
			t.Errorf("the mock saw %d requests, at most %d at once; want 1", st.Requests, st.MaxInFlight)
		}
	})
}

// planBarrier is a slog.Handler that holds each request after its routing
// decision (logged at debug level, after planning and before dispatch) until
// n requests have been planned, so that they all plan on the same state.
type planBarrier struct {
	mu   sync.Mutex // guards left
	left int
	all  chan struct{} // closed once n decisions are in
}

var _ slog.Handler = (*planBarrier)(nil)

func newPlanBarrier(n int) *planBarrier { return &planBarrier{left: n, all: make(chan struct{})} }

func (b *planBarrier) Enabled(context.Context, slog.Level) bool { return true }

func (b *planBarrier) Handle(ctx context.Context, r slog.Record) error {
	if r.Message != "routing decision" {
		return nil
	}
	b.mu.Lock()
	if b.left > 0 {
		if b.left--; b.left == 0 {
			close(b.all)
		}
	}
	b.mu.Unlock()
	select {
	case <-b.all:
	case <-ctx.Done():
	case <-time.After(hangGuard):
	}
	return nil
}

func (b *planBarrier) WithAttrs([]slog.Attr) slog.Handler { return b }
func (b *planBarrier) WithGroup(string) slog.Handler      { return b }

// TestMaxWait: both upstreams answer 429 with Retry-After: 2 and cool down.
// A request that finds every candidate cooling down waits for the first to
// free up when defaults.max_wait allows it, and succeeds; otherwise it gets
// 503 with Retry-After at once.
func TestMaxWait(t *testing.T) {
	const cooldown = 2 * time.Second // unique among the gateway's timers
	tests := []struct {
		name    string
		maxWait time.Duration
		waits   bool
	}{
		{name: "max_wait 5s waits", maxWait: 5 * time.Second, waits: true},
		{name: "max_wait 0 answers 503", maxWait: 0},
		{name: "max_wait shorter than the cooldown answers 503", maxWait: time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			wc := newWatchClock(cooldown)
			limited := mock.Behavior{ForceStatus: http.StatusTooManyRequests}
			a, aURL := startMockOn(t, "a", limited, wc.Fake, rateHeaders("2", false))
			b, bURL := startMockOn(t, "b", limited, wc.Fake, rateHeaders("2", false))
			e := startGateway(t, spec{
				clock: wc,
				upstreams: []config.Upstream{
					upstreamAt("a", config.ProviderOpenAI, aURL, 0, "gpt-4o"),
					upstreamAt("b", config.ProviderOpenAI, bURL, 0, "gpt-4o"),
				},
				edit: func(c *config.Config) { c.Defaults.MaxWait = tc.maxWait },
			})
			sent := func() int64 { return a.Stats().Requests + b.Stats().Requests }

			// Both answer 429: the client sees 503, not 429.
			r := e.post(t, chatPath, limitsChatBody)
			if r.status != http.StatusServiceUnavailable || errCode(r) != "no_upstream_available" || r.header.Get("Retry-After") != "2" {
				t.Fatalf("with both upstreams answering 429: status %d code %q Retry-After %q, want 503 no_upstream_available, 2",
					r.status, errCode(r), r.header.Get("Retry-After"))
			}
			if n := sent(); n != 2 {
				t.Fatalf("%d upstream requests, want one to each", n)
			}
			a.SetBehavior(mock.Behavior{CompletionTokens: 2})
			b.SetBehavior(mock.Behavior{CompletionTokens: 2})

			// Both cool down for 2 s of fake time.
			done := e.goPost(limitsChatBody)
			waited := false
			select {
			case r = <-done:
			case <-wc.armed:
				waited = true
				wc.Advance(cooldown)
				r = <-done
			case <-time.After(hangGuard):
				t.Fatal("the request neither waited nor answered")
			}
			if waited != tc.waits {
				t.Errorf("request waited: %v, want %v", waited, tc.waits)
			}
			if tc.waits {
				if r.status != http.StatusOK {
					t.Errorf("after waiting: status %d: %s", r.status, r.body)
				}
				if n := sent(); n != 3 {
					t.Errorf("%d upstream requests, want the 2 first and 1 after the cooldown", n)
				}
				return
			}
			if r.status != http.StatusServiceUnavailable || errCode(r) != "no_upstream_available" || r.header.Get("Retry-After") != "2" {
				t.Errorf("status %d code %q Retry-After %q, want 503 no_upstream_available with Retry-After 2",
					r.status, errCode(r), r.header.Get("Retry-After"))
			}
			if n := sent(); n != 2 {
				t.Errorf("%d upstream requests; nothing should be sent while both cool down", n)
			}
		})
	}
}

// TestSpendLimits: an upstream over its spend_limit is filtered and the next
// tier serves; a key over its spend_limit gets 429 spend_limit_exceeded.
// Both survive a restart: the first gateway flushes its spend on Close, and
// a new gateway on the same sqlite file and config loads it.
func TestSpendLimits(t *testing.T) {
	const cappedKey = "sk-e2e-capped"
	fc := clock.NewFake(limitsEpoch)
	// Every answer has 5 completion tokens at $1 each: $5 a request.
	pricey, priceyURL := startMock(t, "pricey", mock.Behavior{CompletionTokens: 5})
	cheap, cheapURL := startMock(t, "cheap", mock.Behavior{CompletionTokens: 5})
	upPricey := upstreamAt("pricey", config.ProviderOpenAI, priceyURL, 0, "gpt-4o")
	upPricey.Price = config.Price{OutputPerMTok: 1e6}
	upPricey.SpendLimit = config.SpendLimit{USD: 20, Period: "month"} // 4 requests
	capped := clientKey("capped", cappedKey)
	capped.SpendLimit = config.SpendLimit{USD: 10, Period: "day"} // 2 requests
	cfg := limitsConfig(t,
		[]config.Upstream{upPricey, upstreamAt("cheap", config.ProviderOpenAI, cheapURL, 1, "gpt-4o")},
		[]config.Key{clientKey("e2e", testKey), capped})

	e := serveGateway(t, cfg, gateway.Options{Clock: fc, Seed: 1})
	expect := func(phase string, e *env, secret string, status int, want string) {
		t.Helper()
		r := e.postAs(t, secret, chatPath, limitsChatBody)
		switch {
		case r.status != status:
			t.Fatalf("%s: status %d, want %d: %s", phase, r.status, status, r.body)
		case status == http.StatusOK && r.header.Get("X-Switchyard-Upstream") != want:
			t.Fatalf("%s: served by %q, want %s", phase, r.header.Get("X-Switchyard-Upstream"), want)
		case status != http.StatusOK && errCode(r) != want:
			t.Fatalf("%s: error code %q, want %s", phase, errCode(r), want)
		}
	}
	expect("capped key, 1st", e, cappedKey, 200, "pricey")
	expect("capped key, 2nd", e, cappedKey, 200, "pricey")
	expect("capped key over its limit", e, cappedKey, 429, "spend_limit_exceeded")
	expect("3rd $5 on pricey", e, testKey, 200, "pricey")
	expect("4th $5 on pricey", e, testKey, 200, "pricey")
	expect("pricey over its limit", e, testKey, 200, "cheap")
	if err := e.Close(); err != nil {
		t.Fatalf("closing the first gateway: %v", err)
	}

	e2 := serveGateway(t, cfg, gateway.Options{Clock: fc, Seed: 1})
	expect("after restart: capped key", e2, cappedKey, 429, "spend_limit_exceeded")
	for i := range 3 {
		expect(fmt.Sprintf("after restart: request %d", i), e2, testKey, 200, "cheap")
	}
	d, err := e2.G.Explain(context.Background(), proxy.ExplainRequest{Model: "gpt-4o"})
	if err != nil {
		t.Fatal(err)
	}
	if r := record(t, d, "pricey"); r.Filter != balancer.FilterSpendExceeded {
		t.Errorf("after restart pricey has filter %q, want %s", r.Filter, balancer.FilterSpendExceeded)
	}
	if n := pricey.Stats().Requests; n != 4 {
		t.Errorf("pricey served %d requests, want the 4 its $20 limit pays for", n)
	}
	if n := cheap.Stats().Requests; n != 4 {
		t.Errorf("cheap served %d requests, want 4", n)
	}
}

// TestKeyRPM: a key with rpm 5 gets 429 rate_limit_exceeded with a
// Retry-After on its 6th request within a minute; the wait shrinks as the
// window slides, and after 60 s it passes again. The upstream never sees the
// refused requests.
func TestKeyRPM(t *testing.T) {
	const rpmKey = "sk-e2e-rpm"
	fc := clock.NewFake(limitsEpoch)
	up, upURL := startMock(t, "up", mock.Behavior{CompletionTokens: 2})
	k := clientKey("rpm5", rpmKey)
	k.RPM = 5
	e := startGateway(t, spec{
		clock:     fc,
		keys:      []config.Key{k, clientKey("e2e", testKey)},
		upstreams: []config.Upstream{upstreamAt("up", config.ProviderOpenAI, upURL, 0, "gpt-4o")},
	})
	for i := range 5 {
		if r := e.postAs(t, rpmKey, chatPath, limitsChatBody); r.status != http.StatusOK {
			t.Fatalf("request %d: status %d: %s", i+1, r.status, r.body)
		}
	}
	limited := func(wantRetry int) {
		t.Helper()
		r := e.postAs(t, rpmKey, chatPath, limitsChatBody)
		retry, err := strconv.Atoi(r.header.Get("Retry-After"))
		if r.status != http.StatusTooManyRequests || errCode(r) != "rate_limit_exceeded" || err != nil {
			t.Fatalf("status %d code %q Retry-After %q, want 429 rate_limit_exceeded with Retry-After",
				r.status, errCode(r), r.header.Get("Retry-After"))
		}
		if retry != wantRetry {
			t.Errorf("Retry-After %d, want %d", retry, wantRetry)
		}
	}
	limited(60)
	if r := e.post(t, chatPath, limitsChatBody); r.status != http.StatusOK {
		t.Errorf("another key was limited too: status %d", r.status)
	}
	fc.Advance(30 * time.Second)
	limited(30)
	fc.Advance(30 * time.Second)
	if r := e.postAs(t, rpmKey, chatPath, limitsChatBody); r.status != http.StatusOK {
		t.Fatalf("after 60 s: status %d: %s", r.status, r.body)
	}
	if n := up.Stats().Requests; n != 7 {
		t.Errorf("the upstream saw %d requests, want 7 (5 + 1 from the other key + 1 after the minute)", n)
	}
}

// TestRetryBudget: with every upstream failing, retries are capped by
// retry_budget: over the 10 s window they add at most max(ratio × requests,
// 3/s × 10 s) to the requests, instead of the 2 retries each request could
// make.
func TestRetryBudget(t *testing.T) {
	const requests = 200
	tests := []struct {
		ratio       float64
		wantRetries int64 // max(ratio × requests, 30)
	}{
		{ratio: 0, wantRetries: 30},
		{ratio: 0.1, wantRetries: 30},
		{ratio: 0.5, wantRetries: 100},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("ratio %g", tc.ratio), func(t *testing.T) {
			fc := clock.NewFake(limitsEpoch) // never advanced: one window
			var mocks []*mock.Server
			var ups []config.Upstream
			for _, name := range []string{"a", "b", "c"} {
				m, url := startMock(t, name, mock.Behavior{ForceStatus: http.StatusInternalServerError})
				mocks = append(mocks, m)
				ups = append(ups, upstreamAt(name, config.ProviderOpenAI, url, 0, "gpt-4o"))
			}
			e := startGateway(t, spec{clock: fc, upstreams: ups, edit: func(c *config.Config) {
				c.Defaults.RetryBudget = tc.ratio
				c.Circuit.FailureThreshold = 1 << 20 // keep every breaker closed
			}})
			exhausted := 0
			for i := range requests {
				r := e.post(t, chatPath, limitsChatBody)
				if r.status != http.StatusBadGateway {
					t.Fatalf("request %d: status %d, want 502: %s", i, r.status, r.body)
				}
				if strings.Contains(gjson.GetBytes(r.body, "error.message").String(), "retry budget exhausted") {
					exhausted++
				}
			}
			var sent int64
			for _, m := range mocks {
				sent += m.Stats().Requests
			}
			if got := sent - requests; got != tc.wantRetries {
				t.Errorf("%d retries for %d failing requests, want %d", got, requests, tc.wantRetries)
			}
			if exhausted == 0 {
				t.Error("no error message says the retry budget was exhausted")
			}
		})
	}
}

// BenchmarkLimitChecks is BenchmarkProxyChat through a gateway with every
// limit configured (upstream rate_limit, max_concurrency with a queue,
// spend_limit with a price; key rpm and spend_limit), all far from binding,
// against one with none: the difference is what the checks cost per request.
func BenchmarkLimitChecks(b *testing.B) {
	for _, limited := range []bool{false, true} {
		name := "none"
		if limited {
			name = "limits"
		}
		b.Run(name, func(b *testing.B) {
			_, url := startMock(b, "bench", mock.Behavior{})
			up := upstreamAt("bench", config.ProviderOpenAI, url, 0, "gpt-4o")
			key := clientKey("e2e", testKey)
			if limited {
				up.RateLimit = config.RateLimit{RPM: 1 << 30, TPM: 1 << 40}
				up.MaxConcurrency = 1 << 16
				up.Queue = config.Queue{Enabled: true, Timeout: 5 * time.Second, MaxLength: 100}
				up.Price = config.Price{InputPerMTok: 2.5, OutputPerMTok: 10}
				up.SpendLimit = config.SpendLimit{USD: 1e12, Period: "month"}
				key.RPM = 1 << 30
				key.SpendLimit = config.SpendLimit{USD: 1e12, Period: "month"}
			}
			e := startGateway(b, spec{upstreams: []config.Upstream{up}, keys: []config.Key{key}})
			benchChat(b, e.URL+chatPath, testKey, nil)
		})
	}
}
