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
	// Breakers.Acquire): probe is true when it holds the half-open probe
	// slot. When refused, until is when the breaker next lets a request
	// through; zero when unknown.
	AcquireProbe(ctx context.Context, name string) (ok, probe bool, until time.Time)
	// RecordProbe feeds the outcome of a probe AcquireProbe granted.
	RecordProbe(ctx context.Context, name string, o outcome.Outcome)
}

var _ Gate = (*Breakers)(nil)

// AcquireProbe implements Gate with Acquire and View.
func (b *Breakers) AcquireProbe(_ context.Context, name string) (ok, probe bool, until time.Time) {
	if ok, probe = b.Acquire(name); ok {
		return true, probe, time.Time{}
	}
	return false, false, b.View(name).Until
}

// RecordProbe implements Gate with Record.
func (b *Breakers) RecordProbe(_ context.Context, name string, o outcome.Outcome) { b.Record(name, o) }
