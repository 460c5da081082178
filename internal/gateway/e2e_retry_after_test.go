package gateway_test

import (
	"net/http"
	"strings"
	"testing"
	"time"

	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/mock"
)

// TestRetryAfterFullWindow: an upstream with rate_limit.rpm 2 takes two
// requests; 20 s later a third finds its window full and gets 503 with
// Retry-After: 40, when the first request leaves the 60 s window
// (docs/reference.md#errors), not 1 — on the instance that served the two
// and on another instance sharing the window through Redis, which knows
// it full from the shared view.
func TestRetryAfterFullWindow(t *testing.T) {
	redisURL, prefix := sharedRedis(t)
	fc := clock.NewFake(limitsEpoch)
	_, url := startMockOn(t, "a", mock.Behavior{CompletionTokens: 2}, fc, nil)
	up := upstreamAt("a", config.ProviderOpenAI, url, 0, "gpt-4o")
	up.RateLimit.RPM = 2
	const syncEvery = 100 * time.Millisecond
	instance := func() *env {
		return startGateway(t, spec{clock: fc, upstreams: []config.Upstream{up}, edit: func(c *config.Config) {
			c.Defaults.MaxWait = 0
			c.State.Driver, c.State.RedisURL, c.State.RedisPrefix, c.State.SyncInterval = "redis", redisURL, prefix, syncEvery
		}})
	}
	first, other := instance(), instance()
	for i := range 2 {
		if r := first.post(t, chatPath, limitsChatBody); r.status != http.StatusOK {
			t.Fatalf("request %d: status %d: %s", i, r.status, r.body)
		}
	}
	fc.Advance(20 * time.Second) // the instances sync on their next tick
	tests := []struct {
		name string
		e    *env
		how  string // what the 503's message says of the upstream
	}{
		{"the instance that counted them", first, "rpm 2/2)"},
		{"another instance, from the shared view", other, "rpm 2/2 (shared)"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var r result
			// The shared view arrives with the sync the clock's advance set off.
			ok := waitFor(hangGuard, func() bool {
				r = tc.e.post(t, chatPath, limitsChatBody)
				return strings.Contains(string(r.body), tc.how)
			})
			if !ok || r.status != http.StatusServiceUnavailable || errCode(r) != "no_upstream_available" || r.header.Get("Retry-After") != "40" {
				t.Errorf("third request: status %d code %q Retry-After %q, want 503 no_upstream_available, 40, naming %q: %s",
					r.status, errCode(r), r.header.Get("Retry-After"), tc.how, r.body)
			}
		})
	}
}
