package balancer

import "time"

// Decision records one Plan call: which candidates each tier had, which
// filter dropped each and why, the strategy's score components, and the final
// order. It is served by the admin API and logged as one JSON line.
type Decision struct {
	// RequestID, Model, Key, Session and Stream are copied from the Request.
	RequestID string `json:"request_id"`
	Model     string `json:"model"`
	Key       string `json:"key"`
	Session   string `json:"session,omitempty"`
	Stream    bool   `json:"stream"`
	// Strategy is the name of the strategy that ordered the tiers.
	Strategy string `json:"strategy"`
	// At is when planning started, from Options.Now.
	At time.Time `json:"at"`
	// Tiers holds one record per priority tier, ascending.
	Tiers []TierRecord `json:"tiers"`
	// Order and Waitable equal Plan.Order and Plan.Waitable (separate
	// copies: changing the Plan's slices does not change the record).
	Order    []string `json:"order"`
	Waitable []string `json:"waitable"`
	// Chosen is Order[0], or "" when the order is empty.
	Chosen string `json:"chosen"`
	// ElapsedNs is the time Plan took, lock wait included, per Options.Now.
	ElapsedNs int64 `json:"elapsed_ns"`
}

// TierRecord records one priority tier of a Decision.
type TierRecord struct {
	// Priority is the tier's priority value.
	Priority int `json:"priority"`
	// Candidates holds the tier's candidates in input order.
	Candidates []CandidateRecord `json:"candidates"`

	waitable bool // set only on the view Plan hands to Strategy.Order
}

// Waitable reports whether Plan is asking the strategy to order the tier's
// waitable candidates (full, queue enabled) rather than its survivors. It is
// always false on the records of a returned Decision.
func (r *TierRecord) Waitable() bool { return r.waitable }

// Filter values of CandidateRecord.Filter, in the order Plan applies them;
// the first that matches is recorded.
const (
	// FilterInactive: the upstream is switched off.
	FilterInactive = "inactive"
	// FilterBreakerOpen: the circuit breaker rejects traffic now.
	FilterBreakerOpen = "breaker_open"
	// FilterSpendExceeded: the upstream's spend quota is used up.
	FilterSpendExceeded = "spend_exceeded"
	// FilterExcluded: the request already tried this upstream.
	FilterExcluded = "excluded"
	// FilterRateLimited: RPM/TPM exhausted or cooling down after a 429.
	FilterRateLimited = "rate_limited"
	// FilterConcurrencyFull: every concurrency slot is taken and there is
	// no queue.
	FilterConcurrencyFull = "concurrency_full"
	// FilterWaitable: every concurrency slot is taken but the queue is
	// enabled; the upstream is listed in Plan.Waitable.
	FilterWaitable = "waitable"
)

// CandidateRecord records one candidate of a tier.
type CandidateRecord struct {
	// Name is the upstream name.
	Name string `json:"name"`
	// Weight is the configured weight.
	Weight int `json:"weight"`
	// Filter is "" if the candidate survived the filters, else one of the
	// Filter constants.
	Filter string `json:"filter,omitempty"`
	// Reason explains Filter in words, e.g. "breaker open: 5 consecutive
	// failures" or "in-flight 4 of max 4".
	Reason string `json:"reason,omitempty"`
	// Scores holds the strategy's score components, e.g.
	// {"latency_score":0.8,"slow_start":1,"effective_weight":8}. Nil for
	// candidates the strategy was not asked to order (filtered out, or in a
	// tier after the plan was already full).
	Scores map[string]float64 `json:"scores,omitempty"`
	// Rank is the 1-based position in Order, 0 if not in it.
	Rank int `json:"rank,omitempty"`
}
