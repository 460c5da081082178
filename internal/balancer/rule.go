package balancer

// RuleFilter is what the rule that applied to a request (a route's
// rules[], docs/routing.md#rules) does to the candidates: Upstreams keeps
// only those it names, Exclude drops those it names, by upstream or
// provider name. Plan applies it before the request's Preferences, which
// narrow further; a dropped candidate is recorded as FilterRule.
type RuleFilter struct {
	// Ref names the rule, "routes[claude-sonnet-4].rules[1]"; it is copied
	// into Decision.Rule.
	Ref string
	// Upstreams, when non-empty, drops every candidate it does not name.
	Upstreams []string
	// Exclude drops the candidates it names.
	Exclude []string
}

// Details of FilterRule, shown as "rule: <detail>".
const (
	ruleNotInUpstreams = "not in upstreams"
	ruleExcluded       = "excluded"
)

// drop returns why f drops c ("" when it keeps it).
func (f *RuleFilter) drop(c *Candidate) string {
	switch {
	case nameIn(f.Exclude, c):
		return ruleExcluded
	case len(f.Upstreams) > 0 && !nameIn(f.Upstreams, c):
		return ruleNotInUpstreams
	}
	return ""
}

// nameIn reports whether list names c by upstream or provider name.
func nameIn(list []string, c *Candidate) bool {
	for _, n := range list {
		if named(n, c) {
			return true
		}
	}
	return false
}
