package gateway_test

import (
	"bufio"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"switchyard/internal/config"
	"switchyard/internal/mock"
	"switchyard/internal/store"
)

// End-to-end tests of a client that disconnects
// (docs/reference.md#client-disconnects): its upstream attempts are cancelled
// at once (the connection closed within 100 ms), their slots come back, the
// tokens received so far are billed, the log records 499, and no retry or hedge
// starts after it.

// upstreamCloseBound is how soon after the client hangs up the upstream's
// connection must be closed (docs/reference.md#client-disconnects).
const upstreamCloseBound = 100 * time.Millisecond

// clientStream is a streamed request whose client can hang up.
type clientStream struct {
	resp   *http.Response // nil until the gateway answered
	br     *bufio.Reader
	cancel context.CancelFunc
	done   chan struct{} // closed when the request returned
	err    error
}

// sendStream posts a streamed request to the gateway on its own
// goroutine, with a context the test cancels to hang up; it returns at once.
func sendStream(t *testing.T, e *env, path, body string) *clientStream {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, e.URL+path, strings.NewReader(body))
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/json")
	cs := &clientStream{cancel: cancel, done: make(chan struct{})}
	go func() {
		defer close(cs.done)
		cs.resp, cs.err = http.DefaultClient.Do(req)
		if cs.err == nil {
			cs.br = bufio.NewReader(cs.resp.Body)
		}
	}()
	t.Cleanup(func() {
		cs.hangUp()
		<-cs.done
	})
	return cs
}

// answered waits for the gateway's response headers and fails the test
// unless they are a 200.
func (cs *clientStream) answered(t *testing.T) {
	t.Helper()
	<-cs.done
	if cs.err != nil {
		t.Fatalf("streamed request: %v", cs.err)
	}
	if cs.resp.StatusCode != http.StatusOK {
		t.Fatalf("streamed request: status %d", cs.resp.StatusCode)
	}
}

// hangUp cancels the request and closes its connection, as a client that
// goes away does, and returns when it did so.
func (cs *clientStream) hangUp() time.Time {
	at := time.Now()
	cs.cancel()
	select {
	case <-cs.done:
		if cs.resp != nil {
			cs.resp.Body.Close()
		}
	default: // still waiting for headers: the cancel closes the connection
	}
	return at
}

// within polls cond every millisecond for up to d, and returns how long
// it took to hold (or d and false).
func within(d time.Duration, cond func() bool) (time.Duration, bool) {
	began := time.Now()
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		if cond() {
			return time.Since(began), true
		}
		if time.Since(began) > d {
			return d, false
		}
		<-tick.C
	}
}

// closedAfter waits for the mocks to have seen every request they got
// cancelled and none left in flight, and checks that it happened within
// upstreamCloseBound of since; it logs the time it took.
func closedAfter(t *testing.T, since time.Time, mocks ...*mock.Server) {
	t.Helper()
	_, ok := within(5*time.Second, func() bool {
		for _, m := range mocks {
			if st := m.Stats(); st.InFlight != 0 || st.Canceled != st.Requests {
				return false
			}
		}
		return true
	})
	took := time.Since(since)
	t.Logf("upstream connection(s) closed %.1f ms after the client's", float64(took.Microseconds())/1000)
	if !ok {
		for _, m := range mocks {
			t.Errorf("upstream attempt not cancelled: %+v", m.Stats())
		}
		return
	}
	if took > upstreamCloseBound {
		t.Errorf("upstream closed %v after the client, want ≤ %v (docs/reference.md#client-disconnects)", took, upstreamCloseBound)
	}
}

// requestFinished waits until the gateway has answered n requests with a
// 4xx (a 499 is one): the handler has returned, so nothing more of those
// requests can start upstream.
func requestFinished(t *testing.T, e *env, n float64) scrape {
	t.Helper()
	var m scrape
	if _, ok := within(5*time.Second, func() bool {
		m = scrapeMetrics(t, e, "")
		got, _ := m.value("switchyard_requests_total", l{"code_class": "4xx"})
		return got == n
	}); !ok {
		t.Fatalf("the gateway did not finish %v request(s) with a 4xx:\n%s", n, m.raw)
	}
	return m
}

