package metrics

import (
	"math"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"switchyard/internal/clock"
)

func newTest(t *testing.T, opts ...Option) *Metrics {
	t.Helper()
	ups, models := list("openai-main", "anthropic-a"), list("gpt-4o", "claude-3-5-haiku")
	return New(ups.get, models.get, opts...)
}

// TestFamilies records through every method and checks each family's series
// and values.
func TestFamilies(t *testing.T) {
	m := newTest(t)
	m.Request("openai-main", "gpt-4o", 200, false, 1500*time.Millisecond)
	m.Request("openai-main", "gpt-4o", 201, false, 500*time.Millisecond)
	m.Request("openai-main", "gpt-4o", 502, true, 3*time.Second)
	m.Request("anthropic-a", "claude-3-5-haiku", 429, true, 10*time.Millisecond)
	m.Attempt("openai-main", OutcomeSuccess)
	m.Attempt("openai-main", OutcomeServerError)
	m.Attempt("anthropic-a", OutcomeRateLimited)
	m.Retry("gpt-4o")
	m.Retry("gpt-4o")
	m.UpstreamError("openai-main", ErrorFirstByteTimeout)
	m.RateLimited("anthropic-a", LimitTokens)
	m.RateLimited("anthropic-a", "")
	m.TTFT("openai-main", 250*time.Millisecond)
	m.TTFT("openai-main", 750*time.Millisecond)
	m.Tokens("openai-main", "gpt-4o", 120, 30, 64, 0)
	m.Tokens("openai-main", "gpt-4o", 80, 0, 0, 16)
	m.Spend("openai-main", "team-a", 0.25)
	m.Cost("openai-main", "gpt-4o", "team-a", 0.25)
	m.Cost("openai-main", "gpt-4o", "team-a", 0.5)
	m.Cost("openai-main", "gpt-4o", "team-a", 0)
	m.Spend("openai-main", "team-a", 0.5)
	m.Selection("gpt-4o", "openai-main")
	m.Affinity(AffinityHit)
	m.Affinity(AffinityMigrated)
	m.Affinity(AffinityHit)
	m.DroppedLogs(3)
	reg := m.Registry()

	tests := []struct {
		name string
		want map[string]float64
	}{
		{"switchyard_requests_total", map[string]float64{
			"code_class=2xx,model=gpt-4o,stream=false,upstream=openai-main":          2,
			"code_class=5xx,model=gpt-4o,stream=true,upstream=openai-main":           1,
			"code_class=4xx,model=claude-3-5-haiku,stream=true,upstream=anthropic-a": 1,
		}},
		{"switchyard_request_duration_seconds", map[string]float64{
			"stream=false,upstream=openai-main": 2,
			"stream=true,upstream=openai-main":  1,
			"stream=true,upstream=anthropic-a":  1,
		}},
		{"switchyard_upstream_attempts_total", map[string]float64{
			"outcome=success,upstream=openai-main":      1,
			"outcome=server_error,upstream=openai-main": 1,
			"outcome=rate_limited,upstream=anthropic-a": 1,
		}},
		{"switchyard_retries_total", map[string]float64{"route=gpt-4o": 2}},
		{"switchyard_upstream_errors_total", map[string]float64{
			"class=first_byte_timeout,upstream=openai-main": 1,
		}},
		{"switchyard_rate_limited_total", map[string]float64{
			"limit_type=tokens,upstream=anthropic-a":  1,
			"limit_type=unknown,upstream=anthropic-a": 1,
		}},
		{"switchyard_ttft_seconds", map[string]float64{"upstream=openai-main": 2}},
		{"switchyard_tokens_total", map[string]float64{
			"direction=input,model=gpt-4o,upstream=openai-main":       200,
			"direction=output,model=gpt-4o,upstream=openai-main":      30,
			"direction=cache_read,model=gpt-4o,upstream=openai-main":  64,
			"direction=cache_write,model=gpt-4o,upstream=openai-main": 16,
		}},
		{"switchyard_cost_usd_total", map[string]float64{"key=team-a,model=gpt-4o,upstream=openai-main": 0.75}},
		{"switchyard_spend_usd_total", map[string]float64{"key=team-a,upstream=openai-main": 0.75}},
		{"switchyard_selections_total", map[string]float64{"route=gpt-4o,upstream=openai-main": 1}},
		{"switchyard_affinity_total", map[string]float64{
			"result=hit": 2, "result=miss": 0, "result=fallthrough": 0, "result=migrated": 1, "result=stand_in": 0, "result=yielded": 0, "result=other": 0,
		}},
		{"switchyard_request_logs_dropped_total", map[string]float64{"": 3}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			equalValues(t, tt.name, values(t, reg, tt.name), tt.want)
		})
	}

	t.Run("histogram sums and buckets", func(t *testing.T) {
		d := series(t, reg, "switchyard_request_duration_seconds")["stream=false,upstream=openai-main"].GetHistogram()
		if got := d.GetSampleSum(); math.Abs(got-2.0) > 1e-9 {
			t.Errorf("duration sum = %v, want 2", got)
		}
		if got := len(d.GetBucket()); got != len(latencyBuckets) {
			t.Errorf("duration buckets = %d, want %d", got, len(latencyBuckets))
		}
		h := series(t, reg, "switchyard_ttft_seconds")["upstream=openai-main"].GetHistogram()
		if got := h.GetSampleSum(); math.Abs(got-1.0) > 1e-9 {
			t.Errorf("ttft sum = %v, want 1", got)
		}
		for _, b := range h.GetBucket() {
			want := uint64(0)
			switch {
			case b.GetUpperBound() >= 0.75:
				want = 2
			case b.GetUpperBound() >= 0.25:
				want = 1
			}
			if b.GetCumulativeCount() != want {
				t.Errorf("ttft bucket le=%v = %d, want %d", b.GetUpperBound(), b.GetCumulativeCount(), want)
			}
		}
	})
}

