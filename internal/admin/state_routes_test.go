package admin

import (
	"fmt"
	"reflect"
	"strings"
	"testing"

	"switchyard/internal/config"
)

// describeRoutes writes routes one per line, as
// "model n | tier t weight w n: name[ off] n share%/configured% …".
func describeRoutes(routes []RouteState) string {
	var b strings.Builder
	for _, r := range routes {
		fmt.Fprintf(&b, "%s %d", r.Model, r.Requests5m)
		for _, t := range r.Tiers {
			fmt.Fprintf(&b, " | tier %d weight %d %d:", t.Tier, t.Weight, t.Requests5m)
			for _, u := range t.Upstreams {
				off := ""
				if !u.Active {
					off = " off"
				}
				fmt.Fprintf(&b, " %s%s %d %.1f%%/%.1f%%", u.Name, off, u.Requests5m, 100*u.Share, 100*u.ConfiguredShare)
				if u.History != nil {
					fmt.Fprintf(&b, " %v", u.History)
				}
			}
		}
		b.WriteString("\n")
	}
	return b.String()
}

func TestGroupRoutes(t *testing.T) {
	up := func(name string, tier, weight int, models ...string) config.Upstream {
		return config.Upstream{Name: name, Priority: tier, Weight: weight, Active: true, Models: models}
	}
	off := func(u config.Upstream) config.Upstream { u.Active = false; return u }
	// traffic is one upstream's live state with attempts per model: "model=n".
	traffic := func(name string, counts ...string) UpstreamState {
		s := UpstreamState{Name: name}
		for _, c := range counts {
			var m ModelTraffic
			model, n, _ := strings.Cut(c, "=")
			m.Model = model
			if _, err := fmt.Sscan(n, &m.Requests5m); err != nil {
				panic(c)
			}
			m.RequestsTotal = m.Requests5m + 7
			s.Models = append(s.Models, m)
		}
		return s
	}
	cases := []struct {
		name   string
		ups    []config.Upstream
		states []UpstreamState
		want   string
	}{
		{
			name: "two models in one tier are split apart",
			// Over the tier as a whole x would have 50% configured (3 of 6).
			ups:    []config.Upstream{up("x", 0, 3, "a", "b"), up("y", 0, 2, "a"), up("z", 0, 1, "b")},
			states: []UpstreamState{traffic("x", "a=300", "b=150"), traffic("y", "a=200"), traffic("z", "b=50")},
			want: "a 500 | tier 0 weight 5 500: x 300 60.0%/60.0% y 200 40.0%/40.0%\n" +
				"b 200 | tier 0 weight 4 200: x 150 75.0%/75.0% z 50 25.0%/25.0%\n",
		},
		{
			name: "a glob shows as the models requested, next to a concrete one",
			ups:  []config.Upstream{up("glob", 0, 1, "claude-*"), up("haiku", 0, 1, "claude-3-5-haiku")},
			states: []UpstreamState{traffic("glob", "claude-3-5-haiku=5", "claude-3-opus=10"),
				traffic("haiku", "claude-3-5-haiku=15")},
			want: "claude-3-5-haiku 20 | tier 0 weight 2 20: glob 5 25.0%/50.0% haiku 15 75.0%/50.0%\n" +
				"claude-3-opus 10 | tier 0 weight 1 10: glob 10 100.0%/100.0%\n",
		},
		{
			name: "without traffic the concrete models show at 0%, a glob alone none",
			ups:  []config.Upstream{up("y", 0, 3, "m", "n"), up("x", 0, 1, "m"), up("g", 0, 1, "o-*")},
			want: "m 0 | tier 0 weight 4 0: x 0 0.0%/25.0% y 0 0.0%/75.0%\n" +
				"n 0 | tier 0 weight 3 0: y 0 0.0%/100.0%\n",
		},
		{
			name:   "tiers ascending, an inactive upstream weighs nothing",
			ups:    []config.Upstream{up("z", 1, 1, "m"), off(up("y", 0, 2, "m")), up("x", 0, 2, "m")},
			states: []UpstreamState{traffic("x", "m=10"), traffic("z", "m=5"), traffic("y")},
			want:   "m 15 | tier 0 weight 2 10: x 10 100.0%/100.0% y off 0 0.0%/0.0% | tier 1 weight 1 5: z 5 100.0%/100.0%\n",
		},
		{
			name:   "attempts for a model an upstream no longer serves still count, its weight does not",
			ups:    []config.Upstream{up("x", 0, 1, "m"), up("y", 0, 1, "old")},
			states: []UpstreamState{traffic("x", "old=4"), traffic("y", "old=4")},
			want: "m 0 | tier 0 weight 1 0: x 0 0.0%/100.0%\n" +
				"old 8 | tier 0 weight 1 8: x 4 50.0%/0.0% y 4 50.0%/100.0%\n",
		},
		{
			name:   "a model requested before the window is no route",
			ups:    []config.Upstream{up("g", 0, 1, "claude-*")},
			states: []UpstreamState{traffic("g", "claude-old=0")},
			want:   "",
		},
		{
			name: "history passes through",
			ups:  []config.Upstream{up("x", 0, 1, "m")},
			states: []UpstreamState{{Name: "x", Models: []ModelTraffic{
				{Model: "m", Requests5m: 3, History: []int64{1, 0, 2}},
			}}},
			want: "m 3 | tier 0 weight 1 3: x 3 100.0%/100.0% [1 0 2]\n",
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := groupRoutes(c.ups, c.states)
			if d := describeRoutes(got); d != c.want {
				t.Fatalf("got\n%s\nwant\n%s", d, c.want)
			}
			for _, r := range got {
				for _, tier := range r.Tiers {
					var share, configured float64
					for _, u := range tier.Upstreams {
						share += u.Share
						configured += u.ConfiguredShare
						if u.RequestsTotal != 0 && u.RequestsTotal != u.Requests5m+7 {
							t.Fatalf("%s/%s: requests_total %d, want the upstream's for the model", r.Model, u.Name, u.RequestsTotal)
						}
					}
					if (tier.Requests5m > 0 && !near(share, 1)) || (tier.Weight > 0 && !near(configured, 1)) {
						t.Fatalf("%s tier %d: shares add up to %v, configured to %v", r.Model, tier.Tier, share, configured)
					}
				}
			}
		})
	}
}

func near(a, b float64) bool { return a-b < 1e-9 && b-a < 1e-9 }

// TestAttachRules: each model gets the route entry it matches, exact name
// first, then the first glob, and that route's rules; a model on the
// defaults gets none.
func TestAttachRules(t *testing.T) {
	exact := []config.Rule{{Exclude: []string{"a"}}}
	glob := []config.Rule{{Upstreams: []string{"b"}}, {Strategy: "failover"}}
	routes := []config.Route{{Model: "claude-*", Rules: glob}, {Model: "claude-3-opus", Rules: exact}}
	states := []RouteState{{Model: "claude-3-opus"}, {Model: "claude-3-5-haiku"}, {Model: "gpt-4o"}}
	attachRules(states, routes)
	want := []RouteState{{Model: "claude-3-opus", Route: "claude-3-opus", Rules: exact}, {Model: "claude-3-5-haiku", Route: "claude-*", Rules: glob}, {Model: "gpt-4o"}}
	if !reflect.DeepEqual(states, want) {
		t.Errorf("got %+v\nwant %+v", states, want)
	}
}
