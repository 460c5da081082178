package sim

import (
	"slices"
	"time"
)

// cacheLifetime is how long a provider keeps a conversation's prompt cache
// after its last use: Anthropic's prompt cache lives 5 minutes from its
// last hit, OpenAI's automatic one 5–10 minutes of inactivity. A turn
// served by the upstream that served its session's previous turn, at most
// this long after that turn ended, finds the conversation so far cached;
// any other turn pays for its whole prompt again.
const cacheLifetime = 5 * time.Minute

// turnCache is what a session's cache affinity needs of its past: the
// upstream that served its last successful turn ("" before one) and when
// that turn ended.
type turnCache struct {
	upstream string
	ended    time.Duration
}

// served notes a successful turn that started at start and ended at end on
// upstream. It reports whether the turn counts (its session had a
// successful turn before) and whether it was warm: served by the upstream
// of that previous successful turn, at most cacheLifetime after that one
// ended.
func (c *turnCache) served(upstream string, start, end time.Duration) (counted, warm bool) {
	counted = c.upstream != ""
	warm = counted && upstream == c.upstream && start-c.ended <= cacheLifetime
	c.upstream, c.ended = upstream, end
	return counted, warm
}

// CacheAffinity is how often a session's turn went where its prompt cache
// was warm (docs/simulator.md).
type CacheAffinity struct {
	// Turns counts the successful turns of sessions after each session's
	// first successful one; Warm those served by the same upstream as the
	// session's previous successful turn, at most 5 minutes (the prompt
	// cache's lifetime) after that turn ended.
	Turns int64 `json:"turns"`
	Warm  int64 `json:"warm"`
	// Rate is Warm ÷ Turns (0 without turns).
	Rate float64 `json:"rate"`
}

// sessionTurn counts a session's successful turn q, which ended at now, in
// time bucket b (by its start).
func (r *recorder) sessionTurn(q *request, b int, now time.Duration) {
	counted, warm := q.sess.cache.served(q.log.Upstream, q.start, now)
	if counted {
		r.turns[b]++
	}
	if warm {
		r.warm[b]++
	}
}

// cacheAffinity sums the turns that started in [from, to) (whole time
// buckets: those whose start lies in it).
func (r *recorder) cacheAffinity(from, to time.Duration) CacheAffinity {
	var c CacheAffinity
	for b := range r.n {
		if at := time.Duration(b) * r.width; at >= from && at < to {
			c.Turns += int64(r.turns[b])
			c.Warm += int64(r.warm[b])
		}
	}
	c.Rate = round(ratio(c.Warm, c.Turns), 6)
	return c
}

// cacheAffinitySummary is the whole run's cache affinity for a scenario
// with sessions, nil for one without.
func (r *run) cacheAffinitySummary() *CacheAffinity {
	if !slices.ContainsFunc(r.sc.Traffic, func(p Phase) bool { return p.Sessions.Share > 0 }) {
		return nil
	}
	c := r.rec.cacheAffinity(0, time.Duration(r.rec.n)*r.rec.width)
	return &c
}

// promptCacheSummary sums the providers' prompt caches for a scenario with
// shared prompts, nil for one without.
func (r *run) promptCacheSummary() *PromptCache {
	if !slices.ContainsFunc(r.sc.Traffic, func(p Phase) bool { return p.SharedPrompts.Count > 0 }) {
		return nil
	}
	var c PromptCache
	for i, u := range r.ups {
		c.Lookups += u.prov.lookups
		c.Hits += u.prov.hits
		c.CacheReadTokens += r.rec.ups[i].cacheRead
		c.CacheWriteTokens += r.rec.ups[i].cacheWrite
	}
	c.HitRate = round(ratio(c.Hits, c.Lookups), 6)
	return &c
}
