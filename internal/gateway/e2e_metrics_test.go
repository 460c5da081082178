package gateway_test

import (
	"bytes"
	"context"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"switchyard/internal/config"
	"switchyard/internal/mock"
)

// End-to-end tests of GET /metrics (docs/metrics.md): real
// traffic through a served gateway to loopback upstreams, then a real scrape
// parsed with the Prometheus text parser.

// scrape is one parsed /metrics answer.
type scrape struct {
	raw  []byte
	fams map[string]*dto.MetricFamily
}

// scrapeMetrics GETs /metrics (with token as a Bearer credential when not
// "") and parses the text exposition; any status but 200 fails the test.
func scrapeMetrics(t testing.TB, e *env, token string) scrape {
	t.Helper()
	var hdr []string
	if token != "" {
		hdr = []string{"Authorization", "Bearer " + token}
	}
	r := rawRequest(t, http.MethodGet, e.URL+"/metrics", nil, hdr...)
	if r.status != http.StatusOK {
		t.Fatalf("GET /metrics: status %d: %s", r.status, r.body)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(bytes.NewReader(r.body))
	if err != nil {
		t.Fatalf("parsing /metrics: %v\n%s", err, r.body)
	}
	return scrape{raw: r.body, fams: fams}
}

// labelsOf returns a series' labels as a map.
func labelsOf(m *dto.Metric) map[string]string {
	out := make(map[string]string, len(m.GetLabel()))
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

// matches reports whether a series has every label of want.
func matches(m *dto.Metric, want map[string]string) bool {
	got := labelsOf(m)
	for k, v := range want {
		if got[k] != v {
			return false
		}
	}
	return true
}

// value sums, over the series of family name that have every label of
// want, the counter or gauge value, or the sample count of a histogram.
// It also returns how many series matched.
func (s scrape) value(name string, want map[string]string) (float64, int) {
	f := s.fams[name]
	if f == nil {
		return 0, 0
	}
	sum, n := 0.0, 0
	for _, m := range f.GetMetric() {
		if !matches(m, want) {
			continue
		}
		n++
		switch {
		case m.Counter != nil:
			sum += m.GetCounter().GetValue()
		case m.Gauge != nil:
			sum += m.GetGauge().GetValue()
		case m.Histogram != nil:
			sum += float64(m.GetHistogram().GetSampleCount())
		case m.Untyped != nil:
			sum += m.GetUntyped().GetValue()
		}
	}
	return sum, n
}

// want fails the test unless value(name, labels) is exactly v.
func (s scrape) want(t testing.TB, name string, labels map[string]string, v float64) {
	t.Helper()
	if got, _ := s.value(name, labels); got != v {
		t.Errorf("%s%v = %v, want %v", name, labels, got, v)
	}
}

// histogramSum sums the sample sums of the histogram series matching want.
func (s scrape) histogramSum(name string, want map[string]string) float64 {
	sum := 0.0
	for _, m := range s.fams[name].GetMetric() {
		if matches(m, want) {
			sum += m.GetHistogram().GetSampleSum()
		}
	}
	return sum
}

// l is shorthand for a label set.
type l = map[string]string

// TestMetricsAfterTraffic drives every kind of traffic the metrics describe
// and checks each switchyard_ family on a real scrape: exact counts where
// the traffic makes them deterministic, and label values bounded to the
// configured names (an unknown model, a session id, a key secret never
// become labels).
//
// Upstreams: m-fail (tier 0, always 500) and m-429 (tier 0, always 429 with
// Retry-After: 120 and a "requests" limit type) serve gpt-4o; m-good (tier
// 1, priced) serves gpt-4o and gpt-4o-mini; m-hang (max_concurrency 1 with
// a queue) serves slow-model and never answers. The breaker opens on the
// first failure, so after the traffic m-fail is open and m-429 cooling down.
func TestMetricsAfterTraffic(t *testing.T) {
	const (
		session      = "sess-must-not-be-a-label-7f3a9c"
		unknownModel = "no-such-model-xyz"
		outTokens    = 8
	)
	_, goodURL := startMock(t, "good", mock.Behavior{CompletionTokens: outTokens})
	_, failURL := startMock(t, "fail", mock.Behavior{ForceStatus: http.StatusInternalServerError})
	_, hangURL := startMock(t, "hang", mock.Behavior{Hang: true})
	var limitedHits atomic.Int64
	limited := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limitedHits.Add(1)
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Retry-After", "120")
		w.WriteHeader(http.StatusTooManyRequests)
		_, _ = io.WriteString(w, `{"error":{"message":"Rate limit reached for requests per min (RPM)","type":"requests","code":"rate_limit_exceeded"}}`)
	}))
	t.Cleanup(limited.Close)

	good := upstreamAt("m-good", config.ProviderOpenAI, goodURL, 1, "gpt-4o", "gpt-4o-mini")
	good.Price = config.Price{InputPerMTok: 2.5, OutputPerMTok: 10}
	hang := upstreamAt("m-hang", config.ProviderOpenAI, hangURL, 0, "slow-model")
	hang.MaxConcurrency = 1
	hang.Queue = config.Queue{Enabled: true, Timeout: time.Minute, MaxLength: 10}
	e := startGateway(t, spec{
		upstreams: []config.Upstream{
			upstreamAt("m-fail", config.ProviderOpenAI, failURL, 0, "gpt-4o"),
			upstreamAt("m-429", config.ProviderOpenAI, limited.URL, 0, "gpt-4o"),
			good, hang,
		},
		edit: func(c *config.Config) {
			c.Circuit.FailureThreshold = 1
			c.Routes = []config.Route{{Model: "gpt-4o", RouteSettings: c.Defaults}}
		},
	})
	upstreams := []string{"m-fail", "m-429", "m-good", "m-hang"}

	// 1. JSON on gpt-4o: m-fail and m-429 (tier 0, either order), then m-good.
	r := e.post(t, chatPath, `{"model":"gpt-4o","messages":[{"role":"user","content":"hello there"}]}`)
	if r.status != http.StatusOK || r.header.Get("X-Switchyard-Upstream") != "m-good" || r.header.Get("X-Switchyard-Attempts") != "3" {
		t.Fatalf("gpt-4o: status %d from %q after %q attempts, want 200 from m-good after 3: %s",
			r.status, r.header.Get("X-Switchyard-Upstream"), r.header.Get("X-Switchyard-Attempts"), r.body)
	}
	if limitedHits.Load() != 1 {
		t.Fatalf("m-429 got %d requests, want 1", limitedHits.Load())
	}
	// 2. A stream with usage.
	r = e.post(t, chatPath, `{"model":"gpt-4o-mini","stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"stream it"}]}`)
	if r.status != http.StatusOK || !bytes.Contains(r.body, []byte("[DONE]")) {
		t.Fatalf("stream: status %d: %s", r.status, r.body)
	}
	// 3. Two requests of one session: a miss, then a hit.
	for i := range 2 {
		r = e.post(t, chatPath, `{"model":"gpt-4o-mini","messages":[{"role":"user","content":"session turn"}]}`, "x-session-id", session)
		if r.status != http.StatusOK {
			t.Fatalf("session turn %d: status %d: %s", i, r.status, r.body)
		}
	}
	// 4. A model nobody serves.
	if r = e.post(t, chatPath, `{"model":"`+unknownModel+`","messages":[]}`); r.status != http.StatusNotFound {
		t.Fatalf("unknown model: status %d, want 404: %s", r.status, r.body)
	}

	// 5. Live gauges: one request holds m-hang's only slot, one waits in its queue.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var wg sync.WaitGroup
	for range 2 {
		wg.Go(func() {
			req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.URL+chatPath,
				strings.NewReader(`{"model":"slow-model","messages":[{"role":"user","content":"wait"}]}`))
			req.Header.Set("Authorization", "Bearer "+testKey)
			if resp, err := http.DefaultClient.Do(req); err == nil {
				_, _ = io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
			}
		})
	}
	s := pollMetrics(t, e, "", "m-hang in flight 1 and queued 1", func(s scrape) bool {
		in, _ := s.value("switchyard_upstream_in_flight", l{"upstream": "m-hang"})
		q, _ := s.value("switchyard_upstream_queue_depth", l{"upstream": "m-hang"})
		return in == 1 && q == 1
	})
	for _, u := range []string{"m-fail", "m-429", "m-good"} {
		s.want(t, "switchyard_upstream_in_flight", l{"upstream": u}, 0)
		s.want(t, "switchyard_upstream_queue_depth", l{"upstream": u}, 0)
	}
	cancel()
	wg.Wait()
	// Both exchanges are over once both are counted as answered: everything
	// they record comes before that count. A scrape is not atomic, though —
	// the registry reads gauges and counters concurrently, so the scrape that
	// first sees the count may have read others a moment earlier — so the
	// checks below use a fresh one.
	pollMetrics(t, e, "", "both slow-model requests answered", func(s scrape) bool {
		n, _ := s.value("switchyard_requests_total", l{"model": "slow-model"})
		return n == 2
	})
	s = pollMetrics(t, e, "", "a scrape after both answers", func(scrape) bool { return true })

	families := map[string]dto.MetricType{
		"switchyard_requests_total":             dto.MetricType_COUNTER,
		"switchyard_request_duration_seconds":   dto.MetricType_HISTOGRAM,
		"switchyard_upstream_attempts_total":    dto.MetricType_COUNTER,
		"switchyard_retries_total":              dto.MetricType_COUNTER,
		"switchyard_upstream_errors_total":      dto.MetricType_COUNTER,
		"switchyard_rate_limited_total":         dto.MetricType_COUNTER,
		"switchyard_ttft_seconds":               dto.MetricType_HISTOGRAM,
		"switchyard_tokens_total":               dto.MetricType_COUNTER,
		"switchyard_spend_usd_total":            dto.MetricType_COUNTER,
		"switchyard_selections_total":           dto.MetricType_COUNTER,
		"switchyard_affinity_total":             dto.MetricType_COUNTER,
		"switchyard_request_logs_dropped_total": dto.MetricType_COUNTER,
		"switchyard_upstream_in_flight":         dto.MetricType_GAUGE,
		"switchyard_upstream_queue_depth":       dto.MetricType_GAUGE,
		"switchyard_upstream_breaker_state":     dto.MetricType_GAUGE,
		"switchyard_upstream_cooldown_active":   dto.MetricType_GAUGE,
	}
	t.Run("every family exists with its type", func(t *testing.T) {
		for name, typ := range families {
			f := s.fams[name]
			if f == nil {
				t.Errorf("%s: missing", name)
				continue
			}
			if f.GetType() != typ || len(f.GetMetric()) == 0 {
				t.Errorf("%s: type %v with %d series, want %v with at least one", name, f.GetType(), len(f.GetMetric()), typ)
			}
		}
	})

	t.Run("requests and durations", func(t *testing.T) {
		s.want(t, "switchyard_requests_total", l{"upstream": "m-good", "model": "gpt-4o", "code_class": "2xx", "stream": "false"}, 1)
		s.want(t, "switchyard_requests_total", l{"upstream": "m-good", "model": "gpt-4o-mini", "code_class": "2xx", "stream": "true"}, 1)
		s.want(t, "switchyard_requests_total", l{"upstream": "m-good", "model": "gpt-4o-mini", "code_class": "2xx", "stream": "false"}, 2)
		s.want(t, "switchyard_requests_total", l{"upstream": "none", "model": "other", "code_class": "4xx", "stream": "false"}, 1)
		s.want(t, "switchyard_requests_total", l{"code_class": "5xx"}, 0)
		s.want(t, "switchyard_request_duration_seconds", l{"upstream": "m-good", "stream": "false"}, 3)
		s.want(t, "switchyard_request_duration_seconds", l{"upstream": "m-good", "stream": "true"}, 1)
		// Every answered request is timed once, under the same upstream label.
		for _, u := range append(slices.Clone(upstreams), "none") {
			n, _ := s.value("switchyard_requests_total", l{"upstream": u})
			s.want(t, "switchyard_request_duration_seconds", l{"upstream": u}, n)
		}
		if n, _ := s.value("switchyard_requests_total", nil); n != 7 {
			t.Errorf("requests answered = %v, want 7", n)
		}
		if d := s.histogramSum("switchyard_request_duration_seconds", l{"upstream": "m-good"}); !(d > 0 && d < 60) {
			t.Errorf("m-good's request durations sum to %vs, want within (0, 60)", d)
		}
		checkHistograms(t, s, "switchyard_request_duration_seconds")
	})

	t.Run("attempts, retries, errors and 429s", func(t *testing.T) {
		s.want(t, "switchyard_upstream_attempts_total", l{"upstream": "m-fail", "outcome": "server_error"}, 1)
		s.want(t, "switchyard_upstream_attempts_total", l{"upstream": "m-fail"}, 1)
		s.want(t, "switchyard_upstream_attempts_total", l{"upstream": "m-429", "outcome": "rate_limited"}, 1)
		s.want(t, "switchyard_upstream_attempts_total", l{"upstream": "m-429"}, 1)
		s.want(t, "switchyard_upstream_attempts_total", l{"upstream": "m-good", "outcome": "success"}, 4)
		s.want(t, "switchyard_upstream_attempts_total", l{"upstream": "m-good"}, 4)
		if n, _ := s.value("switchyard_upstream_attempts_total", l{"upstream": "m-hang", "outcome": "canceled"}); n < 1 {
			t.Errorf("m-hang canceled attempts = %v, want ≥ 1", n)
		}
		s.want(t, "switchyard_retries_total", l{"route": "gpt-4o"}, 2)
		s.want(t, "switchyard_retries_total", nil, 2)
		s.want(t, "switchyard_upstream_errors_total", l{"upstream": "m-fail", "class": "status_5xx"}, 1)
		s.want(t, "switchyard_upstream_errors_total", l{"upstream": "m-fail"}, 1)
		s.want(t, "switchyard_upstream_errors_total", l{"upstream": "m-429"}, 0) // a 429 is not an error
		s.want(t, "switchyard_upstream_errors_total", l{"upstream": "m-good"}, 0)
		s.want(t, "switchyard_rate_limited_total", l{"upstream": "m-429", "limit_type": "requests"}, 1)
		s.want(t, "switchyard_rate_limited_total", nil, 1)
	})

	t.Run("ttft, tokens and spend", func(t *testing.T) {
		s.want(t, "switchyard_ttft_seconds", l{"upstream": "m-good"}, 4)
		if d := s.histogramSum("switchyard_ttft_seconds", l{"upstream": "m-good"}); !(d > 0 && d < 60) {
			t.Errorf("m-good's TTFTs sum to %vs, want within (0, 60)", d)
		}
		checkHistograms(t, s, "switchyard_ttft_seconds")
		s.want(t, "switchyard_tokens_total", l{"upstream": "m-good", "model": "gpt-4o", "direction": "output"}, outTokens)
		s.want(t, "switchyard_tokens_total", l{"upstream": "m-good", "model": "gpt-4o-mini", "direction": "output"}, 3*outTokens)
		in4o, _ := s.value("switchyard_tokens_total", l{"upstream": "m-good", "model": "gpt-4o", "direction": "input"})
		inMini, _ := s.value("switchyard_tokens_total", l{"upstream": "m-good", "model": "gpt-4o-mini", "direction": "input"})
		if in4o <= 0 || inMini <= 0 {
			t.Errorf("input tokens gpt-4o %v, gpt-4o-mini %v: want both > 0", in4o, inMini)
		}
		s.want(t, "switchyard_tokens_total", l{"upstream": "m-fail"}, 0)
		wantUSD := ((in4o+inMini)*2.5 + 4*outTokens*10) / 1e6
		got, n := s.value("switchyard_spend_usd_total", l{"upstream": "m-good", "key": "e2e"})
		if n != 1 || !(got > 0) || math.Abs(got-wantUSD) > 1e-12 {
			t.Errorf("spend m-good/e2e = %v over %d series, want %v (tokens × price)", got, n, wantUSD)
		}
		if all, _ := s.value("switchyard_spend_usd_total", nil); math.Abs(all-got) > 1e-12 {
			t.Errorf("spend over every series = %v, want only m-good's %v", all, got)
		}
	})

	t.Run("selections and affinity", func(t *testing.T) {
		first, _ := s.value("switchyard_selections_total", l{"route": "gpt-4o"})
		tier0, _ := s.value("switchyard_selections_total", l{"route": "gpt-4o", "upstream": "m-fail"})
		tier0b, _ := s.value("switchyard_selections_total", l{"route": "gpt-4o", "upstream": "m-429"})
		if first != 1 || tier0+tier0b != 1 {
			t.Errorf("selections on route gpt-4o = %v (m-fail %v, m-429 %v), want 1 on a tier-0 upstream", first, tier0, tier0b)
		}
		s.want(t, "switchyard_selections_total", l{"route": "*", "upstream": "m-good"}, 3)
		if n, _ := s.value("switchyard_selections_total", l{"route": "*", "upstream": "m-hang"}); n < 1 || n > 2 {
			t.Errorf("selections of m-hang = %v, want 1 or 2", n)
		}
		s.want(t, "switchyard_affinity_total", l{"result": "miss"}, 1)
		s.want(t, "switchyard_affinity_total", l{"result": "hit"}, 1)
		s.want(t, "switchyard_affinity_total", l{"result": "fallthrough"}, 0)
		s.want(t, "switchyard_affinity_total", l{"result": "migrated"}, 0)
	})

	t.Run("live upstream state", func(t *testing.T) {
		s.want(t, "switchyard_request_logs_dropped_total", nil, 0)
		wantOpen := map[string]string{"m-fail": "open", "m-429": "closed", "m-good": "closed", "m-hang": "closed"}
		for _, u := range upstreams {
			for _, fam := range []string{"switchyard_upstream_in_flight", "switchyard_upstream_queue_depth", "switchyard_upstream_cooldown_active"} {
				if _, n := s.value(fam, l{"upstream": u}); n != 1 {
					t.Errorf("%s{upstream=%q}: %d series, want 1", fam, u, n)
				}
			}
			s.want(t, "switchyard_upstream_in_flight", l{"upstream": u}, 0)
			s.want(t, "switchyard_upstream_queue_depth", l{"upstream": u}, 0)
			cooling := 0.0
			if u == "m-429" {
				cooling = 1
			}
			s.want(t, "switchyard_upstream_cooldown_active", l{"upstream": u}, cooling)
			if _, n := s.value("switchyard_upstream_breaker_state", l{"upstream": u}); n != 3 {
				t.Errorf("breaker state of %s: %d series, want 3", u, n)
			}
			for _, st := range []string{"closed", "open", "half_open"} {
				want := 0.0
				if wantOpen[u] == st {
					want = 1
				}
				s.want(t, "switchyard_upstream_breaker_state", l{"upstream": u, "state": st}, want)
			}
		}
	})

	t.Run("label values are bounded", func(t *testing.T) {
		allowed := map[string][]string{
			"upstream": append(slices.Clone(upstreams), "none"),
			"model":    {"gpt-4o", "gpt-4o-mini", "slow-model", "other", "none"},
			"route":    {"gpt-4o", "gpt-4o-mini", "slow-model", "*"},
			"key":      {"e2e"},
		}
		for name, f := range s.fams {
			if !strings.HasPrefix(name, "switchyard_") {
				continue
			}
			for _, m := range f.GetMetric() {
				for k, v := range labelsOf(m) {
					if v == session || v == unknownModel || v == testKey {
						t.Errorf("%s has label %s=%q", name, k, v)
					}
					if vals, ok := allowed[k]; ok && !slices.Contains(vals, v) {
						t.Errorf("%s has label %s=%q, want one of %q", name, k, v, vals)
					}
				}
			}
		}
		for _, secret := range []string{session, unknownModel, testKey, "sk-upstream-m-good"} {
			if bytes.Contains(s.raw, []byte(secret)) {
				t.Errorf("the scrape contains %q", secret)
			}
		}
	})
}

