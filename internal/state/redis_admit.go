package state

import (
	"context"
	_ "embed"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"switchyard/internal/limits"
)

var (
	//go:embed lua/leave.lua
	leaveLua    string
	leaveScript = redis.NewScript(leaveLua)
)

// Ticket is an admitted request: Settle ends it.
type Ticket struct {
	upstream string
	id       string
	bucket   int64 // the TPM bucket (Unix seconds) its tokens were reserved in
	tokens   int64
	gen      int64 // the shared breaker's generation it was admitted in; noGeneration when local
	limited  bool  // its upstream has max_concurrency: it holds a lease in Redis
	// Shared is false when Redis could not be asked: the caller's local
	// checks decide, and Settle still gives the lease back.
	Shared bool
	// Probe is true when the request is the shared half-open probe.
	Probe bool
}

// noGeneration is the breaker generation of a ticket Redis did not admit:
// its outcome feeds no shared breaker generation (settle.lua).
const noGeneration = -1

// newTicket returns a ticket with a fresh id for a request to a.Upstream.
func (r *Redis) newTicket(a Admission) Ticket {
	return Ticket{
		upstream: a.Upstream, id: r.newID(),
		tokens: max(a.Tokens, 0), gen: noGeneration, limited: a.MaxConcurrency > 0,
	}
}

// Admit asks Redis whether one request may go to a.Upstream now and, if so,
// counts it, reserves its tokens and takes a lease: one round trip (a
// queued request asks again every 20 ms, or at once when a slot here frees
// up, until a.Queue.Timeout). When Redis is down, or fails while asked
// (even while the request is queued), it returns a local ticket (Shared
// false) and no denial: the caller decides with its local state and, if it
// admits, holds the ticket (hold). A request whose ctx ends while it is
// queued is refused with reason canceled and ctx's error, never
// queue_timeout.
func (r *Redis) Admit(ctx context.Context, a Admission) (Ticket, *Denial) {
	t := r.newTicket(a)
	wait := a.Wait && a.Queue.Enabled && a.MaxConcurrency > 0
	var place queuePlace          // its place in the shared queue, once it has one
	var deadline <-chan time.Time // set once the request waits in the shared queue
	for {
		if !r.up.Load() {
			r.fallback(OpAdmit)
			if deadline != nil {
				r.abandonQueue(t, a.Queue.Timeout)
			}
			return t, nil
		}
		// Take the wake-up channel before asking: a slot freed here between
		// the answer and the wait must not be missed.
		var woken <-chan struct{}
		if wait {
			woken = r.wakeup(a.Upstream)
		}
		res, err := r.admitOnce(ctx, &t, a, wait, false, &place)
		if err != nil && ctx.Err() != nil { // the caller left, Redis did not fail
			r.leaveQueue(t, a, &place)
			return t, canceled(ctx)
		}
		if !r.result(ctx, OpAdmit, err) || len(res) < 3 {
			if deadline != nil {
				r.abandonQueue(t, a.Queue.Timeout)
			}
			return t, nil
		}
		if ok, _ := res[0].(int64); ok == 1 {
			t.Shared, t.Probe = true, res[1] == int64(1)
			if len(res) > 3 {
				t.gen, _ = res[3].(int64)
			}
			r.hold(t)
			return t, nil
		}
		reason, _ := res[1].(string)
		if reason == "join" {
			if !r.join(&place, a, res) {
				return t, denial("shed", 0)
			}
			continue // ask again at once, with its score
		}
		if len(res) > 3 && place.joined { // a queued request's 'full': its flow's refunds
			place.refunded = parseFloat(res[3])
		}
		ms, _ := res[2].(int64)
		if reason != "full" || !wait {
			return t, denial(reason, time.Duration(ms)*time.Millisecond)
		}
		if deadline == nil {
			deadline = r.clk.After(a.Queue.Timeout)
		}
		select {
		case <-woken:
		case <-r.clk.After(queuePoll):
		case <-deadline:
			r.leaveQueue(t, a, &place)
			if ctx.Err() != nil { // gone just as the queue timed out: it is gone
				return t, canceled(ctx)
			}
			return t, denial("queue_timeout", 0)
		case <-ctx.Done():
			r.leaveQueue(t, a, &place)
			return t, canceled(ctx)
		}
	}
}

// queuePlace is a request's place in an upstream's shared queue: what its
// score (limits.Score) is computed from on every call.
type queuePlace struct {
	joined        bool
	at            time.Time // when it joined
	start, finish float64   // its start tag as it joined and its flow's new finish tag
	seen          string    // the flow's finish tag they were computed from
	// refunded0 and refunded are its flow's refund totals when it joined
	// and as last heard (limits.Start).
	refunded0, refunded float64
}

