package limits

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"switchyard/internal/clock"
)

// minute0 is the start of the minute t0 lies in.
var minute0 = t0.Truncate(time.Minute)

func newTestLimiter() (*Limiter, *clock.Fake) {
	fc := clock.NewFake(t0)
	return NewLimiter(fc), fc
}

// advanceTo moves fc forward to at.
func advanceTo(fc *clock.Fake, at time.Time) { fc.Advance(at.Sub(fc.Now())) }

// hdr builds a header from name, value pairs.
func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Set(kv[i], kv[i+1])
	}
	return h
}

func mustReserve(t *testing.T, l *Limiter, name string, tokens int64) *Reservation {
	t.Helper()
	r, _, ok := l.Reserve(name, tokens)
	if !ok || r == nil {
		t.Fatalf("Reserve(%q, %d) refused: %+v", name, tokens, l.View(name, tokens))
	}
	return r
}

func refuse(t *testing.T, l *Limiter, name string, tokens int64) {
	t.Helper()
	if r, _, ok := l.Reserve(name, tokens); ok || r != nil {
		t.Fatalf("Reserve(%q, %d) granted, want refused; view %+v", name, tokens, l.View(name, tokens))
	}
}

func TestLimiterSlidingWindow(t *testing.T) {
	l, fc := newTestLimiter()
	l.Configure("u", 3, 0)
	for _, at := range []time.Duration{0, 20 * time.Second, 40 * time.Second} {
		advanceTo(fc, t0.Add(at))
		mustReserve(t, l, "u", 10).Commit(10)
	}
	v := l.View("u", 10)
	want := LimitView{
		RPMUsed: 3, RPMLimit: 3, TPMUsed: 30, Exhausted: true,
		Until: minute0.Add(70 * time.Second), LimitType: LimitRequests, Reason: "rpm 3/3",
	}
	if v != want {
		t.Fatalf("View = %+v\nwant   %+v", v, want)
	}
	refuse(t, l, "u", 10)

	advanceTo(fc, minute0.Add(70*time.Second-time.Nanosecond))
	refuse(t, l, "u", 10)
	advanceTo(fc, minute0.Add(70*time.Second))
	if v := l.View("u", 10); v.Limited() || v.RPMUsed != 2 || v.TPMUsed != 20 {
		t.Fatalf("View after the first request left the window = %+v, want 2 used and not limited", v)
	}
	mustReserve(t, l, "u", 10)
	refuse(t, l, "u", 10)
}

func TestLimiterReserveFits(t *testing.T) {
	tests := []struct {
		name       string
		rpm, tpm   int
		prior      []int64 // tokens of earlier reservations, committed as reserved
		tokens     int64
		wantOK     bool
		wantReason string
		wantUntil  time.Time
	}{
		{name: "unknown limits", tokens: 1_000_000, wantOK: true},
		{name: "rpm has room", rpm: 2, prior: []int64{0}, wantOK: true},
		{name: "rpm full", rpm: 2, prior: []int64{0, 0}, wantReason: "rpm 2/2", wantUntil: minute0.Add(70 * time.Second)},
		{name: "tpm exact fit", tpm: 1000, prior: []int64{400}, tokens: 600, wantOK: true},
		{name: "tpm one over", tpm: 1000, prior: []int64{400}, tokens: 601, wantReason: "tpm 400+601/1000", wantUntil: minute0.Add(70 * time.Second)},
		{name: "request larger than tpm never fits", tpm: 1000, tokens: 1001, wantReason: "tpm 0+1001/1000"},
		{name: "negative tokens count as zero", tpm: 10, prior: []int64{10}, tokens: -5, wantOK: true},
		{name: "rpm checked before tpm", rpm: 1, tpm: 10, prior: []int64{10}, tokens: 5, wantReason: "rpm 1/1", wantUntil: minute0.Add(70 * time.Second)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, _ := newTestLimiter()
			l.Configure("u", tc.rpm, tc.tpm)
			for _, p := range tc.prior {
				mustReserve(t, l, "u", p).Commit(p)
			}
			v := l.View("u", tc.tokens)
			if v.Exhausted == tc.wantOK || v.Reason != tc.wantReason || !v.Until.Equal(tc.wantUntil) {
				t.Errorf("View = %+v, want exhausted %v, reason %q, until %v", v, !tc.wantOK, tc.wantReason, tc.wantUntil)
			}
			r, wait, ok := l.Reserve("u", tc.tokens)
			if ok != tc.wantOK || (r != nil) != ok {
				t.Fatalf("Reserve = %v, %v, want ok %v", r, ok, tc.wantOK)
			}
			if want := max(tc.wantUntil.Sub(t0), 0); wait != want {
				t.Errorf("Reserve's wait = %v, want %v (until %v)", wait, want, tc.wantUntil)
			}
			used := int64(len(tc.prior))
			if ok {
				used++
			}
			if v := l.View("u", 0); v.RPMUsed != used {
				t.Errorf("RPMUsed after Reserve = %d, want %d", v.RPMUsed, used)
			}
		})
	}
}

