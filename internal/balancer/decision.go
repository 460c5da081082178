package balancer

import (
	"encoding/json"
	"strconv"
	"time"
)

// Decision records one Plan call: which candidates each tier had, which
// filter dropped each and why, the strategy's score components, and the final
// order. It is served by the admin API and logged as one JSON line.
//
// Plan fills it without formatting any text: the records hold raw values and
// the human-readable reasons and the per-tier grouping are built only when
// the Decision is read (Tiers, CandidateRecord.ReasonText) or marshalled. Its
// JSON is
//
//	{"request_id", "model", "key", "session", "stream", "strategy",
//	 "tiers": [{"priority", "candidates": [{"name", "weight", "filter",
//	   "reason", "translate", "scores": {…}, "rank"}]}],
//	 "order", "waitable", "chosen", "elapsed_ns", "at"}
type Decision struct {
	// RequestID, Model, Key, Session and Stream are copied from the Request.
	RequestID string
	Model     string
	Key       string
	Session   string
	Stream    bool
	// Strategy is the name of the strategy that ordered the tiers.
	Strategy string
	// At is when planning started, from Options.Now.
	At time.Time
	// Candidates holds one record per candidate, grouped by tier in
	// ascending priority and in input order within a tier. Tiers groups
	// them; in JSON they appear only grouped, under "tiers".
	Candidates []CandidateRecord
	// Order and Waitable equal Plan.Order and Plan.Waitable (separate
	// copies: changing the Plan's slices does not change the record).
	Order    []string
	Waitable []string
	// Chosen is Order[0], or "" when the order is empty.
	Chosen string
	// ElapsedNs is the time Plan took, lock wait included, per Options.Now.
	ElapsedNs int64
	// Affinity says whether a session binding hit, missed, fell through or
	// migrated.
	Affinity AffinityRecord
	// Tried lists the attempts made on this plan, in the order they
	// started; the balancer leaves it empty and the attempt loop fills it
	// in before it records the decision (docs/routing.md#hedged-requests).
	Tried []TriedRecord
	// TraceID is the request's OpenTelemetry trace id when tracing is on
	// (docs/tracing.md); the balancer leaves it empty.
	TraceID string
}

// TriedRecord is one attempt made on a plan.
type TriedRecord struct {
	// Upstream is the upstream tried.
	Upstream string `json:"upstream"`
	// Hedge: raced alongside a slower attempt rather than after a failure.
	Hedge bool `json:"hedge,omitempty"`
	// Outcome is how it ended (outcome class name: success, server_error,
	// rate_limited, canceled, …).
	Outcome string `json:"outcome"`
	// Won: the client got this attempt's answer.
	Won bool `json:"won,omitempty"`
}

// TierRecord is one priority tier of a Decision, as returned by
// Decision.Tiers.
type TierRecord struct {
	// Priority is the tier's priority value.
	Priority int `json:"priority"`
	// Candidates holds the tier's records in input order; it is a sub-slice
	// of Decision.Candidates.
	Candidates []CandidateRecord `json:"candidates"`
}

// Tiers groups d.Candidates by priority, ascending. The TierRecords share
// the Decision's records; only the returned slice is allocated.
func (d *Decision) Tiers() []TierRecord {
	n := 0
	for i := range d.Candidates {
		if i == 0 || d.Candidates[i].Priority != d.Candidates[i-1].Priority {
			n++
		}
	}
	tiers := make([]TierRecord, 0, n)
	lo := 0
	for i := range d.Candidates {
		if i+1 == len(d.Candidates) || d.Candidates[i+1].Priority != d.Candidates[i].Priority {
			tiers = append(tiers, TierRecord{Priority: d.Candidates[i].Priority, Candidates: d.Candidates[lo : i+1 : i+1]})
			lo = i + 1
		}
	}
	return tiers
}

// decisionJSON is the wire form of a Decision.
type decisionJSON struct {
	RequestID string          `json:"request_id"`
	Model     string          `json:"model"`
	Key       string          `json:"key"`
	Session   string          `json:"session,omitempty"`
	Stream    bool            `json:"stream"`
	Strategy  string          `json:"strategy"`
	Tiers     []TierRecord    `json:"tiers"`
	Order     []string        `json:"order"`
	Waitable  []string        `json:"waitable"`
	Chosen    string          `json:"chosen"`
	ElapsedNs int64           `json:"elapsed_ns"`
	At        time.Time       `json:"at"`
	Affinity  *AffinityRecord `json:"affinity,omitempty"`
	Tried     []TriedRecord   `json:"tried,omitempty"`
	TraceID   string          `json:"trace_id,omitempty"`
}

