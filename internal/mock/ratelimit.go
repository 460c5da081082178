package mock

import (
	"math"
	"net/http"
	"strconv"
	"sync"
	"time"
)

// rateWindow is the length of the RPM/TPM sliding window.
const rateWindow = time.Minute

// limiter enforces Behavior.RPM and Behavior.TPM over a sliding window: a
// request admitted at t occupies one request and its tokens until t + 60 s.
// Rejected requests occupy nothing, as with the real providers. Entries are
// only recorded while the matching limit is set, so an unlimited mock keeps
// no history.
type limiter struct {
	mu       sync.Mutex // guards reqs, toks and tokTotal
	reqs     []time.Time
	toks     []tokenEntry
	tokTotal int
}

type tokenEntry struct {
	at     time.Time
	tokens int
}

// limitState is a window's occupancy after a request, for the
// x-ratelimit-* headers.
type limitState struct {
	rpm, tpm           int
	reqUsed, tokUsed   int
	reqReset, tokReset time.Duration // until the oldest entry leaves the window
}

// rejection says why a request did not fit: kind is "requests" or "tokens",
// retry is how long until it would.
type rejection struct {
	kind  string
	retry time.Duration
}

// admit records a request of tokens tokens at now if it fits within rpm and
// tpm (0 = unlimited), or returns why not. With consume false it only reports
// the state (GET /models and early errors do not count).
func (l *limiter) admit(now time.Time, rpm, tpm, tokens int, consume bool) (limitState, *rejection) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.pruneLocked(now)
	var rej *rejection
	if consume {
		rej = l.checkLocked(now, rpm, tpm, tokens)
		if rej == nil {
			if rpm > 0 {
				l.reqs = append(l.reqs, now)
			}
			if tpm > 0 {
				l.toks = append(l.toks, tokenEntry{at: now, tokens: tokens})
				l.tokTotal += tokens
			}
		}
	}
	st := limitState{rpm: rpm, tpm: tpm, reqUsed: len(l.reqs), tokUsed: l.tokTotal}
	if len(l.reqs) > 0 {
		st.reqReset = l.reqs[0].Add(rateWindow).Sub(now)
	}
	if len(l.toks) > 0 {
		st.tokReset = l.toks[0].at.Add(rateWindow).Sub(now)
	}
	return st, rej
}

func (l *limiter) checkLocked(now time.Time, rpm, tpm, tokens int) *rejection {
	if rpm > 0 && len(l.reqs)+1 > rpm {
		// The request fits once len+1-rpm of the oldest have left.
		oldest := l.reqs[len(l.reqs)-rpm]
		return &rejection{kind: "requests", retry: oldest.Add(rateWindow).Sub(now)}
	}
	if tpm > 0 && l.tokTotal+tokens > tpm {
		retry := rateWindow // a request larger than the whole limit never fits
		used := l.tokTotal
		for _, e := range l.toks {
			used -= e.tokens
			if used+tokens <= tpm {
				retry = e.at.Add(rateWindow).Sub(now)
				break
			}
		}
		return &rejection{kind: "tokens", retry: retry}
	}
	return nil
}

// pruneLocked drops the entries that have left the window at now.
func (l *limiter) pruneLocked(now time.Time) {
	cut := now.Add(-rateWindow)
	i := 0
	for i < len(l.reqs) && !l.reqs[i].After(cut) {
		i++
	}
	l.reqs = l.reqs[i:]
	j := 0
	for j < len(l.toks) && !l.toks[j].at.After(cut) {
		l.tokTotal -= l.toks[j].tokens
		j++
	}
	l.toks = l.toks[j:]
	if len(l.reqs) == 0 {
		l.reqs = nil
	}
	if len(l.toks) == 0 {
		l.toks = nil
	}
}

func (l *limiter) reset() {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.reqs, l.toks, l.tokTotal = nil, nil, 0
}

// setHeaders writes the OpenAI-style x-ratelimit-* headers for the limits
// that are set, and for Anthropic requests the anthropic-ratelimit-* ones.
func (st limitState) setHeaders(h http.Header, p protocol, now time.Time) {
	if st.rpm > 0 {
		h.Set("x-ratelimit-limit-requests", strconv.Itoa(st.rpm))
		h.Set("x-ratelimit-remaining-requests", strconv.Itoa(max(st.rpm-st.reqUsed, 0)))
		h.Set("x-ratelimit-reset-requests", formatReset(st.reqReset))
		if p == protoAnthropic {
			h.Set("anthropic-ratelimit-requests-limit", strconv.Itoa(st.rpm))
			h.Set("anthropic-ratelimit-requests-remaining", strconv.Itoa(max(st.rpm-st.reqUsed, 0)))
			h.Set("anthropic-ratelimit-requests-reset", now.Add(st.reqReset).UTC().Format(time.RFC3339))
		}
	}
	if st.tpm > 0 {
		h.Set("x-ratelimit-limit-tokens", strconv.Itoa(st.tpm))
		h.Set("x-ratelimit-remaining-tokens", strconv.Itoa(max(st.tpm-st.tokUsed, 0)))
		h.Set("x-ratelimit-reset-tokens", formatReset(st.tokReset))
		if p == protoAnthropic {
			h.Set("anthropic-ratelimit-tokens-limit", strconv.Itoa(st.tpm))
			h.Set("anthropic-ratelimit-tokens-remaining", strconv.Itoa(max(st.tpm-st.tokUsed, 0)))
			h.Set("anthropic-ratelimit-tokens-reset", now.Add(st.tokReset).UTC().Format(time.RFC3339))
		}
	}
}

// formatReset writes d the way OpenAI's reset headers do ("1s", "6m0s",
// "120ms"), rounded to milliseconds.
func formatReset(d time.Duration) string {
	if d <= 0 {
		return "0s"
	}
	return d.Round(time.Millisecond).String()
}

// retryAfterSeconds is d as a Retry-After value: whole seconds, rounded up,
// at least 1.
func retryAfterSeconds(d time.Duration) string {
	s := int(math.Ceil(d.Seconds()))
	return strconv.Itoa(max(s, 1))
}
