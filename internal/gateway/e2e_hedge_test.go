package gateway_test

import (
	"bufio"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"switchyard/internal/config"
	"switchyard/internal/mock"
)

// hedgedStreamBody is a streamed chat request for the hedge tests.
const hedgedStreamBody = `{"model":"gpt-4o","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"hi"}]}`

// firstEventAfter posts a streamed request and returns the time to its
// first event as the client sees it, the response's headers and the whole
// body once read.
func firstEventAfter(t *testing.T, e *env) (time.Duration, http.Header, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.URL+"/v1/chat/completions", strings.NewReader(hedgedStreamBody))
	if err != nil {
		t.Error(err)
		return 0, nil, ""
	}
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/json")
	began := time.Now()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Error(err)
		return 0, nil, ""
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	first, err := br.ReadString('\n')
	ttft := time.Since(began)
	if err != nil || resp.StatusCode != http.StatusOK {
		t.Errorf("status %d, first line %q, error %v", resp.StatusCode, first, err)
	}
	var rest strings.Builder
	_, _ = br.WriteTo(&rest)
	return ttft, resp.Header, first + rest.String()
}

// TestHedgedStreamsBeatASlowPrimary: the primary takes 3 s to its first
// event, the secondary 100 ms; with hedge.delay 300ms every stream is
// answered by the hedge about 400 ms in, and the primary's connection is
// closed at once (the mock sees the cancel). Five clients send ten streams
// each through five primary slots: a slot a lost attempt kept would leave
// a later stream without a primary attempt to hedge.
func TestHedgedStreamsBeatASlowPrimary(t *testing.T) {
	slow, slowURL := startMock(t, "slow", mock.Behavior{TTFT: 3 * time.Second})
	fast, fastURL := startMock(t, "fast", mock.Behavior{TTFT: 100 * time.Millisecond})
	primary := upstreamAt("primary", config.ProviderOpenAI, slowURL, 0, "gpt-4o")
	primary.MaxConcurrency = 5
	e := startGateway(t, spec{upstreams: []config.Upstream{primary, upstreamAt("secondary", config.ProviderOpenAI, fastURL, 1, "gpt-4o")},
		edit: func(c *config.Config) { c.Defaults.Hedge = config.Hedge{Delay: "300ms", Max: 1, Budget: 1} }})

	const streams = 50
	ttfts := make([]time.Duration, 0, streams)
	var mu sync.Mutex
	var wg sync.WaitGroup
	for range 5 { // five clients, ten streams each, one after another
		wg.Go(func() {
			for range streams / 5 {
				ttft, h, body := firstEventAfter(t, e)
				if h.Get("X-Switchyard-Upstream") != "secondary" || h.Get("X-Switchyard-Hedged") != "2" || h.Get("X-Switchyard-Attempts") != "2" {
					t.Errorf("served by %q, hedged %q, attempts %q; want the secondary, 2 raced, 2 attempts",
						h.Get("X-Switchyard-Upstream"), h.Get("X-Switchyard-Hedged"), h.Get("X-Switchyard-Attempts"))
				}
				if !strings.Contains(body, "data: [DONE]") {
					t.Errorf("stream not complete: %q", body)
				}
				mu.Lock()
				ttfts = append(ttfts, ttft)
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	slices.Sort(ttfts)
	p50 := ttfts[len(ttfts)/2]
	t.Logf("TTFT over %d hedged streams: p50 %v, max %v", len(ttfts), p50, ttfts[len(ttfts)-1])
	if p50 > 450*time.Millisecond {
		t.Errorf("TTFT p50 %v, want ≤ 450ms (hedge at 300ms + the secondary's 100ms)", p50)
	}
	// Every losing primary attempt was cancelled, and none is left running.
	if !waitFor(5*time.Second, func() bool {
		st := slow.Stats()
		return st.InFlight == 0 && st.Canceled == st.Requests
	}) {
		t.Errorf("the primary's attempts were not all cancelled: %+v", slow.Stats())
	}
	if st := slow.Stats(); st.Requests != streams {
		t.Errorf("primary saw %d requests, want %d", st.Requests, streams)
	}
	if n := fast.Stats().Requests; n != streams {
		t.Errorf("secondary served %d requests, want %d", n, streams)
	}
	m := scrapeMetrics(t, e, "")
	if won, _ := m.value("switchyard_hedges_total", map[string]string{"result": "won"}); won != streams {
		t.Errorf("switchyard_hedges_total{result=won} = %v, want %d", won, streams)
	}
}

// TestHedgeGivesTheSlotBack: the lost attempt's slot is free the moment the
// hedge wins, so a primary limited to max_concurrency: 1 (no queue) takes
// the next request's first attempt again, every time.
func TestHedgeGivesTheSlotBack(t *testing.T) {
	slow, slowURL := startMock(t, "slow", mock.Behavior{TTFT: 3 * time.Second})
	_, fastURL := startMock(t, "fast", mock.Behavior{TTFT: 50 * time.Millisecond})
	primary := upstreamAt("primary", config.ProviderOpenAI, slowURL, 0, "gpt-4o")
	primary.MaxConcurrency = 1
	e := startGateway(t, spec{upstreams: []config.Upstream{primary, upstreamAt("secondary", config.ProviderOpenAI, fastURL, 1, "gpt-4o")},
		edit: func(c *config.Config) {
			withAdmin(c)
			c.Defaults.Hedge = config.Hedge{Delay: "100ms", Max: 1, Budget: 1}
		}})
	for i := range 5 {
		_, h, _ := firstEventAfter(t, e)
		if h.Get("X-Switchyard-Hedged") != "2" {
			t.Fatalf("request %d: hedged %q, attempts %q: the primary's slot was not free", i, h.Get("X-Switchyard-Hedged"), h.Get("X-Switchyard-Attempts"))
		}
	}
	// (The mock may see the next request a moment before it notices the
	// last one's close: the gateway frees the slot when its own side of the
	// connection is closed.)
	if st := slow.Stats(); st.Requests != 5 {
		t.Errorf("primary: %d requests, want 5", st.Requests)
	}
	// The dashboard's state shows the hedges per upstream.
	r := rawRequest(t, "GET", e.URL+"/admin/api/state", nil, "Authorization", "Bearer "+adminToken)
	for _, want := range []struct {
		name      string
		hedges    int64
		hedgesWon int64
	}{{"primary", 0, 0}, {"secondary", 5, 5}} {
		u := gjson.GetBytes(r.body, `upstreams.#(name=="`+want.name+`")`)
		if u.Get("hedges_5m").Int() != want.hedges || u.Get("hedges_won_5m").Int() != want.hedgesWon {
			t.Errorf("%s: hedges %s / won %s, want %d / %d", want.name, u.Get("hedges_5m"), u.Get("hedges_won_5m"), want.hedges, want.hedgesWon)
		}
	}
	// The request log lists both raced attempts: the primary's, cancelled
	// after the hedge delay, and the hedge that won.
	for _, l := range e.RequestLogs() {
		if len(l.Tried) != 2 {
			t.Fatalf("request %s lists %d attempts, want 2: %+v", l.ID, len(l.Tried), l.Tried)
		}
		p, h := l.Tried[0], l.Tried[1]
		if p.Upstream != "primary" || p.Hedge || p.Won || p.Outcome != "canceled" || p.Detail != "hedge lost" {
			t.Errorf("first attempt %+v, want the primary, cancelled: hedge lost", p)
		}
		if h.Upstream != "secondary" || !h.Hedge || !h.Won || h.Outcome != "success" || h.Status != 200 || h.OutputTokens == 0 {
			t.Errorf("second attempt %+v, want the secondary's hedge, won with its usage", h)
		}
		if h.Start < 100*time.Millisecond || h.FirstByte <= 0 || p.End < h.Start {
			t.Errorf("timings: primary %+v, hedge %+v; want the hedge to start after the 100ms delay, the primary to end after it", p, h)
		}
	}
}
