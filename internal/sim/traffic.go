package sim

import (
	"math"
	"math/rand/v2"
	"strconv"
	"time"
)

// phaseGen generates one phase's requests from its own random stream.
type phaseGen struct {
	p        *Phase
	rng      *rand.Rand
	sessions int
}

func newPhaseGen(p *Phase, rng *rand.Rand) *phaseGen { return &phaseGen{p: p, rng: rng} }

// gap draws the time to the phase's next arrival instant: exponential with
// rate Rate/Burst, so Burst requests at a time keep the mean rate.
func (g *phaseGen) gap() time.Duration {
	return time.Duration(g.rng.ExpFloat64() / (g.p.Rate / float64(g.p.Burst)) * float64(time.Second))
}

// newRequest draws one request of the phase at now; sess continues a
// conversation (nil: a new arrival, which may start one). A new arrival
// draws from the phase's stream; a later turn, which comes when the answer
// before it did, from its session's own, so that how fast answers come
// changes no arrival (compare: the same traffic with and without a feature).
func (g *phaseGen) newRequest(idx int, now time.Duration, sess *session) *request {
	p := g.p
	q := &request{phase: idx, start: now, sess: sess, maxTok: int64(p.MaxTokens), model: p.Model}
	rng := g.rng
	if sess != nil {
		rng = sess.rng
	}
	q.stream = rng.Float64() < p.StreamShare
	if sess == nil && p.Sessions.Share > 0 && rng.Float64() < p.Sessions.Share {
		g.sessions++
		q.sess = &session{
			id:   "p" + strconv.Itoa(idx) + "-s" + strconv.Itoa(g.sessions),
			left: int(p.Sessions.Turns.sample(rng)),
			rng:  rand.New(rand.NewPCG(rng.Uint64(), rng.Uint64())),
		}
	}
	prompt := p.PromptTokens.sample(rng)
	switch sp := p.SharedPrompts; {
	case sess != nil: // a later turn opens as its conversation did
		q.shared, q.sharedTok = sess.shared, sess.sharedTok
	case sp.Count > 0 && rng.Float64() < *sp.Share:
		q.shared, q.sharedTok = 1+rng.IntN(sp.Count), sp.Tokens
		prompt += sp.Tokens
	}
	if q.sess != nil && sess == nil {
		q.sess.shared, q.sess.sharedTok = q.shared, q.sharedTok
	}
	q.out = min(p.CompletionTokens.sample(rng), q.maxTok)
	if q.sess != nil {
		q.sess.left--
		prompt += q.sess.history
		q.sess.history = min(prompt+q.out, math.MaxInt32)
	}
	q.prompt = prompt
	q.bodyLen = 4*prompt + 120 // JSON around a prompt of ~4 bytes per token
	return q
}

// arrive handles a phase's arrival instant: Burst new requests, and the
// next instant while the phase lasts.
func (r *run) arrive(idx int) {
	g := r.phases[idx]
	now := r.sched.now
	for range g.p.Burst {
		r.begin(g.newRequest(idx, now, nil))
	}
	if next := now + g.gap(); next < *g.p.Start+g.p.Duration && next < r.sc.Duration {
		r.sched.AfterFunc(next-now, func() { r.arrive(idx) })
	}
}

// nextTurn schedules a session's next turn after a think time, while it
// has turns left and the scenario lasts.
func (r *run) nextTurn(q *request) {
	s := q.sess
	if s == nil || s.left <= 0 {
		return
	}
	g := r.phases[q.phase]
	think := g.p.Sessions.ThinkTime.sample(s.rng)
	at := r.sched.now + think
	if at >= r.sc.Duration {
		return
	}
	next := g.newRequest(q.phase, at, s)
	r.sched.AfterFunc(think, func() { r.begin(next) })
}
