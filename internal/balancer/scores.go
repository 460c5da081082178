package balancer

import (
	"math"
	"strconv"
)

// Scores holds the score components a strategy computed for one candidate.
// It is a fixed struct rather than a map so that recording it costs no
// allocation on the hot path; each strategy fills the fields its file
// documents. In JSON it is an object of the recorded fields by their
// snake_case names: a field the strategy recorded is emitted even when it is
// 0 (an idle upstream's inflight_per_weight, a fully penalised error_aware),
// one it did not record is omitted. Non-finite values are never emitted.
type Scores struct {
	// LatencyScore is weighted-random's probe-latency factor (seed 000).
	LatencyScore float64 `json:"latency_score,omitempty"`
	// PickProbability is weighted-random's chance of being the tier's first
	// pick.
	PickProbability float64 `json:"pick_probability,omitempty"`
	// SlowStart is the slow-start factor applied, in (0,1].
	SlowStart float64 `json:"slow_start,omitempty"`
	// EffectiveWeight is the weight the strategy used after its factors.
	EffectiveWeight float64 `json:"effective_weight,omitempty"`
	// CurrentWeight is smooth-wrr's and round-robin's current weight after
	// this call.
	CurrentWeight float64 `json:"current_weight,omitempty"`
	// InFlightPerWeight is least-conn's key, in-flight / effective weight.
	InFlightPerWeight float64 `json:"inflight_per_weight,omitempty"`
	// LatencyEWMA is the latency in milliseconds p2c-ewma used (the mean of
	// the others' when the candidate has no data).
	LatencyEWMA float64 `json:"latency_ewma,omitempty"`
	// Cost is p2c-ewma's key, (in-flight + 1) × latency / slow start.
	Cost float64 `json:"cost,omitempty"`
	// Sampled is 1 for the two random choices of p2c-ewma, else 0.
	Sampled float64 `json:"sampled,omitempty"`
	// ErrorAware is adaptive's health component, 0–200.
	ErrorAware float64 `json:"error_aware,omitempty"`
	// ErrorWaived is the error penalty adaptive waived because the
	// upstream was below its trickle share (recorded only then).
	ErrorWaived float64 `json:"error_waived,omitempty"`
	// ShareRatio is adaptive's window share over weight share: 1 on target,
	// 0 with no requests in the window.
	ShareRatio float64 `json:"share_ratio,omitempty"`
	// WRR is adaptive's sliding-window weighted share component, (0,150].
	WRR float64 `json:"wrr,omitempty"`
	// LatencyAware is adaptive's latency component, 0–80.
	LatencyAware float64 `json:"latency_aware,omitempty"`
	// UsageRatio is adaptive's highest RPM/TPM used/limit ratio.
	UsageRatio float64 `json:"usage_ratio,omitempty"`
	// Concurrency is adaptive's concurrency sub-score (recorded when the
	// upstream has a concurrency limit).
	Concurrency float64 `json:"concurrency,omitempty"`
	// RateLimitAware is adaptive's rate-limit component, −10000 or up to
	// 100.
	RateLimitAware float64 `json:"rate_limit_aware,omitempty"`
	// Total is adaptive's sum of components, the key it orders by.
	Total float64 `json:"total,omitempty"`
	// EstimatedCostUSD is lowest-cost's key: the request's estimated cost
	// on the candidate in USD (recorded for priced candidates only).
	EstimatedCostUSD float64 `json:"estimated_cost_usd,omitempty"`
	// Unpriced is 1 for a candidate lowest-cost found no price for (it
	// sorts after every priced one), else not recorded.
	Unpriced float64 `json:"unpriced,omitempty"`
	// TPSEWMA is the output tokens/s the throughput sort ordered by (0: no
	// data, last).
	TPSEWMA float64 `json:"tps_ewma,omitempty"`

	set scoreSet // the fields the strategy recorded
}

// scoreSet is a bit set of Scores fields, one bit per entry of scoreFields.
type scoreSet uint32

const (
	hasLatencyScore scoreSet = 1 << iota
	hasPickProbability
	hasSlowStart
	hasEffectiveWeight
	hasCurrentWeight
	hasInFlightPerWeight
	hasLatencyEWMA
	hasCost
	hasSampled
	hasErrorAware
	hasErrorWaived
	hasShareRatio
	hasWRR
	hasLatencyAware
	hasUsageRatio
	hasConcurrency
	hasRateLimitAware
	hasTotal
	hasEstimatedCostUSD
	hasUnpriced
	hasTPSEWMA
)

// scoreFields lists the Scores fields in JSON order; entry i is bit 1<<i.
var scoreFields = [...]struct {
	name string
	get  func(*Scores) float64
}{
	{"latency_score", func(s *Scores) float64 { return s.LatencyScore }},
	{"pick_probability", func(s *Scores) float64 { return s.PickProbability }},
	{"slow_start", func(s *Scores) float64 { return s.SlowStart }},
	{"effective_weight", func(s *Scores) float64 { return s.EffectiveWeight }},
	{"current_weight", func(s *Scores) float64 { return s.CurrentWeight }},
	{"inflight_per_weight", func(s *Scores) float64 { return s.InFlightPerWeight }},
	{"latency_ewma", func(s *Scores) float64 { return s.LatencyEWMA }},
	{"cost", func(s *Scores) float64 { return s.Cost }},
	{"sampled", func(s *Scores) float64 { return s.Sampled }},
	{"error_aware", func(s *Scores) float64 { return s.ErrorAware }},
	{"error_waived", func(s *Scores) float64 { return s.ErrorWaived }},
	{"share_ratio", func(s *Scores) float64 { return s.ShareRatio }},
	{"wrr", func(s *Scores) float64 { return s.WRR }},
	{"latency_aware", func(s *Scores) float64 { return s.LatencyAware }},
	{"usage_ratio", func(s *Scores) float64 { return s.UsageRatio }},
	{"concurrency", func(s *Scores) float64 { return s.Concurrency }},
	{"rate_limit_aware", func(s *Scores) float64 { return s.RateLimitAware }},
	{"total", func(s *Scores) float64 { return s.Total }},
	{"estimated_cost_usd", func(s *Scores) float64 { return s.EstimatedCostUSD }},
	{"unpriced", func(s *Scores) float64 { return s.Unpriced }},
	{"tps_ewma", func(s *Scores) float64 { return s.TPSEWMA }},
}

// IsZero reports whether nothing was recorded: no field marked as recorded
// and every field 0. A CandidateRecord omits its scores then.
func (s Scores) IsZero() bool { return s == Scores{} }

// MarshalJSON encodes the recorded fields, or, for a Scores built outside a
// strategy (nothing marked), the non-zero ones, as encoding/json would with
// the omitempty tags.
func (s Scores) MarshalJSON() ([]byte, error) {
	b := make([]byte, 0, 64)
	b = append(b, '{')
	for i, f := range scoreFields {
		v := f.get(&s)
		recorded := s.set&(1<<i) != 0 || s.set == 0 && v != 0
		if !recorded || math.IsNaN(v) || math.IsInf(v, 0) {
			continue
		}
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = append(b, '"')
		b = append(b, f.name...)
		b = append(b, '"', ':')
		b = appendFloat(b, v)
	}
	return append(b, '}'), nil
}

// appendFloat formats v as encoding/json does: shortest representation,
// exponent notation only outside [1e-6, 1e21).
func appendFloat(b []byte, v float64) []byte {
	format := byte('f')
	if a := math.Abs(v); a != 0 && (a < 1e-6 || a >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, v, format, -1, 64)
	if format == 'e' {
		// Clean up e-09 to e-9, as encoding/json does.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}
