package sim

import (
	"math/rand/v2"

	"net/http"
	"strconv"
	"switchyard/internal/codec"
	"time"
)

// Timings of answers that are not generated (modelling choices of
// our own, documented in docs/simulator.md).
const (
	// refusedAfter is how long a refused connection takes to fail.
	refusedAfter = 10 * time.Millisecond
	// rejectedAfter is how long a provider takes to answer 429.
	rejectedAfter = 20 * time.Millisecond
)

// answerKind is how a provider treats one request.
type answerKind uint8

const (
	answerOK      answerKind = iota // 200, usage in/out
	answerError                     // 5xx
	answer429                       // rate limited
	answerRefused                   // connection refused (outage)
	answerHang                      // accepted, never answered
)

// answer is what a provider decided about one request when it arrived.
type answer struct {
	kind   answerKind
	status int
	// first is when the response headers (a stream: its first event)
	// arrive, after the request was sent; total when the whole answer has.
	first, total time.Duration
	// limitType is the quota a 429 ran out of: "requests" or "tokens".
	limitType string
	// in and out are the usage of a success; tps a stream's output rate.
	in, out int64
	tps     float64
	// cacheRead and cacheWrite are the parts of in read from and written
	// to the provider's prompt cache (promptCache).
	cacheRead, cacheWrite int64
}

// usage is a success's usage as the provider reports it.
func (a *answer) usage() codec.Usage {
	return codec.Usage{Input: a.in, Output: a.out, CacheRead: a.cacheRead, CacheWrite: a.cacheWrite}
}

// provider is the model of one upstream's provider: its latencies, its own
// sliding-minute RPM/TPM windows (enforced the way providers do: 429 with
// Retry-After and x-ratelimit-* / anthropic-ratelimit-* headers on every
// answer), its error rate and its outage, brown-out and hang windows.
type provider struct {
	m    Provider
	rng  *rand.Rand
	base time.Time // the simulation's start, for Anthropic's RFC 3339 resets
	reqs minuteWindow
	toks minuteWindow
	hdr  http.Header // reused for every answer: the gateway never keeps it
	// cache is the account's prompt cache: when each shared prompt was
	// last seen; lookups and hits count the answers to requests that
	// opened with one, and those that found it cached.
	cache         map[cacheKey]time.Duration
	lookups, hits int64
}

// cacheKey names a shared prompt: its phase and index.
type cacheKey struct{ phase, prompt int }

// cacheTTFTSaving is the share of a whole-prompt hit's time to first byte
// that the cache saves: prefill of the cached tokens is skipped, and we
// model prefill as half of the time to first byte, in proportion to the
// prompt's cached share (docs/simulator.md).
const cacheTTFTSaving = 0.5

// promptCache applies the account's prompt cache to a's success: a
// shared prompt of tokens seen on this account at most cacheLifetime ago
// is read from the cache (its tokens billed at the cache-read price, and
// the answer starts sooner); otherwise it is written to it, which
// Anthropic's protocol reports as cache-write tokens (billed above the
// input price) and the others do not report. Either way the prompt is
// cached from now.
func (p *provider) promptCache(a *answer, now time.Duration, key cacheKey, tokens int64, fam codec.Family) {
	if p.cache == nil {
		p.cache = map[cacheKey]time.Duration{}
	}
	seen, ok := p.cache[key]
	p.cache[key] = now
	p.lookups++
	tokens = min(tokens, a.in)
	if !ok || now-seen > cacheLifetime {
		if fam == codec.FamilyAnthropic || fam == codec.FamilyBedrock {
			a.cacheWrite = tokens
		}
		return
	}
	p.hits++
	a.cacheRead = tokens
	saved := time.Duration(float64(a.first) * cacheTTFTSaving * float64(tokens) / float64(max(a.in, 1)))
	a.first -= saved
	a.total -= saved
}

func newProvider(m Provider, rng *rand.Rand, base time.Time) *provider {
	return &provider{m: m, rng: rng, base: base, hdr: make(http.Header, 8)}
}

// conditions returns the error rate and latency factor in force at now.
func (p *provider) conditions(now time.Duration) (errRate, factor float64) {
	errRate, factor = p.m.ErrorRate, 1
	for _, b := range p.m.Brownouts {
		if now >= b.Start && now < b.End {
			errRate, factor = b.ErrorRate, b.LatencyFactor
		}
	}
	return errRate, factor
}

func inWindows(ws []Window, now time.Duration) bool {
	for _, w := range ws {
		if w.contains(now) {
			return true
		}
	}
	return false
}

