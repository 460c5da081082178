package proxy

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"switchyard/internal/affinity"
	"switchyard/internal/balancer"
	"switchyard/internal/clock"
	"switchyard/internal/outcome"
	"switchyard/internal/state"
	"switchyard/internal/store"
)

// sessionRef is a request's session and, on the route being tried, its
// binding key.
type sessionRef struct {
	id     string // the session id, when affinity is on and the request has one; else its prompt's prefix id
	source string // where id was found (affinity.PrefixSource for a prefix id)
	key    affinity.Key
	policy affinity.Policy
}

// loop tries the request's model, then its route's fallback models, until
// one is served; it returns the error to answer when none is.
func (x *exchange) loop(ctx context.Context, rt *route) error {
	for i, model := range append([]string{x.model}, rt.cfg.FallbackModels...) {
		if i > 0 && (!x.key.allows(model) || x.prefs != nil && x.prefs.NoFallbacks) {
			continue // allow_fallbacks: false keeps the request on its own model's plan
		}
		if x.tryModel(ctx, model, i > 0) {
			return nil
		}
		if ctx.Err() != nil {
			break
		}
	}
	if !x.tally.found {
		if x.countLocally() {
			return nil
		}
		return newError(ErrModelNotFound, fmt.Sprintf("no upstream serves model %q", x.model))
	}
	if x.tally.attempts == 0 && x.tally.preferred != "" && ctx.Err() == nil {
		return newError(ErrNoPreferredUpstream, "no upstream for model "+strconv.Quote(x.model)+
			" matches the request's routing preferences: "+x.tally.preferred)
	}
	if x.tally.attempts == 0 && x.tally.incompatible != "" && ctx.Err() == nil {
		return x.tally.incompatibleError(x.model, x.tr.err)
	}
	if x.r.Context().Err() != nil {
		x.clientGone()
		return nil
	}
	return x.tally.exhausted(x.model)
}

// tryModel plans and attempts the upstreams of model, and reports whether
// a response was written. When every candidate is cooling down or full, it
// waits up to the route's max_wait for the first to free up.
func (x *exchange) tryModel(ctx context.Context, model string, fallback bool) bool {
	ups := x.cat.candidates(model, x.key, x.codec.Family(), x.tr.client != nil)
	if len(ups) == 0 {
		return false
	}
	x.tally.found = true
	rt := x.cat.route(model)
	body := x.body
	if fallback {
		var err error
		if body, err = x.codec.Encode(x.body, model, x.codec.Family()); err != nil {
			x.tally.failures = append(x.tally.failures, failure{detail: "rewriting model for fallback: " + err.Error()})
			return false
		}
	}
	var waited time.Duration
	for {
		plan, wait := x.plan(ctx, rt, model, ups, int64(len(body)))
		x.tally.noteRetry(wait)
		if x.tally.plans == nil {
			x.tally.plans = x.tally.planBuf[:0]
		}
		x.tally.plans = append(x.tally.plans, &plan.Decision)
		if len(plan.Order)+len(plan.Waitable) > 0 || wait <= 0 || waited+wait > rt.cfg.MaxWait {
			from := len(x.log.Tried)
			done := x.runPlan(ctx, plan, rt, model, body)
			x.decided(&plan.Decision, x.log.Tried[from:])
			return done
		}
		x.decided(&plan.Decision, nil)
		if clock.Wait(ctx, x.s.opts.Clock, nil, wait) == clock.Done {
			return false
		}
		waited += wait
	}
}

// decided records a plan's decision once its attempts (tried) are over.
func (x *exchange) decided(d *balancer.Decision, tried []store.Attempt) {
	if x.s.opts.OnDecision == nil {
		return
	}
	if len(tried) > 0 {
		d.Tried = make([]balancer.TriedRecord, len(tried))
		for i, t := range tried {
			d.Tried[i] = balancer.TriedRecord{Upstream: t.Upstream, Hedge: t.Hedge, Outcome: t.Outcome, Won: t.Won}
		}
	}
	x.s.opts.OnDecision(d)
}