// TestBoundedLabels checks that names outside the configured sets and
// classes outside their fixed sets become "other", and empty names "none".
func TestBoundedLabels(t *testing.T) {
	tests := []struct {
		name   string
		opts   []Option
		record func(m *Metrics)
		family string
		want   map[string]float64
	}{
		{"unknown upstream and model", nil,
			func(m *Metrics) { m.Request("rogue", "gpt-5-turbo-session-123", 200, false, time.Second) },
			"switchyard_requests_total",
			map[string]float64{"code_class=2xx,model=other,stream=false,upstream=other": 1}},
		{"empty upstream and model", nil,
			func(m *Metrics) { m.Request("", "", 400, false, time.Millisecond) },
			"switchyard_requests_total",
			map[string]float64{"code_class=4xx,model=none,stream=false,upstream=none": 1}},
		{"status outside 200-599", nil,
			func(m *Metrics) { m.Request("openai-main", "gpt-4o", 0, false, time.Millisecond) },
			"switchyard_requests_total",
			map[string]float64{"code_class=other,model=gpt-4o,stream=false,upstream=openai-main": 1}},
		{"unknown outcome", nil,
			func(m *Metrics) { m.Attempt("openai-main", "weird") },
			"switchyard_upstream_attempts_total",
			map[string]float64{"outcome=other,upstream=openai-main": 1}},
		{"unknown error class", nil,
			func(m *Metrics) { m.UpstreamError("x", "boom") },
			"switchyard_upstream_errors_total",
			map[string]float64{"class=other,upstream=other": 1}},
		{"unknown limit type", nil,
			func(m *Metrics) { m.RateLimited("openai-main", "bananas") },
			"switchyard_rate_limited_total",
			map[string]float64{"limit_type=other,upstream=openai-main": 1}},
		{"unknown route", nil,
			func(m *Metrics) { m.Retry("no-such-route"); m.Selection("", "anthropic-a") },
			"switchyard_retries_total",
			map[string]float64{"route=other": 1}},
		{"route from WithRoutes", []Option{WithRoutes(list("claude-*").get)},
			func(m *Metrics) { m.Selection("claude-*", "anthropic-a") },
			"switchyard_selections_total",
			map[string]float64{"route=claude-*,upstream=anthropic-a": 1}},
		{"unknown affinity result", nil,
			func(m *Metrics) { m.Affinity("session-abc") },
			"switchyard_affinity_total",
			map[string]float64{"result=hit": 0, "result=miss": 0, "result=fallthrough": 0, "result=migrated": 0, "result=stand_in": 0, "result=yielded": 0, "result=other": 1}},
		{"keys accepted as given without WithKeys", nil,
			func(m *Metrics) { m.Spend("openai-main", "team-b", 1); m.Spend("openai-main", "", 2) },
			"switchyard_spend_usd_total",
			map[string]float64{"key=team-b,upstream=openai-main": 1, "key=none,upstream=openai-main": 2}},
		{"keys bounded by WithKeys", []Option{WithKeys(list("team-a").get)},
			func(m *Metrics) { m.Spend("openai-main", "team-a", 1); m.Spend("openai-main", "sk-secret", 2) },
			"switchyard_spend_usd_total",
			map[string]float64{"key=team-a,upstream=openai-main": 1, "key=other,upstream=openai-main": 2}},
		{"invalid UTF-8 key", nil,
			func(m *Metrics) { m.Spend("openai-main", "\xff\xfe", 1) },
			"switchyard_spend_usd_total",
			map[string]float64{"key=other,upstream=openai-main": 1}},
		{"bad costs and token counts ignored", nil,
			func(m *Metrics) {
				m.Spend("openai-main", "k", -1)
				m.Spend("openai-main", "k", math.NaN())
				m.Spend("openai-main", "k", math.Inf(1))
				m.Tokens("openai-main", "gpt-4o", -5, 0, 0, 0)
				m.Cost("openai-main", "gpt-4o", "k", math.NaN())
			},
			"switchyard_spend_usd_total", map[string]float64{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := newTest(t, tt.opts...)
			tt.record(m)
			got := values(t, m.Registry(), tt.family)
			if got == nil {
				got = map[string]float64{}
			}
			equalValues(t, tt.family, got, tt.want)
		})
	}
}