// startTag returns the start tag p ranks by now (limits.Start).
func (p *queuePlace) startTag() float64 { return limits.Start(p.start, p.refunded0, p.refunded) }

// join answers admit.lua's join reply {0, 'join', V, F, non-batch
// waiting, waiting, team, R} for a request about to queue: false when the
// request is shed (limits.Shed), else its place, whose score the next
// call sends, with its tags from limits.JoinTags.
func (r *Redis) join(p *queuePlace, a Admission, res []any) bool {
	if len(res) < 8 {
		return false
	}
	nonBatch, _ := res[4].(int64)
	depth, _ := res[5].(int64)
	if limits.Shed(a.Queue, a.Tenant.Class, int(nonBatch), int(depth)) {
		return false
	}
	var team []*limits.FlowTag
	if flat, _ := res[6].([]any); a.Tenant.Team != "" {
		team = teamTags(flat)
	}
	p.seen, _ = res[3].(string)
	p.start, p.finish, _ = limits.JoinTags(a.Tenant, parseFloat(res[2]), parseFloat(res[3]), team)
	p.refunded0 = parseFloat(res[7])
	p.refunded = p.refunded0
	p.at, p.joined = r.clk.Now(), true
	return true
}

// teamTags reads a team's flow hash, field by field (f:<key> finish tag,
// w:<key> weight, r:<key> refunds, which JoinTags does not need).
func teamTags(flat []any) []*limits.FlowTag {
	byKey := map[string]*limits.FlowTag{}
	var out []*limits.FlowTag
	for i := 0; i+1 < len(flat); i += 2 {
		field, _ := flat[i].(string)
		kind, key, ok := strings.Cut(field, ":")
		if !ok || kind != "f" && kind != "w" {
			continue
		}
		ft := byKey[key]
		if ft == nil {
			ft = &limits.FlowTag{Key: key}
			byKey[key] = ft
			out = append(out, ft)
		}
		if kind == "f" {
			ft.Finish = parseFloat(flat[i+1])
		} else {
			ft.Weight = parseFloat(flat[i+1])
		}
	}
	return out
}

// flowHash returns the hash (admit.lua's KEYS[10]) that holds a's flow's
// tags, and the name of its flow in it: a team's hash of its keys in a's
// class, by key, or the fair hash, by flow.
func (r *Redis) flowHash(a Admission) (hash, name string) {
	if a.Tenant.Team == "" {
		return r.keys.upstream(a.Upstream, "fair"), a.Tenant.Flow()
	}
	return r.keys.upstream(a.Upstream, "fair:"+a.Tenant.Class.String()+"/"+a.Tenant.Team), a.Tenant.Key
}

// queueArgs are admit.lua's queue arguments for a request at place p:
// its score, class and finish tag fields, its flow's new finish tag and
// its start tag, the non-batch bound, the flow's finish tag they were
// computed from, whether the join reply brings the team's tags, the
// weight field and weight, and the refunds field.
func (r *Redis) queueArgs(a Admission, p *queuePlace) []any {
	score := ""
	if p != nil && p.joined {
		now := r.clk.Now()
		score = fmtFloat(limits.Score(a.Queue, a.Tenant.Class, p.startTag(), float64(p.at.UnixMilli()), now.Sub(p.at)))
	}
	var start, finish float64
	seen := ""
	if p != nil {
		start, finish, seen = p.startTag(), p.finish, p.seen
	}
	_, name := r.flowHash(a)
	team, wfield, weight := "0", "", ""
	if a.Tenant.Team != "" {
		team, wfield, weight = "1", "w:"+name, fmtFloat(a.Tenant.Weight)
	}
	return []any{score, "v:" + a.Tenant.Class.String(), "f:" + name, fmtFloat(finish), fmtFloat(start),
		fmtFloat(limits.BatchBand), seen, team, wfield, weight, "r:" + name}
}

