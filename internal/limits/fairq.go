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
// its flow (team and key) with the weights that give the flow its share.
type Tenant struct {
	Class     Class
	Team, Key string
	// Weight is the key's weight (keys[].weight); ≤ 0 counts as 1.
	Weight float64
	// TeamWeight is the team's weight (teams[].weight); ≤ 0 counts as 1.
	// Unused for a key of no team.
	TeamWeight float64
}

// Flow names the tenant's flow: the unit the fair queue shares slots
// across within a class.
func (t Tenant) Flow() string { return t.Class.String() + "/" + t.Team + "/" + t.Key }

// Share returns t's weight in its class's fair queue, given others, the
// sum of the weights of the other keys of its team that are backlogged in
// the same queue and class: a key of no team weighs its Weight, a team's
// key TeamWeight × Weight / (Weight + others). A team's lone busy key thus
// has the whole team's weight, and the keys that join it split it.
func (t Tenant) Share(others float64) float64 {
	own := orOne(t.Weight)
	if t.Team == "" {
		return own
	}
	return orOne(t.TeamWeight) * own / (own + others)
}

// orOne returns w, or 1 when w ≤ 0.
func orOne(w float64) float64 {
	if w <= 0 {
		return 1
	}
	return w
}

// FlowTag is what the fair queue keeps of one flow: its last finish tag,
// the weight of its key when it last joined and the sum of its refunds
// (Refund).
type FlowTag struct {
	Key      string
	Finish   float64
	Weight   float64
	Refunded float64
}

// Fair queueing (docs/routing.md#tenants-classes-and-fair-queueing) is
// start-time fair queueing (Goyal, Vin and Cheng, SIGCOMM 1996) over two
// levels — teams (a key of no team is a team of its own), then a team's
// keys — turned into one number per waiter, its score; a freed slot goes
// to the waiter with the lowest score. Every class has a virtual time V
// (the start tag of its last request handed a slot) and every flow the
// finish tag F of its last queued request; a request joining the queue
// starts at S = max(V, F) and moves its flow's F to S + 1/share (JoinTags),
// where share is the key's weight in its team split among the team's keys
// that are backlogged — whose F is ahead of V — at that moment (Share). A
// flow that queues many requests thus pushes its own later requests back,
// and another flow's first request starts at V, ahead of them: weighted
// round robin across teams, and across a team's busy keys within its
// share, FIFO within one key. Work-conserving within a team: a key alone
// in its team has the team's whole share; requests already queued keep
// the tags they joined with when the team's busy keys change. The score
// puts the class in front — critical, then a batch request that has
// waited queue.timeout/2 (no starvation), interactive, batch — each in a
// band of its own, and S within it (Score). The same tags and scores rank
// the waiters of the memory queue (queue.go) and of the shared Redis
// queue, whose script only stores the tags and picks the lowest score.

// bandWidth separates the classes' score bands; virtual times stay far
// below it (they advance by 1/share per request, at most 10⁴ with
// weights of 1..100).
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

// Refunds (docs/routing.md#tenants-classes-and-fair-queueing): a request
// that leaves the queue unserved (its queue timeout, its caller gone)
// gives back the 1/share its joining charged: its flow's finish tag moves
// back by that much, and so do the start tags of the flow's requests
// still waiting, which keep the flow's refund total as of their joining
// and move back by what was refunded since (Start). Without refunds a flow
// asking far beyond its share would keep paying for requests that time
// out, its tags drifting ahead of the other such flows' with nothing to
// pull them back, and the capacity the lighter flows leave would go to
// whichever flow drifted least instead of being shared. (Requests that
// joined before the one that left move back too: exact when, as with
// timeouts, a flow's oldest requests leave first.)

// Refund returns the amount by which a request with tags start and finish
// (JoinTags) moves its flow back when it leaves unserved.
func Refund(start, finish float64) float64 { return finish - start }

