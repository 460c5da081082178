package sim

import (
	"time"

	"switchyard/internal/health"
	"switchyard/internal/outcome"
)

// probe is one round of the active prober (health.Prober) for u, made an
// event because the real prober runs its own goroutines: every
// health.interval with ±10% jitter, it asks the breaker like a request (a
// half-open breaker's probe slot goes to the probe), and its answer arrives
// after the provider's probe RTT — or never, in an outage (connection
// refused) or a hang (health.timeout). Its RTT is the latency the
// weighted-random strategy scores. Probes stop when the traffic does.
func (r *run) probe(u *upstreamSim) {
	now := r.sched.now
	if now >= r.sc.Duration {
		return
	}
	interval := r.cfg.Health.Interval
	next := time.Duration(float64(interval) * (0.9 + 0.2*r.probeRng.Float64()))
	permit, ok := r.breakers.Acquire(u.cfg.Name)
	if !ok {
		if until := r.breakers.View(u.cfg.Name).Until; until.After(r.sched.Now()) {
			next = min(next, until.Sub(r.sched.Now()))
		}
		r.sched.AfterFunc(next, func() { r.probe(u) })
		return
	}
	timeout := r.cfg.Health.Timeout
	_, factor := u.prov.conditions(now)
	rtt, ok := scale(u.prov.m.ProbeRTT, factor), true
	switch {
	case inWindows(u.prov.m.Outages, now):
		rtt, ok = refusedAfter, false
	case inWindows(u.prov.m.Hangs, now) || rtt > timeout:
		rtt, ok = timeout, false
	}
	u.probeRTT = rtt
	r.sched.AfterFunc(rtt, func() { r.probeDone(u, permit, ok) })
	r.sched.AfterFunc(next, func() { r.probe(u) })
}

// probeDone records a probe's outcome like the prober does.
func (r *run) probeDone(u *upstreamSim, p health.Permit, ok bool) {
	if !ok {
		r.breakers.Record(u.cfg.Name, p, outcome.Of(outcome.ServerError, "probe: failed"))
		return
	}
	u.latencyMs = max(float64(u.probeRTT)/float64(time.Millisecond), 0.001)
	r.breakers.Record(u.cfg.Name, p, outcome.Of(outcome.Success, ""))
}
