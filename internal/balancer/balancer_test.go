package balancer

import (
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// testEpoch is the fixed instant the fake clocks start at.
var testEpoch = time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)

// stepClock returns a Now func that starts at testEpoch and advances by step
// on every call, so ElapsedNs is exact.
func stepClock(step time.Duration) func() time.Time {
	var calls atomic.Int64
	return func() time.Time {
		return testEpoch.Add(time.Duration(calls.Add(1)-1) * step)
	}
}

// seeded returns a PCG-backed Rand for seed.
func seeded(seed uint64) *rand.Rand {
	return rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// newStrategyBalancer returns a Balancer with the named strategy, a seeded
// Rand and now as its clock (a 1µs step clock if nil).
func newStrategyBalancer(t testing.TB, strategy string, seed uint64, now func() time.Time) *Balancer {
	t.Helper()
	if now == nil {
		now = stepClock(time.Microsecond)
	}
	b, err := New(Options{Strategy: strategy, Rand: seeded(seed), Now: now})
	if err != nil {
		t.Fatalf("New(%q): %v", strategy, err)
	}
	return b
}

func newTestBalancer(t testing.TB, seed uint64) *Balancer {
	t.Helper()
	return newStrategyBalancer(t, StrategyWeightedRandom, seed, nil)
}

// up returns an active, healthy candidate.
func up(name string, prio, weight int) Candidate {
	return Candidate{Name: name, Priority: prio, Weight: weight, Active: true}
}

func record(d Decision, name string) (CandidateRecord, int, bool) {
	for _, r := range d.Candidates {
		if r.Name == name {
			return r, r.Priority, true
		}
	}
	return CandidateRecord{}, 0, false
}

// checkInvariants asserts what every Plan must satisfy whatever the input
// and the strategy.
func checkInvariants(t *testing.T, req Request, cands []Candidate, p Plan) {
	t.Helper()
	k := max(req.K, 1)
	if len(p.Order) > k {
		t.Errorf("len(Order) = %d > K = %d", len(p.Order), k)
	}
	seen := map[string]bool{}
	for _, n := range slices.Concat(p.Order, p.Waitable) {
		if seen[n] {
			t.Errorf("%q appears twice in %v + %v", n, p.Order, p.Waitable)
		}
		seen[n] = true
	}
	if !slices.Equal(p.Decision.Order, p.Order) {
		t.Errorf("Decision.Order = %v, Plan.Order = %v", p.Decision.Order, p.Order)
	}
	if !slices.Equal(p.Decision.Waitable, p.Waitable) {
		t.Errorf("Decision.Waitable = %v, Plan.Waitable = %v", p.Decision.Waitable, p.Waitable)
	}
	wantChosen := ""
	if len(p.Order) > 0 {
		wantChosen = p.Order[0]
	}
	if p.Decision.Chosen != wantChosen {
		t.Errorf("Chosen = %q, want %q", p.Decision.Chosen, wantChosen)
	}
	nrec := 0
	prev := -1 << 62
	for _, tr := range p.Decision.Tiers() {
		if tr.Priority <= prev {
			t.Errorf("tiers not strictly ascending: %d after %d", tr.Priority, prev)
		}
		prev = tr.Priority
		for _, r := range tr.Candidates {
			nrec++
			if r.Priority != tr.Priority {
				t.Errorf("%s: record priority %d in tier %d", r.Name, r.Priority, tr.Priority)
			}
			want := slices.Index(p.Order, r.Name) + 1
			if r.Rank != want {
				t.Errorf("%s: Rank = %d, want %d", r.Name, r.Rank, want)
			}
			if r.Rank > 0 && r.Filter != "" {
				t.Errorf("%s: in Order but filtered %q", r.Name, r.Filter)
			}
			if slices.Contains(p.Waitable, r.Name) != (r.Filter == FilterWaitable) {
				t.Errorf("%s: filter %q vs Waitable %v", r.Name, r.Filter, p.Waitable)
			}
			a := p.Decision.Affinity
			pinned := a.Result == AffinityHit && r.Name == a.Bound || // the session's home, then its stand-in
				(a.Result == AffinityHit || a.Result == AffinityStandIn) && r.Name == a.StandIn && r.Rank <= 2
			if (r.Rank > 0 || r.Filter == FilterWaitable) && r.Scores.IsZero() && !pinned {
				t.Errorf("%s: ordered without scores", r.Name)
			}
			if r.Filter != "" && r.Filter != FilterWaitable && !r.Scores.IsZero() {
				t.Errorf("%s: filtered %q but scored %+v", r.Name, r.Filter, r.Scores)
			}
		}
	}
	if nrec != len(cands) {
		t.Errorf("decision records %d candidates, input has %d", nrec, len(cands))
	}
	// Tiers are concatenated: priorities along Order never decrease, first
	// over the healthy survivors, then again over kept fallbacks, which
	// never come before a healthy one.
	last, inFallbacks := -1<<62, false
	for i, n := range p.Order {
		if i == 0 && p.Decision.Affinity.Result == AffinityHit {
			continue // a session's bound upstream goes first, whatever its tier
		}
		r, prio, _ := record(p.Decision, n)
		if r.Fallback && !inFallbacks {
			last, inFallbacks = -1<<62, true
		}
		if !r.Fallback && inFallbacks {
			t.Errorf("Order %v puts the healthy %s after a fallback", p.Order, n)
		}
		if prio < last {
			t.Errorf("Order %v goes back from tier %d to %d", p.Order, last, prio)
		}
		last = prio
	}
}

func TestNew(t *testing.T) {
	now := stepClock(time.Millisecond)
	tests := []struct {
		name    string
		opts    Options
		wantErr error
		wantIn  string
		want    string
	}{
		{name: "default strategy", opts: Options{Now: now}, want: StrategyWeightedRandom},
		{name: "unknown strategy", opts: Options{Strategy: "fastest-guess", Now: now}, wantErr: ErrUnknownStrategy, wantIn: `"fastest-guess"`},
		{name: "no clock", opts: Options{}, wantErr: ErrNoClock},
	}
	for _, name := range []string{"weighted-random", "smooth-wrr", "round-robin", "least-conn", "p2c-ewma", "adaptive", "failover"} {
		tests = append(tests, struct {
			name    string
			opts    Options
			wantErr error
			wantIn  string
			want    string
		}{name: name, opts: Options{Strategy: name, Now: now}, want: name})
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b, err := New(tt.opts)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("New error = %v, want %v", err, tt.wantErr)
				}
				if !strings.Contains(err.Error(), tt.wantIn) {
					t.Errorf("error %q does not contain %q", err, tt.wantIn)
				}
				return
			}
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			if got := b.Strategy(); got != tt.want {
				t.Errorf("Strategy() = %q, want %q", got, tt.want)
			}
		})
	}
	if got, want := len(StrategyNames()), 8; got != want {
		t.Errorf("%d strategies registered (%v), want %d", got, StrategyNames(), want)
	}
}

