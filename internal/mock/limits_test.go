package mock

import (
	"net/http"
	"testing"
	"time"

	"switchyard/internal/clock"
)

var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

const chatBody = `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`

func TestRPMLimitFakeClock(t *testing.T) {
	tests := []struct {
		name     string
		path     string
		body     string
		header   []string
		errType  string // gjson path → value
		errValue string
	}{
		{name: "openai", path: "/v1/chat/completions", body: chatBody, errType: "error.type", errValue: "requests"},
		{name: "anthropic", path: "/v1/messages", body: `{"model":"claude-3-5-haiku","max_tokens":10,"messages":[]}`,
			errType: "error.type", errValue: "rate_limit_error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			fc := clock.NewFake(epoch)
			s, url := newServed(t, Options{Name: "rl", Clock: fc, Behavior: Behavior{RPM: 5}})
			for i := range 5 {
				res := do(t, http.MethodPost, url+tt.path, tt.body)
				if res.status != http.StatusOK {
					t.Fatalf("request %d: status %d: %s", i+1, res.status, res.body)
				}
				if got := res.header.Get("x-ratelimit-remaining-requests"); got != []string{"4", "3", "2", "1", "0"}[i] {
					t.Errorf("request %d: remaining = %q", i+1, got)
				}
				if res.header.Get("x-ratelimit-limit-requests") != "5" {
					t.Errorf("request %d: limit = %q", i+1, res.header.Get("x-ratelimit-limit-requests"))
				}
			}
			for i := range 3 { // rejected requests do not occupy the window
				res := do(t, http.MethodPost, url+tt.path, tt.body)
				if res.status != http.StatusTooManyRequests {
					t.Fatalf("request %d: status %d, want 429", 6+i, res.status)
				}
				if ra := res.header.Get("Retry-After"); ra != "60" {
					t.Errorf("Retry-After = %q, want 60", ra)
				}
				if got := res.get(tt.errType).String(); got != tt.errValue {
					t.Errorf("%s = %q, want %q: %s", tt.errType, got, tt.errValue, res.body)
				}
				if tt.name == "openai" && res.get("error.code").String() != "rate_limit_exceeded" {
					t.Errorf("code = %s", res.get("error.code").Raw)
				}
				if res.header.Get("x-ratelimit-remaining-requests") != "0" || res.header.Get("x-ratelimit-reset-requests") != "1m0s" {
					t.Errorf("headers = %v", res.header)
				}
				if res.header.Get(HeaderUpstream) != "rl" {
					t.Errorf("missing %s", HeaderUpstream)
				}
			}
			fc.Advance(59 * time.Second)
			if res := do(t, http.MethodPost, url+tt.path, tt.body); res.status != http.StatusTooManyRequests || res.header.Get("Retry-After") != "1" {
				t.Fatalf("after 59s: status %d Retry-After %q", res.status, res.header.Get("Retry-After"))
			}
			fc.Advance(time.Second)
			if res := do(t, http.MethodPost, url+tt.path, tt.body); res.status != http.StatusOK {
				t.Fatalf("after 60s: status %d, want 200", res.status)
			}
			if got := s.Stats().ByStatus; got[200] != 6 || got[429] != 4 {
				t.Errorf("by status = %v, want 6×200 and 4×429", got)
			}
		})
	}
}

func TestRPMSlidingWindow(t *testing.T) {
	fc := clock.NewFake(epoch)
	s := New(Options{Clock: fc, Behavior: Behavior{RPM: 3}})
	send := func() result { return direct(s, http.MethodPost, "/v1/chat/completions", chatBody) }
	steps := []struct {
		advance    time.Duration
		want       int
		retryAfter string
		remaining  string
		reset      string
	}{
		{0, 200, "", "2", "1m0s"},
		{0, 200, "", "1", "1m0s"},
		{30 * time.Second, 200, "", "0", "30s"},
		{0, 429, "30", "0", "30s"},
		{29*time.Second + 500*time.Millisecond, 429, "1", "0", "500ms"}, // 0.5 s left rounds up to 1
		{500 * time.Millisecond, 200, "", "1", "30s"},                   // both t=0 requests left
		{0, 200, "", "0", "30s"},
		{0, 429, "30", "0", "30s"},
	}
	for i, st := range steps {
		fc.Advance(st.advance)
		res := send()
		if res.status != st.want || res.header.Get("Retry-After") != st.retryAfter ||
			res.header.Get("x-ratelimit-remaining-requests") != st.remaining ||
			res.header.Get("x-ratelimit-reset-requests") != st.reset {
			t.Errorf("step %d: status %d Retry-After %q remaining %q reset %q, want %d %q %q %q", i, res.status,
				res.header.Get("Retry-After"), res.header.Get("x-ratelimit-remaining-requests"),
				res.header.Get("x-ratelimit-reset-requests"), st.want, st.retryAfter, st.remaining, st.reset)
		}
	}
}

