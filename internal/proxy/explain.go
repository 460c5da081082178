package proxy

import (
	"context"
	"fmt"
	"time"

	"github.com/tidwall/gjson"

	"switchyard/internal/affinity"
	"switchyard/internal/balancer"
	"switchyard/internal/limits"
)

// ExplainRequest describes a dry-run routing decision.
type ExplainRequest struct {
	// Model is the client model name.
	Model string
	// Key, when set, restricts candidates to what that client key may use.
	Key string
	// Session is the session id the decision is made for; a prefix
	// binding's id ("prefix:…", as the decisions and the affinity admin
	// API show it) is explained under the route's prefix policy.
	Session string
	// Stream plans for a streaming request.
	Stream bool
	// InputTokens and MaxTokens are the request's estimated prompt tokens
	// and its max_tokens (0: not given), for lowest-cost's estimates.
	InputTokens, MaxTokens int64
	// Provider is routing preferences as JSON, as a request would send them
	// (docs/routing.md#per-request-preferences); "" for none.
	Provider string
}

// Explain computes the routing decision a request for req.Model would get
// now, with the live state as it is, without sending anything.
func (s *Server) Explain(ctx context.Context, req ExplainRequest) (*balancer.Decision, error) {
	cat := s.catalog.Load()
	var key *clientKey
	if req.Key != "" {
		for _, k := range cat.keys {
			if k.cfg.Name == req.Key {
				key = k
			}
		}
		if key == nil {
			return nil, fmt.Errorf("explaining %s: %w", req.Model, newError(ErrUnauthorized, "no client key named "+req.Key))
		}
		if !key.allows(req.Model) {
			return nil, fmt.Errorf("explaining %s: %w", req.Model, newError(ErrModelNotAllowed, "key "+req.Key+" may not use model "+req.Model))
		}
	}
	ups := cat.servers(req.Model, key)
	if len(ups) == 0 {
		return nil, fmt.Errorf("explaining %s: %w", req.Model, newError(ErrModelNotFound, "no upstream serves model "+req.Model))
	}
	rt := cat.route(req.Model)
	cands, _ := s.snapshot(ups, req.Model, 0)
	keyName := ""
	if key != nil {
		keyName = key.cfg.Name
	}
	breq := balancer.Request{
		RequestID: "explain", Model: req.Model, Key: keyName, Session: req.Session, Stream: req.Stream, K: 1 + rt.cfg.Retries,
		DryRun: true, InputTokens: req.InputTokens, MaxTokens: req.MaxTokens, OutputEWMA: rt.out.value(),
	}
	if req.Provider != "" {
		if !gjson.Valid(req.Provider) {
			return nil, fmt.Errorf("explaining %s: %w", req.Model, newError(ErrInvalidRequest, "provider is not valid JSON"))
		}
		prefs, err := parsePreferences(gjson.Parse(req.Provider))
		if err != nil {
			return nil, fmt.Errorf("explaining %s: %w", req.Model, err)
		}
		breq.Prefs = prefs
	}
	var pol affinity.Policy
	prefix := affinity.IsPrefixID(req.Session)
	if req.Session != "" && rt.affinityOn && (!prefix || rt.prefixOn) {
		breq.SessionSource, pol = "explain", rt.affinity
		if prefix {
			breq.SessionSource, pol, breq.MaxShare = affinity.PrefixSource, rt.prefix.Policy, rt.prefix.MaxShare
		}
		if b, ok := s.opts.Affinity.Peek(ctx, affinity.Key{APIKey: keyName, Route: rt.cfg.Model, Session: req.Session}, pol); ok {
			breq.Pinned, breq.StandIn = b.Upstream, b.StandIn
			if up := cat.byName[b.Upstream]; up != nil {
				breq.Migrate = up.migrate
			}
		}
	}
	plan := rt.bal.Plan(breq, cands)
	return &plan.Decision, nil
}

// snapshot builds the balancer's view of ups from the live state for a
// request of about tokens tokens, and returns the shortest wait until an
// unavailable candidate (breaker open, cooling down, limit full) frees up.
func (s *Server) snapshot(ups []*upstream, model string, tokens int64) ([]balancer.Candidate, time.Duration) {
	cands := make([]balancer.Candidate, len(ups))
	now := s.opts.Clock.Now()
	var soonest time.Duration
	note := func(until time.Time) {
		if wait := until.Sub(now); wait > 0 && (soonest == 0 || wait < soonest) {
			soonest = wait
		}
	}
	for i, u := range ups {
		name := u.cfg.Name
		v := s.opts.State.Upstream(name, tokens)
		bv, lv, st := &v.Breaker, &v.Limits, &v.Stats
		c := &cands[i]
		*c = balancer.Candidate{
			Name: name, Priority: u.cfg.Priority, Weight: u.cfg.Weight, Active: u.cfg.Active,
			LatencyEWMA: st.LatencyEWMA, TTFTEWMA: st.TTFTEWMA, TPSEWMA: st.TPSEWMA,
			WindowRequests: st.WindowRequests, ConsecutiveFailures: st.ConsecutiveFailures, LastFailure: st.LastFailure,
			RPMUsed: lv.RPMUsed, RPMLimit: lv.RPMLimit, TPMUsed: lv.TPMUsed, TPMLimit: lv.TPMLimit,
			InFlight: v.InFlight, MaxConcurrency: u.cfg.MaxConcurrency,
			QueueEnabled: u.cfg.Queue.Enabled, QueueDepth: v.QueueDepth, QueueMax: u.cfg.Queue.MaxLength,
			BreakerOpen: bv.Open, BreakerReason: bv.Reason, SlowStart: bv.SlowStart,
			RateLimited: lv.Limited(), RateLimitReason: lv.Reason, Provider: u.cfg.Provider,
		}
		c.InputPerMTok, c.OutputPerMTok, c.Priced = u.price(model)
		if s.opts.Spend.Exceeded(limits.ScopeUpstream, name, u.cfg.SpendLimit) {
			c.SpendExceeded, c.SpendReason = true, fmt.Sprintf("spend limit $%g per %s reached", u.cfg.SpendLimit.USD, u.cfg.SpendLimit.Period)
		}
		if s.opts.Latency != nil {
			c.LatencyMs = s.opts.Latency(name)
		}
		if bv.Open {
			note(bv.Until)
		}
		if lv.Limited() {
			note(lv.Until)
		}
	}
	return cands, soonest
}