// TestPlanTiersAndFilters runs every strategy over the same tier and filter
// cases: whatever the strategy, tiers are tried in order, filtered candidates
// never appear, and each record says why.
func TestPlanTiersAndFilters(t *testing.T) {
	full := func(c Candidate, queue bool) Candidate {
		c.InFlight, c.MaxConcurrency, c.QueueEnabled = 4, 4, queue
		return c
	}
	tests := []struct {
		name  string
		req   Request
		cands []Candidate
		// wantOrder lists, per position, the set the name must come from.
		wantOrder    [][]string
		wantWaitable []string
		wantFilter   map[string]string // name → Filter
		wantReason   map[string]string // name → ReasonText
		// adaptive keeps rate-limited candidates: its expectations where
		// they differ.
		adaptiveOrder    [][]string
		adaptiveWaitable []string
		adaptiveFilter   map[string]string
		adaptiveReason   map[string]string
	}{
		{
			name:       "tier 0 healthy, tier 1 never used",
			req:        Request{K: 1},
			cands:      []Candidate{up("b1", 1, 100), up("a1", 0, 1), up("a2", 0, 1)},
			wantOrder:  [][]string{{"a1", "a2"}},
			wantFilter: map[string]string{"b1": "", "a1": "", "a2": ""},
		},
		{
			name: "breaker open and excluded recorded with reasons",
			req:  Request{K: 1, Exclude: []string{"a2"}},
			cands: []Candidate{
				func() Candidate {
					c := up("a1", 0, 5)
					c.BreakerOpen, c.BreakerReason = true, "5 consecutive failures"
					return c
				}(),
				up("a2", 0, 5), up("a3", 0, 5), up("b1", 1, 5),
			},
			wantOrder:  [][]string{{"a3"}},
			wantFilter: map[string]string{"a1": FilterBreakerOpen, "a2": FilterExcluded, "a3": ""},
			wantReason: map[string]string{"a1": "breaker open: 5 consecutive failures", "a2": "already tried by this request", "a3": ""},
		},
		{
			name: "spills into tier 1 when tier 0 is short",
			req:  Request{K: 3},
			cands: []Candidate{
				up("a1", 0, 1), up("b1", 1, 1), up("b2", 1, 1), up("c1", 2, 1),
				func() Candidate { c := up("a2", 0, 1); c.BreakerOpen = true; return c }(),
			},
			wantOrder:  [][]string{{"a1"}, {"b1", "b2"}, {"b1", "b2"}},
			wantFilter: map[string]string{"a2": FilterBreakerOpen},
			wantReason: map[string]string{"a2": "breaker open"},
		},
		{
			name:      "spills through several tiers",
			req:       Request{K: 4},
			cands:     []Candidate{up("c1", 7, 1), up("a1", 0, 1), up("b1", 3, 1), up("c2", 7, 1)},
			wantOrder: [][]string{{"a1"}, {"b1"}, {"c1", "c2"}, {"c1", "c2"}},
		},
		{
			name:      "K truncates",
			req:       Request{K: 2},
			cands:     []Candidate{up("a1", 0, 1), up("a2", 0, 1), up("a3", 0, 1), up("b1", 1, 1)},
			wantOrder: [][]string{{"a1", "a2", "a3"}, {"a1", "a2", "a3"}},
		},
		{
			name:      "K zero means one",
			req:       Request{K: 0},
			cands:     []Candidate{up("a1", 0, 1), up("a2", 0, 1)},
			wantOrder: [][]string{{"a1", "a2"}},
		},
		{
			name: "waitable after order, dropped when no queue",
			req:  Request{K: 3},
			cands: []Candidate{
				full(up("a1", 0, 1), true), full(up("a2", 0, 1), false), up("a3", 0, 1),
				full(up("b1", 1, 1), true), up("b2", 1, 1),
			},
			wantOrder:    [][]string{{"a3"}, {"b2"}},
			wantWaitable: []string{"a1", "b1"}, // tier by tier
			wantFilter:   map[string]string{"a1": FilterWaitable, "a2": FilterConcurrencyFull, "b1": FilterWaitable},
			wantReason:   map[string]string{"a1": "in-flight 4 of max 4, queue enabled", "a2": "in-flight 4 of max 4"},
		},
		{
			name: "only waitable left",
			req:  Request{K: 2},
			cands: []Candidate{
				full(up("a1", 0, 1), true), full(up("b1", 1, 1), true),
			},
			wantWaitable: []string{"a1", "b1"},
		},
		{
			name: "unlimited concurrency never full",
			req:  Request{K: 1},
			cands: []Candidate{
				func() Candidate { c := up("a1", 0, 1); c.InFlight = 1000; return c }(),
			},
			wantOrder: [][]string{{"a1"}},
		},
		{
			name: "inactive filtered",
			req:  Request{K: 2},
			cands: []Candidate{
				{Name: "a1", Weight: 100}, up("a2", 0, 1),
			},
			wantOrder:  [][]string{{"a2"}},
			wantFilter: map[string]string{"a1": FilterInactive},
			wantReason: map[string]string{"a1": "upstream inactive"},
		},
		{
			name: "rate limited: dropped, or last of all tiers under adaptive",
			req:  Request{K: 3},
			cands: []Candidate{
				func() Candidate {
					c := up("a1", 0, 100)
					c.RateLimited, c.RateLimitReason = true, "cooling down until 12:00:05"
					return c
				}(),
				up("a2", 0, 1), up("b1", 1, 1),
			},
			wantOrder:      [][]string{{"a2"}, {"b1"}},
			wantFilter:     map[string]string{"a1": FilterRateLimited},
			wantReason:     map[string]string{"a1": "rate limited: cooling down until 12:00:05"},
			adaptiveOrder:  [][]string{{"a2"}, {"b1"}, {"a1"}},
			adaptiveFilter: map[string]string{"a1": ""},
			adaptiveReason: map[string]string{"a1": "rate limited: cooling down until 12:00:05, kept as a fallback"},
		},
		{
			name: "filter order: first match recorded",
			req:  Request{K: 1, Exclude: []string{"a1", "a2", "a3", "a4"}},
			cands: []Candidate{
				{Name: "a1", BreakerOpen: true, SpendExceeded: true, InFlight: 1, MaxConcurrency: 1},
				func() Candidate { c := up("a2", 0, 1); c.BreakerOpen, c.SpendExceeded = true, true; return c }(),
				func() Candidate {
					c := up("a3", 0, 1)
					c.SpendExceeded, c.SpendReason = true, "daily $5 used"
					return c
				}(),
				func() Candidate { c := up("a4", 0, 1); c.RateLimited = true; return c }(),
				func() Candidate {
					c := up("a6", 0, 1)
					c.Incompatible, c.BreakerOpen, c.Translate = "logprobs", true, "anthropic"
					return c
				}(),
				func() Candidate {
					c := up("a5", 0, 1)
					c.RateLimited, c.RateLimitReason = true, "429 cooldown"
					return full(c, true)
				}(),
			},
			wantFilter: map[string]string{
				"a1": FilterInactive, "a2": FilterBreakerOpen, "a3": FilterSpendExceeded,
				"a4": FilterExcluded, "a5": FilterRateLimited, "a6": FilterIncompatible,
			},
			wantReason:       map[string]string{"a3": "spend quota exceeded: daily $5 used", "a5": "rate limited: 429 cooldown", "a6": "incompatible: logprobs"},
			adaptiveWaitable: []string{"a5"},
			adaptiveFilter:   map[string]string{"a5": FilterWaitable},
			adaptiveReason:   map[string]string{"a5": "in-flight 4 of max 4, queue enabled"},
		},
		{
			name: "nothing survives",
			req:  Request{K: 3, Exclude: []string{"a2"}},
			cands: []Candidate{
				{Name: "a1", Weight: 1},
				up("a2", 0, 1),
				func() Candidate { c := up("b1", 1, 1); c.BreakerOpen = true; return c }(),
				full(up("b2", 1, 1), false),
			},
		},
		{name: "no candidates", req: Request{K: 3}},
	}
	for _, strategy := range StrategyNames() {
		for _, tt := range tests {
			t.Run(strategy+"/"+tt.name, func(t *testing.T) {
				wantOrder, wantWaitable := tt.wantOrder, tt.wantWaitable
				wantFilter, wantReason := tt.wantFilter, tt.wantReason
				if strategy == StrategyAdaptive {
					if tt.adaptiveOrder != nil {
						wantOrder = tt.adaptiveOrder
					}
					wantFilter = merged(wantFilter, tt.adaptiveFilter)
					wantReason = merged(wantReason, tt.adaptiveReason)
					if tt.adaptiveWaitable != nil {
						wantWaitable = tt.adaptiveWaitable
					}
				}
				for seed := range uint64(20) {
					b := newStrategyBalancer(t, strategy, seed, nil)
					p := b.Plan(tt.req, tt.cands)
					checkInvariants(t, tt.req, tt.cands, p)
					if len(p.Order) != len(wantOrder) {
						t.Fatalf("seed %d: Order = %v, want %d entries from %v", seed, p.Order, len(wantOrder), wantOrder)
					}
					for i, n := range p.Order {
						if !slices.Contains(wantOrder[i], n) {
							t.Errorf("seed %d: Order[%d] = %q, want one of %v (Order %v)", seed, i, n, wantOrder[i], p.Order)
						}
					}
					if !slices.Equal(p.Waitable, wantWaitable) && len(p.Waitable)+len(wantWaitable) > 0 {
						t.Errorf("seed %d: Waitable = %v, want %v", seed, p.Waitable, wantWaitable)
					}
					for name, f := range wantFilter {
						r, _, ok := record(p.Decision, name)
						if !ok {
							t.Fatalf("no record for %s", name)
						}
						if r.Filter != f {
							t.Errorf("%s: Filter = %q, want %q", name, r.Filter, f)
						}
					}
					for name, reason := range wantReason {
						if r, _, _ := record(p.Decision, name); r.ReasonText() != reason {
							t.Errorf("%s: ReasonText = %q, want %q", name, r.ReasonText(), reason)
						}
					}
				}
			})
		}
	}
}

