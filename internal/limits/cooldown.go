package limits

import (
	"net/http"
	"strings"
	"time"

	"github.com/tidwall/gjson"
)

// Sources of a Cooldown's length.
const (
	// CooldownRetryAfter means the 429's Retry-After (or retry-after-ms) header.
	CooldownRetryAfter = "retry-after"
	// CooldownReset means the provider's rate-limit reset header.
	CooldownReset = "reset"
	// CooldownBackoff means exponential backoff: no header said how long.
	CooldownBackoff = "backoff"
	// CooldownProvider means the wait the provider named in its answer's
	// body (Gemini's RetryInfo), as its adapter read it.
	CooldownProvider = "provider"
)

// Backoff parameters after 429s that name no wait
// (docs/reference.md#cooldowns-after-429).
const (
	// BackoffBase is the first cooldown after a 429 that names no wait.
	BackoffBase = time.Second
	// BackoffMax caps the exponential backoff after consecutive 429s.
	BackoffMax = 60 * time.Second
)

// Headers RateLimited reads besides the rate-limit ones.
const (
	hdrRetryAfter   = "Retry-After"
	hdrRetryAfterMS = "Retry-After-Ms" // OpenAI: the same wait in milliseconds
)

// Cooldown is what RateLimited decided about a 429.
type Cooldown struct {
	// Until is the end of the upstream's cooldown: now + Wait, or a later
	// end an earlier 429 already set.
	Until time.Time
	// Wait is the cooldown this 429 asked for.
	Wait time.Duration
	// Source says where Wait came from: CooldownRetryAfter, CooldownReset or
	// CooldownBackoff.
	Source string
	// LimitType is LimitRequests, LimitTokens, or "" when neither the body
	// nor the headers said.
	LimitType string
	// Consecutive counts the 429s since the upstream's last success, this
	// one included.
	Consecutive int
}

// RateLimited records a 429 from upstream name with the response's headers
// and body and starts its cooldown (docs/reference.md#cooldowns-after-429,
// seed 002), which View and Reserve honour. The cooldown lasts, first found:
//
//  1. the Retry-After header (seconds or HTTP date; OpenAI's retry-after-ms
//     is read first, being the same wait in milliseconds);
//  2. the provider's reset header for the limit type hit (for an unknown
//     type: the reset of a quota whose remaining is 0, else the shortest
//     reset given);
//  3. exponential backoff, BackoffBase × 2^(n-1) capped at BackoffMax for
//     the n-th consecutive 429 (counted until Succeeded).
//
// A wait the provider's adapter read from the answer (asked > 0) comes
// before all three. A cooldown never shortens one already running. The limit type comes from
// the error body (OpenAI error.type "requests"/"tokens", or error.code
// "rate_limit_exceeded" and Anthropic error.type "rate_limit_error" with a
// message naming tokens or requests), else from which remaining header is 0.
// The headers are also learned as by ObserveHeaders.
func (l *Limiter) RateLimited(name string, h http.Header, body []byte, asked time.Duration) Cooldown {
	now := l.clk.Now()
	obs := parseRateHeaders(h, now)
	typ := limitTypeFromBody(body)
	if typ == "" {
		typ = obs.zeroType()
	}
	u := l.get(name)
	u.mu.Lock()
	defer u.mu.Unlock()
	u.applyLocked(&obs, now)
	u.consecutive++
	c := Cooldown{LimitType: typ, Consecutive: u.consecutive}
	if asked > 0 {
		c.Wait, c.Source = min(asked, MaxRetryAfter), CooldownProvider
	} else if d, ok := retryAfter(h, now); ok {
		c.Wait, c.Source = d, CooldownRetryAfter
	} else if d, ok := obs.resetFor(typ, now); ok {
		c.Wait, c.Source = d, CooldownReset
	} else {
		c.Wait, c.Source = Backoff(u.consecutive), CooldownBackoff
	}
	if until := now.Add(c.Wait); until.After(u.coolUntil) {
		u.coolUntil = until
		u.coolType = typ
	} else if typ != "" && u.coolType == "" {
		u.coolType = typ
	}
	c.Until = u.coolUntil
	if !c.Until.After(now) {
		c.Until = now
	}
	return c
}

