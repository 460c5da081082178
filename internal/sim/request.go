package sim

import (
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

	sentAt  time.Duration    // when the attempt in flight was sent
	firstAt time.Duration    // when the first byte reached the client; < 0: not yet
	log     store.RequestLog // the gateway's request log of it
}

// session is one multi-turn conversation.
type session struct {
	id      string
	left    int   // turns still to send
	history int64 // tokens of the turns so far, sent again with each turn
}
