package limits

import (
	"sync"
)

// Waiting counts this instance's requests waiting for a slot in upstream
// queues, by class and by key, for the admin API's state
// (docs/reference.md#admin-api). A request counts from the moment it asks
// for a slot it may wait for until it has one or gives up. Safe for
// concurrent use; the zero value is ready.
type Waiting struct {
	mu sync.Mutex // guards n
	n  map[waitingKey]waiters
}

// waitingKey is one upstream's waiters of one class and key.
type waitingKey struct {
	upstream, key string
	class         Class
}

// waiters counts the waiters of one waitingKey, of tenant t.
type waiters struct {
	n int
	t Tenant
}

// Add counts a request of tenant t waiting on upstream; done uncounts it
// (call it exactly once).
func (w *Waiting) Add(upstream string, t Tenant) (done func()) {
	k := waitingKey{upstream, t.Key, t.Class}
	w.mu.Lock()
	if w.n == nil {
		w.n = map[waitingKey]waiters{}
	}
	w.n[k] = waiters{w.n[k].n + 1, t}
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		if c := w.n[k]; c.n <= 1 {
			delete(w.n, k)
		} else {
			w.n[k] = waiters{c.n - 1, c.t}
		}
		w.mu.Unlock()
	}
}

// Of returns the requests waiting on upstream by class name and by key
// name; nil maps when none waits.
func (w *Waiting) Of(upstream string) (byClass, byKey map[string]int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, c := range w.n {
		if k.upstream != upstream {
			continue
		}
		if byClass == nil {
			byClass, byKey = map[string]int{}, map[string]int{}
		}
		byClass[k.class.String()] += c.n
		byKey[k.key] += c.n
	}
	return byClass, byKey
}

// Shares returns the share (Tenant.Share) of each key with requests
// waiting on upstream, by key name, as the fair queue weighs it while the
// keys waiting here are its team's busy keys: a team's weight split among
// its waiting keys. Nil when none waits.
func (w *Waiting) Shares(upstream string) map[string]float64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	var out map[string]float64
	for k, c := range w.n {
		if k.upstream != upstream {
			continue
		}
		var others float64
		for k2, c2 := range w.n {
			if k2.upstream == upstream && k2.class == k.class && k2.key != k.key && c.t.Team != "" && c2.t.Team == c.t.Team {
				others += orOne(c2.t.Weight)
			}
		}
		if out == nil {
			out = map[string]float64{}
		}
		out[k.key] = c.t.Share(others)
	}
	return out
}
