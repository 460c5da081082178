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
	n  map[waitingKey]int
}

// waitingKey is one upstream's waiters of one class and key.
type waitingKey struct {
	upstream, key string
	class         Class
}

// Add counts a request of tenant t waiting on upstream; done uncounts it
// (call it exactly once).
func (w *Waiting) Add(upstream string, t Tenant) (done func()) {
	k := waitingKey{upstream, t.Key, t.Class}
	w.mu.Lock()
	if w.n == nil {
		w.n = map[waitingKey]int{}
	}
	w.n[k]++
	w.mu.Unlock()
	return func() {
		w.mu.Lock()
		if w.n[k]--; w.n[k] <= 0 {
			delete(w.n, k)
		}
		w.mu.Unlock()
	}
}

// Of returns the requests waiting on upstream by class name and by key
// name; nil maps when none waits.
func (w *Waiting) Of(upstream string) (byClass, byKey map[string]int) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, n := range w.n {
		if k.upstream != upstream {
			continue
		}
		if byClass == nil {
			byClass, byKey = map[string]int{}, map[string]int{}
		}
		byClass[k.class.String()] += n
		byKey[k.key] += n
	}
	return byClass, byKey
}
