package balancer

import (
	"slices"
	"testing"
)

// TestPlanPinnedElsewhere: candidates marked PinnedElsewhere are filtered
// first, with the detail in the reason, by every strategy; the one that
// holds the state is the whole order when available, and nothing is left
// when it is not. A session bound to a filtered upstream falls through.
func TestPlanPinnedElsewhere(t *testing.T) {
	const held = "previous response resp_1 is held by b"
	pinned := func(c Candidate) Candidate { c.PinnedElsewhere = held; return c }
	open := func(c Candidate) Candidate { c.BreakerOpen, c.BreakerReason = true, "5 consecutive failures"; return c }
	inactive := func(c Candidate) Candidate { c.Active = false; return c }
	tests := []struct {
		name       string
		cands      []Candidate
		pinned     string // the session's binding, "" for none
		wantOrder  []string
		wantFilter map[string]string
		wantAff    AffinityRecord
	}{
		{
			name:       "the holder alone",
			cands:      []Candidate{pinned(up("a", 0, 5)), up("b", 0, 1), pinned(up("c", 1, 5))},
			wantOrder:  []string{"b"},
			wantFilter: map[string]string{"a": FilterPinnedElsewhere, "b": "", "c": FilterPinnedElsewhere},
		},
		{
			name:       "before any other filter",
			cands:      []Candidate{pinned(inactive(up("a", 0, 1))), pinned(open(up("c", 0, 1))), up("b", 0, 1)},
			wantOrder:  []string{"b"},
			wantFilter: map[string]string{"a": FilterPinnedElsewhere, "b": "", "c": FilterPinnedElsewhere},
		},
		{
			name:       "the holder unavailable: nothing left",
			cands:      []Candidate{pinned(up("a", 0, 1)), open(up("b", 0, 1)), pinned(up("c", 0, 1))},
			wantOrder:  []string{},
			wantFilter: map[string]string{"a": FilterPinnedElsewhere, "b": FilterBreakerOpen, "c": FilterPinnedElsewhere},
		},
		{
			name:       "a session bound elsewhere falls through",
			cands:      []Candidate{pinned(up("a", 0, 1)), up("b", 0, 1)},
			pinned:     "a",
			wantOrder:  []string{"b"},
			wantFilter: map[string]string{"a": FilterPinnedElsewhere, "b": ""},
			wantAff:    AffinityRecord{Session: "s", Bound: "a", Result: AffinityFallthrough, Reason: FilterPinnedElsewhere},
		},
		{
			name:       "a session bound to the holder hits",
			cands:      []Candidate{pinned(up("a", 0, 1)), up("b", 0, 1)},
			pinned:     "b",
			wantOrder:  []string{"b"},
			wantFilter: map[string]string{"a": FilterPinnedElsewhere, "b": ""},
			wantAff:    AffinityRecord{Session: "s", Bound: "b", Result: AffinityHit},
		},
	}
	for _, tt := range tests {
		for _, strategy := range StrategyNames() {
			t.Run(tt.name+"/"+strategy, func(t *testing.T) {
				b := newStrategyBalancer(t, strategy, 1, nil)
				req := Request{Model: "m", K: 3}
				if tt.pinned != "" {
					req.Session, req.Pinned = "s", tt.pinned
				}
				p := b.Plan(req, tt.cands)
				if !slices.Equal(p.Order, tt.wantOrder) && !(len(p.Order) == 0 && len(tt.wantOrder) == 0) {
					t.Fatalf("order %v, want %v", p.Order, tt.wantOrder)
				}
				for name, want := range tt.wantFilter {
					r, _, ok := record(p.Decision, name)
					if !ok || r.Filter != want {
						t.Errorf("%s: filter %q, want %q", name, r.Filter, want)
					}
					if want == FilterPinnedElsewhere && r.ReasonText() != "pinned: "+held {
						t.Errorf("%s: reason %q, want %q", name, r.ReasonText(), "pinned: "+held)
					}
				}
				if tt.pinned != "" && p.Decision.Affinity != tt.wantAff {
					t.Errorf("affinity %+v, want %+v", p.Decision.Affinity, tt.wantAff)
				}
			})
		}
	}
}
