package state

import (
	"testing"

	"switchyard/internal/clock"
	"switchyard/internal/outcome"
)

// A ticket Redis did not admit (the instance could not ask it) belongs to
// no generation of the shared breaker: settled after Redis is back, its
// outcome does not trip it.
func TestRedisLocalTicketFeedsNoSharedBreaker(t *testing.T) {
	clk := clock.NewFake(t0)
	r := newTestRedis(t, testCircuit, clk)
	local := r.newTicket(Admission{Upstream: "u"})
	r.Settle(local, Settlement{Outcome: outcome.Of(outcome.AuthError, "status 401")})
	if v := syncView(t, r, "u"); v.Breaker != "closed" {
		t.Fatalf("shared breaker %q after a local ticket's auth error, want closed", v.Breaker)
	}
	r.Settle(admitOK(t, r, Admission{Upstream: "u"}), Settlement{Outcome: outcome.Of(outcome.AuthError, "status 401")})
	if v := syncView(t, r, "u"); v.Breaker != "open" {
		t.Fatalf("shared breaker %q after an admitted request's auth error, want open", v.Breaker)
	}
}
