package sim

import (
	"strconv"
	"time"

	"switchyard/internal/balancer"
	"switchyard/internal/limits"
	"switchyard/internal/outcome"
	"switchyard/internal/proxy"
)

// This file is the attempt loop of internal/proxy/exchange.go (run,
// tryModel, runPlan, dispatch, attempt, finish, exhausted), cut at every
// point where serve blocks — a max_wait, a queued slot, an upstream's
// answer — so that an event resumes it. The rules are exchange.go's: K = 1 +
// retries candidates, then the waitable ones; a retry needs the retry
// budget; failover on 5xx, 429, connection errors and timeouts, never after
// the first byte reached the client; the breaker's permission, an RPM/TPM
// reservation and a slot are taken before sending and given back after.

// Client-visible outcomes, the labels of the report.
const (
	clientOK              = "200"
	clientNoUpstream502   = "502 no_upstream_available"
	clientNoUpstream503   = "503 no_upstream_available"
	clientQueueFull       = "503 queue_full"
	clientQueueTimeout    = "503 queue_timeout"
	clientModelNotFound   = "404 model_not_found"
	clientKeyRateLimited  = "429 rate_limit_exceeded"
	clientKeySpendLimited = "429 spend_limit_exceeded"
	clientInterrupted     = "200 stream_interrupted"
)

// begin starts a client request (exchange.run): the key's own limits, the
// retry budget's request count, the request timeout, then the first model.
func (r *run) begin(q *request) {
	if k := r.key; k != nil {
		if ok, _ := r.keyRPM.Allow(k.Name, k.RPM); !ok {
			r.complete(q, clientKeyRateLimited)
			return
		}
		if r.spend.Exceeded(limits.ScopeKey, k.Name, k.SpendLimit) {
			r.complete(q, clientKeySpendLimited)
			return
		}
	}
	rt, _ := r.cfg.Settings(q.models[0])
	q.models = append(q.models, rt.FallbackModels...)
	q.deadline = q.start + rt.Timeout
	r.budget.Request()
	r.tryModel(q)
}

// tryModel plans the current model and runs the plan, or waits up to the
// route's max_wait when every candidate is cooling down or full
// (exchange.tryModel).
func (r *run) tryModel(q *request) {
	now := r.eng.now
	for ; q.mi < len(q.models); q.mi, q.waited = q.mi+1, 0 {
		if now >= q.deadline {
			break
		}
		p, ok, err := r.srv.PlanForSim(proxy.SimRequest{
			Model: q.models[q.mi], Key: r.sc.Key, Session: q.sessionID(), Stream: q.stream,
			Tokens: q.est, BodyLen: q.bodyLen, Adjust: r.adjust,
		})
		if err != nil || !ok {
			continue
		}
		q.found = true
		r.rec.plan(p.Plan.Decision.Affinity.Result)
		q.plan, q.waits, q.i = p, p.Plan.Waitable, 0
		wait := p.Wait
		if len(p.Plan.Order)+len(p.Plan.Waitable) > 0 || wait <= 0 || q.waited+wait > p.Settings.MaxWait {
			r.step(q)
			return
		}
		q.waited += wait
		r.eng.schedule(min(wait, q.deadline-now), event{kind: evReplan, req: q})
		return
	}
	r.exhausted(q)
}

// sessionID is the request's session id, "" for none.
func (q *request) sessionID() string {
	if q.sess == nil {
		return ""
	}
	return q.sess.id
}

// step walks the plan from the request's position (exchange.runPlan) until
// an attempt is sent or a slot is waited for; at the end of the plan it
// moves on to the next model.
func (r *run) step(q *request) {
	for ; q.remaining() > 0 && r.eng.now < q.deadline; q.i++ {
		name, waitable := q.pos()
		if q.attempts > 0 && !r.budget.TryRetry() {
			q.nfail++
			break
		}
		u := r.byUp[name]
		switch r.dispatch(q, u, waitable) {
		case dispatchSent, dispatchQueued:
			return
		case dispatchFull:
			if u.cfg.Queue.Enabled {
				q.waits = append(q.waits, name)
				continue
			}
		}
		q.nfail++
	}
	q.mi, q.waited = q.mi+1, 0
	r.tryModel(q)
}

