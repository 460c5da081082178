package proxy

import (
	"encoding/json"
	"net/http"

	"switchyard/internal/balancer"
)

// Request-level debug (docs/reference.md#request-level-debug): a key with
// debug: true that sends X-Switchyard-Debug: 1 gets its routing decision in
// X-Switchyard-Decision and the path of its request view in
// X-Switchyard-Request-View; the decision is logged at info for that
// request only.
const (
	headerDebug       = "X-Switchyard-Debug"
	headerDecision    = "X-Switchyard-Decision"
	headerRequestView = "X-Switchyard-Request-View"
	// maxDecisionHeader bounds X-Switchyard-Decision, in bytes.
	maxDecisionHeader = 8 << 10
)

// candidateCost is a candidate's estimated cost for the request, when priced.
type candidateCost struct {
	name string
	usd  float64
}

// noteCosts keeps the estimated cost of each priced candidate of a plan,
// for the debug decision.
func (x *exchange) noteCosts(req *balancer.Request, cands []balancer.Candidate) {
	x.costs = x.costs[:0]
	out := balancer.ExpectedOutputTokens(req)
	for i := range cands {
		if usd, ok := balancer.EstimatedCost(&cands[i], float64(max(req.InputTokens, 0)), out); ok {
			x.costs = append(x.costs, candidateCost{cands[i].Name, usd})
		}
	}
}

// debugDecision is the JSON of X-Switchyard-Decision.
type debugDecision struct {
	RequestID   string                   `json:"request_id"`
	Model       string                   `json:"model"`
	Rule        string                   `json:"rule,omitempty"`
	ReroutedBy  string                   `json:"rerouted_by,omitempty"`
	Preferences *debugPrefs              `json:"preferences,omitempty"`
	Strategy    string                   `json:"strategy"`
	Affinity    *balancer.AffinityRecord `json:"affinity,omitempty"`
	Candidates  []debugCandidate         `json:"candidates"`
	// Omitted counts the candidates left out to keep the header within
	// maxDecisionHeader (neither ranked nor tried).
	Omitted  int            `json:"omitted,omitempty"`
	Order    []string       `json:"order"`
	Waitable []string       `json:"waitable,omitempty"`
	Attempts []debugAttempt `json:"attempts"`
	// Plans counts the request's plans when there was more than one (a
	// wait for an upstream to free up, fallback models); the rest of the
	// decision is the last one's.
	Plans int `json:"plans,omitempty"`
}

type debugCandidate struct {
	Name    string          `json:"name"`
	Tier    int             `json:"tier"`
	Filter  string          `json:"filter,omitempty"`
	Reason  string          `json:"reason,omitempty"`
	Scores  balancer.Scores `json:"scores,omitzero"`
	CostUSD *float64        `json:"cost_usd,omitempty"`
	Rank    int             `json:"rank,omitempty"`
}

type debugAttempt struct {
	Upstream string `json:"upstream"`
	Outcome  string `json:"outcome"`
	Status   int    `json:"status,omitempty"`
	Hedge    bool   `json:"hedge,omitempty"`
	Won      bool   `json:"won,omitempty"`
}

type debugPrefs struct {
	Order          []string `json:"order,omitempty"`
	Only           []string `json:"only,omitempty"`
	Ignore         []string `json:"ignore,omitempty"`
	AllowFallbacks bool     `json:"allow_fallbacks"`
	Sort           string   `json:"sort,omitempty"`
	MaxPrice       bool     `json:"max_price,omitempty"`
}

// debugHeaders sets X-Switchyard-Decision (the decision so far: the last
// plan and the attempts up to now) and X-Switchyard-Request-View on h.
// committing names the attempt whose answer is being written, "" for an
// error answer.
func (x *exchange) debugHeaders(h http.Header, committing string) {
	h.Set(headerDecision, string(x.decisionJSON(committing)))
	h.Set(headerRequestView, "/admin/api/requests/"+x.log.ID)
}

// logDecision logs the request's decision at info level.
func (x *exchange) logDecision() {
	x.s.opts.Logger.Info("routing decision", "request_id", x.log.ID, "key", x.key.cfg.Name,
		"decision", json.RawMessage(x.decisionJSON("")))
}

// decisionJSON encodes the debug decision, within maxDecisionHeader: when
// too long, the candidates neither ranked nor tried are counted instead of
// listed, then the scores are left out, then every candidate.
func (x *exchange) decisionJSON(committing string) []byte {
	d := x.debugDecision(committing)
	b, _ := json.Marshal(d)
	if len(b) <= maxDecisionHeader {
		return b
	}
	tried := map[string]bool{}
	for _, a := range d.Attempts {
		tried[a.Upstream] = true
	}
	kept := d.Candidates[:0:0]
	for _, c := range d.Candidates {
		if c.Rank > 0 || tried[c.Name] {
			kept = append(kept, c)
		}
	}
	d.Omitted, d.Candidates = len(d.Candidates)-len(kept), kept
	if b, _ = json.Marshal(d); len(b) <= maxDecisionHeader {
		return b
	}
	for i := range d.Candidates {
		d.Candidates[i].Scores = balancer.Scores{}
	}
	if b, _ = json.Marshal(d); len(b) <= maxDecisionHeader {
		return b
	}
	d.Omitted, d.Candidates, d.Waitable = d.Omitted+len(d.Candidates), []debugCandidate{}, nil
	if len(d.Order) > 8 {
		d.Order = d.Order[:8]
	}
	if len(d.Attempts) > 8 {
		d.Attempts = d.Attempts[:8]
	}
	b, _ = json.Marshal(d)
	return b
}

// debugDecision gathers the decision from the request's last plan and its
// attempts.
func (x *exchange) debugDecision(committing string) debugDecision {
	d := debugDecision{RequestID: x.log.ID, Model: x.model, Candidates: []debugCandidate{}, Order: []string{}, Attempts: []debugAttempt{}}
	if p := x.prefs; p != nil {
		d.Preferences = &debugPrefs{Order: p.Order, Only: p.Only, Ignore: p.Ignore, AllowFallbacks: !p.NoFallbacks, Sort: p.Sort, MaxPrice: p.MaxPrice}
	}
	if x.rule != nil {
		d.Rule = x.rule.ref
	}
	if x.rerouted != nil {
		d.ReroutedBy = x.rerouted.ref
	}
	if n := len(x.tally.plans); n > 0 {
		pd := x.tally.plans[n-1]
		if n > 1 {
			d.Plans = n
		}
		d.Model, d.Rule, d.Strategy = pd.Model, pd.Rule, pd.Strategy
		if pd.Affinity.Session != "" {
			d.Affinity = &pd.Affinity
		}
		d.Order, d.Waitable = nonNilNames(pd.Order), pd.Waitable
		for i := range pd.Candidates {
			r := &pd.Candidates[i]
			c := debugCandidate{Name: r.Name, Tier: r.Priority, Filter: r.Filter, Reason: r.ReasonText(), Scores: r.Scores, Rank: r.Rank}
			for j := range x.costs {
				if x.costs[j].name == r.Name {
					c.CostUSD = &x.costs[j].usd
				}
			}
			d.Candidates = append(d.Candidates, c)
		}
	}
	for _, t := range x.log.Tried {
		a := debugAttempt{Upstream: t.Upstream, Outcome: t.Outcome, Status: t.Status, Hedge: t.Hedge, Won: t.Won}
		if a.Outcome == "" {
			a.Outcome = "running"
			if t.Upstream == committing {
				a.Outcome, a.Won = "committed", true
			}
		}
		d.Attempts = append(d.Attempts, a)
	}
	return d
}

func nonNilNames(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