func merged(a, b map[string]string) map[string]string {
	m := map[string]string{}
	for k, v := range a {
		m[k] = v
	}
	for k, v := range b {
		m[k] = v
	}
	return m
}

func TestPlanDecision(t *testing.T) {
	b := newTestBalancer(t, 1)
	req := Request{RequestID: "req-1", Model: "gpt-4o", Key: "team-a", Session: "s-9", Stream: true, K: 2, Exclude: []string{"x"}}
	cands := []Candidate{
		up("b1", 1, 1), up("a1", 0, 3),
		func() Candidate { c := up("a2", 0, 2); c.LatencyMs = 100; return c }(),
		func() Candidate { c := up("x", 0, 9); return c }(),
	}
	p := b.Plan(req, cands)
	checkInvariants(t, req, cands, p)
	d := p.Decision
	if d.RequestID != "req-1" || d.Model != "gpt-4o" || d.Key != "team-a" || d.Session != "s-9" || !d.Stream {
		t.Errorf("request fields not copied: %+v", d)
	}
	if d.Strategy != StrategyWeightedRandom {
		t.Errorf("Strategy = %q", d.Strategy)
	}
	if !d.At.Equal(testEpoch) {
		t.Errorf("At = %v, want %v", d.At, testEpoch)
	}
	if d.ElapsedNs != int64(time.Microsecond) {
		t.Errorf("ElapsedNs = %d, want %d (two clock reads one step apart)", d.ElapsedNs, time.Microsecond)
	}
	tiers := d.Tiers()
	if len(tiers) != 2 || tiers[0].Priority != 0 || tiers[1].Priority != 1 {
		t.Fatalf("Tiers = %+v", tiers)
	}
	// Input order is kept within a tier.
	var names []string
	for _, r := range tiers[0].Candidates {
		names = append(names, r.Name)
	}
	if want := []string{"a1", "a2", "x"}; !slices.Equal(names, want) {
		t.Errorf("tier 0 records = %v, want %v", names, want)
	}
	// Survivors of the tier the strategy ordered carry scores; the filtered
	// one and the tier never reached do not.
	for _, n := range []string{"a1", "a2"} {
		if r, _, _ := record(d, n); r.Scores.IsZero() {
			t.Errorf("%s has no scores", n)
		}
	}
	for _, n := range []string{"x", "b1"} {
		if r, _, _ := record(d, n); !r.Scores.IsZero() {
			t.Errorf("%s has scores %+v", n, r.Scores)
		}
	}

	// The Decision is an independent copy of the Plan's slices.
	p.Order[0] = "mutated"
	if d.Order[0] == "mutated" || d.Chosen == "mutated" {
		t.Errorf("Decision.Order aliases Plan.Order")
	}
}