// plan asks rt's balancer for the order of ups with the live state, and
// returns it with the shortest wait until an unavailable candidate frees up.
func (x *exchange) plan(ctx context.Context, rt *route, model string, ups []*upstream, bodyLen int64) (balancer.Plan, time.Duration) {
	cands, wait := x.s.snapshot(ups, model, x.est)
	if x.tr.client != nil {
		x.markCompatible(cands, ups, model)
	}
	x.pinned.markPinned(cands)
	req := balancer.Request{
		RequestID: x.log.ID, Model: model, Key: x.key.cfg.Name, Stream: x.stream, K: 1 + rt.cfg.Retries,
		BodyLen: bodyLen, InputTokens: bodyLen / 4, MaxTokens: x.maxTokens, OutputEWMA: rt.out.value(), Prefs: x.prefs,
	}
	x.pin(ctx, &req, rt)
	bal := rt.bal
	ru := x.ruleFor(rt)
	if ru != nil {
		bal = ru.apply(&req, cands, bal)
	}
	plan := bal.Plan(req, cands)
	if ru != nil {
		plan.Decision.Rule = ru.ref
	}
	if x.rerouted != nil {
		plan.Decision.ReroutedBy = x.rerouted.ref
	}
	if x.debug {
		x.costs.note(&req, cands)
	}
	if x.trace != nil {
		plan.Decision.TraceID = x.log.TraceID
		x.trace.plan(&plan.Decision)
	}
	if len(plan.Order)+len(plan.Waitable) == 0 {
		x.tally.noteIncompatible(&plan.Decision)
		if x.prefs != nil {
			x.tally.notePreferences(&plan.Decision)
		}
		x.pinned.notePinned(&plan.Decision, &x.tally)
	}
	if x.session.key.Session != "" {
		x.s.opts.Metrics.Affinity(plan.Decision.Affinity.Result)
	}
	if plan.Decision.Chosen != "" {
		x.s.opts.Metrics.Selection(rt.cfg.Model, plan.Decision.Chosen)
	}
	return plan, wait
}

// prefixID is the prefix-affinity id of a request's canonical prompt
// (docs/routing.md#prefix-cache-affinity) on route rt, "" when prefix
// affinity is off there or the prompt is shorter than min_tokens: a body
// shorter than min_tokens×4 bytes cannot hold such a prompt, which costs
// one comparison. Only a request without a session id uses it.
func (q *request) prefixID(rt *route) string {
	if !rt.prefixOn || len(q.body) < rt.prefix.MinTokens*4 {
		return ""
	}
	return affinity.PrefixID(q.body, q.prompt, rt.prefix.MinTokens)
}

// pin looks up the session's binding on route rt and sets it on req. A
// prefix binding follows rt's prefix policy, and on a route with prefix
// affinity off it is not looked up.
func (x *exchange) pin(ctx context.Context, req *balancer.Request, rt *route) {
	x.session.key = affinity.Key{}
	prefix := x.session.source == affinity.PrefixSource
	if x.session.id == "" || !rt.affinityOn || prefix && !rt.prefixOn {
		return
	}
	req.Session, req.SessionSource = x.session.id, x.session.source
	x.session.key, x.session.policy = affinity.Key{APIKey: x.key.cfg.Name, Route: rt.cfg.Model, Session: x.session.id}, rt.affinity
	if prefix {
		x.session.policy, req.MaxShare = rt.prefix.Policy, rt.prefix.MaxShare
	}
	if bound, ok := x.s.opts.Affinity.Get(ctx, x.session.key, x.session.policy); ok {
		req.Pinned, req.StandIn = bound.Home, bound.StandIn
		if up := x.cat.byName[bound.Home]; up != nil {
			req.Migrate = up.migrate
		}
	}
}

// runPlan attempts the plan's upstreams in order, then waits for a slot on
// its waitable ones; on a hedged route it races slow attempts (race). It
// reports whether a response was written.
func (x *exchange) runPlan(ctx context.Context, plan balancer.Plan, rt *route, model string, body []byte) bool {
	c := &cursor{order: plan.Order, waits: plan.Waitable}
	if rt.hedge.on() {
		return x.race(ctx, c, &plan, rt, model, body)
	}
	for {
		up, lease := x.claim(ctx, c, rt, false)
		if up == nil {
			return false
		}
		a, actx := x.newAttempt(ctx, up, lease, rt, model, body, false)
		if !a.start(actx) {
			if x.settle(a, a.o, false, &plan) {
				return true
			}
			continue
		}
		x.noteFirstByte(a)
		return x.settle(a, x.commit(a), true, &plan)
	}
}

