package admin

import (
	"sort"
	"strings"

	"switchyard/internal/config"
)

// RouteState is one client model's traffic: the upstreams that serve it,
// by tier, each with its share of the model's attempts in its tier.
type RouteState struct {
	// Model is the client model name, as requested (never a glob).
	Model string `json:"model"`
	// Requests5m counts the model's attempts over the window.
	Requests5m int64 `json:"requests_5m"`
	// Tiers holds the model's tiers, ascending.
	Tiers []RouteTier `json:"tiers"`
	// Route is the model pattern of the route entry the model matches, ""
	// when it has none (the defaults); Rules are that route's rules
	// (docs/routing.md#rules), in order.
	Route string        `json:"route,omitempty"`
	Rules []config.Rule `json:"rules,omitempty"`
}

// attachRules sets each route state's route entry and rules from routes.
func attachRules(states []RouteState, routes []config.Route) {
	for i := range states {
		if r, ok := config.MatchRoute(routes, states[i].Model); ok {
			states[i].Route, states[i].Rules = r.Model, r.Rules
		}
	}
}

// RouteTier is one priority tier of a RouteState.
type RouteTier struct {
	// Tier is the priority.
	Tier int `json:"tier"`
	// Weight is the total weight of the tier's active upstreams that serve
	// the model.
	Weight int `json:"weight"`
	// Requests5m counts the model's attempts in the tier over the window.
	Requests5m int64 `json:"requests_5m"`
	// Upstreams holds the tier's upstreams for the model, ordered by name.
	Upstreams []RouteUpstream `json:"upstreams"`
}

// RouteUpstream is one upstream under a route and tier.
type RouteUpstream struct {
	// Name, Weight and Active are the upstream's.
	Name   string `json:"name"`
	Weight int    `json:"weight"`
	Active bool   `json:"active"`
	// Requests5m counts the upstream's attempts for the model over the
	// window; RequestsTotal those since the model was first counted on it
	// (for rates over time).
	Requests5m    int64 `json:"requests_5m"`
	RequestsTotal int64 `json:"requests_total"`
	// Share is Requests5m over the tier's Requests5m; ConfiguredShare is
	// Weight over the tier's Weight (0 when inactive, or when the upstream
	// no longer serves the model but still has attempts for it in the
	// window). Both in [0, 1].
	Share           float64 `json:"share"`
	ConfiguredShare float64 `json:"configured_share"`
	// History is ModelTraffic.History: present when the query asked for it
	// and the upstream has been tried for the model.
	History []int64 `json:"history,omitempty"`
}

// groupRoutes groups the upstreams by client model, then tier. The models
// are the concrete names in the upstreams' models lists and every model
// with attempts in the window (a glob such as `claude-*` shows as the
// models actually requested). Under a model go the upstreams whose models
// match it, and any other with attempts for it in the window (its models
// changed since). ups are the stored upstreams, states their live state in
// the same or any order.
func groupRoutes(ups []config.Upstream, states []UpstreamState) []RouteState {
	traffic := make(map[string]map[string]ModelTraffic, len(states)) // upstream → model → counts
	models := map[string]bool{}
	for _, s := range states {
		byModel := make(map[string]ModelTraffic, len(s.Models))
		for _, m := range s.Models {
			byModel[m.Model] = m
			if m.Requests5m > 0 {
				models[m.Model] = true
			}
		}
		traffic[s.Name] = byModel
	}
	for _, u := range ups {
		for _, m := range u.Models {
			if !strings.ContainsAny(m, "*?[") {
				models[m] = true
			}
		}
	}
	sorted := append([]config.Upstream(nil), ups...)
	sort.SliceStable(sorted, func(i, j int) bool {
		if sorted[i].Priority != sorted[j].Priority {
			return sorted[i].Priority < sorted[j].Priority
		}
		return sorted[i].Name < sorted[j].Name
	})
	out := make([]RouteState, 0, len(models))
	for _, model := range sortedKeys(models) {
		// First the tiers' totals, then each upstream's part of them.
		type member struct {
			u        *config.Upstream
			counts   ModelTraffic
			weighted bool // its weight counts in the tier's
		}
		var members []member
		weight, requests := map[int]int{}, map[int]int64{}
		for i := range sorted {
			u := &sorted[i]
			serves := config.MatchAny(u.Models, model)
			m := traffic[u.Name][model]
			if !serves && m.Requests5m == 0 {
				continue
			}
			members = append(members, member{u: u, counts: m, weighted: serves && u.Active})
			if serves && u.Active {
				weight[u.Priority] += u.Weight
			}
			requests[u.Priority] += m.Requests5m
		}
		r := RouteState{Model: model, Tiers: []RouteTier{}}
		for _, m := range members {
			if n := len(r.Tiers); n == 0 || r.Tiers[n-1].Tier != m.u.Priority {
				p := m.u.Priority
				r.Tiers = append(r.Tiers, RouteTier{Tier: p, Weight: weight[p], Requests5m: requests[p]})
				r.Requests5m += requests[p]
			}
			t := &r.Tiers[len(r.Tiers)-1]
			ru := RouteUpstream{Name: m.u.Name, Weight: m.u.Weight, Active: m.u.Active,
				Requests5m: m.counts.Requests5m, RequestsTotal: m.counts.RequestsTotal, History: m.counts.History,
				Share: ratio(m.counts.Requests5m, t.Requests5m)}
			if m.weighted {
				ru.ConfiguredShare = ratio(int64(m.u.Weight), int64(t.Weight))
			}
			t.Upstreams = append(t.Upstreams, ru)
		}
		out = append(out, r)
	}
	return out
}