type dispatchResult uint8

const (
	dispatchSent   dispatchResult = iota // the attempt is on its way
	dispatchQueued                       // waiting in the upstream's queue
	dispatchFull                         // every slot taken, not waitable
	dispatchSkip                         // breaker open, rate limited or queue full
)

// dispatch claims the breaker's permission, an RPM/TPM reservation and a
// slot (exchange.dispatch). limits.Slots.Acquire blocks, so the queue of a
// waitable upstream is the simulator's own FIFO (upstreamSim.queue), which
// a slot released in finish is handed to; a newcomer never overtakes it.
func (r *run) dispatch(q *request, u *upstreamSim, waitable bool) dispatchResult {
	name := u.cfg.Name
	if ok, _ := r.breakers.Acquire(name); !ok {
		return dispatchSkip
	}
	resv, ok := r.limiter.Reserve(name, q.est)
	if !ok {
		r.breakers.Record(name, outcome.Of(outcome.Canceled, "not sent: rate limit"))
		return dispatchSkip
	}
	limit := u.cfg.MaxConcurrency
	var release func()
	if limit <= 0 || len(u.queue) == 0 {
		release, ok = r.slots.TryAcquire(name, limit)
	} else {
		ok = false
	}
	if ok {
		q.resv, q.release = resv, release
		r.send(q, u)
		return dispatchSent
	}
	if waitable && (u.cfg.Queue.MaxLength <= 0 || len(u.queue) < u.cfg.Queue.MaxLength) {
		q.resv, q.cur = resv, u
		u.queue = append(u.queue, q)
		wait := q.deadline - r.eng.now
		if t := u.cfg.Queue.Timeout; t > 0 {
			wait = min(wait, t)
		}
		r.eng.schedule(wait, event{kind: evQueueWait, req: q, gen: q.gen})
		return dispatchQueued
	}
	resv.Cancel()
	r.breakers.Record(name, outcome.Of(outcome.Canceled, "not sent: concurrency full"))
	if waitable {
		q.queueErr = queueFull
		return dispatchSkip
	}
	return dispatchFull
}

// queueExpired ends a queued request's wait: queue.timeout, or the
// request's own timeout.
func (r *run) queueExpired(q *request) {
	u := q.cur
	for i, w := range u.queue {
		if w == q {
			u.queue = append(u.queue[:i], u.queue[i+1:]...)
			break
		}
	}
	q.gen++
	q.resv.Cancel()
	r.breakers.Record(u.cfg.Name, outcome.Of(outcome.Canceled, "not sent: queue timeout"))
	if r.eng.now < q.deadline {
		q.queueErr = queueTimeout
	}
	q.nfail++
	q.i++
	r.step(q)
}

// grant hands the slots freed on u to the requests queued for it.
func (r *run) grant(u *upstreamSim) {
	for len(u.queue) > 0 {
		release, ok := r.slots.TryAcquire(u.cfg.Name, u.cfg.MaxConcurrency)
		if !ok {
			return
		}
		q := u.queue[0]
		u.queue = u.queue[1:]
		q.gen++
		q.release = release
		r.send(q, u)
	}
}

// adjust puts the simulator's queue depths into the planning snapshot.
func (r *run) adjust(c *balancer.Candidate) {
	if u := r.byUp[c.Name]; u != nil {
		c.QueueDepth = len(u.queue)
	}
}

// send hands the request to u's provider model and schedules the end of
// the attempt as the gateway would see it: the answer, or the first-byte
// or request timeout, whichever comes first.
func (r *run) send(q *request, u *upstreamSim) {
	now := r.eng.now
	r.stats.Dispatched(u.cfg.Name, r.eng.clk.Now())
	q.attempts++
	q.cur, q.sentAt = u, now
	q.ans = u.prov.receive(now, q.stream, q.prompt, q.maxTok, q.out)
	fbt, left := q.plan.Settings.FirstByteTimeout, q.deadline-now
	after := q.ans.first
	switch {
	case q.ans.kind == answerRefused:
		q.end = endRefused
	case q.ans.kind == answerHang || after > min(fbt, left):
		q.end, after = endFirstByte, fbt
		if left < fbt {
			q.end, after = endTimeout, left
		}
	case q.ans.kind != answerOK:
		q.end = endStatus
	case q.ans.total > left:
		q.end, after = endInterrupted, left
	default:
		q.end, after = endOK, q.ans.total
	}
	r.eng.schedule(after, event{kind: evAttempt, req: q, gen: q.gen})
}

