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

// stepClock returns a Now func that starts at a fixed instant and advances by
// step on every call, so ElapsedNs is exact.
func stepClock(step time.Duration) func() time.Time {
	var calls atomic.Int64
	base := time.Date(2025, 1, 2, 3, 4, 5, 0, time.UTC)
	return func() time.Time {
		return base.Add(time.Duration(calls.Add(1)-1) * step)
	}
}

func newTestBalancer(t testing.TB, seed uint64) *Balancer {
	t.Helper()
	b, err := New(Options{
		Strategy: StrategyWeightedRandom,
		Rand:     rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)),
		Now:      stepClock(time.Microsecond),
	})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return b
}

// up returns an active, healthy candidate.
func up(name string, prio, weight int) Candidate {
	return Candidate{Name: name, Priority: prio, Weight: weight, Active: true}
}

func record(d Decision, name string) (CandidateRecord, int, bool) {
	for _, tr := range d.Tiers {
		for _, r := range tr.Candidates {
			if r.Name == name {
				return r, tr.Priority, true
			}
		}
	}
	return CandidateRecord{}, 0, false
}

// checkInvariants asserts what every Plan must satisfy whatever the input.
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
	for _, tr := range p.Decision.Tiers {
		if tr.Priority <= prev {
			t.Errorf("tiers not strictly ascending: %d after %d", tr.Priority, prev)
		}
		prev = tr.Priority
		for _, r := range tr.Candidates {
			nrec++
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
		}
	}
	if nrec != len(cands) {
		t.Errorf("decision records %d candidates, input has %d", nrec, len(cands))
	}
	// Tiers are concatenated: priorities along Order never decrease.
	last := -1 << 62
	for _, n := range p.Order {
		_, prio, _ := record(p.Decision, n)
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
		{name: "weighted-random", opts: Options{Strategy: "weighted-random", Now: now}, want: StrategyWeightedRandom},
		{name: "unknown strategy", opts: Options{Strategy: "fastest-guess", Now: now}, wantErr: ErrUnknownStrategy, wantIn: `"fastest-guess"`},
		{name: "no clock", opts: Options{}, wantErr: ErrNoClock},
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
}

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
		wantReason   map[string]string // name → Reason
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
			wantReason: map[string]string{"a1": "breaker open: 5 consecutive failures", "a2": "already tried by this request"},
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
					c := up("a5", 0, 1)
					c.RateLimited, c.RateLimitReason = true, "429 cooldown"
					return full(c, true)
				}(),
			},
			wantFilter: map[string]string{
				"a1": FilterInactive, "a2": FilterBreakerOpen, "a3": FilterSpendExceeded,
				"a4": FilterExcluded, "a5": FilterRateLimited,
			},
			wantReason: map[string]string{"a3": "spend quota exceeded: daily $5 used", "a5": "rate limited: 429 cooldown"},
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
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for seed := range uint64(50) {
				b := newTestBalancer(t, seed)
				p := b.Plan(tt.req, tt.cands)
				checkInvariants(t, tt.req, tt.cands, p)
				if len(p.Order) != len(tt.wantOrder) {
					t.Fatalf("seed %d: Order = %v, want %d entries from %v", seed, p.Order, len(tt.wantOrder), tt.wantOrder)
				}
				for i, n := range p.Order {
					if !slices.Contains(tt.wantOrder[i], n) {
						t.Errorf("seed %d: Order[%d] = %q, want one of %v (Order %v)", seed, i, n, tt.wantOrder[i], p.Order)
					}
				}
				if !slices.Equal(p.Waitable, tt.wantWaitable) && !(len(p.Waitable) == 0 && len(tt.wantWaitable) == 0) {
					t.Errorf("seed %d: Waitable = %v, want %v", seed, p.Waitable, tt.wantWaitable)
				}
				for name, f := range tt.wantFilter {
					r, _, ok := record(p.Decision, name)
					if !ok {
						t.Fatalf("no record for %s", name)
					}
					if r.Filter != f {
						t.Errorf("%s: Filter = %q, want %q", name, r.Filter, f)
					}
				}
				for name, reason := range tt.wantReason {
					if r, _, _ := record(p.Decision, name); r.Reason != reason {
						t.Errorf("%s: Reason = %q, want %q", name, r.Reason, reason)
					}
				}
			}
		})
	}
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
	if d.ElapsedNs != int64(time.Microsecond) {
		t.Errorf("ElapsedNs = %d, want %d (two clock reads one step apart)", d.ElapsedNs, time.Microsecond)
	}
	if len(d.Tiers) != 2 || d.Tiers[0].Priority != 0 || d.Tiers[1].Priority != 1 {
		t.Fatalf("Tiers = %+v", d.Tiers)
	}
	// Input order is kept within a tier.
	var names []string
	for _, r := range d.Tiers[0].Candidates {
		names = append(names, r.Name)
	}
	if want := []string{"a1", "a2", "x"}; !slices.Equal(names, want) {
		t.Errorf("tier 0 records = %v, want %v", names, want)
	}
	// Survivors of the tier the strategy ordered carry scores; the filtered
	// one and the tier never reached do not.
	for _, n := range []string{"a1", "a2"} {
		if r, _, _ := record(d, n); r.Scores == nil {
			t.Errorf("%s has no scores", n)
		}
	}
	for _, n := range []string{"x", "b1"} {
		if r, _, _ := record(d, n); r.Scores != nil {
			t.Errorf("%s has scores %v", n, r.Scores)
		}
	}

	// The Decision is an independent copy of the Plan's slices.
	p.Order[0] = "mutated"
	if d.Order[0] == "mutated" || d.Chosen == "mutated" {
		t.Errorf("Decision.Order aliases Plan.Order")
	}

	raw, err := json.Marshal(d)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"request_id", "model", "key", "session", "stream", "strategy", "at", "tiers", "order", "waitable", "chosen", "elapsed_ns"} {
		if _, ok := m[key]; !ok {
			t.Errorf("JSON lacks %q: %s", key, raw)
		}
	}
	if !strings.Contains(string(raw), `"filter":"excluded"`) || !strings.Contains(string(raw), `"effective_weight":1.6`) {
		t.Errorf("JSON lacks filter or scores: %s", raw)
	}
	if strings.Contains(string(raw), "null") {
		t.Errorf("JSON has a null: %s", raw)
	}
}