// MarshalJSON encodes the Decision with its records grouped by tier; empty
// lists are [] rather than null.
func (d Decision) MarshalJSON() ([]byte, error) {
	w := decisionJSON{
		RequestID: d.RequestID, Model: d.Model, Key: d.Key, Session: d.Session, Stream: d.Stream,
		Strategy: d.Strategy, Tiers: d.Tiers(), Order: nonNil(d.Order), Waitable: nonNil(d.Waitable),
		Chosen: d.Chosen, ElapsedNs: d.ElapsedNs, At: d.At, Tried: d.Tried, TraceID: d.TraceID,
	}
	if d.Affinity.Session != "" {
		w.Affinity = &d.Affinity
	}
	return json.Marshal(w)
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// Filter values of CandidateRecord.Filter, in the order Plan applies them;
// the first that matches is recorded.
const (
	// FilterPinnedElsewhere: the request refers to state another upstream
	// holds (Detail says which), so it may go there only.
	FilterPinnedElsewhere = "pinned_elsewhere"
	// FilterPreferences: the request's preferences leave the upstream out
	// (Detail says which: "ignored", "not in only", "over max_price", …).
	FilterPreferences = "preferences"
	// FilterInactive: the upstream is switched off.
	FilterInactive = "inactive"
	// FilterIncompatible: the request uses something the upstream's wire
	// protocol cannot express (Detail names it).
	FilterIncompatible = "incompatible"
	// FilterBreakerOpen: the circuit breaker rejects traffic now.
	FilterBreakerOpen = "breaker_open"
	// FilterSpendExceeded: the upstream's spend quota is used up.
	FilterSpendExceeded = "spend_exceeded"
	// FilterExcluded: the request already tried this upstream.
	FilterExcluded = "excluded"
	// FilterRateLimited: RPM/TPM exhausted or cooling down after a 429 (not
	// applied by strategies that keep such upstreams as fallbacks).
	FilterRateLimited = "rate_limited"
	// FilterConcurrencyFull: every concurrency slot is taken and there is
	// no queue.
	FilterConcurrencyFull = "concurrency_full"
	// FilterWaitable: every concurrency slot is taken but the queue is
	// enabled; the upstream is listed in Plan.Waitable.
	FilterWaitable = "waitable"
)

// CandidateRecord records one candidate of a Decision. Plan stores raw values
// only; ReasonText (and the JSON "reason" field) turns them into words.
type CandidateRecord struct {
	// Name is the upstream name.
	Name string
	// Weight is the configured weight.
	Weight int
	// Priority is the candidate's tier.
	Priority int
	// Filter is "" if the candidate survived the filters, else one of the
	// Filter constants.
	Filter string
	// Detail is the candidate's own explanation for the filter that matched,
	// as given: BreakerReason, SpendReason or RateLimitReason.
	Detail string
	// InFlight and MaxConcurrency are the candidate's in-flight count and
	// slot limit at planning time.
	InFlight       int64
	MaxConcurrency int
	// Translate is the protocol the request would be translated into for
	// this candidate, "" for passthrough (Candidate.Translate).
	Translate string
	// Fallback means the candidate is rate limited but the strategy kept it,
	// scored to sort last in its tier (adaptive), instead of Plan dropping it.
	Fallback bool
	// Scores holds the strategy's score components. Zero (IsZero) for
	// candidates the strategy was not asked to order (filtered out, or in a
	// tier after the plan was already full).
	Scores Scores
	// Rank is the 1-based position in Order, 0 if not in it.
	Rank int
}

// ReasonText explains Filter in words, e.g. "breaker open: 5 consecutive
// failures" or "in-flight 4 of max 4, queue enabled"; "" for a plain
// survivor. It allocates, so Plan never calls it.
func (r *CandidateRecord) ReasonText() string {
	switch r.Filter {
	case FilterPinnedElsewhere:
		return withDetail("pinned", r.Detail)
	case FilterPreferences:
		return withDetail("preferences", r.Detail)
	case FilterInactive:
		return "upstream inactive"
	case FilterIncompatible:
		return withDetail("incompatible", r.Detail)
	case FilterBreakerOpen:
		return withDetail("breaker open", r.Detail)
	case FilterSpendExceeded:
		return withDetail("spend quota exceeded", r.Detail)
	case FilterExcluded:
		return "already tried by this request"
	case FilterRateLimited:
		return withDetail("rate limited", r.Detail)
	case FilterConcurrencyFull:
		return r.inFlightText()
	case FilterWaitable:
		return r.inFlightText() + ", queue enabled"
	case "":
		if r.Fallback {
			return withDetail("rate limited", r.Detail) + ", kept as a fallback"
		}
	}
	return ""
}

func (r *CandidateRecord) inFlightText() string {
	return "in-flight " + strconv.FormatInt(r.InFlight, 10) + " of max " + strconv.Itoa(r.MaxConcurrency)
}

func withDetail(what, detail string) string {
	if detail == "" {
		return what
	}
	return what + ": " + detail
}

// candidateRecordJSON is the wire form of a CandidateRecord.
type candidateRecordJSON struct {
	Name      string `json:"name"`
	Weight    int    `json:"weight"`
	Filter    string `json:"filter,omitempty"`
	Reason    string `json:"reason,omitempty"`
	Translate string `json:"translate,omitempty"`
	Scores    Scores `json:"scores,omitzero"`
	Rank      int    `json:"rank,omitempty"`
}

// MarshalJSON encodes the record as {name, weight, filter, reason, scores,
// rank}, with reason from ReasonText; empty fields are omitted.
func (r CandidateRecord) MarshalJSON() ([]byte, error) {
	return json.Marshal(candidateRecordJSON{
		Name: r.Name, Weight: r.Weight, Filter: r.Filter, Reason: r.ReasonText(), Translate: r.Translate, Scores: r.Scores, Rank: r.Rank,
	})
}
