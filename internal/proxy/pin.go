package proxy

import (
	"context"
	"errors"
	"time"

	"switchyard/internal/affinity"
	"switchyard/internal/balancer"
	"switchyard/internal/codec"
	"switchyard/internal/outcome"
)

// statePin is a request of a protocol whose upstreams keep state between
// requests (codec.Stateful: the OpenAI Responses API) and that state's
// upstream (docs/routing.md#stateful-calls-pinned-not-sticky). Stateful calls are pinned hard: a request that
// refers to a response or conversation an upstream holds goes to that
// upstream only, or gets 503 previous_response_unavailable naming it, never
// another account's 404; and every answer an upstream gives in the
// client's own protocol records its response and conversation ids with
// that upstream before the client sees them, so that the next request finds
// them on any instance. Requests of other protocols skip all of it.
type statePin struct {
	// codec reads the state ids; nil for a protocol without state.
	codec codec.Stateful
	// pins records and finds the holders: the state driver's.
	pins affinity.Pins
	// conversation is the request's conversation, pinned again with the
	// answer's upstream.
	conversation affinity.StateRef
	// holder is the upstream that holds what the request refers to (ref);
	// "" when the request refers to nothing known.
	holder string
	ref    affinity.StateRef
	// elsewhere is every other candidate's PinnedElsewhere.
	elsewhere string
	// pending: a stream whose response id is not recorded yet.
	pending bool
	// chain keeps the conversations no upstream can continue (chain.go).
	chain chain
}

// find looks up, for a request of a stateful protocol, the upstream
// that holds the response or conversation it refers to: its
// previous_response_id first, then its conversation. An id the pins do
// not know leaves the request to normal routing (its upstream answers 404
// itself when it does not hold it either).
func (p *statePin) find(ctx context.Context, pins affinity.Pins, c codec.Codec, body []byte) {
	sc, ok := c.(codec.Stateful)
	if !ok {
		return
	}
	p.codec, p.pins = sc, pins
	prev, conv := sc.RequestState(body)
	p.conversation = affinity.ConversationRef(conv)
	refs := [2]affinity.StateRef{affinity.ResponseRef(prev), p.conversation}
	if refs[0] == "" && refs[1] == "" {
		return
	}
	if up, ref, found := pins.Holder(ctx, refs[:]...); found {
		p.holder, p.ref = up, ref
		p.elsewhere = describeRef(ref) + " is held by " + up
	}
}

// describeRef names ref for a client: "previous response resp_1",
// "conversation conv_1".
func describeRef(ref affinity.StateRef) string {
	if ref.Kind() == "response" {
		return "previous response " + ref.ID()
	}
	return ref.Kind() + " " + ref.ID()
}

// markPinned filters, for a request pinned to its state's holder, every
// other candidate (balancer.FilterPinnedElsewhere).
func (p *statePin) markPinned(cands []balancer.Candidate) {
	if p.holder == "" {
		return
	}
	for i := range cands {
		if cands[i].Name != p.holder {
			cands[i].PinnedElsewhere = p.elsewhere
		}
	}
}

// notePinned records, for a pinned request's plan that left nothing to
// try, why its holder was not available, for the client's error.
func (p *statePin) notePinned(d *balancer.Decision, t *tally) {
	h := p.holder
	if h == "" || t.noted(h) {
		return
	}
	detail := "not a candidate (removed, or not serving this model for this key)"
	for i := range d.Candidates {
		if r := &d.Candidates[i]; r.Name == h {
			detail = r.ReasonText()
		}
	}
	t.failures = append(t.failures, failure{upstream: h, detail: detail, class: outcome.Canceled})
}

// pinnedError turns the error of a pinned request that no upstream served
// — its holder was unavailable (breaker open, cooling down, full, inactive,
// gone) or failed — into 503 previous_response_unavailable naming the
// holder. Other errors (the client's, a model no upstream serves) stay.
func (x *exchange) pinnedError(err error) error {
	if x.pinned.holder == "" || err == nil {
		return err
	}
	var ae *apiError
	if !errors.As(err, &ae) || !(errors.Is(err, ErrNoUpstream) || errors.Is(err, ErrQueueFull) || errors.Is(err, ErrQueueTimeout)) {
		return err
	}
	e := newError(ErrStateUnavailable, describeRef(x.pinned.ref)+" is held by upstream "+x.pinned.holder+
		", which cannot take this request now"+x.tally.summary())
	e.retryAfter = max(ae.retryAfter, x.tally.retryIn, time.Second)
	return e
}

// answer records, before a committed answer reaches the client, the
// state it carries with its upstream: a whole success's response and
// conversation ids now, a stream's from its first event that carries the
// response (event). A translated answer holds no upstream's state (its
// ids are the gateway's): nothing is pinned, the gateway keeps its
// conversation (chain), as it keeps that of every answer to a request it
// expanded.
func (p *statePin) answer(a *attempt) {
	if p.chain.keeps(a) {
		p.chain.answer(a)
	}
	if p.codec == nil || a.wire != nil {
		return
	}
	if a.first != nil {
		p.pending = true
		return
	}
	if a.class != outcome.Success {
		return
	}
	id, conv := p.codec.AnswerState(a.body)
	p.pinRefs(a.req.r.Context(), a.up.cfg.Name, id, conv)
}

// event records the state of a committed stream's event, if it carries
// the response, before it is relayed; ctx is the client's request's.
func (p *statePin) event(ctx context.Context, upstream string, ev *codec.Event) {
	id, conv, ok := p.codec.EventState(ev)
	if !ok {
		return
	}
	p.pending = false
	p.pinRefs(ctx, upstream, id, conv)
}

// pinRefs pins the response id and the answer's and request's
// conversations to upstream. The pin outlives the client's request: a
// client that leaves does not undo the response the upstream stored.
func (p *statePin) pinRefs(ctx context.Context, upstream, id, conv string) {
	refs := [3]affinity.StateRef{affinity.ResponseRef(id), affinity.ConversationRef(conv), p.conversation}
	if refs[2] == refs[1] {
		refs[2] = ""
	}
	if refs[0] == "" && refs[1] == "" && refs[2] == "" {
		return
	}
	p.pins.Pin(context.WithoutCancel(ctx), upstream, refs[:]...)
}