// fmtFloat writes f for a script argument, exactly.
func fmtFloat(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// admitOnce runs admit.lua once for t. probeOnly asks the breaker alone
// (the active prober): no limits, no lease, nothing counted. place is the
// request's place in the queue (nil: none).
func (r *Redis) admitOnce(ctx context.Context, t *Ticket, a Admission, wait, probeOnly bool, place *queuePlace) ([]any, error) {
	now := r.nowMs()
	t.bucket = now / 1000
	c := r.circuit.Load()
	qmode, pmode := "0", "0"
	if wait {
		qmode = "1"
	}
	if probeOnly {
		pmode = "1"
	}
	rctx, cancel := r.opCtx(ctx)
	defer cancel()
	flows, _ := r.flowHash(a)
	args := append([]any{now, t.id, t.tokens, a.RPM, a.TPM, a.MaxConcurrency, r.lease.Milliseconds(),
		c.ProbeInterval.Milliseconds(), r.lease.Milliseconds(),
		qmode, a.Queue.MaxLength, a.Queue.Timeout.Milliseconds(), keepMs, pmode}, r.queueArgs(a, place)...)
	return admitScript.Run(rctx, r.rdb,
		[]string{r.keys.upstream(a.Upstream, "brk"), r.keys.upstream(a.Upstream, "cd"), r.keys.upstream(a.Upstream, "rpm"), r.keys.upstream(a.Upstream, "tpm"),
			r.keys.upstream(a.Upstream, "lease"), r.keys.upstream(a.Upstream, "queue"), r.keys.upstream(a.Upstream, "win"),
			r.keys.upstream(a.Upstream, "fair"), r.keys.upstream(a.Upstream, "joined"), flows},
		args...).Slice()
}

// wakeup returns a channel closed when a lease on upstream is next released here.
func (r *Redis) wakeup(upstream string) <-chan struct{} {
	ch, _ := r.wake.LoadOrStore(upstream, make(chan struct{}))
	return ch.(chan struct{})
}

// released wakes the requests queued here for upstream.
func (r *Redis) released(upstream string) {
	if ch, ok := r.wake.LoadAndDelete(upstream); ok {
		close(ch.(chan struct{}))
	}
}

// leaveQueue removes a queued request that gave up, at place p, and
// gives its flow back what its joining charged (leave.lua); when Redis
// cannot be told, the next Renew removes it (without the refund).
func (r *Redis) leaveQueue(t Ticket, a Admission, p *queuePlace) {
	if r.up.Load() {
		ctx, cancel := r.opCtx(context.Background())
		defer cancel()
		hash, name := r.flowHash(a)
		refund := ""
		if p.joined {
			refund = fmtFloat(limits.Refund(p.start, p.finish))
		}
		err := leaveScript.Run(ctx, r.rdb, []string{r.keys.upstream(t.upstream, "queue"), r.keys.upstream(t.upstream, "joined"), hash},
			t.id, "f:"+name, "r:"+name, refund).Err()
		if r.result(context.Background(), OpAdmit, err) {
			return
		}
	}
	r.abandonQueue(t, a.Queue.Timeout)
}

// abandonQueue leaves t's entry in the shared queue, which it joined at
// most timeout ago, for Renew to remove: admit.lua sweeps it by itself
// only queue.timeout + lease_ttl after it joined, and until then every
// instance's requests wait behind it.
func (r *Redis) abandonQueue(t Ticket, timeout time.Duration) {
	r.abandon(entry{r.keys.upstream(t.upstream, "queue"), t.id}, timeout+r.lease)
}

// entry is one member of a sorted set: a lease or a queue entry.
type entry struct{ key, id string }

// abandon remembers e, given up while Redis could not be told, for Renew
// to remove once Redis answers, or to forget after keep, when Redis has
// swept it by itself.
func (r *Redis) abandon(e entry, keep time.Duration) {
	until := r.clk.Now().Add(keep)
	r.mu.Lock()
	r.left[e] = until
	r.mu.Unlock()
}

// newID returns a fresh lease and queue entry id, unique across instances.
func (r *Redis) newID() string {
	return r.instance + ":" + strconv.FormatUint(r.seq.Add(1), 36)
}

// hold remembers an in-flight ticket of an upstream with max_concurrency,
// so that its lease is renewed (and re-registered after a Redis restart)
// until Settle. The lease set holds nothing else: the shared in-flight
// count of an upstream without the limit is not kept (the local one is).
func (r *Redis) hold(t Ticket) {
	if t.limited {
		r.holdEntry(entry{r.keys.upstream(t.upstream, "lease"), t.id})
	}
}

// holdEntry remembers lease e of a request in flight here, so that Renew
// renews it (and re-registers it after a Redis restart) until unhold.
func (r *Redis) holdEntry(e entry) {
	r.mu.Lock()
	r.held[e.id] = e.key
	r.mu.Unlock()
}

// unhold forgets the lease id of a request that ended: Renew no longer
// renews it.
func (r *Redis) unhold(id string) {
	r.mu.Lock()
	delete(r.held, id)
	r.mu.Unlock()
}

// canceled is the refusal of a request whose caller left while it was
// queued: ctx's error, never a queue timeout.
func canceled(ctx context.Context) *Denial {
	return &Denial{Reason: "canceled", Err: contextError(ctx)}
}

// contextError returns why ctx ended: ctx.Err(), wrapping also
// context.Cause(ctx) when the canceller gave a cause of its own.
func contextError(ctx context.Context) error {
	err, cause := ctx.Err(), context.Cause(ctx)
	if cause == nil || cause == err {
		return err
	}
	return fmt.Errorf("%w: %w", err, cause)
}
