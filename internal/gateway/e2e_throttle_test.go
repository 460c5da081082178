package gateway_test

import (
	"cmp"
	"net/http"
	"strings"
	"testing"
	"time"

	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/metrics"
	"switchyard/internal/mock"
	"switchyard/internal/provider"
)

// The throttling matrix (issue 15): each provider's way of saying "slow
// down", through the real gateway with the client's official SDK. A
// throttled upstream at priority 0 and a healthy one of the same family at
// priority 1 share a fake clock with the gateway; each row's steps advance
// the clock and say which upstream serves the next request after how many
// attempts, which pins the cooldown to the clock tick
// (docs/reference.md#cooldowns-after-429): RetryInfo and Retry-After are
// honoured as given, a 429 that names no wait backs off 1 s, 2 s, 4 s…, and a
// server error is no throttling (no cooldown: the breaker counts it).

// throttleFamily is an upstream family of the matrix: what its mocks
// check and how the gateway is configured for one.
type throttleFamily struct {
	// opts are the credentials a mock of the family checks.
	opts mock.Options
	// upstream is the gateway's upstream name on the mock at url.
	upstream func(name, url string, priority int) config.Upstream
}

// The models of the matrix, as the client names them.
const (
	throttleGPT    = "gpt-4o"
	throttleClaude = "claude-sonnet-4" // on Vertex and Bedrock too, through their model maps
	throttleGemini = "gemini-2.5-flash"
)

var throttleFamilies = map[string]throttleFamily{
	"openai": {upstream: func(name, url string, p int) config.Upstream {
		return upstreamAt(name, config.ProviderOpenAI, url, p, throttleGPT)
	}},
	"anthropic": {upstream: func(name, url string, p int) config.Upstream {
		return upstreamAt(name, config.ProviderAnthropic, url, p, throttleClaude)
	}},
	"gemini": {upstream: func(name, url string, p int) config.Upstream {
		return upstreamAt(name, provider.NameGemini, url, p, throttleGemini)
	}},
	"vertex": {opts: mock.Options{ServiceAccount: vertexAccount()}, upstream: vertexUpstream},
	"bedrock": {opts: mock.Options{AWSAccessKeyID: bedrockKeyID, AWSSecretAccessKey: bedrockSecret},
		upstream: func(name, url string, p int) config.Upstream {
			return bedrockUpstreamAt(name, url, bedrockSecret, p)
		}},
}

// throttleStep is one request of a row: the clock moves by advance, then
// the request is served by upstream ("throttled" or "next") after attempts
// attempts.
type throttleStep struct {
	advance  time.Duration
	upstream string
	attempts string
}

// Steps shared by the rows.
var (
	// retryInfo60s: RPM 1 lets the first request through; the second gets
	// a 429 whose RetryInfo (or Retry-After) names the window's 60 s; the
	// upstream is not tried at 59 s and serves again at 60 s.
	retryInfo60s = []throttleStep{
		{0, "throttled", "1"},
		{0, "next", "2"},
		{59 * time.Second, "next", "1"},
		{time.Second, "throttled", "1"},
	}
	// backoff124: every answer is a 429 naming no wait: 1 s, then 2 s (the
	// second consecutive 429), then 4 s.
	backoff124 = []throttleStep{
		{0, "next", "2"},
		{999 * time.Millisecond, "next", "1"},
		{time.Millisecond, "next", "2"},
		{1999 * time.Millisecond, "next", "1"},
		{time.Millisecond, "next", "2"},
		{3999 * time.Millisecond, "next", "1"},
	}
	// retryAfter1s: every answer is a 429 with Retry-After: 1 (Google's
	// RetryInfo "1s"): the named wait, not a backoff, every time.
	retryAfter1s = []throttleStep{
		{0, "next", "2"},
		{999 * time.Millisecond, "next", "1"},
		{time.Millisecond, "next", "2"},
		{999 * time.Millisecond, "next", "1"},
		{time.Millisecond, "next", "2"},
	}
	// serverErrors: every answer is a server error: no cooldown, so each
	// request tries the upstream again until the fifth failure within the
	// breaker's window opens it.
	serverErrors = []throttleStep{
		{0, "next", "2"},
		{time.Second, "next", "2"},
		{time.Second, "next", "2"},
		{time.Second, "next", "2"},
		{time.Second, "next", "2"},
		{time.Second, "next", "1"},
	}
)

