package sim

import (
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"switchyard/internal/clock"
	"switchyard/internal/limits"
)

func testProvider(m Provider) *provider {
	if m.Headers == "" {
		m.Headers = HeadersOpenAI
	}
	if m.RetryAfter == nil {
		yes := true
		m.RetryAfter = &yes
	}
	if m.TokensPerSecond == 0 {
		m.TokensPerSecond = 50
	}
	m.Latency = DurationDist{P50: time.Second, P95: time.Second}
	m.TTFT = DurationDist{P50: 200 * time.Millisecond, P95: 200 * time.Millisecond}
	return newProvider(m, rand.New(rand.NewPCG(1, 2)), epoch)
}

func TestProviderWindows(t *testing.T) {
	tests := []struct {
		name  string
		m     Provider
		at    time.Duration
		kind  answerKind
		first time.Duration
	}{
		{"healthy", Provider{}, time.Minute, answerOK, time.Second},
		{"outage refuses", Provider{Outages: []Window{{Start: time.Minute, End: 2 * time.Minute}}}, time.Minute, answerRefused, refusedAfter},
		{"after the outage", Provider{Outages: []Window{{Start: time.Minute, End: 2 * time.Minute}}}, 2 * time.Minute, answerOK, time.Second},
		{"hang", Provider{Hangs: []Window{{Start: 0, End: time.Hour}}}, time.Minute, answerHang, 0},
		{"brown-out errors", Provider{Brownouts: []Brownout{{Start: 0, End: time.Hour, ErrorRate: 1, LatencyFactor: 3}}}, time.Minute, answerError, 600 * time.Millisecond},
		{"brown-out slows", Provider{Brownouts: []Brownout{{Start: 0, End: time.Hour, ErrorRate: 0, LatencyFactor: 3}}}, time.Minute, answerOK, 3 * time.Second},
		{"brown-out over", Provider{Brownouts: []Brownout{{Start: 0, End: time.Minute, ErrorRate: 1, LatencyFactor: 3}}}, time.Minute, answerOK, time.Second},
		{"error rate", Provider{ErrorRate: 1}, time.Minute, answerError, 200 * time.Millisecond},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			a := testProvider(tc.m).receive(tc.at, false, 100, 100, 50)
			if a.kind != tc.kind || a.first != tc.first {
				t.Fatalf("answer kind %d after %v, want kind %d after %v", a.kind, a.first, tc.kind, tc.first)
			}
			if a.kind == answerError && a.status < 500 {
				t.Errorf("error status %d, want 5xx", a.status)
			}
		})
	}
	t.Run("stream: first event at TTFT, whole answer at out/tps later", func(t *testing.T) {
		a := testProvider(Provider{TokensPerSecond: 50}).receive(0, true, 100, 100, 100)
		if a.first != 200*time.Millisecond || a.total != 2200*time.Millisecond || a.tps != 50 {
			t.Fatalf("first %v total %v tps %v, want 200ms, 2.2s, 50", a.first, a.total, a.tps)
		}
	})
}

// TestProviderRateLimitsThroughTheRealLimiter sends the provider's answers
// through limits.Limiter as the attempt loop does: the x-ratelimit-* or
// anthropic-ratelimit-* headers of every answer, and RateLimited for a 429.
func TestProviderRateLimitsThroughTheRealLimiter(t *testing.T) {
	tests := []struct {
		name      string
		m         Provider
		prompt    int64 // per request, max_tokens 100
		n         int   // requests accepted before the 429
		limitType string
		wantWait  time.Duration // the cooldown the limiter takes from the 429
	}{
		{"rpm, openai headers", Provider{RPM: 5}, 100, 5, limits.LimitRequests, 60 * time.Second},
		{"tpm, openai headers", Provider{TPM: 1000}, 150, 4, limits.LimitTokens, 60 * time.Second},
		{"rpm, anthropic headers", Provider{RPM: 3, Headers: HeadersAnthropic}, 100, 3, limits.LimitRequests, 60 * time.Second},
		{"rpm, no headers", Provider{RPM: 2, Headers: HeadersNone}, 100, 2, limits.LimitRequests, 60 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := testProvider(tc.m)
			clk := clock.NewFake(epoch)
			lim := limits.NewLimiter(clk)
			for i := range tc.n {
				if a := p.receive(0, false, tc.prompt, 100, 10); a.kind != answerOK {
					t.Fatalf("request %d: kind %d, want ok", i, a.kind)
				}
			}
			a := p.receive(0, false, tc.prompt, 100, 10)
			if a.kind != answer429 || a.status != http.StatusTooManyRequests || a.limitType != tc.limitType {
				t.Fatalf("request %d: kind %d status %d type %q, want a 429 of type %q", tc.n, a.kind, a.status, a.limitType, tc.limitType)
			}
			h := p.headers(0, a.limitType)
			if got := h.Get("Retry-After"); got != "60" {
				t.Errorf("Retry-After %q, want 60 (the window's first second leaves at 1m)", got)
			}
			switch tc.m.Headers {
			case HeadersAnthropic:
				if h.Get("Anthropic-Ratelimit-Requests-Remaining") != "0" || h.Get("Anthropic-Ratelimit-Requests-Reset") != "2026-01-05T00:01:00Z" {
					t.Errorf("anthropic headers %v", h)
				}
			case HeadersNone:
				if len(h) != 1 {
					t.Errorf("headers %v, want Retry-After only", h)
				}
			default:
				quota := "Requests"
				if tc.limitType == limits.LimitTokens {
					quota = "Tokens"
				}
				if h.Get("X-Ratelimit-Remaining-"+quota) == "" || h.Get("X-Ratelimit-Reset-"+quota) != "1m0s" {
					t.Errorf("openai headers %v", h)
				}
			}
			cd := lim.RateLimited("u", h, p.rateLimitBody(a.limitType), 0)
			if cd.Wait != tc.wantWait || cd.Source != limits.CooldownRetryAfter || cd.LimitType != tc.limitType {
				t.Errorf("cooldown %+v, want %v from retry-after, type %q", cd, tc.wantWait, tc.limitType)
			}
			if v := lim.View("u", 1); !v.Limited() {
				t.Errorf("limiter view %+v after the 429, want limited", v)
			}
		})
	}
	t.Run("remaining headers make the limiter route around before a 429", func(t *testing.T) {
		p := testProvider(Provider{RPM: 2})
		lim := limits.NewLimiter(clock.NewFake(epoch))
		for range 2 {
			p.receive(0, false, 100, 100, 10)
		}
		lim.ObserveHeaders("u", p.headers(time.Second, ""))
		if v := lim.View("u", 1); !v.Exhausted || v.RPMLimit != 2 {
			t.Fatalf("view %+v, want exhausted with the learned RPM limit 2", v)
		}
	})
	t.Run("window frees after a minute", func(t *testing.T) {
		p := testProvider(Provider{RPM: 1, RetryAfter: new(bool)})
		p.receive(0, false, 1, 1, 1)
		if a := p.receive(59*time.Second, false, 1, 1, 1); a.kind != answer429 {
			t.Fatalf("at 59s kind %d, want 429", a.kind)
		}
		if h := p.headers(59*time.Second, "requests"); h.Get("Retry-After") != "" {
			t.Errorf("Retry-After %q sent with retry_after: false", h.Get("Retry-After"))
		}
		if a := p.receive(60*time.Second, false, 1, 1, 1); a.kind != answerOK {
			t.Fatalf("at 60s kind %d, want ok", a.kind)
		}
	})
}
