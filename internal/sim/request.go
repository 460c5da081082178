package sim

import (
	"math/rand/v2"
	"time"

	"switchyard/internal/store"
)

// request is one simulated client request: what the scenario drew for it,
// and what the run saw of it.
type request struct {
	id      uint64
	phase   int
	sess    *session
	start   time.Duration
	stream  bool
	model   string
	prompt  int64 // input tokens, conversation history included
	out     int64 // completion tokens the provider will generate
	maxTok  int64
	bodyLen int64 // prompt bytes: ~4 per token, plus the JSON around them
	// shared is the 1-based index of the shared prompt the request opens
	// with (Phase.SharedPrompts), 0 for none; sharedTok its tokens, part
	// of prompt.
	shared    int
	sharedTok int64

	sent    []sentAt         // when each attempt in flight was sent
	firstAt time.Duration    // when the first byte reached the client; < 0: not yet
	log     store.RequestLog // the gateway's request log of it
	racing  int              // attempts running on tasks of their own (goTask)
	hedges  int              // attempts launched alongside a running one
}

// session is one multi-turn conversation.
type session struct {
	id      string
	left    int        // turns still to send
	history int64      // tokens of the turns so far, sent again with each turn
	rng     *rand.Rand // its later turns' draws
	cache   turnCache  // where its last successful turn was served, and when
	// shared and sharedTok are the shared prompt its first turn opened
	// with; every later turn opens with it too (its history holds it).
	shared    int
	sharedTok int64
}

// sentAt is when an attempt of a request on upstream up was sent. A
// hedged request has several in flight at once, each on its own upstream.
type sentAt struct {
	up int
	at time.Duration
}

// dispatched notes that an attempt on upstream up is sent at now.
func (q *request) dispatched(up int, now time.Duration) {
	for i := range q.sent {
		if q.sent[i].up == up {
			q.sent[i].at = now
			return
		}
	}
	q.sent = append(q.sent, sentAt{up, now})
}

// sentTo returns when the attempt on upstream up was sent.
func (q *request) sentTo(up int) time.Duration {
	for _, s := range q.sent {
		if s.up == up {
			return s.at
		}
	}
	return q.start
}