func TestPlanDoesNotRetainOrMutateInput(t *testing.T) {
	b := newTestBalancer(t, 3)
	cands := []Candidate{up("a", 0, 1), up("b", 0, 2), up("c", 1, 3), up("d", 0, 4)}
	before := slices.Clone(cands)
	for range 100 {
		b.Plan(Request{K: 3}, cands)
	}
	if !slices.Equal(cands, before) {
		t.Errorf("Plan changed its input: %v", cands)
	}
	for _, c := range b.scratch.tier[:cap(b.scratch.tier)] {
		if c != nil {
			t.Fatalf("scratch retains a candidate pointer")
		}
	}
}

// TestStrategyContract runs every registered strategy through one harness:
// Plan's invariants over random pools, and scores for every ordered survivor.
func TestStrategyContract(t *testing.T) {
	for _, name := range StrategyNames() {
		t.Run(name, func(t *testing.T) {
			b, err := New(Options{Strategy: name, Rand: rand.New(rand.NewPCG(7, 8)), Now: stepClock(time.Nanosecond)})
			if err != nil {
				t.Fatal(err)
			}
			gen := rand.New(rand.NewPCG(1, 1))
			for iter := range 2000 {
				n := gen.IntN(12)
				cands := make([]Candidate, n)
				var exclude []string
				for i := range cands {
					cands[i] = Candidate{
						Name:           fmt.Sprintf("u%d", i),
						Priority:       gen.IntN(3) * 10,
						Weight:         gen.IntN(5),
						Active:         gen.IntN(10) > 0,
						LatencyMs:      float64(gen.IntN(1000)),
						InFlight:       int64(gen.IntN(4)),
						MaxConcurrency: gen.IntN(4),
						QueueEnabled:   gen.IntN(2) == 0,
						BreakerOpen:    gen.IntN(8) == 0,
						SlowStart:      gen.Float64(),
					}
					if gen.IntN(8) == 0 {
						exclude = append(exclude, cands[i].Name)
					}
				}
				req := Request{K: gen.IntN(5), Exclude: exclude}
				p := b.Plan(req, cands)
				checkInvariants(t, req, cands, p)
				for _, n := range slices.Concat(p.Order, p.Waitable) {
					if r, _, _ := record(p.Decision, n); len(r.Scores) == 0 {
						t.Fatalf("iter %d: %s ordered without scores", iter, n)
					}
				}
				if t.Failed() {
					t.Fatalf("iter %d: cands %+v req %+v plan %+v", iter, cands, req, p)
				}
			}
		})
	}
}

func TestPlanConcurrent(t *testing.T) {
	b := newTestBalancer(t, 11)
	cands := []Candidate{
		up("a1", 0, 3), up("a2", 0, 2), up("b1", 1, 1), up("b2", 1, 1),
		func() Candidate {
			c := up("a3", 0, 1)
			c.InFlight, c.MaxConcurrency, c.QueueEnabled = 2, 2, true
			return c
		}(),
	}
	const goroutines, each = 16, 500
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