// Succeeded records a successful response from upstream name: the count of
// consecutive 429s starts again. A running cooldown is kept.
func (l *Limiter) Succeeded(name string) {
	u := l.lookup(name)
	if u == nil {
		return
	}
	u.mu.Lock()
	u.consecutive = 0
	u.mu.Unlock()
}

// Backoff returns the cooldown after the n-th consecutive 429 that named no
// wait: BackoffBase × 2^(n-1), capped at BackoffMax; n < 1 counts as 1.
func Backoff(n int) time.Duration {
	if n < 1 {
		n = 1
	}
	if n > 16 {
		return BackoffMax
	}
	return min(BackoffBase<<(n-1), BackoffMax)
}

// retryAfter reads retry-after-ms, then Retry-After.
func retryAfter(h http.Header, now time.Time) (time.Duration, bool) {
	if v := strings.TrimSpace(header(h, hdrRetryAfterMS)); v != "" {
		if ms, frac, ok := parseDecimal(v); ok {
			// frac is the fraction of a millisecond in billionths.
			d := time.Duration(min(ms, uint64(MaxRetryAfter/time.Millisecond)))*time.Millisecond +
				time.Duration(frac/1000)
			return min(d, MaxRetryAfter), true
		}
	}
	if v := header(h, hdrRetryAfter); v != "" {
		return ParseRetryAfter(v, now)
	}
	return 0, false
}

// zeroType returns the limit type whose remaining header is 0, requests
// first; "" when none is.
func (o *rateObs) zeroType() string {
	switch {
	case o.req.hasRem && o.req.remaining == 0:
		return LimitRequests
	case o.tok.hasRem && o.tok.remaining == 0:
		return LimitTokens
	}
	return ""
}

// resetFor returns the wait until the reset of the quota of type typ; for
// an unknown type, until the latest reset of a quota at 0 remaining, else
// the earliest reset given.
func (o *rateObs) resetFor(typ string, now time.Time) (time.Duration, bool) {
	var at time.Time
	switch {
	case typ == LimitRequests && !o.req.reset.IsZero():
		at = o.req.reset
	case typ == LimitTokens && !o.tok.reset.IsZero():
		at = o.tok.reset
	default:
		for _, q := range [...]*quotaObs{&o.req, &o.tok} {
			if q.hasRem && q.remaining == 0 && q.reset.After(at) {
				at = q.reset
			}
		}
		if at.IsZero() {
			for _, q := range [...]*quotaObs{&o.req, &o.tok} {
				if !q.reset.IsZero() && (at.IsZero() || q.reset.Before(at)) {
					at = q.reset
				}
			}
		}
	}
	if at.IsZero() {
		return 0, false
	}
	return untilClamped(at, now), true
}

// limitTypeFromBody classifies a 429's error body (OpenAI or Anthropic
// shape); "" when it does not say.
func limitTypeFromBody(body []byte) string {
	if len(body) == 0 {
		return ""
	}
	e := gjson.GetBytes(body, "error")
	if !e.IsObject() {
		return ""
	}
	typ := strings.ToLower(e.Get("type").String())
	switch {
	case strings.HasPrefix(typ, LimitRequests):
		return LimitRequests
	case strings.HasPrefix(typ, LimitTokens):
		return LimitTokens
	}
	code := strings.ToLower(e.Get("code").String())
	if code != "rate_limit_exceeded" && typ != "rate_limit_error" && typ != "rate_limit_exceeded" {
		return ""
	}
	msg := strings.ToLower(e.Get("message").String())
	switch {
	case strings.Contains(msg, "token") || strings.Contains(msg, "tpm"):
		return LimitTokens
	case strings.Contains(msg, "request") || strings.Contains(msg, "rpm"):
		return LimitRequests
	}
	return ""
}
