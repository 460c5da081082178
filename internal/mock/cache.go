package mock

import (
	"github.com/tidwall/gjson"
)

// Prompt caching, deterministic from the request (see Server): a prompt of
// at least cacheMinTokens tokens reports half of it, rounded down to a
// multiple of 64, as read from the cache; so does an Anthropic prompt with
// cache_control breakpoints, except on the first request of its prefix,
// which reports that part as written to the cache instead.
const (
	cacheMinTokens = 1024
	// prefixCacheSize is how many Anthropic prompt prefixes a mock
	// remembers.
	prefixCacheSize = 1024
)

// cachedPart is the part of a prompt of prompt tokens that the cache
// serves: half, rounded down to a multiple of 64.
func cachedPart(prompt int) int { return (prompt / 2) &^ 63 }

// usage is the input side of the answer to a request described by cv.
func (c *call) usage(cv *convo) tally {
	t := tally{prompt: c.promptTokens()}
	part := cachedPart(t.prompt)
	switch {
	case cv.cached:
		if c.s.prefixes.Contains(cv.prefix) {
			t.cacheRead = part
		} else {
			t.cacheWrite = part
		}
	case t.prompt >= cacheMinTokens:
		t.cacheRead = part
	}
	return t
}

// rememberPrefix records that an answered request's cache_control prefix
// is now in the prompt cache.
func (c *call) rememberPrefix(cv *convo) {
	if cv.cached {
		c.s.prefixes.Add(cv.prefix, struct{}{})
	}
}

// promptTokens is the request's prompt size in tokens, computed once.
func (c *call) promptTokens() int {
	if c.prompt == 0 {
		c.prompt = promptTokens(c.body)
	}
	return c.prompt
}

// promptTokens estimates a request's prompt tokens from its body size:
// bytes/4, at least 1, not counting the "stream" and "stream_options"
// members (as `,"stream":true` in compact JSON), so that a request costs
// the same streamed or not.
func promptTokens(body []byte) int {
	n := len(body)
	if n > 0 {
		for _, key := range [...]string{"stream", "stream_options"} {
			if v := gjson.GetBytes(body, key); v.Exists() {
				n -= len(key) + len(`"":,`) + len(v.Raw)
			}
		}
	}
	return max(n/4, 1)
}