// newAttempt makes an attempt on up, admitted with lease, and notes it in
// the request log (and the trace); actx is the attempt's own context,
// which its cancel ends.
func (x *exchange) newAttempt(ctx context.Context, up *upstream, lease state.Lease, rt *route, model string, body []byte, hedge bool) (a *attempt, actx context.Context) {
	x.tally.attempts++
	x.log.Tried = append(x.log.Tried, store.Attempt{Upstream: up.cfg.Name, Start: x.s.opts.Clock.Now().Sub(x.began), Hedge: hedge})
	i := len(x.log.Tried) - 1
	if x.trace != nil {
		ctx = x.trace.attempt(ctx, &x.request, i, x.began.Add(x.log.Tried[i].Start), up, model, hedge)
	}
	actx, cancel := context.WithCancelCause(ctx)
	a = &attempt{req: &x.request, up: up, lease: lease, rs: rt.cfg.RouteSettings, model: model, out: rt.out, body: body,
		i: i, hedge: hedge, cancel: cancel}
	return a, actx
}

// commit commits a started attempt: its answer goes to the client.
func (x *exchange) commit(a *attempt) outcome.Outcome {
	if x.trace != nil {
		x.trace.respModel = a.respModel
	}
	rp := &reply{w: x.w, log: &x.log, pin: &x.pinned, attempts: x.tally.attempts, raced: x.raced}
	if x.debug {
		rp.debug = x.debugView().headers
	}
	return a.commit(rp)
}

// cursor walks a plan's candidates: its order, then its waitable ones
// (which grow when an upstream fills up after planning).
type cursor struct {
	order, waits []string
	i            int
}

// next returns the next candidate and whether it may be waited for.
func (c *cursor) next() (name string, waitable, ok bool) {
	i := c.i
	if i >= len(c.order)+len(c.waits) {
		return "", false, false
	}
	c.i++
	if i < len(c.order) {
		return c.order[i], false, true
	}
	return c.waits[i-len(c.order)], true, true
}

// take removes order[j], one of the candidates left (j ≥ i), keeping the
// others in their order. The plan's order is copied, not changed.
func (c *cursor) take(j int) {
	c.order = append(c.order[:j:j], c.order[j+1:]...)
}

// requeue queues name for after the rest of the plan, as if planned waitable.
func (c *cursor) requeue(name string) { c.waits = append(c.waits[:len(c.waits):len(c.waits)], name) }

// claim admits the plan's next candidate that will take an attempt, noting
// why each one before it was skipped; nil when none is left, the retry
// budget is spent or ctx ended. A hedge claims with claimHedge.
func (x *exchange) claim(ctx context.Context, c *cursor, rt *route, hedge bool) (*upstream, state.Lease) {
	if hedge {
		return x.claimHedge(ctx, c)
	}
	for ctx.Err() == nil {
		name, waitable, ok := c.next()
		if !ok {
			return nil, nil
		}
		if x.tally.attempts > 0 {
			if !rt.budget.TryRetry() {
				x.tally.failures = append(x.tally.failures, failure{detail: "retry budget exhausted"})
				return nil, nil
			}
			x.s.opts.Metrics.Retry(rt.cfg.Model)
		}
		up := x.cat.byName[name]
		lease, skip := x.admit(ctx, up, waitable)
		x.tally.noteSkip(skip)
		if skip.full && up.cfg.Queue.Enabled {
			// Its last slot went to a concurrent request since planning:
			// queue for it after the rest of the order.
			c.requeue(name)
			continue
		}
		if skip.shed {
			x.tally.markShed(name)
		}
		if lease == nil {
			x.tally.failures = append(x.tally.failures, failure{upstream: name, detail: skip.reason, class: outcome.Canceled})
			if x.trace != nil {
				x.trace.skip(x.s.opts.Clock.Now(), name, skip.reason)
			}
			continue
		}
		return up, lease
	}
	return nil, nil
}

// claimHedge admits, for a hedge, the first candidate left in the plan's
// order with a free slot and room in its limits now (never a waitable one),
// and takes it out of the plan. The candidates it passes stay in the plan
// as they were, for a retry after a failure (docs/routing.md#hedged-requests: hedging only
// adds races), and are not noted as failures. It spends no retry budget
// (hedges have their own).
func (x *exchange) claimHedge(ctx context.Context, c *cursor) (*upstream, state.Lease) {
	for j := c.i; j < len(c.order) && ctx.Err() == nil; j++ {
		up := x.cat.byName[c.order[j]]
		lease, skip := x.admit(ctx, up, false)
		x.tally.noteSkip(skip)
		if lease != nil {
			c.take(j)
			return up, lease
		}
	}
	return nil, nil
}

