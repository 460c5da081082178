package sim

import (
	"bytes"
	"cmp"
	"math/rand/v2"
	"net/http"
	"testing"
	"time"

	"switchyard/internal/clock"
	"switchyard/internal/codec"
	"switchyard/internal/limits"
	"switchyard/internal/outcome"
	adapters "switchyard/internal/provider"
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
		{"slow start", Provider{SlowStarts: SlowStarts{Share: 1, TTFT: 3 * time.Second}}, time.Minute, answerOK, 3 * time.Second},
		{"slow start in a brown-out", Provider{SlowStarts: SlowStarts{Share: 1, TTFT: 3 * time.Second}, Brownouts: []Brownout{{Start: 0, End: time.Hour, LatencyFactor: 2}}}, time.Minute, answerOK, 6 * time.Second},
		{"no slow start", Provider{SlowStarts: SlowStarts{Share: 0, TTFT: 3 * time.Second}}, time.Minute, answerOK, time.Second},
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
	t.Run("slow start of a stream: first event at its TTFT", func(t *testing.T) {
		a := testProvider(Provider{SlowStarts: SlowStarts{Share: 1, TTFT: 3 * time.Second}}).receive(0, true, 100, 100, 100)
		if a.first != 3*time.Second || a.total != 5*time.Second {
			t.Fatalf("first %v total %v, want 3s, 5s", a.first, a.total)
		}
	})
	t.Run("stream: first event at TTFT, whole answer at out/tps later", func(t *testing.T) {
		a := testProvider(Provider{TokensPerSecond: 50}).receive(0, true, 100, 100, 100)
		if a.first != 200*time.Millisecond || a.total != 2200*time.Millisecond || a.tps != 50 {
			t.Fatalf("first %v total %v tps %v, want 200ms, 2.2s, 50", a.first, a.total, a.tps)
		}
	})
}

