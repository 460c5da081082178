package limits

import (
	"math"
	"time"
)

// window is a sliding-window counter: len(buckets) buckets of width each,
// covering the bucket that holds now and the len(buckets)-1 before it, with
// a running total so that reading it is O(1). Buckets are cleared lazily as
// time moves forward, at most once each, so every call is amortised O(1) and
// memory is fixed.
//
// Exactness: an event is counted from the moment it is added until the
// start of the bucket len(buckets) buckets after its own. With 60 buckets of
// 1 s an event at 10.4 s counts until 70.0 s, that is between 59 and 60 s.
//
// A window is not safe for concurrent use; its owner's mutex guards it.
type window struct {
	buckets []int64
	width   int64 // bucket width in nanoseconds
	head    int64 // epoch (bucket number since the Unix epoch) of the newest bucket; math.MinInt64 before the first advance
	total   int64 // sum of buckets
}

func newWindow(n int, width time.Duration) window {
	return window{buckets: make([]int64, n), width: int64(width), head: math.MinInt64}
}

// epoch returns the bucket number of t.
func (w *window) epoch(t time.Time) int64 {
	ns := t.UnixNano()
	e := ns / w.width
	if ns%w.width < 0 {
		e-- // floor for times before 1970
	}
	return e
}

// slot returns the index of epoch e in buckets.
func (w *window) slot(e int64) int {
	n := int64(len(w.buckets))
	i := e % n
	if i < 0 {
		i += n
	}
	return int(i)
}

// advance moves the window to now, expiring the buckets that fell out of
// it, and returns the epoch to count new events in. A clock that steps back
// keeps counting in the newest bucket.
func (w *window) advance(now time.Time) int64 {
	e := w.epoch(now)
	if e <= w.head {
		return w.head
	}
	n := int64(len(w.buckets))
	if w.head == math.MinInt64 || e-w.head >= n {
		clear(w.buckets)
		w.total = 0
	} else {
		for x := w.head + 1; x <= e; x++ {
			i := w.slot(x)
			w.total -= w.buckets[i]
			w.buckets[i] = 0
		}
	}
	w.head = e
	return e
}

// contains reports whether bucket e is still inside the window as of its
// last advance.
func (w *window) contains(e int64) bool {
	return e <= w.head && e > w.head-int64(len(w.buckets))
}

// add adds v (which may be negative) to bucket e if that bucket is still in
// the window; an expired bucket has no effect.
func (w *window) add(e, v int64) {
	if !w.contains(e) {
		return
	}
	w.buckets[w.slot(e)] += v
	w.total += v
}

// freeAt returns when at least need units will have left the window, as of
// its last advance; the zero time when the window does not hold that many.
func (w *window) freeAt(need int64) time.Time {
	if w.head == math.MinInt64 {
		return time.Time{}
	}
	n := int64(len(w.buckets))
	var sum int64
	for e := w.head - n + 1; e <= w.head; e++ {
		sum += w.buckets[w.slot(e)]
		if sum >= need {
			return time.Unix(0, (e+n)*w.width).UTC()
		}
	}
	return time.Time{}
}
