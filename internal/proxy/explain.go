package proxy

import (
	"fmt"
	"time"

	"switchyard/internal/affinity"
	"switchyard/internal/balancer"
	"switchyard/internal/limits"
	"switchyard/internal/state"
)

// ExplainRequest describes a dry-run routing decision.
type ExplainRequest struct {
	// Model is the client model name.
	Model string
	// Key, when set, restricts candidates to what that client key may use.
	Key string
	// Session is the session id the decision is made for.
	Session string
	// Stream plans for a streaming request.
	Stream bool
}

// Explain computes the routing decision a request for req.Model would get
// now, with the live state as it is, without sending anything.
func (s *Server) Explain(req ExplainRequest) (*balancer.Decision, error) {
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
	cands, _ := s.snapshot(ups, 0)
	keyName := ""
	if key != nil {
		keyName = key.cfg.Name
	}
	breq := balancer.Request{
		RequestID: "explain", Model: req.Model, Key: keyName, Session: req.Session, Stream: req.Stream, K: 1 + rt.cfg.Retries,
		DryRun: true,
	}
	if req.Session != "" && rt.affinityOn {
		breq.SessionSource = "explain"
		if b, ok := s.opts.Affinity.Peek(affinity.Key{APIKey: keyName, Route: rt.cfg.Model, Session: req.Session}, rt.affinity); ok {
			breq.Pinned = b.Upstream
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
func (s *Server) snapshot(ups []*upstream, tokens int64) ([]balancer.Candidate, time.Duration) {
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
		v := s.opts.Breakers.View(name)
		lv := s.opts.Limiter.View(name, tokens)
		st := s.opts.Stats.Snapshot(name, now)
		c := &cands[i]
		*c = balancer.Candidate{
			Name: name, Priority: u.cfg.Priority, Weight: u.cfg.Weight, Active: u.cfg.Active,
			LatencyEWMA: st.LatencyEWMA, TTFTEWMA: st.TTFTEWMA, TPSEWMA: st.TPSEWMA,
			WindowRequests: st.WindowRequests, ConsecutiveFailures: st.ConsecutiveFailures, LastFailure: st.LastFailure,
			RPMUsed: lv.RPMUsed, RPMLimit: lv.RPMLimit, TPMUsed: lv.TPMUsed, TPMLimit: lv.TPMLimit,
			InFlight: s.opts.Slots.InFlight(name), MaxConcurrency: u.cfg.MaxConcurrency,
			QueueEnabled: u.cfg.Queue.Enabled, QueueDepth: s.opts.Slots.QueueDepth(name), QueueMax: u.cfg.Queue.MaxLength,
			BreakerOpen: v.Open, BreakerReason: v.Reason, SlowStart: v.SlowStart,
			RateLimited: lv.Limited(), RateLimitReason: lv.Reason,
		}
		if s.opts.Shared != nil {
			if sv, ok := s.opts.Shared.View(name); ok {
				overlayShared(c, sv, now, note)
			}
		}
		if s.opts.Spend.Exceeded(limits.ScopeUpstream, name, u.cfg.SpendLimit) {
			c.SpendExceeded, c.SpendReason = true, fmt.Sprintf("spend limit $%g per %s reached", u.cfg.SpendLimit.USD, u.cfg.SpendLimit.Period)
		}
		if s.opts.Latency != nil {
			c.LatencyMs = s.opts.Latency(name)
		}
		if v.Open {
			note(v.Until)
		}
		if lv.Limited() {
			note(lv.Until)
		}
	}
	return cands, soonest
}

// overlayShared applies the shared state of the last sync to a candidate
// built from local state: the shared breaker replaces the local one (Redis
// decides admission), a shared cooldown or full window filters it, and the
// counts become the instances' totals. note receives when the upstream is
// expected back.
func overlayShared(c *balancer.Candidate, sv state.View, now time.Time, note func(time.Time)) {
	c.BreakerOpen = !sv.Admits(now)
	c.BreakerReason = ""
	if c.BreakerOpen {
		c.BreakerReason = "shared breaker " + sv.Breaker
		if sv.BreakerReason != "" {
			c.BreakerReason += ": " + sv.BreakerReason
		}
		note(sv.BreakerUntil)
	}
	c.WindowRequests = sv.Stats.WindowRequests
	c.InFlight = max(c.InFlight, sv.InFlight)
	c.QueueDepth = max(c.QueueDepth, int(sv.QueueDepth))
	c.RPMUsed, c.TPMUsed = max(c.RPMUsed, sv.RPMUsed), max(c.TPMUsed, sv.TPMUsed)
	switch {
	case c.RateLimited:
	case sv.CooldownUntil.After(now):
		c.RateLimited, c.RateLimitReason = true, "cooling down after 429 (shared)"
		note(sv.CooldownUntil)
	case c.RPMLimit > 0 && c.RPMUsed >= c.RPMLimit:
		c.RateLimited, c.RateLimitReason = true, fmt.Sprintf("rpm %d/%d (shared)", c.RPMUsed, c.RPMLimit)
	case c.TPMLimit > 0 && c.TPMUsed > 0 && c.TPMUsed >= c.TPMLimit:
		c.RateLimited, c.RateLimitReason = true, fmt.Sprintf("tpm %d/%d (shared)", c.TPMUsed, c.TPMLimit)
	}
}
