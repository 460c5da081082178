package proxy

import (
	"encoding/json"
	"net/http"

	"switchyard/internal/balancer"
	"switchyard/internal/store"
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

// costList is the estimated costs of a plan's priced candidates, kept for
// the debug decision only.
type costList []candidateCost

// note keeps the estimated cost of each priced candidate of a plan.
func (c *costList) note(req *balancer.Request, cands []balancer.Candidate) {
	*c = (*c)[:0]
	out := balancer.ExpectedOutputTokens(req)
	for i := range cands {
		if usd, ok := balancer.EstimatedCost(&cands[i], float64(max(req.InputTokens, 0)), out); ok {
			*c = append(*c, candidateCost{cands[i].Name, usd})
		}
	}
}

// debugView is what the debug decision reads of an exchange: the
// request's id, model, preferences and rules, its plans and attempts so
// far, and the candidates' estimated costs.
type debugView struct {
	id, model      string
	prefs          *balancer.Preferences
	rule, rerouted *rule
	plans          []*balancer.Decision
	tried          []store.Attempt
	costs          costList
}

// debugView returns the exchange's debug view as it stands.
func (x *exchange) debugView() debugView {
	return debugView{id: x.log.ID, model: x.model, prefs: x.prefs, rule: x.rule, rerouted: x.rerouted,
		plans: x.tally.plans, tried: x.log.Tried, costs: x.costs}
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

// headers sets X-Switchyard-Decision (the decision so far: the last
// plan and the attempts up to now) and X-Switchyard-Request-View on h.
// committing names the attempt whose answer is being written, "" for an
// error answer.
func (v debugView) headers(h http.Header, committing string) {
	h.Set(headerDecision, string(v.json(committing)))
	h.Set(headerRequestView, "/admin/api/requests/"+v.id)
}

// json encodes the debug decision, within maxDecisionHeader: when
// too long, the candidates neither ranked nor tried are counted instead of
// listed, then the scores are left out, then every candidate.
func (v debugView) json(committing string) []byte {
	d := v.decision(committing)
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

// decision gathers the decision from the request's last plan and its
// attempts.
func (v debugView) decision(committing string) debugDecision {
	d := debugDecision{RequestID: v.id, Model: v.model, Candidates: []debugCandidate{}, Order: []string{}, Attempts: []debugAttempt{}}
	if p := v.prefs; p != nil {
		d.Preferences = &debugPrefs{Order: p.Order, Only: p.Only, Ignore: p.Ignore, AllowFallbacks: !p.NoFallbacks, Sort: p.Sort, MaxPrice: p.MaxPrice}
	}
	if v.rule != nil {
		d.Rule = v.rule.ref
	}
	if v.rerouted != nil {
		d.ReroutedBy = v.rerouted.ref
	}
	if n := len(v.plans); n > 0 {
		pd := v.plans[n-1]
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
			for j := range v.costs {
				if v.costs[j].name == r.Name {
					c.CostUSD = &v.costs[j].usd
				}
			}
			d.Candidates = append(d.Candidates, c)
		}
	}
	for _, t := range v.tried {
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
