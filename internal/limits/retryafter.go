package limits

import (
	"net/http"
	"strings"
	"time"
)

// MaxRetryAfter is the longest wait ParseRetryAfter and ParseResetDuration
// return; longer values (a broken or hostile upstream asking for a year) are
// clamped to it, so an upstream is never shut out for longer than a day by
// one header.
const MaxRetryAfter = 24 * time.Hour

// unixTimeThreshold separates a plain number of seconds from a Unix time in
// a reset header: values at or above it (2001-09-09) are read as Unix times.
const unixTimeThreshold = 1_000_000_000

// ParseRetryAfter parses a Retry-After header value (RFC 9110 §10.2.3) and
// returns how long to wait from now: delta-seconds ("120"; a decimal
// fraction such as "1.5" is accepted too) or an HTTP-date
// ("Wed, 21 Oct 2015 07:28:00 GMT", and the obsolete RFC 850 and asctime
// forms). A date in the past means no wait (0, true). The result is clamped
// to MaxRetryAfter. It reports false for anything else, including negative
// numbers; it never panics, whatever the input.
func ParseRetryAfter(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if isDigit(v[0]) {
		secs, nanos, ok := parseDecimal(v)
		if !ok {
			return 0, false
		}
		return secondsDuration(secs, nanos), true
	}
	t, err := http.ParseTime(v)
	if err != nil {
		return 0, false
	}
	return untilClamped(t, now), true
}

// ParseResetDuration parses a rate-limit reset header value and returns how
// long from now the limit resets. It accepts:
//
//   - OpenAI's Go-style durations: "1s", "6m0s", "20ms", "1h2m3.5s";
//   - Anthropic's RFC 3339 times: "2025-01-01T12:00:30Z";
//   - a plain number of seconds ("30", "1.5") as some OpenAI-compatible
//     providers send, where a number ≥ 1e9 is read as a Unix time in seconds.
//
// A time in the past means the limit has already reset (0, true). The result
// is clamped to MaxRetryAfter. It reports false for anything else, including
// negative durations; it never panics, whatever the input.
func ParseResetDuration(v string, now time.Time) (time.Duration, bool) {
	v = strings.TrimSpace(v)
	if v == "" {
		return 0, false
	}
	if secs, nanos, ok := parseDecimal(v); ok {
		if secs >= unixTimeThreshold {
			return untilClamped(time.Unix(int64(secs), int64(nanos)), now), true
		}
		return secondsDuration(secs, nanos), true
	}
	if d, err := time.ParseDuration(v); err == nil {
		if d < 0 {
			return 0, false
		}
		return min(d, MaxRetryAfter), true
	}
	if t, err := time.Parse(time.RFC3339Nano, v); err == nil {
		if t.Nanosecond() == 0 && !strings.Contains(v, ".") {
			// A whole-second stamp (Anthropic's) was truncated by the
			// provider: the window may end up to a second later.
			t = t.Add(time.Second)
		}
		return untilClamped(t, now), true
	}
	return 0, false
}

// parseDecimal parses digits with an optional fraction ("12", "1.25") into
// whole seconds, saturating at a value far above any threshold used here,
// and nanoseconds (digits beyond the ninth are ignored).
func parseDecimal(v string) (secs uint64, nanos uint32, ok bool) {
	const saturate = 1 << 40
	intPart, frac, hasFrac := strings.Cut(v, ".")
	if intPart == "" || (hasFrac && frac == "") {
		return 0, 0, false
	}
	for i := 0; i < len(intPart); i++ {
		c := intPart[i]
		if !isDigit(c) {
			return 0, 0, false
		}
		if secs < saturate {
			secs = secs*10 + uint64(c-'0')
		}
	}
	scale := uint32(100_000_000)
	for i := 0; i < len(frac); i++ {
		c := frac[i]
		if !isDigit(c) {
			return 0, 0, false
		}
		nanos += uint32(c-'0') * scale
		scale /= 10
	}
	return secs, nanos, true
}

// secondsDuration returns secs+nanos as a Duration clamped to MaxRetryAfter.
func secondsDuration(secs uint64, nanos uint32) time.Duration {
	if secs >= uint64(MaxRetryAfter/time.Second) {
		return MaxRetryAfter
	}
	return min(time.Duration(secs)*time.Second+time.Duration(nanos), MaxRetryAfter)
}

// untilClamped returns t - now within [0, MaxRetryAfter].
func untilClamped(t, now time.Time) time.Duration {
	d := t.Sub(now)
	return min(max(d, 0), MaxRetryAfter)
}

func isDigit(c byte) bool { return '0' <= c && c <= '9' }