// TestRefresh checks that new names are picked up by a paced refresh on a
// miss and by Refresh, and that series of removed names are deleted.
func TestRefresh(t *testing.T) {
	clk := clock.NewFake(time.Unix(1_700_000_000, 0))
	ups, models := list("a"), list("m")
	m := New(ups.get, models.get, WithClock(clk), WithRefreshInterval(5*time.Second))
	reg := m.Registry()

	m.Attempt("b", OutcomeSuccess) // first miss refreshes at once; "b" is still unknown
	ups.set("a", "b")
	m.Attempt("b", OutcomeSuccess) // within the interval: no refresh, still "other"
	equalValues(t, "before interval", values(t, reg, "switchyard_upstream_attempts_total"),
		map[string]float64{"outcome=success,upstream=other": 2})

	clk.Advance(5 * time.Second)
	m.Attempt("b", OutcomeSuccess) // the miss refreshes: "b" is known now
	m.Attempt("a", OutcomeSuccess)
	m.Tokens("a", "m", 10, 1, 0, 0)
	equalValues(t, "after interval", values(t, reg, "switchyard_upstream_attempts_total"),
		map[string]float64{"outcome=success,upstream=other": 2, "outcome=success,upstream=b": 1, "outcome=success,upstream=a": 1})

	ups.set("b")
	models.set()
	m.Refresh()
	equalValues(t, "after removing a", values(t, reg, "switchyard_upstream_attempts_total"),
		map[string]float64{"outcome=success,upstream=other": 2, "outcome=success,upstream=b": 1})
	if got := series(t, reg, "switchyard_tokens_total"); len(got) != 0 {
		t.Errorf("tokens series of removed upstream and model still present: %v", got)
	}
	m.Attempt("a", OutcomeSuccess) // removed: "other", not a resurrected "a"
	equalValues(t, "recording removed a", values(t, reg, "switchyard_upstream_attempts_total"),
		map[string]float64{"outcome=success,upstream=other": 3, "outcome=success,upstream=b": 1})
}

// TestMissRefreshPaced checks that a stream of unknown names reads the
// callbacks at most once per interval.
func TestMissRefreshPaced(t *testing.T) {
	tests := []struct {
		name     string
		interval time.Duration
		advance  time.Duration
		want     int // callback calls after New
	}{
		{"within interval", 5 * time.Second, time.Second, 1},
		{"after interval", 5 * time.Second, 5 * time.Second, 2},
		{"disabled", 0, time.Hour, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clock.NewFake(time.Unix(1_700_000_000, 0))
			ups := list("a")
			m := New(ups.get, nil, WithClock(clk), WithRefreshInterval(tt.interval))
			base := ups.count()
			for range 100 {
				m.TTFT("unknown", time.Second)
			}
			clk.Advance(tt.advance)
			for range 100 {
				m.TTFT("unknown", time.Second)
			}
			if got := ups.count() - base; got != tt.want {
				t.Errorf("callback calls = %d, want %d", got, tt.want)
			}
		})
	}
}

