package proxy

import (
	"fmt"
	"time"

	"switchyard/internal/config"
	"switchyard/internal/limits"
)

// Team and key limits (docs/routing.md#tenants-classes-and-fair-queueing):
// besides the key's rpm and spend_limit (checkKeyLimits), a key's tpm and
// max_concurrency, and its team's rpm, tpm, max_concurrency and
// spend_limit. Each refusal is a 429 naming the limit.

// tenantLimit is one refusal of a team or key limit.
type tenantLimit struct {
	sentinel error
	limit    string // the metrics label: rpm, tpm, concurrency, spend
}

// The refusals, by what was exceeded.
var (
	keyTPMExceeded          = tenantLimit{ErrKeyTPM, "tpm"}
	keyConcurrencyExceeded  = tenantLimit{ErrKeyConcurrency, "concurrency"}
	teamRPMExceeded         = tenantLimit{ErrTeamRPM, "rpm"}
	teamTPMExceeded         = tenantLimit{ErrTeamTPM, "tpm"}
	teamConcurrencyExceeded = tenantLimit{ErrTeamConcurrency, "concurrency"}
	teamSpendExceeded       = tenantLimit{ErrTeamSpend, "spend"}
)

// refuse returns the 429 of l with msg and, when known, its Retry-After,
// and counts a team's refusal in the metrics.
func (q *request) refuse(l tenantLimit, team, msg string, wait time.Duration) error {
	if team != "" {
		q.s.opts.Metrics.Tenants().TeamLimited(team, l.limit)
	}
	e := newError(l.sentinel, msg)
	e.retryAfter = wait
	return e
}

// checkTenantLimits enforces the key's tpm and its team's rpm, tpm and
// spend_limit, then takes the key's and the team's concurrency slots; on
// success release gives those back (call it exactly once, when the request
// is over).
func (q *request) checkTenantLimits() (release func(), err error) {
	k, tm := &q.key.cfg, q.key.team
	ctx, st := q.r.Context(), q.s.opts.State
	if k.TPM > 0 {
		if ok, wait := st.AllowN(ctx, limits.CounterName("", k.Name, "tpm"), k.TPM, q.est); !ok {
			return nil, q.refuse(keyTPMExceeded, "", fmt.Sprintf("key %s is limited to %d tokens per minute", k.Name, k.TPM), wait)
		}
	}
	if tm != nil {
		if err := q.checkTeam(tm); err != nil {
			return nil, err
		}
	}
	return q.takeTenantSlots(tm)
}

// checkTeam enforces team tm's rpm, tpm and spend_limit.
func (q *request) checkTeam(tm *config.Team) error {
	ctx, st := q.r.Context(), q.s.opts.State
	if tm.RPM > 0 {
		if ok, wait := st.AllowN(ctx, limits.CounterName(tm.Name, "", "rpm"), tm.RPM, 1); !ok {
			return q.refuse(teamRPMExceeded, tm.Name, fmt.Sprintf("team %s is limited to %d requests per minute", tm.Name, tm.RPM), wait)
		}
	}
	if tm.TPM > 0 {
		if ok, wait := st.AllowN(ctx, limits.CounterName(tm.Name, "", "tpm"), tm.TPM, q.est); !ok {
			return q.refuse(teamTPMExceeded, tm.Name, fmt.Sprintf("team %s is limited to %d tokens per minute", tm.Name, tm.TPM), wait)
		}
	}
	if q.s.opts.Spend.Exceeded(limits.ScopeTeam, tm.Name, tm.SpendLimit) {
		return q.refuse(teamSpendExceeded, tm.Name, fmt.Sprintf("team %s has used its spend limit of $%g per %s",
			tm.Name, tm.SpendLimit.USD, tm.SpendLimit.Period), 0)
	}
	return nil
}

// takeTenantSlots takes a slot of the key's and of team tm's
// max_concurrency (the state driver's: with Redis, every instance's); none
// is held for a limit of 0.
func (q *request) takeTenantSlots(tm *config.Team) (func(), error) {
	k := &q.key.cfg
	ctx, st := q.r.Context(), q.s.opts.State
	var keyRelease, teamRelease func()
	if k.MaxConcurrency > 0 {
		r, ok := st.AcquireTenant(ctx, limits.CounterName("", k.Name, "concurrency"), k.MaxConcurrency)
		if !ok {
			return nil, q.refuse(keyConcurrencyExceeded, "", fmt.Sprintf("key %s is limited to %d requests at once", k.Name, k.MaxConcurrency), time.Second)
		}
		keyRelease = r
	}
	if tm != nil && tm.MaxConcurrency > 0 {
		r, ok := st.AcquireTenant(ctx, limits.CounterName(tm.Name, "", "concurrency"), tm.MaxConcurrency)
		if !ok {
			if keyRelease != nil {
				keyRelease()
			}
			return nil, q.refuse(teamConcurrencyExceeded, tm.Name, fmt.Sprintf("team %s is limited to %d requests at once", tm.Name, tm.MaxConcurrency), time.Second)
		}
		teamRelease = r
	}
	switch {
	case keyRelease == nil && teamRelease == nil:
		return noRelease, nil
	case teamRelease == nil:
		return keyRelease, nil
	case keyRelease == nil:
		return teamRelease, nil
	}
	return func() { keyRelease(); teamRelease() }, nil
}

// noRelease releases nothing.
func noRelease() {}