func TestReservationCommitReconciles(t *testing.T) {
	tests := []struct {
		name           string
		reserve, usage int64
		wantTPM        int64
	}{
		{"usage below the estimate", 1000, 250, 250},
		{"usage above the estimate", 1000, 4000, 4000},
		{"zero usage", 1000, 0, 0},
		{"unknown usage keeps the estimate", 1000, -1, 1000},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, _ := newTestLimiter()
			l.Configure("u", 0, 10000)
			r := mustReserve(t, l, "u", tc.reserve)
			r.Commit(tc.usage)
			v := l.View("u", 0)
			if v.RPMUsed != 1 || v.TPMUsed != tc.wantTPM {
				t.Fatalf("after Commit: RPM %d TPM %d, want 1 and %d", v.RPMUsed, v.TPMUsed, tc.wantTPM)
			}
			r.Commit(9999) // exactly once: later calls do nothing
			r.Cancel()
			if v2 := l.View("u", 0); v2 != v {
				t.Fatalf("a second Commit or a Cancel changed the view: %+v → %+v", v, v2)
			}
		})
	}
}

func TestReservationCommitAfterBucketLeftWindow(t *testing.T) {
	l, fc := newTestLimiter()
	old := mustReserve(t, l, "u", 1000)
	fc.Advance(61 * time.Second)
	mustReserve(t, l, "u", 100)
	old.Commit(5000)
	if v := l.View("u", 0); v.RPMUsed != 1 || v.TPMUsed != 100 {
		t.Fatalf("view = %+v, want only the new reservation (1 request, 100 tokens)", v)
	}
}

func TestReservationCancelReturns(t *testing.T) {
	l, _ := newTestLimiter()
	l.Configure("u", 1, 1000)
	r := mustReserve(t, l, "u", 600)
	refuse(t, l, "u", 1)
	r.Cancel()
	if v := l.View("u", 0); v.RPMUsed != 0 || v.TPMUsed != 0 {
		t.Fatalf("after Cancel: %+v, want nothing used", v)
	}
	r2 := mustReserve(t, l, "u", 1000)
	r.Cancel() // a second Cancel must not give back r2's share
	r.Commit(7)
	if v := l.View("u", 0); v.RPMUsed != 1 || v.TPMUsed != 1000 {
		t.Fatalf("repeated Cancel/Commit changed the view: %+v", v)
	}
	r2.Commit(1000)

	var nilRes *Reservation
	nilRes.Commit(1) // no panic
	nilRes.Cancel()
}

func TestReservationExactlyOnceConcurrent(t *testing.T) {
	l, _ := newTestLimiter()
	const n = 50
	var rs []*Reservation
	for range n {
		rs = append(rs, mustReserve(t, l, "u", 100))
	}
	var wg sync.WaitGroup
	for _, r := range rs {
		for g := range 4 {
			wg.Go(func() {
				if g%2 == 0 {
					r.Commit(40)
				} else {
					r.Cancel()
				}
			})
		}
	}
	wg.Wait()
	v := l.View("u", 0)
	// Each reservation ended exactly once: committed (1 request, 40 tokens)
	// or cancelled (nothing).
	if v.TPMUsed != 40*v.RPMUsed || v.RPMUsed < 0 || v.RPMUsed > n {
		t.Fatalf("view %+v: tokens are not 40 per committed request", v)
	}
}

