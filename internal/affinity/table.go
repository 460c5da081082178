package affinity

import (
	"cmp"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"switchyard/internal/clock"
)

// Table is the in-memory Store: a map from Key to entry, an intrusive
// doubly-linked LRU list over all entries and, per session id, an intrusive
// list of that session's entries (the secondary index of the admin
// endpoints). Get, Peek, Bind and Delete are O(1); Lookup and DeleteSession
// are O(bindings of the session).
//
// Expiry is lazy: an expired binding is removed when Get or Bind meets it,
// when it reaches the LRU tail during a Bind, or by LRU eviction; until then
// it counts in Len but is never returned. Get, Peek and Bind judge expiry by
// the Policy they are given; Delete, DeleteSession and Lookup, which have
// none, by the policy of the binding's last Get or Bind (Lookup's ExpiresAt
// too).
//
// One mutex guards the whole structure; the work under it is a map access and
// a few pointer writes, so contention stays low up to many thousands of
// requests per second. The counters are atomics read without the lock.
type Table struct {
	clk clock.Clock
	max int

	mu       sync.Mutex        // guards entries, root, sessions and every entry's fields
	entries  map[Key]*entry    // every stored binding, live or not yet collected
	root     entry             // LRU ring sentinel: root.next is the most recent, root.prev the least
	sessions map[string]*entry // session id → head of that session's list

	hits, misses, evictions atomic.Uint64
}

// entry is one binding, linked into the LRU ring and its session's list.
type entry struct {
	key      Key
	upstream string
	standIn  string
	created  time.Time
	lastUsed time.Time
	pol      Policy // the policy of the last Get or Bind, for Lookup

	prev, next   *entry // LRU ring
	sprev, snext *entry // session list; nil-terminated
}

var _ Store = (*Table)(nil)

// NewTable returns an empty table holding at most maxEntries bindings
// (affinity.max_entries; < 1 means DefaultMaxEntries). clk tells the time
// (nil means the wall clock).
func NewTable(maxEntries int, clk clock.Clock) *Table {
	if maxEntries < 1 {
		maxEntries = DefaultMaxEntries
	}
	if clk == nil {
		clk = clock.Real{}
	}
	t := &Table{
		clk:      clk,
		max:      maxEntries,
		entries:  make(map[Key]*entry, min(maxEntries, 1<<16)),
		sessions: make(map[string]*entry),
	}
	t.root.next, t.root.prev = &t.root, &t.root
	return t
}

// Get returns the upstream bound to k if the binding is live under pol and
// marks it used; see Store.Get.
func (t *Table) Get(k Key, pol Policy) (Bound, bool) {
	now := t.clk.Now()
	t.mu.Lock()
	e := t.entries[k]
	if e != nil && pol.expired(e.created, e.lastUsed, now) {
		t.removeLocked(e)
		e = nil
	}
	if e == nil {
		t.mu.Unlock()
		t.misses.Add(1)
		return Bound{}, false
	}
	e.lastUsed, e.pol = now, pol
	t.moveToFrontLocked(e)
	b := Bound{Home: e.upstream, StandIn: e.standIn}
	t.mu.Unlock()
	t.hits.Add(1)
	return b, true
}

// Peek returns the binding of k if it is live under pol, changing nothing;
// see Store.Peek.
func (t *Table) Peek(k Key, pol Policy) (Binding, bool) {
	now := t.clk.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.entries[k]
	if e == nil || pol.expired(e.created, e.lastUsed, now) {
		return Binding{}, false
	}
	return e.bindingLocked(pol), true
}

// Bind binds k to upstream and marks it used; see Store.Bind. A new binding
// in a full table evicts the least recently used one.
func (t *Table) Bind(k Key, upstream string, pol Policy) { t.bind(k, upstream, pol, false) }

// BindStandIn sets k's stand-in; see Store.BindStandIn.
func (t *Table) BindStandIn(k Key, upstream string, pol Policy) { t.bind(k, upstream, pol, true) }

