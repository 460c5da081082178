package config

import (
	"fmt"
	"slices"
	"strings"

	"switchyard/internal/balancer"
)

// Rule is one entry of routes[].rules (docs/routing.md#rules): when every
// condition of When holds, its actions apply to the request. A rule has at
// least one action; Model re-routes and takes no other action.
type Rule struct {
	// When holds the conditions, all of which must hold; none means always.
	When RuleWhen `yaml:"when" json:"when"`
	// Upstreams keeps only these upstreams (names or provider names).
	Upstreams []string `yaml:"upstreams" json:"upstreams,omitempty"`
	// Exclude drops these upstreams (names or provider names).
	Exclude []string `yaml:"exclude" json:"exclude,omitempty"`
	// Strategy orders the tiers with this strategy instead of the route's
	// (balancer.StrategyNames).
	Strategy string `yaml:"strategy" json:"strategy,omitempty"`
	// Model continues the request as this client model, on its own route;
	// that route's rules may not re-route again. A model name, not a pattern.
	Model string `yaml:"model" json:"model,omitempty"`
	// Priority overrides upstreams' tiers (upstreams[].priority, 0–100) for
	// this request, by upstream or provider name.
	Priority map[string]int `yaml:"priority" json:"priority,omitempty"`
}

// RuleWhen is a rule's conditions. A condition not given always holds.
type RuleWhen struct {
	// Header maps a request header name (any case) to a glob its value must
	// match; a request without that header does not match.
	Header map[string]string `yaml:"header" json:"header,omitempty"`
	// MinInputTokens and MaxInputTokens bound the gateway's estimate of the
	// request's input tokens (body bytes / 4), inclusive; 0 means no bound.
	MinInputTokens int64 `yaml:"min_input_tokens" json:"min_input_tokens,omitempty"`
	MaxInputTokens int64 `yaml:"max_input_tokens" json:"max_input_tokens,omitempty"`
	// Key lists globs of client key names; the request's key must match one.
	Key []string `yaml:"key" json:"key,omitempty"`
	// Tags holds when the request's key has one of these keys[].tags.
	Tags []string `yaml:"tags" json:"tags,omitempty"`
	// Stream holds when the request's streaming matches it.
	Stream *bool `yaml:"stream" json:"stream,omitempty"`
	// Tools holds when whether the request declares tools matches it.
	Tools *bool `yaml:"tools" json:"tools,omitempty"`
	// Images holds when whether the request carries image input matches it.
	Images *bool `yaml:"images" json:"images,omitempty"`
	// Metadata matches the request's metadata.
	Metadata RuleMetadata `yaml:"metadata" json:"metadata,omitzero"`
}

// RuleMetadata matches a request's metadata.
type RuleMetadata struct {
	// UserID is a glob on the request's metadata.user_id (Anthropic) or
	// user (OpenAI); a request without one does not match.
	UserID string `yaml:"user_id" json:"user_id,omitempty"`
}

// RuleRef is how decisions, explain and logs name rule i of the route for
// model: "routes[claude-sonnet-4].rules[1]".
func RuleRef(model string, i int) string {
	return fmt.Sprintf("routes[%s].rules[%d]", model, i)
}

// checkRules validates r.Rules under path ("routes[0]"); x (nil for
// Route.Validate) adds the checks against upstreams and other routes.
func (r *Route) checkRules(v *validator, path string, x *crossRefs) {
	for i := range r.Rules {
		r.Rules[i].check(v, fmt.Sprintf("%s.rules[%d]", path, i), r.Model, x)
	}
}