func TestLearnedHeadersOpenAI(t *testing.T) {
	l, fc := newTestLimiter()
	l.ObserveHeaders("u", hdr(
		"x-ratelimit-limit-requests", "60",
		"x-ratelimit-remaining-requests", "2",
		"x-ratelimit-reset-requests", "1.5s",
		"x-ratelimit-limit-tokens", "150000",
		"x-ratelimit-remaining-tokens", "149000",
		"x-ratelimit-reset-tokens", "6m0s",
	))
	if v := l.View("u", 100); v.RPMLimit != 60 || v.TPMLimit != 150000 || v.Limited() {
		t.Fatalf("View after headers = %+v, want limits 60/150000 learned and not limited", v)
	}
	r1 := mustReserve(t, l, "u", 100)
	mustReserve(t, l, "u", 100)
	v := l.View("u", 100)
	want := LimitView{
		RPMUsed: 2, RPMLimit: 60, TPMUsed: 200, TPMLimit: 150000, Exhausted: true,
		Until: t0.Add(1500 * time.Millisecond), LimitType: LimitRequests, Reason: "learned remaining requests 0",
	}
	if v != want {
		t.Fatalf("View with the learned remaining used up = %+v\nwant %+v", v, want)
	}
	refuse(t, l, "u", 100)
	r1.Cancel() // the request was never sent: its share of remaining comes back
	r1 = mustReserve(t, l, "u", 100)
	refuse(t, l, "u", 100)

	fc.Advance(1500*time.Millisecond - time.Nanosecond)
	refuse(t, l, "u", 100)
	fc.Advance(time.Nanosecond)
	mustReserve(t, l, "u", 100)
	r1.Commit(100)
}