// attemptDone takes an attempt's end (exchange.attempt and finish): the
// rate-limit headers, the 429 cooldown, the outcome fed to the breaker, the
// statistics, the reservation and the spend, the session binding; then the
// answer goes to the client or the loop fails over.
func (r *run) attemptDone(q *request) {
	u, now := q.cur, r.eng.now
	name := u.cfg.Name
	a := &q.ans
	oc, detail := outcome.ServerError, ""
	limitType := ""
	switch q.end {
	case endOK, endInterrupted, endStatus:
		if a.kind == answer429 {
			limitType = a.limitType
		}
		h := u.prov.headers(now, limitType)
		r.limiter.ObserveHeaders(name, h)
		oc, detail = proxy.SimClassify(a.status), "status "+strconv.Itoa(a.status)
		switch oc {
		case outcome.RateLimited:
			r.limiter.RateLimited(name, h, u.prov.rateLimitBody(limitType), 0)
			detail = "rate limited (429)"
		case outcome.Success:
			r.limiter.Succeeded(name)
			if q.end == endInterrupted {
				oc, detail = outcome.ServerError, "request timeout"
			}
		}
	case endRefused:
		detail = "connection error: connection refused"
	case endFirstByte:
		detail = "first byte timeout"
	case endTimeout:
		detail = "request timeout"
	}
	r.rec.attempt(u.idx, q.sentAt, oc)

	q.release()
	r.grant(u)
	res := outcome.Outcome{Class: oc, Detail: detail}
	if oc == outcome.Success {
		if q.stream {
			res.TTFT, res.TPS = a.first, a.tps
		} else {
			res.Latency = a.first
		}
	}
	r.stats.Observe(name, res, r.eng.clk.Now())
	r.breakers.Record(name, outcome.Of(oc, detail))
	if oc == outcome.Success && q.plan.Affinity.Session != "" && proxy.SimRebinds(q.plan.Plan.Decision.Affinity, name) {
		r.sessions.Bind(q.plan.Affinity, name, q.plan.Policy)
	}
	if oc != outcome.Success {
		q.resv.Commit(0)
	} else {
		q.resv.Commit(a.in + a.out)
		cost := limits.Cost(a.in, a.out, u.cfg.Price)
		r.spend.Add(limits.ScopeUpstream, name, cost)
		if r.key != nil {
			r.spend.Add(limits.ScopeKey, r.key.Name, cost)
		}
		r.rec.success(u.idx, a.in, a.out, cost)
	}
	switch {
	case oc == outcome.Success:
		r.complete(q, clientOK)
	case q.end == endInterrupted:
		r.complete(q, clientInterrupted)
	default:
		q.nfail++
		if oc == outcome.RateLimited {
			q.n429++
		}
		q.i++
		r.step(q)
	}
}

// exhausted answers a request every candidate failed or none was available
// for (exchange.exhausted).
func (r *run) exhausted(q *request) {
	switch {
	case !q.found:
		r.complete(q, clientModelNotFound)
	case q.attempts == 0 && q.queueErr == queueFull:
		r.complete(q, clientQueueFull)
	case q.attempts == 0 && q.queueErr == queueTimeout:
		r.complete(q, clientQueueTimeout)
	case q.attempts == 0 || q.nfail > 0 && q.nfail == q.n429:
		r.complete(q, clientNoUpstream503)
	default:
		r.complete(q, clientNoUpstream502)
	}
}

// complete records the client-visible outcome and continues the session.
func (r *run) complete(q *request, label string) {
	var ttft time.Duration // a stream's first event at the client
	if label == clientOK && q.stream {
		ttft = q.sentAt + q.ans.first - q.start
	}
	r.rec.request(q, r.eng.now, label, ttft)
	r.nextTurn(q)
}