// disconnectLog returns the one request log with status 499.
func disconnectLog(t *testing.T, logs []store.RequestLog) store.RequestLog {
	t.Helper()
	var found []store.RequestLog
	for _, lg := range logs {
		if lg.Status == 499 {
			found = append(found, lg)
		}
	}
	if len(found) != 1 {
		t.Fatalf("%d request logs with status 499, want 1: %+v", len(found), logs)
	}
	return found[0]
}

// TestDisconnectMidStream: a client reads a few tokens of a slow stream
// (4 tokens/s of 5,000) and hangs up. The upstream's connection is closed
// within 100 ms, well before the next token is due (250 ms apart: the
// gateway acts on the hang-up itself, not on a failed write), its only
// slot (max_concurrency 1, no queue) takes the next request at once, the
// log says 499 with the output tokens relayed so far (the upstream reports
// its usage only at the end), and those tokens count in
// switchyard_tokens_total and the spend. The stream is relayed as it is,
// or translated for an Anthropic client.
func TestDisconnectMidStream(t *testing.T) {
	const (
		price = 10.0 // USD per million output tokens
		read  = 3    // tokens the client reads before it hangs up
	)
	tests := []struct {
		name, path, body string
		// token reports whether an event's data carries a token.
		token func(data string) bool
	}{
		{"openai chat", "/v1/chat/completions", hedgedStreamBody, func(data string) bool {
			return gjson.Get(data, "choices.0.delta.content").String() != ""
		}},
		{"anthropic client, translated", "/v1/messages",
			`{"model":"gpt-4o","max_tokens":8000,"stream":true,"messages":[{"role":"user","content":"hi"}]}`,
			func(data string) bool { return gjson.Get(data, "delta.text").String() != "" }},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			slow, slowURL := startMock(t, "slow", mock.Behavior{TPS: 4, CompletionTokens: 5000})
			only := upstreamAt("only", config.ProviderOpenAI, slowURL, 0, "gpt-4o")
			only.MaxConcurrency = 1
			only.Price = config.Price{OutputPerMTok: price}
			e := startGateway(t, spec{upstreams: []config.Upstream{only}})

			cs := sendStream(t, e, tc.path, tc.body)
			cs.answered(t)
			for seen := 0; seen < read; {
				for _, ev := range parseSSE([]byte(readEvent(t, cs.br))) {
					if tc.token(ev.data) {
						seen++
					}
				}
			}
			closedAfter(t, cs.hangUp(), slow)

			// The slot is free: the next request is served by the same upstream.
			r := e.post(t, "/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
			if r.status != http.StatusOK || r.header.Get("X-Switchyard-Upstream") != "only" {
				t.Fatalf("request after the disconnect: status %d from %q: %s", r.status, r.header.Get("X-Switchyard-Upstream"), r.body)
			}
			nextOut := gjson.GetBytes(r.body, "usage.completion_tokens").Float()
			if st := slow.Stats(); st.Requests != 2 || st.MaxInFlight != 1 {
				t.Errorf("upstream: %d requests, %d at most at once; want 2, one at a time", st.Requests, st.MaxInFlight)
			}

			m := requestFinished(t, e, 1)
			m.want(t, "switchyard_client_disconnects_total", nil, 1)
			outMetric, _ := m.value("switchyard_tokens_total", l{"upstream": "only", "direction": "output"})
			spend, _ := m.value("switchyard_spend_usd_total", l{"upstream": "only", "key": "e2e"})

			lg := disconnectLog(t, e.RequestLogs())
			t.Logf("499 log: %d output tokens (the client read %d)", lg.OutputTokens, read)
			if lg.Upstream != "only" || lg.ErrorClass != "client_canceled" || !lg.Stream {
				t.Errorf("log: upstream %q, error class %q, stream %v; want only, client_canceled, true", lg.Upstream, lg.ErrorClass, lg.Stream)
			}
			if lg.OutputTokens < read {
				t.Errorf("log: %d output tokens, want at least the %d the client read", lg.OutputTokens, read)
			}
			if want := float64(lg.OutputTokens) + nextOut; outMetric != want {
				t.Errorf("switchyard_tokens_total{output} = %v, want %v (the cut stream's %d + the next answer's %v)", outMetric, want, lg.OutputTokens, nextOut)
			}
			if want := (float64(lg.OutputTokens) + nextOut) * price / 1e6; !closeTo(spend, want) {
				t.Errorf("switchyard_spend_usd_total = %v, want %v", spend, want)
			}
		})
	}
}

