package balancer

import (
	"slices"
	"testing"
)

// TestRuleFilter checks a rule's upstreams and exclude, by upstream and by
// provider name, alone and composed with preferences (the rule first, the
// preferences narrowing further), on failover so that only the filters
// move things; and that the decision names the rule.
func TestRuleFilter(t *testing.T) {
	const ref = "routes[m].rules[1]"
	tests := []struct {
		name    string
		rule    *RuleFilter
		prefs   *Preferences
		want    []string
		dropped map[string]string // name → ReasonText
	}{
		{name: "no rule", want: []string{"a", "b", "c", "d"}},
		{name: "upstreams by name", rule: &RuleFilter{Upstreams: []string{"b", "d"}}, want: []string{"b", "d"},
			dropped: map[string]string{"a": "rule: not in upstreams", "c": "rule: not in upstreams"}},
		{name: "upstreams by provider", rule: &RuleFilter{Upstreams: []string{"bedrock"}}, want: []string{"b", "c"},
			dropped: map[string]string{"a": "rule: not in upstreams", "d": "rule: not in upstreams"}},
		{name: "exclude by provider", rule: &RuleFilter{Exclude: []string{"bedrock"}}, want: []string{"a", "d"},
			dropped: map[string]string{"b": "rule: excluded", "c": "rule: excluded"}},
		{name: "exclude wins over upstreams", rule: &RuleFilter{Upstreams: []string{"bedrock"}, Exclude: []string{"c"}}, want: []string{"b"},
			dropped: map[string]string{"c": "rule: excluded", "a": "rule: not in upstreams", "d": "rule: not in upstreams"}},
		{name: "preferences narrow the rule's", rule: &RuleFilter{Upstreams: []string{"bedrock", "a"}}, prefs: &Preferences{Ignore: []string{"b"}},
			want: []string{"a", "c"}, dropped: map[string]string{"b": "preferences: ignored", "d": "rule: not in upstreams"}},
		{name: "the rule's reason comes first", rule: &RuleFilter{Exclude: []string{"a"}}, prefs: &Preferences{Only: []string{"b"}},
			want: []string{"b"}, dropped: map[string]string{"a": "rule: excluded", "c": "preferences: not in only", "d": "preferences: not in only"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := newStrategyBalancer(t, StrategyFailover, 1, nil)
			if tt.rule != nil {
				tt.rule.Ref = ref
			}
			p := b.Plan(Request{K: 4, Rule: tt.rule, Prefs: tt.prefs}, prefPool())
			if !slices.Equal(p.Order, tt.want) {
				t.Errorf("Order = %v, want %v", p.Order, tt.want)
			}
			if want := ""; tt.rule != nil {
				want = ref
				if p.Decision.Rule != want {
					t.Errorf("Decision.Rule = %q, want %q", p.Decision.Rule, want)
				}
			} else if p.Decision.Rule != want {
				t.Errorf("Decision.Rule = %q without a rule", p.Decision.Rule)
			}
			for _, r := range p.Decision.Candidates {
				if got, want := r.ReasonText(), tt.dropped[r.Name]; got != want {
					t.Errorf("%s: reason %q, want %q", r.Name, got, want)
				}
			}
		})
	}
}

// TestRuleFilterAllocs: a rule keeps Plan within its two allocations.
func TestRuleFilterAllocs(t *testing.T) {
	b := newStrategyBalancer(t, StrategyWeightedRandom, 1, nil)
	cands := benchPool(10)
	req := Request{K: 3, Rule: &RuleFilter{Ref: "routes[m].rules[0]", Exclude: []string{"upstream-0001"}}}
	b.Plan(req, cands)
	if got := testing.AllocsPerRun(200, func() { b.Plan(req, cands) }); got > 2 {
		t.Errorf("Plan allocates %v times per call, want ≤ 2", got)
	}
}