// TestDecisionJSON pins the wire shape of a Decision for every strategy.
func TestDecisionJSON(t *testing.T) {
	cands := []Candidate{
		up("b1", 1, 1), up("a1", 0, 3),
		func() Candidate { c := up("a2", 0, 2); c.LatencyMs, c.LatencyEWMA, c.InFlight = 100, 250, 1; return c }(),
		func() Candidate { c := up("x", 0, 9); c.BreakerOpen, c.BreakerReason = true, `3 × "503"`; return c }(),
		func() Candidate {
			c := up("w", 0, 1)
			c.InFlight, c.MaxConcurrency, c.QueueEnabled = 2, 2, true
			return c
		}(),
	}
	req := Request{RequestID: "req-1", Model: "gpt-4o", Key: "team-a", K: 2}
	for _, strategy := range StrategyNames() {
		t.Run(strategy, func(t *testing.T) {
			p := newStrategyBalancer(t, strategy, 1, nil).Plan(req, cands)
			raw, err := json.Marshal(&p.Decision)
			if err != nil {
				t.Fatal(err)
			}
			var m map[string]any
			if err := json.Unmarshal(raw, &m); err != nil {
				t.Fatal(err)
			}
			keys := []string{"request_id", "model", "key", "stream", "strategy", "tiers", "order", "waitable", "chosen", "elapsed_ns", "at"}
			for _, key := range keys {
				if _, ok := m[key]; !ok {
					t.Errorf("JSON lacks %q: %s", key, raw)
				}
			}
			if _, ok := m["session"]; ok || len(m) != len(keys) {
				t.Errorf("JSON has %d keys, want exactly %v: %s", len(m), keys, raw)
			}
			if m["strategy"] != strategy || m["chosen"] != p.Order[0] {
				t.Errorf("strategy/chosen = %v/%v: %s", m["strategy"], m["chosen"], raw)
			}
			tiers := m["tiers"].([]any)
			if len(tiers) != 2 {
				t.Fatalf("%d tiers: %s", len(tiers), raw)
			}
			tier0 := tiers[0].(map[string]any)
			if tier0["priority"] != 0.0 || len(tier0) != 2 {
				t.Errorf("tier 0 = %v", tier0)
			}
			recs := tier0["candidates"].([]any)
			if len(recs) != 4 {
				t.Fatalf("tier 0 has %d records: %s", len(recs), raw)
			}
			allowed := map[string]bool{"name": true, "weight": true, "filter": true, "reason": true, "scores": true, "rank": true}
			for _, r := range recs {
				for key := range r.(map[string]any) {
					if !allowed[key] {
						t.Errorf("record key %q: %v", key, r)
					}
				}
			}
			x := recs[2].(map[string]any)
			if x["name"] != "x" || x["filter"] != "breaker_open" || x["reason"] != `breaker open: 3 × "503"` || x["scores"] != nil || x["rank"] != nil {
				t.Errorf("filtered record = %v", x)
			}
			w := recs[3].(map[string]any)
			if w["filter"] != "waitable" || w["reason"] != "in-flight 2 of max 2, queue enabled" || w["scores"] == nil {
				t.Errorf("waitable record = %v", w)
			}
			for _, r := range recs[:2] {
				r := r.(map[string]any)
				if _, ok := r["rank"]; !ok || r["scores"] == nil || r["reason"] != nil {
					t.Errorf("ordered record = %v", r)
				}
			}
			if strings.Contains(string(raw), "null") {
				t.Errorf("JSON has a null: %s", raw)
			}
		})
	}

	t.Run("empty plan", func(t *testing.T) {
		p := newTestBalancer(t, 1).Plan(Request{}, nil)
		raw, err := json.Marshal(p.Decision)
		if err != nil {
			t.Fatal(err)
		}
		for _, want := range []string{`"tiers":[]`, `"order":[]`, `"waitable":[]`, `"chosen":""`} {
			if !strings.Contains(string(raw), want) {
				t.Errorf("JSON lacks %s: %s", want, raw)
			}
		}
	})
}

