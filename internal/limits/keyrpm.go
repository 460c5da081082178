package limits

import (
	"sync"
	"time"

	"switchyard/internal/clock"
)

// KeyLimiter enforces each client key's rpm (keys[].rpm) over a sliding
// 60 s window, the same bucketed window as Limiter (60 buckets of 1 s, an
// allowed request counting for 59–60 s). Refused requests do not count.
type KeyLimiter struct {
	clk clock.Clock

	mu    sync.RWMutex // guards byKey (the map; each entry has its own lock)
	byKey map[string]*keyWindow
}

type keyWindow struct {
	mu sync.Mutex // guards w
	w  window
}

// NewKeyLimiter returns a KeyLimiter with no key counted; clk tells the time.
func NewKeyLimiter(clk clock.Clock) *KeyLimiter {
	return &KeyLimiter{clk: clk, byKey: map[string]*keyWindow{}}
}

func (k *KeyLimiter) get(key string) *keyWindow {
	k.mu.RLock()
	kw := k.byKey[key]
	k.mu.RUnlock()
	if kw != nil {
		return kw
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if kw = k.byKey[key]; kw == nil {
		kw = &keyWindow{w: newWindow(rateBuckets, RateWindow/rateBuckets)}
		k.byKey[key] = kw
	}
	return kw
}

// Allow counts one request of the client key named key against rpm
// requests per minute (rpm ≤ 0: no limit, nothing counted) and reports
// whether it may proceed. When it may not, retryAfter is how long until the
// window has room again (> 0), for the 429's Retry-After.
func (k *KeyLimiter) Allow(key string, rpm int) (ok bool, retryAfter time.Duration) {
	return k.AllowN(key, rpm, 1)
}

// AllowN counts n (a request, or its estimated tokens) in the window named
// key against limit per minute (limit ≤ 0: no limit, nothing counted), as
// Allow does; an n larger than the whole limit passes on an empty window.
// Windows of keys, teams and token counts are told apart by their names
// (CounterName).
func (k *KeyLimiter) AllowN(key string, limit int, n int64) (ok bool, retryAfter time.Duration) {
	if limit <= 0 {
		return true, 0
	}
	now := k.clk.Now()
	kw := k.get(key)
	kw.mu.Lock()
	defer kw.mu.Unlock()
	e := kw.w.advance(now)
	if kw.w.total == 0 || kw.w.total+n <= int64(limit) {
		kw.w.add(e, n)
		return true, 0
	}
	free := kw.w.freeAt(kw.w.total + n - int64(limit))
	return false, max(free.Sub(now), time.Nanosecond)
}

// CounterName names the window of a limit of a team or a key other than
// the key's rpm (whose window is the key's name): "team/research/rpm",
// "svc-a/tpm". Key and team names hold no '/', so no two collide.
func CounterName(team, key, limit string) string {
	if team != "" {
		return "team/" + team + "/" + limit
	}
	return key + "/" + limit
}