// TestInstancesIndependent checks that two Metrics in one process share no
// series and can both register every family.
func TestInstancesIndependent(t *testing.T) {
	a, b := newTest(t), newTest(t)
	a.Request("openai-main", "gpt-4o", 200, false, time.Second)
	a.Affinity(AffinityHit)
	a.DroppedLogs(7)
	b.Request("anthropic-a", "claude-3-5-haiku", 200, true, time.Second)

	equalValues(t, "a requests", values(t, a.Registry(), "switchyard_requests_total"),
		map[string]float64{"code_class=2xx,model=gpt-4o,stream=false,upstream=openai-main": 1})
	equalValues(t, "b requests", values(t, b.Registry(), "switchyard_requests_total"),
		map[string]float64{"code_class=2xx,model=claude-3-5-haiku,stream=true,upstream=anthropic-a": 1})
	if got := values(t, b.Registry(), "switchyard_affinity_total")["result=hit"]; got != 0 {
		t.Errorf("b affinity hit = %v, want 0", got)
	}
	if got := values(t, b.Registry(), "switchyard_request_logs_dropped_total")[""]; got != 0 {
		t.Errorf("b dropped logs = %v, want 0", got)
	}
	if a.Registry() == b.Registry() {
		t.Error("instances share a registry")
	}
}

// TestLint runs promlint over every switchyard_ family.
func TestLint(t *testing.T) {
	m := newTest(t)
	recordAll(m)
	problems, err := testutil.GatherAndLint(m.Registry())
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	n, err := testutil.GatherAndCount(m.Registry(),
		"switchyard_requests_total", "switchyard_request_duration_seconds", "switchyard_upstream_attempts_total",
		"switchyard_retries_total", "switchyard_upstream_errors_total", "switchyard_rate_limited_total",
		"switchyard_ttft_seconds", "switchyard_tokens_total", "switchyard_spend_usd_total",
		"switchyard_cost_usd_total", "switchyard_selections_total", "switchyard_affinity_total", "switchyard_request_logs_dropped_total",
		"switchyard_upstream_in_flight", "switchyard_upstream_queue_depth",
		"switchyard_upstream_breaker_state", "switchyard_upstream_cooldown_active")
	if err != nil {
		t.Fatal(err)
	}
	// one series per family, except tokens (4 directions), affinity (7)
	// and breaker state (3)
	if n != 28 {
		t.Errorf("series = %d, want 28", n)
	}
}

// TestConcurrent records from many goroutines while refreshing and
// scraping; the totals must be exact (run with -race).
func TestConcurrent(t *testing.T) {
	ups := list("a", "b")
	m := New(ups.get, list("m").get)
	m.SetStateSource(fakeSource{{Name: "a", InFlight: 1}})
	const workers, per = 8, 500
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			up := []string{"a", "b"}[w%2]
			for range per {
				m.Request(up, "m", 200, false, time.Millisecond)
				m.Attempt(up, OutcomeSuccess)
				m.TTFT(up, time.Millisecond)
				m.Spend(up, "k", 0.5)
			}
		})
	}
	wg.Go(func() {
		for range 50 {
			m.Refresh()
			if _, err := m.Registry().Gather(); err != nil {
				t.Errorf("gathering: %v", err)
			}
		}
	})
	wg.Wait()
	want := float64(workers / 2 * per)
	equalValues(t, "attempts", values(t, m.Registry(), "switchyard_upstream_attempts_total"),
		map[string]float64{"outcome=success,upstream=a": want, "outcome=success,upstream=b": want})
	equalValues(t, "spend", values(t, m.Registry(), "switchyard_spend_usd_total"),
		map[string]float64{"key=k,upstream=a": want / 2, "key=k,upstream=b": want / 2})
}

func TestCodeClass(t *testing.T) {
	tests := []struct {
		status int
		want   string
	}{
		{200, "2xx"}, {299, "2xx"}, {304, "3xx"}, {400, "4xx"}, {429, "4xx"}, {499, "4xx"},
		{500, "5xx"}, {503, "5xx"}, {599, "5xx"}, {0, Other}, {199, Other}, {600, Other},
	}
	for _, tt := range tests {
		if got := codeClass(tt.status); got != tt.want {
			t.Errorf("codeClass(%d) = %q, want %q", tt.status, got, tt.want)
		}
	}
}