// TestProviderRateLimitsThroughTheRealLimiter sends the provider's answers
// through the provider's adapter and limits.Limiter as the attempt loop
// does: the x-ratelimit-* or anthropic-ratelimit-* headers of every answer,
// and for a 429 the adapter's Classify (which reads Google's RetryInfo)
// then RateLimited.
func TestProviderRateLimitsThroughTheRealLimiter(t *testing.T) {
	const (
		chat      = "/0/chat/completions"
		messages  = "/0/v1/messages"
		geminiOp  = "/0/v1/projects/p/locations/us-east5/publishers/google/models/gemini-2.5-flash:generateContent"
		rawClaude = "/0/v1/projects/p/locations/us-east5/publishers/anthropic/models/claude-sonnet-4:rawPredict"
		converse  = "/0/model/anthropic.claude-sonnet-4/converse"
	)
	no := false
	tests := []struct {
		name      string
		m         Provider
		provider  string // whose adapter classifies the 429
		path      string // the request's path: the answer's wire
		prompt    int64  // per request, max_tokens 100
		n         int    // requests accepted before the 429
		limitType string
		wantWait  time.Duration // the cooldown the limiter takes from the 429 (0: its backoff)
		wantFrom  string
	}{
		{"rpm, openai headers", Provider{RPM: 5}, adapters.NameOpenAI, chat, 100, 5, limits.LimitRequests, time.Minute, limits.CooldownRetryAfter},
		{"tpm, openai headers", Provider{TPM: 1000}, adapters.NameOpenAI, chat, 150, 4, limits.LimitTokens, time.Minute, limits.CooldownRetryAfter},
		{"rpm, anthropic headers", Provider{RPM: 3, Headers: HeadersAnthropic}, adapters.NameAnthropic, messages, 100, 3, limits.LimitRequests, time.Minute, limits.CooldownRetryAfter},
		{"rpm, no headers", Provider{RPM: 2, Headers: HeadersNone}, adapters.NameOpenAI, chat, 100, 2, limits.LimitRequests, time.Minute, limits.CooldownRetryAfter},
		{"vertex gemini, RetryInfo", Provider{RPM: 2, Headers: HeadersNone}, adapters.NameVertex, geminiOp, 100, 2, "", time.Minute, limits.CooldownProvider},
		{"vertex claude, RetryInfo", Provider{RPM: 2, Headers: HeadersNone}, adapters.NameVertex, rawClaude, 100, 2, "", time.Minute, limits.CooldownProvider},
		{"vertex, no RetryInfo", Provider{RPM: 2, Headers: HeadersNone, RetryAfter: &no}, adapters.NameVertex, geminiOp, 100, 2, "", 0, limits.CooldownBackoff},
		{"bedrock ThrottlingException", Provider{RPM: 2, Headers: HeadersNone}, adapters.NameBedrock, converse, 100, 2, "", 0, limits.CooldownBackoff},
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
			if a.kind != answer429 || a.status != http.StatusTooManyRequests || a.limitType != cmp.Or(tc.limitType, a.limitType) {
				t.Fatalf("request %d: kind %d status %d type %q, want a 429 of type %q", tc.n, a.kind, a.status, a.limitType, tc.limitType)
			}
			h := p.headers(0).Clone()
			body := wireOf(tc.path).rateLimited(h, a.limitType, p.retryAfter(0, a.limitType))
			if got, want := h.Get("Retry-After"), map[bool]string{true: "60"}[tc.wantFrom == limits.CooldownRetryAfter]; got != want {
				t.Errorf("Retry-After %q, want %q (the window's first second leaves at 1m)", got, want)
			}
			switch tc.m.Headers {
			case HeadersAnthropic:
				if h.Get("Anthropic-Ratelimit-Requests-Remaining") != "0" || h.Get("Anthropic-Ratelimit-Requests-Reset") != "2026-01-05T00:01:00Z" {
					t.Errorf("anthropic headers %v", h)
				}
			case HeadersNone:
				if h.Get("X-Ratelimit-Remaining-Requests") != "" || h.Get("Anthropic-Ratelimit-Requests-Remaining") != "" {
					t.Errorf("headers %v, want no rate-limit headers", h)
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
			o := classifier(t, tc.provider).Classify(a.status, h, body)
			if o.Class != outcome.RateLimited {
				t.Fatalf("%s classifies the 429 (%s) as %v, want rate limited", tc.provider, body, o.Class)
			}
			cd := lim.RateLimited("u", h, body, o.Cooldown)
			if cd.Source != tc.wantFrom || (tc.wantWait > 0 && cd.Wait != tc.wantWait) || cd.Wait <= 0 || cd.LimitType != tc.limitType {
				t.Errorf("cooldown %+v, want %v from %s, type %q", cd, tc.wantWait, tc.wantFrom, tc.limitType)
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
		lim.ObserveHeaders("u", p.headers(time.Second))
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
		h := p.headers(59 * time.Second).Clone()
		if wireOf("/0/chat/completions").rateLimited(h, "requests", p.retryAfter(59*time.Second, "requests")); h.Get("Retry-After") != "" {
			t.Errorf("Retry-After %q sent with retry_after: false", h.Get("Retry-After"))
		}
		if a := p.receive(60*time.Second, false, 1, 1, 1); a.kind != answerOK {
			t.Fatalf("at 60s kind %d, want ok", a.kind)
		}
	})
}

// classifier is the endpoint of a simulated upstream of provider name.
func classifier(t *testing.T, name string) adapters.Endpoint {
	t.Helper()
	p, ok := adapters.Builtin().Lookup(name)
	if !ok {
		t.Fatalf("no provider %q", name)
	}
	return p.New(adapters.Upstream{
		Name: "u", BaseURL: simHost + "0", APIKey: "sk-sim", Simulated: true,
		Bedrock: &adapters.BedrockSettings{Region: "us-east-1"},
		Vertex:  &adapters.VertexSettings{Project: "p", Location: "us-east5"},
	})
}

// TestWireOf: each simulated answer takes the protocol and the error
// dialect of the path its request was sent to, and its stream decodes with
// the gateway's decoder of that protocol (the usage at the end).
func TestWireOf(t *testing.T) {
	tests := []struct {
		path   string
		family codec.Family
		errors errorDialect
	}{
		{"/0/chat/completions", codec.FamilyOpenAI, errorsOpenAI},
		{"/0/v1/messages", codec.FamilyAnthropic, errorsAnthropic},
		{"/0/v1/projects/p/locations/l/publishers/anthropic/models/claude-sonnet-4@20250514:streamRawPredict", codec.FamilyAnthropic, errorsGoogle},
		{"/0/v1beta/models/gemini-2.5-flash:streamGenerateContent", codec.FamilyGemini, errorsGoogle},
		{"/0/model/us.anthropic.claude-sonnet-4-20250514-v1:0/converse-stream", codec.FamilyBedrock, errorsAWS},
	}
	for _, tc := range tests {
		t.Run(tc.path, func(t *testing.T) {
			w := wireOf(tc.path)
			if w.family != tc.family || w.errors != tc.errors {
				t.Fatalf("wire %+v, want family %v errors %d", w, tc.family, tc.errors)
			}
			first, rest := w.streamBody("m", codec.Usage{Input: 120, Output: 34})
			var events codec.EventStream = codec.NewEventReader(bytes.NewReader(append(first, rest...)))
			if tc.family == codec.FamilyBedrock {
				events = adapters.NewEventStreamReader(bytes.NewReader(append(first, rest...)))
			}
			dec := codec.ForFamily(tc.family).NewStreamDecoder()
			var last codec.Usage
			for {
				ev, err := events.Next()
				if err != nil {
					break
				}
				cs, err := dec.Decode(ev, nil)
				if err != nil {
					t.Fatalf("decoding %q: %v", ev.Data, err)
				}
				for _, c := range cs {
					if c.Type == codec.ChunkEnd {
						last = c.Usage
					}
				}
			}
			if !dec.Done() || last.Input != 120 || last.Output != 34 {
				t.Errorf("stream done %v with usage %+v, want done with 120 in, 34 out", dec.Done(), last)
			}
		})
	}
}

// A slow_starts share of answers start at its TTFT; the rest keep their
// draws, and a provider without slow starts draws exactly as before.
func TestProviderSlowStartShare(t *testing.T) {
	const n = 10000
	slow := testProvider(Provider{SlowStarts: SlowStarts{Share: 0.1, TTFT: 3 * time.Second}})
	var late int
	for i := range n {
		if a := slow.receive(time.Duration(i)*time.Millisecond, i%2 == 0, 100, 100, 10); a.first == 3*time.Second {
			late++
		}
	}
	if late < n/10-n/100 || late > n/10+n/100 {
		t.Errorf("%d of %d answers started slowly, want 10%% ± 1 point", late, n)
	}
	plain, off := testProvider(Provider{}), testProvider(Provider{SlowStarts: SlowStarts{TTFT: 3 * time.Second}})
	plain.m.TTFT.P95, off.m.TTFT.P95 = time.Second, time.Second // draws that vary
	for i := range 100 {
		a, b := plain.receive(0, true, 1, 1, 1), off.receive(0, true, 1, 1, 1)
		if a.first != b.first {
			t.Fatalf("draw %d: %v with no slow starts configured, %v with share 0", i, a.first, b.first)
		}
	}
}
