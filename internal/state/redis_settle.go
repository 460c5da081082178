package state

import (
	"context"
	"errors"
	"time"

	"github.com/redis/go-redis/v9"

	"switchyard/internal/health"
	"switchyard/internal/outcome"
)

// The outcome classes as settle.lua takes them.
const (
	wireSuccess     = 's' // closes a half-open breaker and ends the failure streak
	wireFailure     = 'f' // a server error: counts toward tripping the breaker
	wireAuthFailure = 'a' // trips the breaker at once
	wireNeutral     = 'n' // says nothing about health (a 429, a client error, a cancel)
)

// wireOutcome encodes an outcome class for settle.lua.
func wireOutcome(c outcome.Class) byte {
	switch c {
	case outcome.Success:
		return wireSuccess
	case outcome.ServerError:
		return wireFailure
	case outcome.AuthError:
		return wireAuthFailure
	}
	return wireNeutral
}

// Settlement is how an admitted request ended.
type Settlement struct {
	// Outcome is how the attempt ended: its class feeds the shared breaker
	// (Detail its reason), its usage corrects the reservation, a 429's
	// Cooldown and LimitType start a shared cooldown, its measurements
	// feed the shared EWMAs.
	Outcome outcome.Outcome
	// Spend charges usd to the upstream, the client key SpendKey and its
	// team SpendTeam (each when set) for the day and month.
	Spend     float64
	SpendKey  string
	SpendTeam string
	// Bind, when set, binds a session to the upstream in the same round trip.
	Bind *Bind
}

// Settle ends t: one round trip that releases its lease, corrects its
// reservation, feeds the shared breaker (in the generation t was admitted
// in; not at all for a local ticket) and statistics, starts a cooldown,
// charges spend (upstream, key, team) and (re)binds a session. Failures fall back silently; the
// lease is removed once Redis answers again (or expires within lease_ttl).
func (r *Redis) Settle(t Ticket, s Settlement) {
	r.unhold(t.id)
	// Wake the requests queued here once the lease is given back in Redis:
	// woken earlier, they would find the slot still taken and sleep a poll.
	defer r.released(t.upstream)
	if s.Bind != nil && r.localAff != nil {
		s.Bind.writeTo(r.localAff)
	}
	if !r.up.Load() {
		r.fallback(OpSettle)
		r.abandonLease(t)
		return
	}
	now := r.clk.Now()
	o := s.Outcome
	delta := int64(0)
	if t.Shared {
		delta = o.Tokens() - t.tokens
	}
	cooldown := time.Duration(0)
	if o.Class == outcome.RateLimited {
		cooldown = o.Cooldown
	}
	ctx, cancel := r.opCtx(context.Background())
	defer cancel()
	b := r.batch()
	tr := r.settleIn(ctx, b, t, o, now, delta, cooldown, false)
	if s.Spend > 0 {
		r.addSpend(ctx, b, now, ScopeUpstream, t.upstream, s.Spend)
		if s.SpendKey != "" {
			r.addSpend(ctx, b, now, ScopeKey, s.SpendKey, s.Spend)
		}
		if s.SpendTeam != "" {
			r.addSpend(ctx, b, now, ScopeTeam, s.SpendTeam, s.Spend)
		}
	}
	if s.Bind != nil {
		r.bindIn(ctx, b, *s.Bind, now)
	}
	err := b.exec(ctx)
	if !r.result(context.Background(), OpSettle, err) {
		r.abandonLease(t)
		return
	}
	if to, _ := tr.res.Text(); to != "" && r.opts.OnTransition != nil {
		r.opts.OnTransition(t.upstream, transitionName(to), o.Detail)
	}
}

// abandonLease leaves t's lease, if it has one, for Renew to remove: it
// would hold a slot until it expired, at most lease_ttl from now.
func (r *Redis) abandonLease(t Ticket) {
	if t.limited {
		r.abandon(entry{r.keys.upstream(t.upstream, "lease"), t.id}, r.lease)
	}
}

// settleIn queues settle.lua for t ending with o in b. probeOnly feeds the
// breaker alone (an active probe: no lease, no statistics). o feeds the
// breaker only in the generation t was admitted in: never for a local
// ticket.
func (r *Redis) settleIn(ctx context.Context, b *batch, t Ticket, o outcome.Outcome, now time.Time, delta int64, cooldown time.Duration, probeOnly bool) *scriptCmd {
	c := r.circuit.Load()
	pmode := "0"
	if probeOnly {
		pmode = "1"
	}
	return b.eval(ctx, settleScript,
		[]string{r.keys.upstream(t.upstream, "brk"), r.keys.upstream(t.upstream, "fails"), r.keys.upstream(t.upstream, "cd"), r.keys.upstream(t.upstream, "tpm"),
			r.keys.upstream(t.upstream, "lease"), r.keys.upstream(t.upstream, "queue"), r.keys.upstream(t.upstream, "stats")},
		now.UnixMilli(), t.id, string(wireOutcome(o.Class)), health.TripReason(*c, o.Class, o.Detail, false), t.bucket, delta, cooldown.Milliseconds(),
		c.FailureThreshold, c.Window.Milliseconds(), c.OpenDuration.Milliseconds(), c.SuccessThreshold,
		ms(o.Latency), ms(o.TTFT), o.TPS, Alpha, keepMs, o.LimitType, health.TripReason(*c, o.Class, o.Detail, true), pmode, t.gen)
}

// batch is one round trip: commands and scripts queued in a pipeline.
// Scripts go by their hash; one the server does not know (first use, or
// after a restart) is run again by its source.
type batch struct {
	rdb     redis.Scripter
	pipe    redis.Pipeliner
	scripts []*scriptCmd
}

// scriptCmd is a script queued in a batch; res holds its reply after exec.
type scriptCmd struct {
	res    *redis.Cmd
	script *redis.Script
	keys   []string
	args   []any
}

func (r *Redis) batch() *batch { return &batch{rdb: r.rdb, pipe: r.rdb.Pipeline()} }

// eval queues script.
func (b *batch) eval(ctx context.Context, script *redis.Script, keys []string, args ...any) *scriptCmd {
	sc := &scriptCmd{res: script.EvalSha(ctx, b.pipe, keys, args...), script: script, keys: keys, args: args}
	b.scripts = append(b.scripts, sc)
	return sc
}

// exec sends the batch and returns the first error other than a missing key.
func (b *batch) exec(ctx context.Context) error {
	cmds, _ := b.pipe.Exec(ctx)
	for _, sc := range b.scripts {
		if err := sc.res.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			sc.res = sc.script.Run(ctx, b.rdb, sc.keys, sc.args...)
		}
	}
	for _, c := range cmds {
		err := c.Err()
		if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			continue // run again above
		}
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
	}
	for _, sc := range b.scripts {
		if err := sc.res.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
	}
	return nil
}

// transitionName maps a script's state name (open, half, closed) to the
// breaker's.
func transitionName(s string) string {
	if s == "half" {
		return "half_open"
	}
	return s
}