// closeTo compares two dollar amounts to a billionth of their size.
func closeTo(a, b float64) bool {
	d := a - b
	return d < 1e-9*b+1e-15 && -d < 1e-9*b+1e-15
}

// TestDisconnectBeforeFirstByte: a client that hangs up while its request
// waits for a first byte ends the request: the waiting attempt(s) are
// cancelled within 100 ms, no retry and no hedge starts after it, and the
// log says 499. The plan always has a fast upstream left to try.
func TestDisconnectBeforeFirstByte(t *testing.T) {
	const slowTTFT = 10 * time.Second
	tests := []struct {
		name string
		// hedge is the route's hedge setting ("" for none).
		hedge string
		// racing are the upstreams (by index in the tier order) that have
		// the request when the client hangs up.
		racing []int
	}{
		{name: "no hedging", racing: []int{0}},
		{name: "before the hedge delay", hedge: "5s", racing: []int{0}},
		{name: "during a race", hedge: "50ms", racing: []int{0, 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Tiers: slow-a, slow-b, then fast: every one after the first
			// would serve a retry or a hedge.
			behaviors := []mock.Behavior{{TTFT: slowTTFT}, {TTFT: slowTTFT}, {}}
			names := []string{"slow-a", "slow-b", "fast"}
			mocks := make([]*mock.Server, len(names))
			var ups []config.Upstream
			for i, name := range names {
				var url string
				mocks[i], url = startMock(t, name, behaviors[i])
				ups = append(ups, upstreamAt(name, config.ProviderOpenAI, url, i, "gpt-4o"))
			}
			e := startGateway(t, spec{upstreams: ups, edit: func(c *config.Config) {
				if tc.hedge != "" {
					c.Defaults.Hedge = config.Hedge{Delay: tc.hedge, Max: 1, Budget: 1}
				}
			}})

			cs := sendStream(t, e, "/v1/chat/completions", hedgedStreamBody)
			if _, ok := within(5*time.Second, func() bool {
				for _, i := range tc.racing {
					if mocks[i].Stats().InFlight != 1 {
						return false
					}
				}
				return true
			}); !ok {
				t.Fatalf("the attempts did not start: %+v, %+v", mocks[0].Stats(), mocks[1].Stats())
			}
			var racing []*mock.Server
			for _, i := range tc.racing {
				racing = append(racing, mocks[i])
			}
			closedAfter(t, cs.hangUp(), racing...)

			m := requestFinished(t, e, 1)
			for i, mk := range mocks {
				want := int64(0)
				if i < len(tc.racing) {
					want = 1
				}
				if n := mk.Stats().Requests; n != want {
					t.Errorf("%s saw %d requests, want %d (no retry or hedge after the disconnect)", names[i], n, want)
				}
			}
			m.want(t, "switchyard_client_disconnects_total", nil, 1)
			m.want(t, "switchyard_retries_total", nil, 0)
			m.want(t, "switchyard_hedges_total", l{"result": "won"}, 0)
			lg := disconnectLog(t, e.RequestLogs())
			if lg.Attempts != len(tc.racing) || lg.ErrorClass != "client_canceled" {
				t.Errorf("log: %d attempts, error class %q; want %d, client_canceled", lg.Attempts, lg.ErrorClass, len(tc.racing))
			}
		})
	}
}