// checkHistograms checks every series of a histogram family: bucket counts
// are cumulative (never decreasing with the bound) and never above the
// sample count, and the sum is not negative.
func checkHistograms(t testing.TB, s scrape, name string) {
	t.Helper()
	for _, m := range s.fams[name].GetMetric() {
		h := m.GetHistogram()
		prev := uint64(0)
		for _, b := range h.GetBucket() {
			if b.GetCumulativeCount() < prev || b.GetCumulativeCount() > h.GetSampleCount() {
				t.Errorf("%s%v: bucket le=%v has %d (previous %d, count %d)", name, labelsOf(m),
					b.GetUpperBound(), b.GetCumulativeCount(), prev, h.GetSampleCount())
			}
			prev = b.GetCumulativeCount()
		}
		if h.GetSampleSum() < 0 {
			t.Errorf("%s%v: negative sum %v", name, labelsOf(m), h.GetSampleSum())
		}
	}
}

// pollMetrics scrapes until ok holds, for at most 10 s, and returns the
// scrape that satisfied it.
func pollMetrics(t testing.TB, e *env, token, what string, ok func(scrape) bool) scrape {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	for {
		s := scrapeMetrics(t, e, token)
		if ok(s) {
			return s
		}
		if time.Now().After(deadline) {
			t.Fatalf("waiting for %s: not within 10s; last scrape:\n%s", what, s.raw)
		}
		<-tick.C
	}
}