func TestPlanDoesNotRetainOrMutateInput(t *testing.T) {
	for _, strategy := range StrategyNames() {
		t.Run(strategy, func(t *testing.T) {
			b := newStrategyBalancer(t, strategy, 3, nil)
			cands := []Candidate{up("a", 0, 1), up("b", 0, 2), up("c", 1, 3), up("d", 0, 4)}
			cands[1].InFlight, cands[1].MaxConcurrency, cands[1].QueueEnabled = 1, 1, true
			before := slices.Clone(cands)
			for range 100 {
				b.Plan(Request{K: 3}, cands)
			}
			if !slices.Equal(cands, before) {
				t.Errorf("Plan changed its input: %v", cands)
			}
			s := &b.scratch
			for _, c := range slices.Concat(s.tier.Candidates[:cap(s.tier.Candidates)], s.orig[:cap(s.orig)]) {
				if c != nil {
					t.Fatalf("scratch retains a candidate pointer")
				}
			}
			if r := strategyRanker(b.strategy); r != nil {
				for _, it := range r.items[:cap(r.items)] {
					if it.c != nil {
						t.Fatalf("ranker retains a candidate pointer")
					}
				}
			}
		})
	}
}

// strategyRanker returns the strategy's ranker scratch, if it has one.
func strategyRanker(s Strategy) *ranker {
	switch s := s.(type) {
	case *smoothWRR:
		return &s.r
	case *leastConn:
		return &s.r
	case *p2cEWMA:
		return &s.r
	case *adaptive:
		return &s.r
	case *failover:
		return &s.r
	}
	return nil
}