// receive decides what happens to a request sent at now with prompt input
// tokens, max_tokens maxTokens and a completion of out tokens.
func (p *provider) receive(now time.Duration, stream bool, prompt, maxTokens, out int64) answer {
	switch {
	case inWindows(p.m.Outages, now):
		return answer{kind: answerRefused, first: refusedAfter, total: refusedAfter}
	case inWindows(p.m.Hangs, now):
		return answer{kind: answerHang}
	}
	sec := int64(now / time.Second)
	need := prompt + maxTokens // providers count max_tokens at admission
	switch {
	case p.m.RPM > 0 && p.reqs.used(sec)+1 > int64(p.m.RPM):
		return answer{kind: answer429, status: http.StatusTooManyRequests, first: rejectedAfter, total: rejectedAfter, limitType: "requests"}
	case p.m.TPM > 0 && p.toks.used(sec)+need > int64(p.m.TPM):
		return answer{kind: answer429, status: http.StatusTooManyRequests, first: rejectedAfter, total: rejectedAfter, limitType: "tokens"}
	}
	p.reqs.add(sec, 1)
	p.toks.add(sec, need)
	errRate, factor := p.conditions(now)
	if errRate > 0 && p.rng.Float64() < errRate {
		first := scale(p.m.TTFT.sample(p.rng), factor)
		return answer{kind: answerError, status: 500 + 2*p.rng.IntN(2), first: first, total: first}
	}
	a := answer{kind: answerOK, status: http.StatusOK, in: prompt, out: out}
	if stream {
		a.tps = p.m.TokensPerSecond / factor
		a.first = scale(p.firstByte(p.m.TTFT), factor)
		a.total = a.first + time.Duration(float64(out)/a.tps*float64(time.Second))
	} else {
		a.first = scale(p.firstByte(p.m.Latency), factor)
		a.total = a.first
	}
	return a
}

// firstByte draws a successful answer's time to its first byte from d, or
// is the slow-start time for a slow_starts.share of answers. A provider
// without slow starts draws nothing more, so its other draws stay as they
// were.
func (p *provider) firstByte(d DurationDist) time.Duration {
	if s := p.m.SlowStarts; s.Share > 0 && p.rng.Float64() < s.Share {
		return s.TTFT
	}
	return d.sample(p.rng)
}

func scale(d time.Duration, f float64) time.Duration { return time.Duration(float64(d) * f) }

// headers returns the rate-limit headers of an answer sent at now. The map
// is reused by the next call.
func (p *provider) headers(now time.Duration) http.Header {
	h := p.hdr
	clear(h)
	sec := int64(now / time.Second)
	if p.m.Headers != HeadersNone {
		p.quotaHeaders(h, now, "requests", int64(p.m.RPM), &p.reqs, sec)
		p.quotaHeaders(h, now, "tokens", int64(p.m.TPM), &p.toks, sec)
	}
	return h
}

// retryAfter is how long from now until a 429 of limitType would pass,
// as the provider tells it; 0 when it does not (retry_after: false).
func (p *provider) retryAfter(now time.Duration, limitType string) time.Duration {
	if !*p.m.RetryAfter {
		return 0
	}
	w, limit := &p.reqs, int64(p.m.RPM)
	if limitType == "tokens" {
		w, limit = &p.toks, int64(p.m.TPM)
	}
	return max(w.freeIn(now, 1, limit), time.Second)
}

// quotaHeaders sets one quota's limit, remaining and reset headers in the
// provider's dialect; a limit of 0 sets none.
func (p *provider) quotaHeaders(h http.Header, now time.Duration, quota string, limit int64, w *minuteWindow, sec int64) {
	if limit <= 0 {
		return
	}
	remaining := max(limit-w.used(sec), 0)
	reset := w.oldestLeaves(now) // remaining grows no sooner than this
	lim, rem := strconv.FormatInt(limit, 10), strconv.FormatInt(remaining, 10)
	if p.m.Headers == HeadersAnthropic {
		pre := "Anthropic-Ratelimit-" + upperFirst(quota) + "-"
		h.Set(pre+"Limit", lim)
		h.Set(pre+"Remaining", rem)
		h.Set(pre+"Reset", p.base.Add(now+reset).UTC().Format(time.RFC3339))
		return
	}
	h.Set("X-Ratelimit-Limit-"+upperFirst(quota), lim)
	h.Set("X-Ratelimit-Remaining-"+upperFirst(quota), rem)
	h.Set("X-Ratelimit-Reset-"+upperFirst(quota), reset.Round(time.Millisecond).String())
}

func upperFirst(s string) string { return string(s[0]-'a'+'A') + s[1:] }

// minuteWindow counts units over the last 60 whole seconds, in 1 s buckets:
// the provider's own sliding minute.
type minuteWindow struct {
	count [60]int64
	sec   [60]int64 // the second each bucket holds; stale buckets count 0
}

// used returns the units counted in the 60 seconds ending with second sec.
func (w *minuteWindow) used(sec int64) int64 {
	var n int64
	for i := range w.count {
		if sec-w.sec[i] < 60 && w.sec[i] <= sec {
			n += w.count[i]
		}
	}
	return n
}

func (w *minuteWindow) add(sec, n int64) {
	i := sec % 60
	if w.sec[i] != sec {
		w.sec[i], w.count[i] = sec, 0
	}
	w.count[i] += n
}

// freeIn returns how long from now until need more units fit under limit.
func (w *minuteWindow) freeIn(now time.Duration, need, limit int64) time.Duration {
	sec := int64(now / time.Second)
	excess := w.used(sec) + need - limit
	if excess <= 0 {
		return 0
	}
	for s := max(sec-59, 0); s <= sec; s++ {
		if i := s % 60; w.sec[i] == s {
			excess -= w.count[i]
		}
		if excess <= 0 {
			return time.Duration(s+60)*time.Second - now
		}
	}
	return time.Minute
}

// oldestLeaves returns how long from now until the oldest counted unit
// leaves the window; 0 when the window is empty.
func (w *minuteWindow) oldestLeaves(now time.Duration) time.Duration {
	sec := int64(now / time.Second)
	for s := max(sec-59, 0); s <= sec; s++ {
		if i := s % 60; w.sec[i] == s && w.count[i] > 0 {
			return time.Duration(s+60)*time.Second - now
		}
	}
	return 0
}
