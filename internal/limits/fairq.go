package limits

import (
	"time"

	"switchyard/internal/config"
)

// Class is a request's priority class in an upstream's queue
// (docs/routing.md#tenants-classes-and-fair-queueing): keys[].class.
type Class uint8

// The classes, in the order a freed slot goes to them (critical first);
// the zero value is interactive, the default.
const (
	ClassInteractive Class = iota
	ClassBatch
	ClassCritical
)

// Classes lists every class, for metrics and the admin API.
var Classes = []Class{ClassCritical, ClassInteractive, ClassBatch}

// ParseClass returns the class named s; "" and anything unknown (which
// config validation rejects) are interactive.
func ParseClass(s string) Class {
	switch s {
	case config.ClassBatch:
		return ClassBatch
	case config.ClassCritical:
		return ClassCritical
	}
	return ClassInteractive
}

// String returns the class's configuration name.
func (c Class) String() string {
	switch c {
	case ClassBatch:
		return config.ClassBatch
	case ClassCritical:
		return config.ClassCritical
	}
	return config.ClassInteractive
}

// Tenant is whom a request waiting in a queue belongs to: its class, and
// its flow (team and key) with the flow's weight.
type Tenant struct {
	Class     Class
	Team, Key string
	// Weight is the flow's share within its class; ≤ 0 counts as 1.
	Weight float64
}

// Flow names the tenant's flow: the unit the fair queue shares slots
// across within a class.
func (t Tenant) Flow() string { return t.Class.String() + "/" + t.Team + "/" + t.Key }

// Fair queueing (docs/routing.md#tenants-classes-and-fair-queueing) is
// start-time fair queueing turned into one number per waiter, its score;
// a freed slot goes to the waiter with the lowest score. Every class has a
// virtual time V (the start tag of its last request handed a slot) and
// every flow the finish tag F of its last queued request; a request joining
// the queue starts at S = max(V, F) and moves its flow's F to S + 1/weight
// (StartTag). A flow that queues many requests thus pushes its own later
// requests back, and another flow's first request starts at V, ahead of
// them: weighted round robin across flows, FIFO within one. The score puts
// the class in front — critical, then a batch request that has waited
// queue.timeout/2 (no starvation), interactive, batch — each in a band of
// its own, and S within it (Score). The same scores rank the waiters of the
// memory queue (queue.go) and of the shared Redis queue, whose script only
// picks the lowest.

// bandWidth separates the classes' score bands; virtual times stay far
// below it (they advance by at most 1/weight per request).
const bandWidth = 1e12

// The bands, lowest served first.
const (
	bandCritical = iota
	bandAgedBatch
	bandInteractive
	bandBatch
)

// BatchBand is the lowest score of a waiting batch request that has not
// aged: a waiter scored below it is not batch (or no longer counts as it).
const BatchBand = bandBatch * bandWidth

// StartTag returns the start tag of a request of weight w joining a queue
// whose class has virtual time v and whose flow last finished at f, and the
// flow's new finish tag.
func StartTag(v, f, w float64) (start, finish float64) {
	if w <= 0 {
		w = 1
	}
	start = max(v, f)
	return start, start + 1/w
}

// Score ranks one waiter under q's discipline: lower is served first.
// order is its arrival order (a sequence number, or its arrival time in
// milliseconds), which alone ranks the fifo discipline; start is its start
// tag and waited how long it has been queued.
func Score(q config.Queue, c Class, start, order float64, waited time.Duration) float64 {
	if q.Discipline == config.DisciplineFIFO {
		return order
	}
	band := bandInteractive
	switch c {
	case ClassCritical:
		band = bandCritical
	case ClassBatch:
		band = bandBatch
		if q.Timeout > 0 && 2*waited >= q.Timeout {
			band = bandAgedBatch
		}
	}
	return float64(band)*bandWidth + start
}

// Shed reports whether a request of class c that would have to wait is
// refused instead of queued (reason "shed: batch"): under the fair
// discipline, a batch request when a non-batch request waits already
// (nonBatch > 0) or the queue is over half full (depth of q.MaxLength).
func Shed(q config.Queue, c Class, nonBatch, depth int) bool {
	if c != ClassBatch || q.Discipline == config.DisciplineFIFO {
		return false
	}
	return nonBatch > 0 || (q.MaxLength > 0 && 2*depth > q.MaxLength)
}

// fairState is the memory queue's virtual times: per class, the start tag
// of the last request handed a slot, and per flow its last finish tag. Its
// Redis twin is a hash the scripts read and write for Go
// (internal/state/redis_admit.go).
type fairState struct {
	v      [3]float64         // by Class
	finish map[string]flowTag // by Tenant.Flow
	seq    uint64
}

// flowTag is one flow's last finish tag.
type flowTag struct {
	class  Class
	finish float64
}

// maxFlows bounds fairState.finish: past it, flows whose finish tag lies
// behind their class's virtual time (which start at the virtual time
// anyway) are forgotten.
const maxFlows = 4096

// join gives w, of tenant t, its arrival order and start tag.
func (f *fairState) join(w *waiter, t Tenant) {
	f.seq++
	w.seq = f.seq
	if f.finish == nil {
		f.finish = map[string]flowTag{}
	}
	flow := t.Flow()
	var fin float64
	w.start, fin = StartTag(f.v[t.Class], f.finish[flow].finish, t.Weight)
	f.finish[flow] = flowTag{t.Class, fin}
	if len(f.finish) > maxFlows {
		f.prune()
	}
}

// served advances w's class's virtual time to w's start tag.
func (f *fairState) served(w *waiter) {
	f.v[w.class] = max(f.v[w.class], w.start)
}

// prune forgets the flows whose finish tag is behind their class's
// virtual time: they would start at the virtual time anyway.
func (f *fairState) prune() {
	for k, ft := range f.finish {
		if ft.finish <= f.v[ft.class] {
			delete(f.finish, k)
		}
	}
}