// TestPlanAllocs pins Plan's allocation budget: one allocation for the
// records, one for the name slices, for every strategy.
func TestPlanAllocs(t *testing.T) {
	for _, strategy := range StrategyNames() {
		t.Run(strategy, func(t *testing.T) {
			b := newStrategyBalancer(t, strategy, 1, time.Now)
			cands := benchPool(10)
			req := Request{RequestID: "r", Model: "m", K: 3, Exclude: []string{"upstream-0000"}}
			b.Plan(req, cands) // warm the scratch buffers and strategy state
			if got := testing.AllocsPerRun(200, func() { b.Plan(req, cands) }); got > 2 {
				t.Errorf("Plan allocates %v times per call, want ≤ 2", got)
			}
		})
	}
}

func TestPlanConcurrent(t *testing.T) {
	for _, strategy := range StrategyNames() {
		t.Run(strategy, func(t *testing.T) {
			b := newStrategyBalancer(t, strategy, 11, nil)
			cands := []Candidate{
				up("a1", 0, 3), up("a2", 0, 2), up("b1", 1, 1), up("b2", 1, 1),
				func() Candidate {
					c := up("a3", 0, 1)
					c.InFlight, c.MaxConcurrency, c.QueueEnabled = 2, 2, true
					return c
				}(),
			}
			const goroutines, each = 8, 250
			var wg sync.WaitGroup
			errs := make(chan string, goroutines)
			for g := range goroutines {
				wg.Go(func() {
					for i := range each {
						req := Request{RequestID: fmt.Sprint(g, "-", i), K: 3}
						p := b.Plan(req, cands)
						if len(p.Order) != 3 || p.Order[0] == p.Order[1] || p.Order[1] == p.Order[2] || p.Order[0] == p.Order[2] ||
							!slices.Equal(p.Waitable, []string{"a3"}) || p.Decision.RequestID != req.RequestID {
							errs <- fmt.Sprintf("bad plan %v %v %q", p.Order, p.Waitable, p.Decision.RequestID)
							return
						}
						if p.Order[0] == "b1" || p.Order[0] == "b2" || p.Order[1] == "b1" || p.Order[1] == "b2" {
							errs <- fmt.Sprintf("tier 1 before tier 0: %v", p.Order)
							return
						}
					}
				})
			}
			wg.Wait()
			close(errs)
			for e := range errs {
				t.Error(e)
			}
		})
	}
}