func (t *Table) bind(k Key, upstream string, pol Policy, standIn bool) {
	if k.Session == "" || upstream == "" {
		return
	}
	now := t.clk.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	if e := t.entries[k]; e != nil {
		switch live := !pol.expired(e.created, e.lastUsed, now); {
		case standIn && live:
			e.standIn = upstream
		case e.upstream != upstream || !live:
			e.upstream, e.created, e.standIn = upstream, now, ""
		default:
			e.standIn = ""
		}
		e.lastUsed, e.pol = now, pol
		t.moveToFrontLocked(e)
		return
	}
	t.collectTailLocked(now, 2)
	var e *entry
	if len(t.entries) >= t.max {
		e = t.root.prev
		if !e.pol.expired(e.created, e.lastUsed, now) {
			t.evictions.Add(1)
		}
		t.removeLocked(e)
		*e = entry{} // reuse the victim's memory
	} else {
		e = new(entry)
	}
	e.key, e.upstream, e.created, e.lastUsed, e.pol = k, upstream, now, now, pol
	t.entries[k] = e
	t.pushFrontLocked(e)
	if head := t.sessions[k.Session]; head != nil {
		head.sprev = e
		e.snext = head
	}
	t.sessions[k.Session] = e
}

// Delete removes the binding of k and reports whether a live one was removed.
func (t *Table) Delete(k Key) bool {
	now := t.clk.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	e := t.entries[k]
	if e == nil {
		return false
	}
	live := !e.pol.expired(e.created, e.lastUsed, now)
	t.removeLocked(e)
	return live
}

// DeleteSession removes every binding of session and returns how many live
// ones it removed; see Store.DeleteSession.
func (t *Table) DeleteSession(session string) int {
	now := t.clk.Now()
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for e := t.sessions[session]; e != nil; {
		next := e.snext
		if !e.pol.expired(e.created, e.lastUsed, now) {
			n++
		}
		t.removeLocked(e)
		e = next
	}
	return n
}

// Lookup returns the live bindings of session ordered by route then key,
// never nil; see Store.Lookup.
func (t *Table) Lookup(session string) []Binding {
	now := t.clk.Now()
	t.mu.Lock()
	out := []Binding{}
	for e := t.sessions[session]; e != nil; e = e.snext {
		if !e.pol.expired(e.created, e.lastUsed, now) {
			out = append(out, e.bindingLocked(e.pol))
		}
	}
	t.mu.Unlock()
	slices.SortFunc(out, func(a, b Binding) int {
		return cmp.Or(cmp.Compare(a.Route, b.Route), cmp.Compare(a.APIKey, b.APIKey))
	})
	return out
}

// Len returns the number of stored bindings, including expired ones not yet
// collected (see Table).
func (t *Table) Len() int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return len(t.entries)
}

// Stats returns the Get hits and misses and the live bindings evicted to make
// room (expired bindings removed are not evictions), since the table was made.
func (t *Table) Stats() (hits, misses, evictions uint64) {
	return t.hits.Load(), t.misses.Load(), t.evictions.Load()
}

// bindingLocked returns e as a Binding with its expiry under pol.
func (e *entry) bindingLocked(pol Policy) Binding {
	return Binding{
		Key:       e.key,
		Upstream:  e.upstream,
		StandIn:   e.standIn,
		CreatedAt: e.created,
		LastUsed:  e.lastUsed,
		ExpiresAt: pol.expiresAt(e.created, e.lastUsed),
	}
}

// collectTailLocked removes up to n expired bindings from the LRU tail, so
// that idle bindings do not linger until eviction. Under one sliding TTL for
// every route the tail is the first binding to expire, so this keeps the
// table close to its live size at O(1) cost per Bind.
func (t *Table) collectTailLocked(now time.Time, n int) {
	for range n {
		e := t.root.prev
		if e == &t.root || !e.pol.expired(e.created, e.lastUsed, now) {
			return
		}
		t.removeLocked(e)
	}
}

// removeLocked unlinks e from the map, the LRU ring and its session list.
func (t *Table) removeLocked(e *entry) {
	delete(t.entries, e.key)
	e.prev.next, e.next.prev = e.next, e.prev
	e.prev, e.next = nil, nil
	if e.sprev != nil {
		e.sprev.snext = e.snext
	} else if e.snext != nil {
		t.sessions[e.key.Session] = e.snext
	} else {
		delete(t.sessions, e.key.Session)
	}
	if e.snext != nil {
		e.snext.sprev = e.sprev
	}
	e.sprev, e.snext = nil, nil
}

// pushFrontLocked links e in as the most recently used entry.
func (t *Table) pushFrontLocked(e *entry) {
	e.prev, e.next = &t.root, t.root.next
	t.root.next.prev = e
	t.root.next = e
}

// moveToFrontLocked makes e the most recently used entry.
func (t *Table) moveToFrontLocked(e *entry) {
	if t.root.next == e {
		return
	}
	e.prev.next, e.next.prev = e.next, e.prev
	t.pushFrontLocked(e)
}