// TestThrottlingSignalsPerProvider: each throttling signal, from each
// provider, plain and streamed, cools the upstream down for the time it
// names (or the backoff when it names none) while the next upstream serves
// the request with no client error; a server error (Bedrock's
// ServiceUnavailableException) is not throttling: no cooldown, the breaker
// counts it and opens at its threshold. The throttled mock's request count
// proves the cooldown kept it out; switchyard_rate_limited_total counts the
// 429s, switchyard_upstream_errors_total the server errors.
func TestThrottlingSignalsPerProvider(t *testing.T) {
	tests := []struct {
		name     string
		family   string
		behavior mock.Behavior
		proto    string // the client's protocol (vertexAsk)
		model    string
		stream   bool
		steps    []throttleStep
		// status is what the throttled mock answers its failures with: 429,
		// 503, or 200 for an exception as a stream's first frame.
		status int
		// limited and serverErrors are the gateway's count of the throttled
		// upstream's 429s and server errors.
		limited, serverErrors int
		// cooling and breaker are its state after the last step.
		cooling bool
		breaker string
	}{
		{name: "gemini RESOURCE_EXHAUSTED RetryInfo 60s", family: "gemini", behavior: mock.Behavior{RPM: 1},
			proto: "gemini", model: throttleGemini, steps: retryInfo60s, status: 429, limited: 1, breaker: "closed"},
		{name: "gemini stream RESOURCE_EXHAUSTED RetryInfo 60s", family: "gemini", behavior: mock.Behavior{RPM: 1},
			proto: "gemini", model: throttleGemini, stream: true, steps: retryInfo60s, status: 429, limited: 1, breaker: "closed"},
		{name: "gemini RESOURCE_EXHAUSTED RetryInfo 1s, not a backoff", family: "gemini", behavior: mock.Behavior{ForceStatus: 429},
			proto: "openai", model: throttleGemini, steps: retryAfter1s, status: 429, limited: 3, cooling: true, breaker: "closed"},
		{name: "vertex claude rawPredict RESOURCE_EXHAUSTED RetryInfo 60s", family: "vertex", behavior: mock.Behavior{RPM: 1},
			proto: "anthropic", model: throttleClaude, steps: retryInfo60s, status: 429, limited: 1, breaker: "closed"},
		{name: "vertex claude streamRawPredict RESOURCE_EXHAUSTED RetryInfo 60s", family: "vertex", behavior: mock.Behavior{RPM: 1},
			proto: "anthropic", model: throttleClaude, stream: true, steps: retryInfo60s, status: 429, limited: 1, breaker: "closed"},
		{name: "vertex claude RESOURCE_EXHAUSTED without RetryInfo backs off", family: "vertex",
			behavior: mock.Behavior{ForceStatus: 429, NoRetryAfter: true},
			proto:    "anthropic", model: throttleClaude, steps: backoff124, status: 429, limited: 3, cooling: true, breaker: "closed"},
		{name: "vertex gemini RESOURCE_EXHAUSTED without RetryInfo backs off", family: "vertex",
			behavior: mock.Behavior{ForceStatus: 429, NoRetryAfter: true},
			proto:    "gemini", model: throttleGemini, steps: backoff124, status: 429, limited: 3, cooling: true, breaker: "closed"},
		{name: "bedrock ThrottlingException backs off", family: "bedrock", behavior: mock.Behavior{ForceStatus: 429},
			proto: "anthropic", model: throttleClaude, steps: backoff124, status: 429, limited: 3, cooling: true, breaker: "closed"},
		{name: "bedrock stream ThrottlingException backs off", family: "bedrock", behavior: mock.Behavior{ForceStatus: 429},
			proto: "openai", model: throttleClaude, stream: true, steps: backoff124, status: 429, limited: 3, cooling: true, breaker: "closed"},
		{name: "bedrock stream throttlingException first frame backs off", family: "bedrock",
			behavior: mock.Behavior{StreamException: "throttlingException"},
			proto:    "gemini", model: throttleClaude, stream: true, steps: backoff124, status: 200, limited: 3, cooling: true, breaker: "closed"},
		{name: "bedrock ServiceUnavailableException is a server error", family: "bedrock", behavior: mock.Behavior{ForceStatus: 503},
			proto: "anthropic", model: throttleClaude, steps: serverErrors, status: 503, serverErrors: 5, breaker: "open"},
		{name: "bedrock stream serviceUnavailableException first frame is a server error", family: "bedrock",
			behavior: mock.Behavior{StreamException: "serviceUnavailableException"},
			proto:    "anthropic", model: throttleClaude, stream: true, steps: serverErrors, status: 200, serverErrors: 5, breaker: "open"},
		{name: "openai Retry-After 1s, not a backoff", family: "openai", behavior: mock.Behavior{ForceStatus: 429},
			proto: "openai", model: throttleGPT, steps: retryAfter1s, status: 429, limited: 3, cooling: true, breaker: "closed"},
		{name: "openai 429 naming no wait backs off", family: "openai", behavior: mock.Behavior{ForceStatus: 429, NoRetryAfter: true},
			proto: "openai", model: throttleGPT, stream: true, steps: backoff124, status: 429, limited: 3, cooling: true, breaker: "closed"},
		{name: "anthropic Retry-After 1s, not a backoff", family: "anthropic", behavior: mock.Behavior{ForceStatus: 429},
			proto: "anthropic", model: throttleClaude, stream: true, steps: retryAfter1s, status: 429, limited: 3, cooling: true, breaker: "closed"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fc := clock.NewFake(time.Now())
			fam := throttleFamilies[tc.family]
			start := func(name string, b mock.Behavior, priority int) (*mock.Server, config.Upstream) {
				opts := fam.opts
				opts.Name, opts.Behavior, opts.Clock = name, b, fc
				m, url := startMockWith(t, opts)
				return m, fam.upstream(name, url, priority)
			}
			throttled, up0 := start("throttled", tc.behavior, 0)
			next, up1 := start("next", mock.Behavior{}, 1)
			e := startVertexGateway(t, spec{clock: fc, upstreams: []config.Upstream{up0, up1}})

			served := map[string]int64{}
			for i, s := range tc.steps {
				fc.Advance(s.advance)
				got := vertexAsk(t, e, tc.proto, tc.model, tc.stream)
				up, n := got.header.Get("X-Switchyard-Upstream"), got.header.Get("X-Switchyard-Attempts")
				if up != s.upstream || n != s.attempts || strings.TrimSpace(got.text) == "" {
					t.Errorf("step %d (+%v): served by %q after %q attempts, text %q; want %s after %s",
						i, s.advance, up, n, got.text, s.upstream, s.attempts)
				}
				served[s.upstream]++
			}

			failures := int64(tc.limited + tc.serverErrors)
			withStatus := failures // the answers of tc.status
			if tc.status == http.StatusOK {
				withStatus += served["throttled"]
			}
			st := throttled.Stats()
			if want := served["throttled"] + failures; st.Requests != want || st.ByStatus[tc.status] != withStatus {
				t.Errorf("the throttled upstream saw %d requests %v, want %d with %d answered %d",
					st.Requests, st.ByStatus, want, withStatus, tc.status)
			}
			if got := next.Stats().Requests; got != served["next"] {
				t.Errorf("the next upstream saw %d requests, want %d", got, served["next"])
			}
			m := scrapeMetrics(t, e, "")
			for _, c := range []struct {
				name   string
				labels map[string]string
				want   int
			}{
				{"switchyard_rate_limited_total", map[string]string{"upstream": "throttled"}, tc.limited},
				{"switchyard_upstream_errors_total", map[string]string{"upstream": "throttled"}, tc.serverErrors},
				{"switchyard_upstream_errors_total", map[string]string{"upstream": "throttled", "class": metrics.ErrorStatus5xx}, tc.serverErrors},
				{"switchyard_upstream_attempts_total", map[string]string{"upstream": "throttled", "outcome": metrics.OutcomeRateLimited}, tc.limited},
				{"switchyard_rate_limited_total", map[string]string{"upstream": "next"}, 0},
				{"switchyard_upstream_errors_total", map[string]string{"upstream": "next"}, 0},
			} {
				if got, _ := m.value(c.name, c.labels); got != float64(c.want) {
					t.Errorf("%s%v = %v, want %d", c.name, c.labels, got, c.want)
				}
			}
			s := bedrockUpstreamState(t, e, "throttled")
			if breaker := cmp.Or(s.BreakerState, "closed"); s.CoolingDown != tc.cooling || breaker != tc.breaker {
				t.Errorf("the throttled upstream: cooling down %v, breaker %s; want %v, %s", s.CoolingDown, breaker, tc.cooling, tc.breaker)
			}
		})
	}
}
