package proxy

import (
	"context"
	"fmt"
	"time"

	"switchyard/internal/affinity"
	"switchyard/internal/balancer"
	"switchyard/internal/codec"
	"switchyard/internal/config"
	"switchyard/internal/outcome"
	"switchyard/internal/provider"
)

// SimRequest is one request as the simulator (internal/sim) routes it:
// what the attempt loop would have peeked at from the HTTP request.
type SimRequest struct {
	// RequestID goes into the Decision.
	RequestID string
	// Model is the client model name being tried (the request's, or one of
	// its route's fallback models).
	Model string
	// Key is the client key's name; "" routes as a key that may use every
	// model and upstream.
	Key string
	// Session is the session id (as affinity.Extract would find it); "" for none.
	Session string
	// Stream plans for a streaming request.
	Stream bool
	// Tokens is the estimate the RPM/TPM view is taken for (prompt bytes/4 +
	// max_tokens).
	Tokens int64
	// BodyLen is the request body's size, for affinity_migration.max_content_length.
	BodyLen int64
	// Adjust, when set, is applied to every candidate after the snapshot and
	// before planning (the simulator keeps its own slot queues and sets
	// QueueDepth from them).
	Adjust func(*balancer.Candidate)
}

// SimPlan is the outcome of planning one SimRequest.
type SimPlan struct {
	// Plan is the balancer's plan.
	Plan balancer.Plan
	// Route is the matched route's model pattern and Settings its settings.
	Route    string
	Settings config.RouteSettings
	// Affinity is the binding key of the session on this route; its Session
	// is "" when the request has none or affinity is off for the route.
	// Policy is the route's affinity policy, for Bind.
	Affinity affinity.Key
	Policy   affinity.Policy
	// Wait is the shortest wait until an unavailable candidate frees up
	// (an open breaker, a cooldown, a full limit); 0 when none is known.
	Wait time.Duration
}

// PlanForSim plans req with the live state, exactly as the attempt loop's
// tryModel (exchange.go) does before its attempts: the snapshot of
// explain.go, the session binding of pin, and the route's balancer. It is
// the simulator's hook into the proxy, which sends nothing. ok is false when
// no upstream serves req.Model. The request's protocol is OpenAI unless only
// Anthropic upstreams serve the model.
func (s *Server) PlanForSim(req SimRequest) (p SimPlan, ok bool, err error) {
	cat := s.catalog.Load()
	key := &clientKey{} // no restrictions
	if req.Key != "" {
		key = nil
		for _, k := range cat.keys {
			if k.cfg.Name == req.Key {
				key = k
			}
		}
		if key == nil {
			return p, false, fmt.Errorf("planning %s: no client key named %q", req.Model, req.Key)
		}
		if !key.allows(req.Model) {
			return p, false, nil
		}
	}
	ups := cat.candidates(req.Model, key, codec.FamilyOpenAI)
	if len(ups) == 0 {
		ups = cat.candidates(req.Model, key, codec.FamilyAnthropic)
	}
	if len(ups) == 0 {
		return p, false, nil
	}
	rt := cat.route(req.Model)
	cands, wait := s.snapshot(ups, req.Tokens)
	if req.Adjust != nil {
		for i := range cands {
			req.Adjust(&cands[i])
		}
	}
	breq := balancer.Request{
		RequestID: req.RequestID, Model: req.Model, Key: key.cfg.Name, Stream: req.Stream,
		K: 1 + rt.cfg.Retries, BodyLen: req.BodyLen,
	}
	x := &exchange{s: s, cat: cat, key: key}
	if rt.affinityOn {
		x.session.id, x.session.source = req.Session, "simulated"
	}
	x.pin(context.Background(), &breq, rt)
	return SimPlan{
		Plan: rt.bal.Plan(breq, cands), Route: rt.cfg.Model, Settings: rt.cfg.RouteSettings,
		Affinity: x.session.key, Policy: x.session.policy, Wait: wait,
	}, true, nil
}

// SimRebinds is exchange.go's rebinds rule for the simulator: whether a
// success on upstream name (re)binds the session whose affinity record is a.
func SimRebinds(a balancer.AffinityRecord, name string) bool { return rebinds(a, name) }

// SimClassify is the adapters' classification for the simulator: the
// outcome class of an upstream's HTTP status.
func SimClassify(status int) outcome.Class { return provider.ClassifyStatus(status) }
