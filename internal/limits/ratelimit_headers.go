package limits

import (
	"net/http"
	"strconv"
	"strings"
	"time"
)

// ObserveHeaders learns upstream name's limits from a response's headers:
// OpenAI's x-ratelimit-{limit,remaining,reset}-{requests,tokens} (reset as a
// duration such as "6m0s") and Anthropic's
// anthropic-ratelimit-{requests,tokens,input-tokens,output-tokens}-{limit,remaining,reset}
// (reset as an RFC 3339 time). A limit header sets the learned limit; a
// remaining header replaces the learned remaining count until its reset (a
// minute when no reset is given); of several token quotas the one with the
// least remaining counts. Call it with the headers of every upstream
// response, 429s included; headers without rate-limit fields change nothing.
func (l *Limiter) ObserveHeaders(name string, h http.Header) {
	if len(h) == 0 {
		return
	}
	now := l.clk.Now()
	obs := parseRateHeaders(h, now)
	if !obs.any() {
		return
	}
	u := l.get(name)
	u.mu.Lock()
	defer u.mu.Unlock()
	u.applyLocked(&obs, now)
}

// quotaHeaders names the limit, remaining and reset headers of one quota.
type quotaHeaders struct{ limit, remaining, reset string }

var (
	requestQuotas = [...]quotaHeaders{
		{"X-Ratelimit-Limit-Requests", "X-Ratelimit-Remaining-Requests", "X-Ratelimit-Reset-Requests"},
		{"Anthropic-Ratelimit-Requests-Limit", "Anthropic-Ratelimit-Requests-Remaining", "Anthropic-Ratelimit-Requests-Reset"},
	}
	// tokenQuotas: the total-token quotas come first; only they give the
	// TPM limit, since input or output limits measure something else.
	tokenQuotas = [...]quotaHeaders{
		{"X-Ratelimit-Limit-Tokens", "X-Ratelimit-Remaining-Tokens", "X-Ratelimit-Reset-Tokens"},
		{"Anthropic-Ratelimit-Tokens-Limit", "Anthropic-Ratelimit-Tokens-Remaining", "Anthropic-Ratelimit-Tokens-Reset"},
		{"Anthropic-Ratelimit-Input-Tokens-Limit", "Anthropic-Ratelimit-Input-Tokens-Remaining", "Anthropic-Ratelimit-Input-Tokens-Reset"},
		{"Anthropic-Ratelimit-Output-Tokens-Limit", "Anthropic-Ratelimit-Output-Tokens-Remaining", "Anthropic-Ratelimit-Output-Tokens-Reset"},
	}
)

// quotaObs is what one response said about one kind of quota.
type quotaObs struct {
	limit     int64 // 0 = not given
	remaining int64 // valid when hasRem
	hasRem    bool
	reset     time.Time // zero = not given
}

// rateObs is what one response's headers said.
type rateObs struct{ req, tok quotaObs }

func (o *rateObs) any() bool {
	return o.req.limit > 0 || o.req.hasRem || o.tok.limit > 0 || o.tok.hasRem || !o.req.reset.IsZero() || !o.tok.reset.IsZero()
}

// parseRateHeaders reads the provider rate-limit headers of h. It does not
// allocate for headers set through http.Header (canonical keys).
func parseRateHeaders(h http.Header, now time.Time) rateObs {
	var o rateObs
	for i := range requestQuotas {
		o.req.merge(readQuota(h, requestQuotas[i], now), true)
	}
	for i := range tokenQuotas {
		o.tok.merge(readQuota(h, tokenQuotas[i], now), i < 2)
	}
	return o
}

func readQuota(h http.Header, q quotaHeaders, now time.Time) quotaObs {
	var o quotaObs
	if n, ok := headerInt(h, q.limit); ok && n > 0 {
		o.limit = n
	}
	if n, ok := headerInt(h, q.remaining); ok {
		o.remaining, o.hasRem = max(n, 0), true
	}
	if v := header(h, q.reset); v != "" {
		if d, ok := ParseResetDuration(v, now); ok {
			o.reset = now.Add(d)
		}
	}
	return o
}

// merge folds another quota of the same kind into o: the least remaining
// wins (the later reset on a tie); withLimit says whether its limit counts.
func (o *quotaObs) merge(p quotaObs, withLimit bool) {
	if withLimit && p.limit > 0 && (o.limit == 0 || p.limit < o.limit) {
		o.limit = p.limit
	}
	switch {
	case p.hasRem && (!o.hasRem || p.remaining < o.remaining ||
		(p.remaining == o.remaining && p.reset.After(o.reset))):
		o.remaining, o.hasRem, o.reset = p.remaining, true, p.reset
	case !o.hasRem && !p.hasRem && p.reset.After(o.reset):
		o.reset = p.reset
	}
}

// applyLocked stores an observation in u.
func (u *upstreamRate) applyLocked(o *rateObs, now time.Time) {
	u.req.apply(&o.req, now)
	u.tok.apply(&o.tok, now)
}

func (l *learned) apply(o *quotaObs, now time.Time) {
	if o.limit > 0 {
		l.limit = o.limit
	}
	if !o.hasRem {
		return
	}
	l.remaining, l.hasRem, l.since = o.remaining, true, 0
	l.gen++
	l.reset = o.reset
	if l.reset.IsZero() {
		l.reset = now.Add(learnedTTL)
	}
}

func header(h http.Header, key string) string {
	if v := h[key]; len(v) > 0 {
		return v[0]
	}
	return ""
}

func headerInt(h http.Header, key string) (int64, bool) {
	v := strings.TrimSpace(header(h, key))
	if v == "" {
		return 0, false
	}
	n, err := strconv.ParseInt(v, 10, 64)
	if err != nil {
		return 0, false
	}
	return n, true
}
