package sim

import (
	"time"

	"switchyard/internal/limits"
	"switchyard/internal/proxy"
)

// attemptEnd is how a sent attempt ends, as the gateway sees it.
type attemptEnd uint8

const (
	endOK          attemptEnd = iota // 2xx, whole answer relayed
	endStatus                        // 429 or 5xx answered
	endRefused                       // connection refused
	endFirstByte                     // first_byte_timeout fired
	endTimeout                       // the request's timeout fired before the first byte
	endInterrupted                   // the request's timeout fired mid-stream: the client sees a broken stream
)

// Queue errors of a request that never got a slot.
const (
	queueNone uint8 = iota
	queueFull
	queueTimeout
)

// request is one client request on its way through the simulated attempt
// loop; it is the state exchange.go keeps on its goroutine's stack, made
// explicit so that the loop can stop at every wait and resume on an event.
type request struct {
	phase   int
	sess    *session
	start   time.Duration
	stream  bool
	prompt  int64 // input tokens, conversation history included
	out     int64 // completion tokens the provider will generate
	maxTok  int64
	est     int64 // the gateway's estimate: prompt bytes/4 + max_tokens
	bodyLen int64

	models   []string // the model, then its route's fallback_models
	mi       int      // index of the model being tried
	found    bool     // some upstream serves one of the models
	deadline time.Duration
	waited   time.Duration // waited for max_wait on the current model
	plan     proxy.SimPlan
	waits    []string // plan.Waitable, grown by upstreams that filled up
	i        int      // position in Order then waits
	attempts int
	nfail    int // failures noted, skips included
	n429     int // of which 429s
	queueErr uint8

	// the attempt in flight (or the slot being waited for)
	gen     uint32 // bumped when a wait ends, so its stale events are ignored
	cur     *upstreamSim
	resv    *limits.Reservation
	release func()
	sentAt  time.Duration
	ans     answer
	end     attemptEnd
}

// session is one multi-turn conversation.
type session struct {
	id      string
	left    int   // turns still to send
	history int64 // tokens of the turns so far, sent again with each turn
}

// pos returns the name at the request's position in its plan and whether it
// is a waitable one.
func (q *request) pos() (string, bool) {
	if n := len(q.plan.Plan.Order); q.i >= n {
		return q.waits[q.i-n], true
	}
	return q.plan.Plan.Order[q.i], false
}

// remaining is the number of plan positions left.
func (q *request) remaining() int { return len(q.plan.Plan.Order) + len(q.waits) - q.i }