func TestLearnedRemainingZeroExhaustsUntilReset(t *testing.T) {
	anthropicReset := minute0.Add(40 * time.Second).Format(time.RFC3339) // t0 + 29.6 s
	tests := []struct {
		name      string
		h         http.Header
		wantType  string
		wantUntil time.Time
	}{
		{"openai requests 1s", hdr("x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "1s"), LimitRequests, t0.Add(time.Second)},
		{"openai requests 20ms", hdr("x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "20ms"), LimitRequests, t0.Add(20 * time.Millisecond)},
		{"openai tokens 6m0s", hdr("x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "6m0s"), LimitTokens, t0.Add(6 * time.Minute)},
		{"openai tokens 1h2m3.5s", hdr("x-ratelimit-remaining-tokens", "0", "x-ratelimit-reset-tokens", "1h2m3.5s"), LimitTokens, t0.Add(time.Hour + 2*time.Minute + 3500*time.Millisecond)},
		{"openai no reset holds a minute", hdr("x-ratelimit-remaining-requests", "0"), LimitRequests, t0.Add(time.Minute)},
		{"anthropic requests", hdr("anthropic-ratelimit-requests-remaining", "0", "anthropic-ratelimit-requests-reset", anthropicReset), LimitRequests, minute0.Add(41 * time.Second)},
		{"anthropic tokens", hdr("anthropic-ratelimit-tokens-remaining", "0", "anthropic-ratelimit-tokens-reset", anthropicReset), LimitTokens, minute0.Add(41 * time.Second)},
		{"anthropic input tokens", hdr(
			"anthropic-ratelimit-input-tokens-limit", "50000",
			"anthropic-ratelimit-input-tokens-remaining", "0",
			"anthropic-ratelimit-input-tokens-reset", anthropicReset,
			"anthropic-ratelimit-output-tokens-remaining", "9000",
			"anthropic-ratelimit-output-tokens-reset", minute0.Add(20*time.Second).Format(time.RFC3339),
		), LimitTokens, minute0.Add(41 * time.Second)},
		{"anthropic output tokens", hdr("anthropic-ratelimit-output-tokens-remaining", "0", "anthropic-ratelimit-output-tokens-reset", anthropicReset), LimitTokens, minute0.Add(41 * time.Second)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, fc := newTestLimiter()
			l.ObserveHeaders("u", tc.h)
			v := l.View("u", 10)
			if !v.Exhausted || v.LimitType != tc.wantType || !v.Until.Equal(tc.wantUntil) || !v.CoolingUntil.IsZero() {
				t.Fatalf("View = %+v, want exhausted by %s until %v", v, tc.wantType, tc.wantUntil)
			}
			refuse(t, l, "u", 10)
			advanceTo(fc, tc.wantUntil.Add(-time.Nanosecond))
			refuse(t, l, "u", 10)
			fc.Advance(time.Nanosecond)
			if v := l.View("u", 10); v.Limited() {
				t.Fatalf("View at the reset = %+v, want free", v)
			}
			mustReserve(t, l, "u", 10)
		})
	}
}

func TestLearnedTokensTooFew(t *testing.T) {
	l, _ := newTestLimiter()
	l.ObserveHeaders("u", hdr("x-ratelimit-remaining-tokens", "1000", "x-ratelimit-reset-tokens", "30s"))
	if v := l.View("u", 1500); !v.Exhausted || v.Reason != "learned remaining tokens 1000 < 1500" || v.LimitType != LimitTokens {
		t.Fatalf("View(1500) = %+v, want exhausted: 1000 tokens left", v)
	}
	refuse(t, l, "u", 1500)
	r := mustReserve(t, l, "u", 800)
	refuse(t, l, "u", 300) // 200 left
	r.Commit(500)          // 500 left
	mustReserve(t, l, "u", 300)
}

func TestLearnedCountsOnlyReservationsMadeSince(t *testing.T) {
	l, _ := newTestLimiter()
	before := mustReserve(t, l, "u", 0)
	l.ObserveHeaders("u", hdr("x-ratelimit-remaining-requests", "1", "x-ratelimit-reset-requests", "10s"))
	before.Cancel() // made before the count was read: must not raise it
	mustReserve(t, l, "u", 0)
	refuse(t, l, "u", 0)
	// A newer count replaces the old one and what was reserved since.
	l.ObserveHeaders("u", hdr("x-ratelimit-remaining-requests", "2", "x-ratelimit-reset-requests", "10s"))
	mustReserve(t, l, "u", 0)
	mustReserve(t, l, "u", 0)
	refuse(t, l, "u", 0)
}

func TestEffectiveLimitIsTheLowerKnown(t *testing.T) {
	tests := []struct {
		name             string
		cfgRPM, cfgTPM   int
		h                http.Header
		wantRPM, wantTPM int64
	}{
		{"configured only", 10, 1000, nil, 10, 1000},
		{"learned only", 0, 0, hdr("x-ratelimit-limit-requests", "60", "x-ratelimit-limit-tokens", "90000"), 60, 90000},
		{"learned lower", 100, 100000, hdr("x-ratelimit-limit-requests", "60", "x-ratelimit-limit-tokens", "90000"), 60, 90000},
		{"configured lower", 30, 50000, hdr("x-ratelimit-limit-requests", "60", "x-ratelimit-limit-tokens", "90000"), 30, 50000},
		{"anthropic, input limit is not TPM", 0, 0, hdr("anthropic-ratelimit-requests-limit", "50", "anthropic-ratelimit-input-tokens-limit", "40000"), 50, 0},
		{"anthropic tokens limit", 0, 0, hdr("anthropic-ratelimit-tokens-limit", "80000"), 0, 80000},
		{"garbage ignored", 5, 0, hdr("x-ratelimit-limit-requests", "lots"), 5, 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, _ := newTestLimiter()
			l.Configure("u", tc.cfgRPM, tc.cfgTPM)
			l.ObserveHeaders("u", tc.h)
			if v := l.View("u", 0); v.RPMLimit != tc.wantRPM || v.TPMLimit != tc.wantTPM {
				t.Fatalf("limits %d/%d, want %d/%d", v.RPMLimit, v.TPMLimit, tc.wantRPM, tc.wantTPM)
			}
		})
	}
}

func TestObserveHeadersWithoutRateFieldsIsNoop(t *testing.T) {
	l, _ := newTestLimiter()
	l.ObserveHeaders("u", hdr("Content-Type", "application/json", "X-Request-Id", "abc"))
	l.ObserveHeaders("u", nil)
	if l.lookup("u") != nil {
		t.Fatal("headers without rate-limit fields created state")
	}
	if v := l.View("never-seen", 100); v != (LimitView{}) {
		t.Fatalf("View of an unknown upstream = %+v, want zero", v)
	}
}

func TestRateLimitedCooldownSource(t *testing.T) {
	tokensBody := []byte(`{"error":{"message":"Rate limit reached on tokens per min (TPM)","type":"tokens","code":"rate_limit_exceeded"}}`)
	tests := []struct {
		name       string
		h          http.Header
		body       []byte
		wantWait   time.Duration
		wantSource string
		wantType   string
	}{
		{"retry-after seconds", hdr("Retry-After", "30"), nil, 30 * time.Second, CooldownRetryAfter, ""},
		{"retry-after http date", hdr("Retry-After", minute0.Add(time.Minute).Format(http.TimeFormat)), nil, minute0.Add(time.Minute).Sub(t0), CooldownRetryAfter, ""},
		{"retry-after date in the past", hdr("Retry-After", minute0.Format(http.TimeFormat)), nil, 0, CooldownRetryAfter, ""},
		{"retry-after-ms", hdr("Retry-After-Ms", "1500", "Retry-After", "2"), nil, 1500 * time.Millisecond, CooldownRetryAfter, ""},
		{"retry-after-ms fraction", hdr("Retry-After-Ms", "2.5"), nil, 2500 * time.Microsecond, CooldownRetryAfter, ""},
		{"retry-after-ms huge", hdr("Retry-After-Ms", "99999999999999999999"), nil, MaxRetryAfter, CooldownRetryAfter, ""},
		{"retry-after wins over reset", hdr("Retry-After", "2", "x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "30s"), nil, 2 * time.Second, CooldownRetryAfter, LimitRequests},
		{"reset of the zero quota", hdr("x-ratelimit-remaining-requests", "0", "x-ratelimit-reset-requests", "6s", "x-ratelimit-remaining-tokens", "500", "x-ratelimit-reset-tokens", "1m0s"), nil, 6 * time.Second, CooldownReset, LimitRequests},
		{"reset of the type in the body", hdr("x-ratelimit-reset-requests", "6s", "x-ratelimit-reset-tokens", "1m0s"), tokensBody, time.Minute, CooldownReset, LimitTokens},
		{"anthropic reset", hdr("anthropic-ratelimit-requests-remaining", "0", "anthropic-ratelimit-requests-reset", minute0.Add(40*time.Second).Format(time.RFC3339)), nil, minute0.Add(41 * time.Second).Sub(t0), CooldownReset, LimitRequests}, // whole-second stamps round up
		{"unknown type takes the shortest reset", hdr("x-ratelimit-reset-requests", "3s", "x-ratelimit-reset-tokens", "9s"), nil, 3 * time.Second, CooldownReset, ""},
		{"unparsable retry-after falls through", hdr("Retry-After", "soon", "x-ratelimit-reset-requests", "4s"), nil, 4 * time.Second, CooldownReset, ""},
		{"no header: backoff", nil, nil, time.Second, CooldownBackoff, ""},
		{"garbage everywhere: backoff", hdr("Retry-After", "-5", "x-ratelimit-reset-requests", "never"), []byte("<html>"), time.Second, CooldownBackoff, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, _ := newTestLimiter()
			c := l.RateLimited("u", tc.h, tc.body, 0)
			want := Cooldown{Until: t0.Add(tc.wantWait), Wait: tc.wantWait, Source: tc.wantSource, LimitType: tc.wantType, Consecutive: 1}
			if c != want {
				t.Fatalf("RateLimited = %+v\nwant          %+v", c, want)
			}
			v := l.View("u", 0)
			if tc.wantWait > 0 && !v.CoolingUntil.Equal(t0.Add(tc.wantWait)) {
				t.Fatalf("View.CoolingUntil = %v, want %v", v.CoolingUntil, t0.Add(tc.wantWait))
			}
		})
	}
}

func TestRateLimitedBackoffSequence(t *testing.T) {
	l, fc := newTestLimiter()
	wantSecs := []int{1, 2, 4, 8, 16, 32, 60, 60, 60}
	for i, s := range wantSecs {
		c := l.RateLimited("u", nil, nil, 0)
		if c.Wait != time.Duration(s)*time.Second || c.Consecutive != i+1 || c.Source != CooldownBackoff {
			t.Fatalf("429 #%d: %+v, want backoff %ds", i+1, c, s)
		}
		fc.Advance(c.Wait)
	}
	l.Succeeded("u")
	if c := l.RateLimited("u", nil, nil, 0); c.Wait != time.Second || c.Consecutive != 1 {
		t.Fatalf("after Succeeded: %+v, want backoff 1s, consecutive 1", c)
	}
}

func TestBackoff(t *testing.T) {
	for n, want := range map[int]time.Duration{-1: time.Second, 0: time.Second, 1: time.Second, 2: 2 * time.Second, 6: 32 * time.Second, 7: 60 * time.Second, 64: 60 * time.Second, 1 << 30: 60 * time.Second} {
		if got := Backoff(n); got != want {
			t.Errorf("Backoff(%d) = %v, want %v", n, got, want)
		}
	}
}

func TestCooldownBlocksThenFrees(t *testing.T) {
	l, fc := newTestLimiter()
	body := []byte(`{"error":{"message":"Rate limit reached for gpt-4 on requests per min (RPM): Limit 3, Used 3, Requested 1.","type":"requests","code":"rate_limit_exceeded"}}`)
	l.RateLimited("u", hdr("Retry-After", "10"), body, 0)
	v := l.View("u", 0)
	want := LimitView{CoolingUntil: t0.Add(10 * time.Second), Until: t0.Add(10 * time.Second), LimitType: LimitRequests, Reason: "cooling down after 429 (requests)"}
	if v != want || !v.Limited() || v.Exhausted {
		t.Fatalf("View while cooling = %+v\nwant %+v", v, want)
	}
	refuse(t, l, "u", 0)
	fc.Advance(10*time.Second - time.Nanosecond)
	refuse(t, l, "u", 0)
	fc.Advance(time.Nanosecond)
	if v := l.View("u", 0); v.Limited() {
		t.Fatalf("View after the cooldown = %+v, want free", v)
	}
	mustReserve(t, l, "u", 0)
}

// TestReserveRefusalWait: a refused reservation says how long until the
// upstream takes the request again: when enough of the window frees, when
// the cooldown ends, the later of the two when both hold.
func TestReserveRefusalWait(t *testing.T) {
	tests := []struct {
		name     string
		rpm      int
		prior    int           // requests reserved at t0
		elapsed  time.Duration // then the clock moves by this much
		cooldown string        // a 429's Retry-After at t0+elapsed, "" for none
		want     time.Duration
	}{
		// t0 is 10.4 s into a minute: its bucket leaves the window at 70 s.
		{name: "window full at once", rpm: 2, prior: 2, want: 59600 * time.Millisecond},
		{name: "window full after 20.5 s", rpm: 2, prior: 2, elapsed: 20500 * time.Millisecond, want: 39100 * time.Millisecond},
		{name: "cooldown only", cooldown: "10", want: 10 * time.Second},
		{name: "cooldown ends before the window frees", rpm: 1, prior: 1, cooldown: "10", want: 59600 * time.Millisecond},
		{name: "cooldown ends after the window frees", rpm: 1, prior: 1, elapsed: 55 * time.Second, cooldown: "10", want: 10 * time.Second},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, fc := newTestLimiter()
			l.Configure("u", tc.rpm, 0)
			for range tc.prior {
				mustReserve(t, l, "u", 0).Commit(0)
			}
			fc.Advance(tc.elapsed)
			if tc.cooldown != "" {
				l.RateLimited("u", hdr("Retry-After", tc.cooldown), nil, 0)
			}
			r, wait, ok := l.Reserve("u", 0)
			if ok || r != nil || wait != tc.want {
				t.Fatalf("Reserve = %v, %v, %v; want refused, %v", r, wait, ok, tc.want)
			}
			if until := l.View("u", 0).Until; until.Sub(fc.Now()) != tc.want {
				t.Errorf("View's Until is %v from now, Reserve's wait %v: they should agree", until.Sub(fc.Now()), wait)
			}
		})
	}
}

func TestCooldownNeverShortens(t *testing.T) {
	l, _ := newTestLimiter()
	l.RateLimited("u", hdr("Retry-After", "30"), nil, 0)
	c := l.RateLimited("u", hdr("Retry-After", "5"), nil, 0)
	if c.Wait != 5*time.Second || !c.Until.Equal(t0.Add(30*time.Second)) {
		t.Fatalf("second 429: %+v, want wait 5s but until t0+30s", c)
	}
}

func TestCoolingAndExhaustedUntilIsTheLater(t *testing.T) {
	l, _ := newTestLimiter()
	l.Configure("u", 1, 0)
	mustReserve(t, l, "u", 0)                           // rpm full until minute0+70s (t0+59.6s)
	l.RateLimited("u", hdr("Retry-After", "5"), nil, 0) // cooling until t0+5s
	v := l.View("u", 0)
	if !v.Exhausted || !v.CoolingUntil.Equal(t0.Add(5*time.Second)) || !v.Until.Equal(minute0.Add(70*time.Second)) {
		t.Fatalf("View = %+v, want cooling until t0+5s and free at minute0+70s", v)
	}
	if v.Reason != "cooling down after 429" {
		t.Fatalf("Reason = %q, want the cooldown first", v.Reason)
	}
}

func TestLimitType(t *testing.T) {
	tests := []struct {
		name string
		h    http.Header
		body string
		want string
	}{
		{"openai type requests", nil, `{"error":{"message":"Rate limit reached for gpt-4 in organization org-x on requests per min (RPM): Limit 3, Used 3, Requested 1.","type":"requests","code":"rate_limit_exceeded"}}`, LimitRequests},
		{"openai type tokens", nil, `{"error":{"message":"...","type":"tokens","code":"rate_limit_exceeded"}}`, LimitTokens},
		{"openai tokens_usage_based", nil, `{"error":{"type":"tokens_usage_based","code":"rate_limit_exceeded"}}`, LimitTokens},
		{"openai code with a tokens message", nil, `{"error":{"message":"Rate limit reached on tokens per min (TPM): Limit 10000, Used 9000, Requested 2000.","type":"","code":"rate_limit_exceeded"}}`, LimitTokens},
		{"openai code with a requests message", nil, `{"error":{"message":"Rate limit reached on requests per min (RPM): Limit 3, Used 3, Requested 1.","code":"rate_limit_exceeded"}}`, LimitRequests},
		{"anthropic input tokens", nil, `{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit for your organization of 50,000 input tokens per minute."}}`, LimitTokens},
		{"anthropic requests", nil, `{"type":"error","error":{"type":"rate_limit_error","message":"Number of requests has exceeded your per-minute rate limit"}}`, LimitRequests},
		{"insufficient quota says neither", nil, `{"error":{"message":"You exceeded your current quota","type":"insufficient_quota","code":"insufficient_quota"}}`, ""},
		{"not json", nil, `Too Many Requests`, ""},
		{"body wins over headers", hdr("x-ratelimit-remaining-requests", "0"), `{"error":{"type":"tokens"}}`, LimitTokens},
		{"openai remaining requests 0", hdr("x-ratelimit-remaining-requests", "0", "x-ratelimit-remaining-tokens", "10"), "", LimitRequests},
		{"openai remaining tokens 0", hdr("x-ratelimit-remaining-requests", "3", "x-ratelimit-remaining-tokens", "0"), "", LimitTokens},
		{"anthropic output tokens 0", hdr("anthropic-ratelimit-requests-remaining", "3", "anthropic-ratelimit-output-tokens-remaining", "0"), "", LimitTokens},
		{"anthropic requests 0", hdr("anthropic-ratelimit-requests-remaining", "0"), `{"type":"error","error":{"type":"rate_limit_error","message":"slow down"}}`, LimitRequests},
		{"nothing says", hdr("x-ratelimit-remaining-requests", "5"), "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			l, _ := newTestLimiter()
			if c := l.RateLimited("u", tc.h, []byte(tc.body), 0); c.LimitType != tc.want {
				t.Fatalf("LimitType = %q, want %q", c.LimitType, tc.want)
			}
		})
	}
}

func TestSucceededOnUnknownUpstream(t *testing.T) {
	l, _ := newTestLimiter()
	l.Succeeded("nope")
	if l.lookup("nope") != nil {
		t.Fatal("Succeeded created state for an unknown upstream")
	}
}

// A wait the provider's adapter read from the answer wins over the headers.
func TestRateLimitedProviderWait(t *testing.T) {
	l := NewLimiter(clock.NewFake(t0))
	c := l.RateLimited("u", hdr("Retry-After", "5"), nil, 42*time.Second)
	if c.Wait != 42*time.Second || c.Source != CooldownProvider {
		t.Fatalf("cooldown %v from %s, want 42s from %s", c.Wait, c.Source, CooldownProvider)
	}
}
