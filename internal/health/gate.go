package health

import (
	"context"
	"time"

	"switchyard/internal/outcome"
)

// Gate is the circuit breaker as the active prober uses it: Breakers, or a
// state driver's breaker shared by several gateway instances (so that a
// probe closes the half-open breaker every instance sees).
type Gate interface {
	// AcquireProbe claims the right to probe upstream name now (see
	// Breakers.Acquire). When ok, the caller ends the probe with exactly
	// one p.Done; when refused, p.Until is when the breaker next lets a
	// request through (zero when unknown).
	AcquireProbe(ctx context.Context, name string) (p Probe, ok bool)
}

// Probe is an active probe a Gate let through, or why not.
type Probe struct {
	// Slot is true when the probe holds the half-open probe slot.
	Slot bool
	// Until is, when refused, when the breaker next lets a request through.
	Until time.Time
	// Done feeds the probe's outcome to the breaker in the generation the
	// probe was admitted in (outcome.Canceled when it only frees the
	// slot); set when the probe was let through. It does not block longer
	// than one round trip to the shared state.
	Done func(ctx context.Context, o outcome.Outcome)
}

var _ Gate = (*Breakers)(nil)

// AcquireProbe implements Gate with Acquire, Record and View.
func (b *Breakers) AcquireProbe(_ context.Context, name string) (Probe, bool) {
	p, ok := b.Acquire(name)
	if !ok {
		return Probe{Until: b.View(name).Until}, false
	}
	return Probe{Slot: p.Probe, Done: func(_ context.Context, o outcome.Outcome) { b.Record(name, p, o) }}, true
}
