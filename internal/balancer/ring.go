package balancer

import "sync"

// DecisionRing keeps the most recent routing decisions for the admin API
// (`GET /admin/api/decisions`). Safe for concurrent use; Add never blocks
// on readers for longer than a slice copy.
type DecisionRing struct {
	mu   sync.Mutex // guards buf, next and full
	buf  []*Decision
	next int
	full bool
}

// NewDecisionRing returns a ring holding the last size decisions (1,000 when size ≤ 0).
func NewDecisionRing(size int) *DecisionRing {
	if size <= 0 {
		size = 1000
	}
	return &DecisionRing{buf: make([]*Decision, size)}
}

// Add records d, evicting the oldest when full. d must not be modified afterwards.
func (r *DecisionRing) Add(d *Decision) {
	r.mu.Lock()
	r.buf[r.next] = d
	r.next++
	if r.next == len(r.buf) {
		r.next, r.full = 0, true
	}
	r.mu.Unlock()
}

// Recent returns up to limit decisions, newest first (all when limit ≤ 0).
func (r *DecisionRing) Recent(limit int) []*Decision {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := r.next
	if r.full {
		n = len(r.buf)
	}
	if limit <= 0 || limit > n {
		limit = n
	}
	out := make([]*Decision, 0, limit)
	for i := 1; i <= limit; i++ {
		out = append(out, r.buf[(r.next-i+len(r.buf))%len(r.buf)])
	}
	return out
}

// ByRequest returns the decisions the ring still holds whose RequestID is
// id, oldest first: one per plan the request made (a fallback model plans
// again), and those of any other request that reused the id.
func (r *DecisionRing) ByRequest(id string) []*Decision {
	r.mu.Lock()
	defer r.mu.Unlock()
	n, first := r.next, 0
	if r.full {
		n, first = len(r.buf), r.next
	}
	var out []*Decision
	for i := range n {
		if d := r.buf[(first+i)%len(r.buf)]; d.RequestID == id {
			out = append(out, d)
		}
	}
	return out
}