// noteSkip keeps what a refused admission says for the final error:
// when the refusal ends, and the queue's own refusal.
func (t *tally) noteSkip(sk skip) {
	t.noteRetry(sk.wait)
	t.shed = t.shed || sk.shed
	if sk.queueErr != nil {
		t.queueErr = sk.queueErr
	}
}

// settle ends attempt a with outcome o and reports whether the request is
// over: the attempt was committed, or the client has gone. Otherwise the
// failure is noted for the final error and the loop goes on.
func (x *exchange) settle(a *attempt, o outcome.Outcome, committed bool, plan *balancer.Plan) bool {
	name := a.up.cfg.Name
	x.noteEnd(a.i, o, committed)
	o.Hedge = a.hedge
	// A success (re)binds the session.
	var e state.Ending
	if o.Class == outcome.Success && x.session.key.Session != "" {
		if bind := bindingOf(plan.Decision.Affinity, name, x.session.policy.FailBack); bind != bindNone {
			e.Bind = state.Bind{Key: x.session.key, Upstream: name, Policy: x.session.policy, StandIn: bind == bindStandIn}
		}
	}
	a.end(o, e)
	if o.Class == outcome.Canceled && x.r.Context().Err() != nil {
		x.clientGone()
		return true
	}
	if committed {
		return true
	}
	if o.Class == outcome.RateLimited {
		x.tally.noteRetry(o.Cooldown)
	}
	x.tally.failures = append(x.tally.failures, failure{upstream: name, detail: o.Detail, class: o.Class})
	return false
}

// clientGone records a request whose client disconnected: 499, whatever
// the attempt that saw it was doing (docs/reference.md#client-disconnects).
func (x *exchange) clientGone() {
	if x.log.Status != 499 {
		x.log.Status, x.log.ErrorClass = 499, "client_canceled"
		x.s.opts.Metrics.ClientDisconnect()
	}
}

// noteFirstByte records when a started attempt reached its first byte.
func (x *exchange) noteFirstByte(a *attempt) {
	t := &x.log.Tried[a.i]
	t.FirstByte = a.firstAt.Sub(x.began) - t.Start
}

// noteEnd records how attempt i ended, and whether the client got its answer.
func (x *exchange) noteEnd(i int, o outcome.Outcome, won bool) {
	t := &x.log.Tried[i]
	t.End = x.s.opts.Clock.Now().Sub(x.began) - t.Start
	t.Status, t.Outcome, t.Detail, t.Won = o.Status, o.Class.String(), o.Detail, won
	t.InputTokens, t.OutputTokens = o.InputTokens, o.OutputTokens
	if x.trace != nil {
		x.trace.attemptEnd(i, t, x.began, o, won)
	}
}

// sessionBind is what a success does to the session's binding.
type sessionBind uint8

const (
	bindNone    sessionBind = iota // no session, or no success
	bindHome                       // (re)bind the session to the upstream: its home
	bindStandIn                    // keep the home; the upstream stands in for it
)

// bindingOf says how a success on upstream name binds the session whose
// affinity record is a (docs/routing.md#2-candidates-and-session-affinity). Its home serving it (again) binds
// it home, which ends any stand-in: with fail_back that is how a session
// returns. Another upstream serving a session whose home is only
// unavailable for now — failed this time, breaker open, cooling down, full
// — becomes its stand-in, which later turns go to while the home is out,
// so that one substitute's prompt cache warms up instead of the session
// scattering. Without fail_back, that upstream becomes its home. A home
// that no longer serves the model, a miss and a migration bind anew. A
// prefix binding that yielded to normal selection stays as it is
// (docs/routing.md#prefix-cache-affinity).
func bindingOf(a balancer.AffinityRecord, name string, failBack bool) sessionBind {
	switch {
	case a.Result == balancer.AffinityYielded:
		return bindNone
	case a.Result == balancer.AffinityHit && name == a.Bound,
		a.Result != balancer.AffinityHit && a.Result != balancer.AffinityFallthrough && a.Result != balancer.AffinityStandIn,
		a.Reason == balancer.ReasonNotACandidate,
		!failBack:
		return bindHome
	}
	return bindStandIn
}
