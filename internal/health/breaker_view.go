package health

import "time"

// View is a breaker's state at one instant, as the balancer and the admin
// API see it.
type View struct {
	// State is closed, open or half_open.
	State State `json:"state"`
	// Open is true when the breaker rejects a new request now: OPEN before
	// its open period ends, or HALF_OPEN with the probe slot taken or not
	// yet due. The balancer filters such a candidate as breaker_open.
	Open bool `json:"open"`
	// Reason says why the breaker last tripped, e.g. "auth error: status
	// 401" or "5 failures within 30s, last: status 502"; empty if it never
	// has. Meaningful to callers while State is not Closed.
	Reason string `json:"reason,omitempty"`
	// Until is when the breaker will next let a request through; zero when
	// Open is false. With a probe in flight it is an estimate (the probe's
	// outcome may free the slot sooner): the next probe time, or now +
	// probe_interval if that has passed.
	Until time.Time `json:"until"`
	// SlowStart is the effective-weight factor in [0.1, 1]: it ramps
	// linearly from 0.1 to 1 over slow_start after the breaker closes, and
	// is 1 when not ramping (including while open or half-open).
	SlowStart float64 `json:"slow_start"`
	// Trips counts the trips since the breaker last stayed closed for a full
	// window; the open period of trip n is open_duration × 2^(n-1), ≤ 10×.
	Trips int `json:"trips"`
	// Failures is the number of failures within the window while Closed.
	Failures int `json:"failures"`
	// ProbeInFlight is true while HALF_OPEN with the probe slot claimed.
	ProbeInFlight bool `json:"probe_in_flight"`
	// ProbeSuccesses counts the successful probes so far while HALF_OPEN.
	ProbeSuccesses int `json:"probe_successes"`
}

// View returns the breaker state of upstream name now. It does not claim
// anything: a caller about to send uses Acquire.
func (b *Breakers) View(name string) View {
	br := b.lookup(name)
	if br == nil {
		return View{State: Closed, SlowStart: 1}
	}
	now := b.clock.Now()
	var tr transitions
	br.mu.Lock()
	b.advanceLocked(br, now, &tr)
	v := b.viewLocked(br, now)
	br.mu.Unlock()
	b.fire(name, &tr)
	return v
}

// States returns the view of every upstream that has a breaker entry (every
// upstream that has failed at least once since it was last forgotten), for
// the admin /state view and metrics. An upstream missing from it is closed.
func (b *Breakers) States() map[string]View {
	b.mu.RLock()
	names := make([]string, 0, len(b.byUp))
	brs := make([]*breaker, 0, len(b.byUp))
	for name, br := range b.byUp {
		names = append(names, name)
		brs = append(brs, br)
	}
	b.mu.RUnlock()
	now := b.clock.Now()
	out := make(map[string]View, len(names))
	for i, br := range brs {
		var tr transitions
		br.mu.Lock()
		b.advanceLocked(br, now, &tr)
		out[names[i]] = b.viewLocked(br, now)
		br.mu.Unlock()
		b.fire(names[i], &tr)
	}
	return out
}

// viewLocked builds the View of br at now; br.mu must be held and
// advanceLocked applied.
func (b *Breakers) viewLocked(br *breaker, now time.Time) View {
	v := View{State: br.state, Reason: br.reason, Trips: br.trips, SlowStart: 1}
	switch br.state {
	case Closed:
		v.Failures = b.failuresLocked(br, now)
		if ss := b.cfg.SlowStart; ss > 0 && !br.closedAt.IsZero() {
			if e := now.Sub(br.closedAt); e < ss {
				v.SlowStart = slowStartFloor + (1-slowStartFloor)*float64(e)/float64(ss)
			}
		}
	case Open:
		v.Open, v.Until = true, br.until
		if br.probeNext.After(v.Until) { // the first probe waits for probe_interval
			v.Until = br.probeNext
		}
	case HalfOpen:
		v.ProbeInFlight, v.ProbeSuccesses = br.probeHeld, br.successes
		switch {
		case now.Before(br.probeNext):
			v.Open, v.Until = true, br.probeNext
		case br.probeHeld:
			v.Open, v.Until = true, now.Add(b.cfg.ProbeInterval)
		}
	}
	return v
}