// TestMetricsToken: with metrics.token set, a scrape without it, with a
// wrong one or with another scheme answers 401 and shows no metrics; with
// it, 200; and the rejected scrapes are counted by status.
func TestMetricsToken(t *testing.T) {
	const token = "metrics-scrape-token-42"
	_, url := startMock(t, "a", mock.Behavior{})
	e := startGateway(t, spec{
		upstreams: []config.Upstream{upstreamAt("up-a", config.ProviderOpenAI, url, 0, "gpt-4o")},
		edit:      func(c *config.Config) { c.Metrics.Token = token },
	})
	rejected := []struct {
		name string
		hdr  []string
	}{
		{"no authorization", nil},
		{"wrong bearer", []string{"Authorization", "Bearer " + token + "x"}},
		{"token prefix", []string{"Authorization", "Bearer " + token[:len(token)-1]}},
		{"basic scheme", []string{"Authorization", "Basic " + token}},
		{"client key", []string{"Authorization", "Bearer " + testKey}},
	}
	for _, tc := range rejected {
		t.Run(tc.name, func(t *testing.T) {
			r := rawRequest(t, http.MethodGet, e.URL+"/metrics", nil, tc.hdr...)
			if r.status != http.StatusUnauthorized || bytes.Contains(r.body, []byte("switchyard_")) {
				t.Fatalf("status %d, want 401 without metrics: %s", r.status, r.body)
			}
			if r.header.Get("WWW-Authenticate") == "" {
				t.Error("401 without a WWW-Authenticate challenge")
			}
		})
	}
	s := scrapeMetrics(t, e, token)
	if s.fams["switchyard_requests_total"] == nil && s.fams["switchyard_affinity_total"] == nil {
		t.Fatalf("an authorised scrape shows no switchyard metrics:\n%s", s.raw)
	}
	s.want(t, "promhttp_metric_handler_requests_total", l{"code": "401"}, float64(len(rejected)))
}