// TestGroup covers both paths of the tier grouping: the counting sort over a
// narrow priority range and the binary-search fallback for a wide one.
func TestGroup(t *testing.T) {
	tests := []struct {
		name      string
		prios     []int
		wantPrios []int
		wantOrder []int // input indices, grouped by tier, stable
	}{
		{name: "empty"},
		{name: "one tier", prios: []int{0, 0, 0}, wantPrios: []int{0}, wantOrder: []int{0, 1, 2}},
		{name: "narrow", prios: []int{2, 0, 1, 0, 2, 100}, wantPrios: []int{0, 1, 2, 100}, wantOrder: []int{1, 3, 2, 0, 4, 5}},
		{name: "negative", prios: []int{-1, 3, -1}, wantPrios: []int{-1, 3}, wantOrder: []int{0, 2, 1}},
		{name: "wide fallback", prios: []int{5000, -3, 5000, 0, -3}, wantPrios: []int{-3, 0, 5000}, wantOrder: []int{1, 4, 3, 0, 2}},
		{name: "extreme fallback", prios: []int{math.MaxInt, math.MinInt, 0}, wantPrios: []int{math.MinInt, 0, math.MaxInt}, wantOrder: []int{1, 2, 0}},
	}
	var s scratch // reused across cases, as under the Balancer's mutex
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cands := make([]Candidate, len(tt.prios))
			for i, p := range tt.prios {
				cands[i].Priority = p
			}
			s.groupLocked(cands)
			if !slices.Equal(s.prios, tt.wantPrios) && len(s.prios)+len(tt.wantPrios) > 0 {
				t.Errorf("prios = %v, want %v", s.prios, tt.wantPrios)
			}
			if !slices.Equal(s.byTier, tt.wantOrder) && len(s.byTier)+len(tt.wantOrder) > 0 {
				t.Errorf("byTier = %v, want %v", s.byTier, tt.wantOrder)
			}
			if len(s.starts) != len(s.prios)+1 || s.starts[len(s.starts)-1] != len(cands) {
				t.Errorf("starts = %v for %d tiers, %d candidates", s.starts, len(s.prios), len(cands))
			}
		})
	}
}
