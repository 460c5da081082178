package sim

import (
	"math"
	"math/rand/v2"
	"time"
)

// z95 is the standard normal quantile of 0.95.
const z95 = 1.6448536269514722

// zCap bounds a draw at this many standard deviations, so that a long tail
// stays plausible (p50 × (p95/p50)^2.4 at most).
const zCap = 4.0

// CountDist is a log-normal distribution of a count (tokens, turns), given
// by its median and 95th percentile. A P95 of 0 (or equal to P50) makes it
// the constant P50.
type CountDist struct {
	P50 float64 `yaml:"p50"`
	P95 float64 `yaml:"p95"`
}

// DurationDist is a log-normal distribution of a duration, given by its
// median and 95th percentile; a P95 of 0 makes it the constant P50.
type DurationDist struct {
	P50 time.Duration `yaml:"p50"`
	P95 time.Duration `yaml:"p95"`
}

// orDefault sets the median and 95th percentile when both are unset, and
// the 95th to the median when only that is unset.
func (d *CountDist) orDefault(p50, p95 float64) {
	if d.P50 == 0 && d.P95 == 0 {
		d.P50, d.P95 = p50, p95
	}
	if d.P95 == 0 {
		d.P95 = d.P50
	}
}

func (d *DurationDist) orDefault(p50, p95 time.Duration) {
	if d.P50 == 0 && d.P95 == 0 {
		d.P50, d.P95 = p50, p95
	}
	if d.P95 == 0 {
		d.P95 = d.P50
	}
}

// logNormal draws from the log-normal with median p50 and 95th percentile
// p95 (p95 ≥ p50 > 0), clamping the normal deviate to ±zCap.
func logNormal(r *rand.Rand, p50, p95 float64) float64 {
	if p95 <= p50 {
		return p50
	}
	z := max(min(r.NormFloat64(), zCap), -zCap)
	return p50 * math.Exp(z*math.Log(p95/p50)/z95)
}

// sample draws a count, rounded, at least 1.
func (d CountDist) sample(r *rand.Rand) int64 {
	return max(int64(math.Round(logNormal(r, d.P50, d.P95))), 1)
}

// sample draws a duration, at least 1 ms.
func (d DurationDist) sample(r *rand.Rand) time.Duration {
	v := logNormal(r, float64(d.P50), float64(d.P95))
	return max(time.Duration(v), time.Millisecond)
}
