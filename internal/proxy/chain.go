package proxy

import (
	"context"
	"strconv"

	"switchyard/internal/affinity"
	"switchyard/internal/codec"
	"switchyard/internal/outcome"
)

// chain is a Responses conversation the gateway keeps itself
// (docs/routing.md#responses-chains-the-gateway-keeps). An answer no upstream
// can continue — a translated one, whose id the gateway made, or one to a
// request whose history the gateway expanded — is kept with the whole
// conversation (every turn's input and output items) under its response id;
// a later request whose previous_response_id names it is expanded into that
// history before planning, so that any compatible upstream, of any family,
// can serve it, and a real OpenAI upstream gets it without the id.
type chain struct {
	// codec reads and expands the requests; nil for a protocol without
	// chains.
	codec codec.Chain
	// convs keeps the conversations: the state driver's.
	convs affinity.Conversations
	// key is the client key's name: only it may continue its conversations.
	key string
	// maxBytes is affinity.conversation_max_bytes.
	maxBytes int
	// body is the request as its attempts send it (expanded when it
	// continues a kept conversation).
	body []byte
	// expanded: the request continued a kept conversation, so its answer
	// is kept whichever upstream gives it.
	expanded bool
	// pending: a committed stream whose final response is not kept yet.
	pending bool
}

// expandChain expands, for a request of a protocol with chains, a
// previous_response_id the gateway keeps the conversation of (under this
// client key) into that conversation's items, before planning. One it keeps
// only the refusal of is refused with ErrResponseNotKept; an id it does not
// know is left to the pins and the upstreams.
func (x *exchange) expandChain(ctx context.Context) error {
	ch, ok := x.codec.(codec.Chain)
	if !ok {
		return nil
	}
	c := &x.pinned.chain
	c.codec, c.convs, c.key, c.maxBytes = ch, x.s.opts.State, x.key.cfg.Name, x.cat.convMax
	defer func() { c.body = x.body }()
	prev, _ := ch.RequestState(x.body)
	if prev == "" {
		return nil
	}
	kept, ok := c.convs.Conversation(ctx, prev)
	if !ok || kept.Key != c.key {
		return nil
	}
	if kept.Refused != "" {
		return newError(ErrResponseNotKept, "previous response "+prev+" cannot be continued: "+kept.Refused)
	}
	body, err := ch.Continue(x.body, kept.Items)
	if err != nil {
		return newError(ErrInvalidRequest, "previous_response_id: "+err.Error())
	}
	x.est = addTokens(x.est, int64(len(body)-len(x.body))/4)
	x.body, c.expanded = body, true
	return nil
}

// keeps reports whether the answer of attempt a must be kept.
func (c *chain) keeps(a *attempt) bool {
	return c.codec != nil && (a.wire != nil || c.expanded)
}

// answer keeps, before a committed answer reaches the client, its
// conversation: a whole success's now, a stream's when its final response
// goes by (relayed).
func (c *chain) answer(a *attempt) {
	if a.first != nil {
		c.pending = true
		return
	}
	if a.class != outcome.Success {
		return
	}
	id, _ := c.codec.AnswerState(a.body)
	c.keep(a.req.r.Context(), id, c.codec.AnswerItems(a.body))
}

// relayed keeps a stream's conversation when out, the events about to be
// written to the client, holds its final response.
func (c *chain) relayed(ctx context.Context, out []byte) {
	id, items, ok := c.codec.StreamAnswerItems(out)
	if !ok {
		return
	}
	c.pending = false
	c.keep(ctx, id, items)
}

// keep records the conversation through answer id, whose output items are
// out: the request's input (the whole history when it was expanded), then
// out; or, when the client said store: false or it is longer than
// affinity.conversation_max_bytes, why it was not kept. The record outlives
// the client's request.
func (c *chain) keep(ctx context.Context, id string, out []byte) {
	if id == "" {
		return
	}
	conv := affinity.Conversation{Key: c.key}
	turn, store := c.codec.TurnItems(c.body)
	if !store {
		conv.Refused = "it was created with store: false, so the gateway kept nothing of it; send the whole conversation as input instead"
	} else if items := codec.JoinItems(turn, out); len(items) > c.maxBytes {
		conv.Refused = "its conversation (" + strconv.Itoa(len(items)) + " bytes) exceeds affinity.conversation_max_bytes (" +
			strconv.Itoa(c.maxBytes) + "), so the gateway did not keep it; send the whole conversation as input instead"
	} else {
		conv.Items = items
	}
	c.convs.Keep(context.WithoutCancel(ctx), id, conv)
}
