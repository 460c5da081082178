package gateway_test

import (
	"bufio"
	"maps"
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
// answered by the hedge, and the primary's connection is
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
	t.Logf("TTFT over %d hedged streams: p50 %v, max %v", len(ttfts), ttfts[len(ttfts)/2], ttfts[len(ttfts)-1])
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
	// Each decision lists the attempts raced on its plan and the winner.
	d := rawRequest(t, "GET", e.URL+"/admin/api/decisions?limit=5", nil, "Authorization", "Bearer "+adminToken)
	if n := gjson.GetBytes(d.body, "#").Int(); n != 5 {
		t.Fatalf("%d decisions, want 5: %s", n, d.body)
	}
	for _, dec := range gjson.ParseBytes(d.body).Array() {
		if got := dec.Get("tried").Raw; got != `[{"upstream":"primary","outcome":"canceled"},{"upstream":"secondary","hedge":true,"outcome":"success","won":true}]` {
			t.Errorf("decision %s tried %s, want the primary cancelled and the secondary's hedge won", dec.Get("request_id"), got)
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
		if p.End < h.Start {
			t.Errorf("timings: primary %+v, hedge %+v; want the primary to end after the hedge started", p, h)
		}
	}
}

// hedgeCounts scrapes switchyard_hedges_total by result.
func hedgeCounts(t *testing.T, e *env) map[string]float64 {
	t.Helper()
	m := scrapeMetrics(t, e, "")
	out := map[string]float64{}
	for _, r := range []string{"won", "lost", "skipped_budget", "skipped_limits"} {
		out[r], _ = m.value("switchyard_hedges_total", l{"result": r})
	}
	return out
}

// TestHedgeRespectsLimits: a hedge goes only to an upstream with a free
// slot and room in its RPM now. The secondary is either busy (its one slot
// held by the first hedge, which never reaches its first byte before the
// primary) or out of RPM (2 per minute); every other hedge is skipped for
// limits, and the secondary's mock never sees more than its limits allow.
func TestHedgeRespectsLimits(t *testing.T) {
	tests := []struct {
		name      string
		primary   mock.Behavior
		secondary mock.Behavior
		limit     func(*config.Upstream)
		parallel  bool // send the requests at once, else one after another
		want      map[string]float64
		wantReqs  int64 // the secondary's requests
	}{
		{
			name:      "one slot, busy",
			primary:   mock.Behavior{TTFT: time.Second},
			secondary: mock.Behavior{TTFT: 3 * time.Second},
			limit:     func(u *config.Upstream) { u.MaxConcurrency = 1 },
			parallel:  true,
			want:      map[string]float64{"won": 0, "lost": 1, "skipped_budget": 0, "skipped_limits": 9},
			wantReqs:  1,
		},
		{
			name:      "rpm spent",
			primary:   mock.Behavior{TTFT: 500 * time.Millisecond},
			secondary: mock.Behavior{RPM: 2},
			limit:     func(u *config.Upstream) { u.RateLimit.RPM = 2 },
			want:      map[string]float64{"won": 2, "lost": 0, "skipped_budget": 0, "skipped_limits": 8},
			wantReqs:  2,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			_, slowURL := startMock(t, "slow", tc.primary)
			second, secondURL := startMock(t, "second", tc.secondary)
			secondary := upstreamAt("secondary", config.ProviderOpenAI, secondURL, 1, "gpt-4o")
			tc.limit(&secondary)
			e := startGateway(t, spec{upstreams: []config.Upstream{
				upstreamAt("primary", config.ProviderOpenAI, slowURL, 0, "gpt-4o"), secondary,
			}, edit: func(c *config.Config) { c.Defaults.Hedge = config.Hedge{Delay: "50ms", Max: 1, Budget: 1} }})

			var wg sync.WaitGroup
			for range 10 {
				if tc.parallel {
					wg.Go(func() { firstEventAfter(t, e) })
				} else {
					firstEventAfter(t, e)
				}
			}
			wg.Wait()
			if got := hedgeCounts(t, e); !maps.Equal(got, tc.want) {
				t.Errorf("hedges %v, want %v", got, tc.want)
			}
			st := second.Stats()
			if st.Requests != tc.wantReqs || st.MaxInFlight > 1 || st.ByStatus[http.StatusTooManyRequests] != 0 {
				t.Errorf("secondary: %d requests, %d at most at once, %d answered 429; want %d, ≤ 1, 0",
					st.Requests, st.MaxInFlight, st.ByStatus[http.StatusTooManyRequests], tc.wantReqs)
			}
		})
	}
}

// TestHedgeSkippedKeepsTheRetry: a hedge skipped because the secondary
// had no free slot leaves the plan as it was, so that when the primary
// then fails (a 500 after 1.5 s) the retry still goes to the secondary,
// free again by then (docs/routing.md#hedged-requests: retries follow the plan,
// hedging only adds races). The secondary is free when the request is planned;
// a stream of another model takes its one slot before the hedge is due
// (500 ms) and leaves once the hedge has been skipped.
func TestHedgeSkippedKeepsTheRetry(t *testing.T) {
	fail, failURL := startMock(t, "fail", mock.Behavior{Latency: 1500 * time.Millisecond, ForceStatus: http.StatusInternalServerError})
	second, secondURL := startMock(t, "second", mock.Behavior{TPS: 2, CompletionTokens: 1000})
	secondary := upstreamAt("secondary", config.ProviderOpenAI, secondURL, 1, "gpt-4o", "other")
	secondary.MaxConcurrency = 1
	e := startGateway(t, spec{upstreams: []config.Upstream{
		upstreamAt("primary", config.ProviderOpenAI, failURL, 0, "gpt-4o"), secondary,
	}, edit: func(c *config.Config) { c.Defaults.Hedge = config.Hedge{Delay: "500ms", Max: 1, Budget: 1} }})

	type answer struct {
		status   int
		upstream string
	}
	got := make(chan answer, 1)
	go func() {
		var a answer
		defer func() { got <- a }()
		req, err := http.NewRequest(http.MethodPost, e.URL+"/v1/chat/completions", strings.NewReader(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Error(err)
			return
		}
		req.Header.Set("Authorization", "Bearer "+testKey)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Error(err)
			return
		}
		resp.Body.Close()
		a = answer{resp.StatusCode, resp.Header.Get("X-Switchyard-Upstream")}
	}()
	if _, ok := within(5*time.Second, func() bool { return fail.Stats().InFlight == 1 }); !ok {
		t.Fatal("the primary did not get the request")
	}
	hold := sendStream(t, e, "/v1/chat/completions", `{"model":"other","stream":true,"messages":[{"role":"user","content":"hi"}]}`)
	hold.answered(t)
	if _, ok := within(5*time.Second, func() bool { return hedgeCounts(t, e)["skipped_limits"] == 1 }); !ok {
		t.Fatalf("the hedge was not skipped for limits: %v", hedgeCounts(t, e))
	}
	hold.hangUp()
	if a := <-got; a.status != http.StatusOK || a.upstream != "secondary" {
		t.Errorf("status %d from %q, want 200 from the secondary (the retry after the primary's 500)", a.status, a.upstream)
	}
	if n := second.Stats().Requests; n != 2 {
		t.Errorf("the secondary saw %d requests, want 2 (the held stream and the retry)", n)
	}
}