func TestTPMLimitFakeClock(t *testing.T) {
	fc := clock.NewFake(epoch)
	// chatBody is 62 bytes = 15 prompt tokens; 10 completion tokens: 25 a request.
	s := New(Options{Clock: fc, Behavior: Behavior{TPM: 60, CompletionTokens: 10}})
	cost := promptTokens([]byte(chatBody)) + 10
	if cost != 25 {
		t.Fatalf("request cost = %d, the test assumes 25", cost)
	}
	send := func(path, body string) result { return direct(s, http.MethodPost, path, body) }
	for i, wantRemaining := range []string{"35", "10"} {
		res := send("/v1/chat/completions", chatBody)
		if res.status != 200 || res.header.Get("x-ratelimit-remaining-tokens") != wantRemaining ||
			res.header.Get("x-ratelimit-limit-tokens") != "60" {
			t.Fatalf("request %d: status %d headers %v", i, res.status, res.header)
		}
		if res.header.Get("x-ratelimit-limit-requests") != "" {
			t.Errorf("no RPM set, yet x-ratelimit-limit-requests = %q", res.header.Get("x-ratelimit-limit-requests"))
		}
	}
	res := send("/v1/chat/completions", chatBody)
	if res.status != 429 || res.get("error.type").String() != "tokens" || res.get("error.code").String() != "rate_limit_exceeded" ||
		res.header.Get("Retry-After") != "60" {
		t.Fatalf("third request: %d %s %v", res.status, res.body, res.header)
	}
	// A request small enough for the 10 tokens left still fits.
	small := `{"model":"gpt-4o","max_tokens":1}`
	if c := promptTokens([]byte(small)) + 1; c > 10 {
		t.Fatalf("small request costs %d", c)
	}
	if res := send("/v1/chat/completions", small); res.status != 200 {
		t.Errorf("a request that fits the remaining tokens: status %d: %s", res.status, res.body)
	}
	ant := send("/v1/messages", `{"model":"claude-3-5-haiku","max_tokens":100,"messages":[]}`)
	if ant.status != 429 || ant.get("type").String() != "error" || ant.get("error.type").String() != "rate_limit_error" ||
		ant.header.Get("anthropic-ratelimit-tokens-limit") != "60" {
		t.Errorf("anthropic: %d %s %v", ant.status, ant.body, ant.header)
	}
	fc.Advance(time.Minute)
	if res := send("/v1/chat/completions", chatBody); res.status != 200 {
		t.Errorf("after a minute: status %d", res.status)
	}
	huge := `{"model":"gpt-4o","max_tokens":1000}`
	s.SetBehavior(Behavior{TPM: 60, CompletionTokens: 1000})
	if res := send("/v1/chat/completions", huge); res.status != 429 || res.header.Get("Retry-After") != "60" {
		t.Errorf("a request larger than the limit: status %d Retry-After %q", res.status, res.header.Get("Retry-After"))
	}
}

func TestLimitsSkipModelsAndErrors(t *testing.T) {
	fc := clock.NewFake(epoch)
	s := New(Options{Clock: fc, Behavior: Behavior{RPM: 1}})
	for range 3 {
		rec := serveDirect(s, http.MethodGet, "/v1/models", "")
		if rec.Code != 200 || rec.Header().Get("x-ratelimit-remaining-requests") != "1" {
			t.Fatalf("models: %d %v", rec.Code, rec.Header())
		}
		if rec := serveDirect(s, http.MethodPost, "/v1/chat/completions", "{bad"); rec.Code != 400 {
			t.Fatalf("bad json: %d", rec.Code)
		}
	}
	if rec := serveDirect(s, http.MethodPost, "/v1/chat/completions", chatBody); rec.Code != 200 {
		t.Errorf("first real request: %d", rec.Code)
	}
	if rec := serveDirect(s, http.MethodPost, "/v1/chat/completions", chatBody); rec.Code != 429 {
		t.Errorf("second real request: %d", rec.Code)
	}
	s.ResetLimits()
	if rec := serveDirect(s, http.MethodPost, "/v1/chat/completions", chatBody); rec.Code != 200 {
		t.Errorf("after ResetLimits: %d", rec.Code)
	}
}

func TestFormatReset(t *testing.T) {
	tests := []struct {
		in   time.Duration
		want string
	}{
		{0, "0s"}, {-time.Second, "0s"}, {time.Second, "1s"}, {1500 * time.Millisecond, "1.5s"},
		{20*time.Millisecond + 400*time.Microsecond, "20ms"}, {6 * time.Minute, "6m0s"},
	}
	for _, tt := range tests {
		if got := formatReset(tt.in); got != tt.want {
			t.Errorf("formatReset(%v) = %q, want %q", tt.in, got, tt.want)
		}
	}
	for in, want := range map[time.Duration]string{0: "1", time.Millisecond: "1", time.Second: "1", 1001 * time.Millisecond: "2", time.Minute: "60"} {
		if got := retryAfterSeconds(in); got != want {
			t.Errorf("retryAfterSeconds(%v) = %q, want %q", in, got, want)
		}
	}
}