// Start returns the start tag a waiter ranks by now: the start tag it
// joined with, moved back by what its flow was refunded since (refunded
// now, refunded0 when it joined).
func Start(start, refunded0, refunded float64) float64 { return start - (refunded - refunded0) }

// JoinTags returns the start tag of a request of t joining a queue whose
// class has virtual time v and where t's flow last finished at f, its
// flow's new finish tag and the share they were computed with (Share).
// team holds the tags of the flows of t's team in t's class (t's own among
// them or not); nil for a key of no team.
func JoinTags(t Tenant, v, f float64, team []*FlowTag) (start, finish, share float64) {
	var others float64
	if t.Team != "" {
		for _, ft := range team {
			if ft.Key != t.Key && ft.Finish > v {
				others += orOne(ft.Weight)
			}
		}
	}
	share = t.Share(others)
	start = max(v, f)
	return start, start + 1/share, share
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
// of the last request handed a slot, and per flow its FlowTag, grouped by
// class and team for JoinTags. Its Redis twin is the hashes the scripts
// read and write for Go (internal/state/redis_admit.go).
type fairState struct {
	v     [3]float64               // by Class
	flows map[teamClass]*teamFlows // by class and team ("": the keys of none)
	n     int                      // flows held
	seq   uint64
}

// teamClass is one team's flows of one class ("" team: the keys of none).
type teamClass struct {
	class Class
	team  string
}

// teamFlows are the tags of one team's flows in one class; a waiter holds
// its flow's, to read the refunds.
type teamFlows struct {
	tags []*FlowTag
	at   map[string]int // index in tags by key
}

// maxFlows bounds the flows fairState holds: past it, flows whose finish
// tag lies behind their class's virtual time (which start at the virtual
// time anyway, and have nothing waiting) are forgotten.
const maxFlows = 4096

// join gives w, of tenant t, its arrival order, its flow and its tags.
func (f *fairState) join(w *waiter, t Tenant) {
	f.seq++
	w.seq = f.seq
	if f.flows == nil {
		f.flows = map[teamClass]*teamFlows{}
	}
	tc := teamClass{t.Class, t.Team}
	tf := f.flows[tc]
	if tf == nil {
		tf = &teamFlows{at: map[string]int{}}
		f.flows[tc] = tf
	}
	i, known := tf.at[t.Key]
	if !known {
		i = len(tf.tags)
		tf.at[t.Key] = i
		tf.tags = append(tf.tags, &FlowTag{Key: t.Key})
		f.n++
	}
	var team []*FlowTag
	if t.Team != "" {
		team = tf.tags
	}
	ft := tf.tags[i]
	var fin float64
	w.start, fin, _ = JoinTags(t, f.v[t.Class], ft.Finish, team)
	ft.Finish, ft.Weight = fin, t.Weight
	w.flow, w.refund, w.refunded0 = ft, Refund(w.start, fin), ft.Refunded
	if f.n > maxFlows {
		f.prune()
	}
}

// startOf returns the start tag w ranks by now (Start).
func startOf(w *waiter) float64 { return Start(w.start, w.refunded0, w.flow.Refunded) }

// left gives back to w's flow what w's joining charged: w leaves the
// queue unserved.
func (f *fairState) left(w *waiter) {
	w.flow.Finish -= w.refund
	w.flow.Refunded += w.refund
}

// served advances w's class's virtual time to w's start tag.
func (f *fairState) served(w *waiter) {
	f.v[w.class] = max(f.v[w.class], startOf(w))
}

// prune forgets the flows whose finish tag is behind their class's
// virtual time: they would start at the virtual time anyway, and do not
// count as backlogged.
func (f *fairState) prune() {
	for tc, tf := range f.flows {
		kept := tf.tags[:0]
		clear(tf.at)
		for _, ft := range tf.tags {
			if ft.Finish > f.v[tc.class] {
				tf.at[ft.Key] = len(kept)
				kept = append(kept, ft)
			}
		}
		f.n -= len(tf.tags) - len(kept)
		tf.tags = kept
		if len(kept) == 0 {
			delete(f.flows, tc)
		}
	}
}
