// Package health tracks whether upstreams are fit to receive traffic
// (docs/reference.md#health-limits-and-quotas): the outcome classes of an
// attempt, the per-upstream circuit breaker with its half-open probe slot and
// slow start (Breakers), and the active prober that measures each upstream's
// round-trip time (Prober).
//
// Everything here is timed by an injected clock.Clock and randomised by an
// injected *rand.Rand, so tests and the simulator drive it in virtual time.
package health