func (ru *Rule) check(v *validator, path, model string, x *crossRefs) {
	p := func(key string) string { return subPath(path, key) }
	w := &ru.When
	for _, name := range sortedKeys(w.Header) {
		hp := p("when.header." + name)
		if name == "" || strings.ContainsAny(name, " \t:") {
			v.add(p("when.header"), "header name %q is not a valid header name", name)
			continue
		}
		v.glob(hp, w.Header[name])
	}
	v.atLeast(p("when.min_input_tokens"), w.MinInputTokens, 0)
	v.atLeast(p("when.max_input_tokens"), w.MaxInputTokens, 0)
	if w.MaxInputTokens > 0 && w.MinInputTokens > w.MaxInputTokens {
		v.add(p("when.min_input_tokens"), "must be ≤ max_input_tokens (%d), got %d", w.MaxInputTokens, w.MinInputTokens)
	}
	for j, k := range w.Key {
		v.glob(fmt.Sprintf("%s[%d]", p("when.key"), j), k)
	}
	for j, t := range w.Tags {
		if t == "" {
			v.add(fmt.Sprintf("%s[%d]", p("when.tags"), j), "must not be empty")
		}
	}
	if w.Metadata.UserID != "" {
		v.glob(p("when.metadata.user_id"), w.Metadata.UserID)
	}

	if len(ru.Upstreams) == 0 && len(ru.Exclude) == 0 && ru.Strategy == "" && ru.Model == "" && len(ru.Priority) == 0 {
		v.add(path, "has no action: give upstreams, exclude, strategy, model or priority")
	}
	ru.checkNames(v, p("upstreams"), ru.Upstreams, x)
	ru.checkNames(v, p("exclude"), ru.Exclude, x)
	if ru.Strategy != "" {
		v.oneOf(p("strategy"), ru.Strategy, balancer.StrategyNames())
	}
	for _, name := range sortedKeys(ru.Priority) {
		pp := p("priority." + name)
		v.between(pp, int64(ru.Priority[name]), 0, maxPriority)
		if x != nil && !x.upstreamOrProvider(name) {
			v.add(pp, "%s", x.unknownUpstream(name))
		}
	}
	if ru.Model != "" {
		ru.checkModel(v, p("model"), model, x)
	}
}

// checkNames checks a list of upstream or provider names.
func (*Rule) checkNames(v *validator, path string, names []string, x *crossRefs) {
	for j, n := range names {
		ep := fmt.Sprintf("%s[%d]", path, j)
		switch {
		case n == "":
			v.add(ep, "must not be empty")
		case x != nil && !x.upstreamOrProvider(n):
			v.add(ep, "%s", x.unknownUpstream(n))
		}
	}
}

// checkModel checks a re-routing rule: alone among the actions, a model
// name some upstream serves, not the route's own, whose route does not
// re-route again.
func (ru *Rule) checkModel(v *validator, path, own string, x *crossRefs) {
	m := ru.Model
	switch {
	case len(ru.Upstreams)+len(ru.Exclude)+len(ru.Priority) > 0 || ru.Strategy != "":
		v.add(path, "re-routes, so the rule takes no other action (upstreams, exclude, strategy, priority): give those on the route of %q", m)
		return
	case IsGlob(m):
		v.add(path, "must be a model name, not a pattern, got %q", m)
		return
	case m == own || Glob(own, m):
		v.add(path, "re-routes to its own route (%q matches routes[%s]): a loop", m, own)
		return
	case x == nil:
		return
	case !served(x.upstreams, m):
		v.add(path, "no upstream serves %q (no upstreams[].models pattern matches it)", m)
		return
	}
	target, ok := MatchRoute(x.routes, m)
	if !ok {
		return
	}
	for j, tr := range target.Rules {
		if tr.Model != "" {
			v.add(path, "re-routes to %q, whose rule %s re-routes again to %q: a rule cannot re-route twice", m, RuleRef(target.Model, j), tr.Model)
			return
		}
	}
}

// upstreamOrProvider reports whether name is a configured upstream or the
// provider of one.
func (x *crossRefs) upstreamOrProvider(name string) bool {
	if _, ok := x.upstreamIdx[name]; ok {
		return true
	}
	return slices.ContainsFunc(x.upstreams, func(u Upstream) bool { return u.Provider == name })
}

// unknownUpstream says that name is neither an upstream nor a provider in
// use, with the nearest names.
func (x *crossRefs) unknownUpstream(name string) string {
	var known []string
	for _, u := range x.upstreams {
		known = append(known, u.Name)
		if !slices.Contains(known, u.Provider) {
			known = append(known, u.Provider)
		}
	}
	msg := fmt.Sprintf("unknown upstream %q (neither an upstream name nor the provider of one)", name)
	if near := suggestValue(name, known); len(near) > 0 {
		msg += "; did you mean " + orList(near) + "?"
	}
	return msg
}
