package config

import (
	"reflect"
	"testing"
)

// TestValidateRouteRules: each mutation of a valid configuration's rules
// gives exactly the wanted error (none for the accepted ones). The valid
// configuration has upstreams openai-main (openai), anthropic-main
// (anthropic, claude-*) and azure-east (azure-openai).
func TestValidateRouteRules(t *testing.T) {
	yes := true
	var ok Errors
	rules := func(c *Config, rs ...Rule) { c.Routes[0].Rules = rs }
	tests := []struct {
		name   string
		mutate func(*Config)
		want   Errors
	}{
		{"every condition and action", func(c *Config) {
			rules(c, Rule{When: RuleWhen{Header: map[string]string{"x-team": "research*"}, MinInputTokens: 10, MaxInputTokens: 100,
				Key: []string{"team-*"}, Tags: []string{"batch"}, Stream: &yes, Tools: &yes, Images: &yes, Metadata: RuleMetadata{UserID: "u-*"}},
				Upstreams: []string{"openai-main", "azure-openai"}, Exclude: []string{"anthropic"}, Strategy: "lowest-cost",
				Priority: map[string]int{"azure-east": 0, "openai": 2}},
				Rule{When: RuleWhen{Tools: &yes}, Model: "claude-3-5-sonnet"})
		}, ok},
		{"no action", func(c *Config) { rules(c, Rule{When: RuleWhen{Stream: &yes}}) },
			Errors{{"routes[0].rules[0]", "has no action: give upstreams, exclude, strategy, model or priority"}}},
		{"header glob invalid", func(c *Config) {
			rules(c, Rule{When: RuleWhen{Header: map[string]string{"x-team": "res["}}, Exclude: []string{"openai"}})
		},
			Errors{{"routes[0].rules[0].when.header.x-team", `invalid pattern "res[": syntax error in pattern`}}},
		{"header name invalid", func(c *Config) {
			rules(c, Rule{When: RuleWhen{Header: map[string]string{"x team": "a"}}, Exclude: []string{"openai"}})
		},
			Errors{{"routes[0].rules[0].when.header", `header name "x team" is not a valid header name`}}},
		{"min above max", func(c *Config) {
			rules(c, Rule{When: RuleWhen{MinInputTokens: 200, MaxInputTokens: 100}, Exclude: []string{"openai"}})
		}, Errors{{"routes[0].rules[0].when.min_input_tokens", "must be ≤ max_input_tokens (100), got 200"}}},
		{"min negative", func(c *Config) { rules(c, Rule{When: RuleWhen{MinInputTokens: -1}, Exclude: []string{"openai"}}) },
			Errors{{"routes[0].rules[0].when.min_input_tokens", "must be ≥ 0, got -1"}}},
		{"key glob invalid", func(c *Config) { rules(c, Rule{When: RuleWhen{Key: []string{"a", "b["}}, Exclude: []string{"openai"}}) },
			Errors{{"routes[0].rules[0].when.key[1]", `invalid pattern "b[": syntax error in pattern`}}},
		{"empty tag", func(c *Config) { rules(c, Rule{When: RuleWhen{Tags: []string{""}}, Exclude: []string{"openai"}}) },
			Errors{{"routes[0].rules[0].when.tags[0]", "must not be empty"}}},
		{"user id glob invalid", func(c *Config) {
			rules(c, Rule{When: RuleWhen{Metadata: RuleMetadata{UserID: "["}}, Exclude: []string{"openai"}})
		},
			Errors{{"routes[0].rules[0].when.metadata.user_id", `invalid pattern "[": syntax error in pattern`}}},
		{"unknown upstream with suggestion", func(c *Config) { rules(c, Rule{Upstreams: []string{"openai-mian"}}) },
			Errors{{"routes[0].rules[0].upstreams[0]", `unknown upstream "openai-mian" (neither an upstream name nor the provider of one); did you mean openai-main?`}}},
		{"unknown provider in exclude", func(c *Config) { rules(c, Rule{Exclude: []string{"bedrock"}}) },
			Errors{{"routes[0].rules[0].exclude[0]", `unknown upstream "bedrock" (neither an upstream name nor the provider of one)`}}},
		{"unknown strategy", func(c *Config) { rules(c, Rule{Strategy: "lowest-cots"}) },
			Errors{{"routes[0].rules[0].strategy", `must be one of adaptive, failover, least-conn, lowest-cost, p2c-ewma, round-robin, smooth-wrr, weighted-random; got "lowest-cots"; did you mean lowest-cost?`}}},
		{"priority out of range", func(c *Config) { rules(c, Rule{Priority: map[string]int{"openai-main": 101}}) },
			Errors{{"routes[0].rules[0].priority.openai-main", "must be 0–100, got 101"}}},
		{"priority unknown upstream", func(c *Config) { rules(c, Rule{Priority: map[string]int{"nope": 1}}) },
			Errors{{"routes[0].rules[0].priority.nope", `unknown upstream "nope" (neither an upstream name nor the provider of one)`}}},
		{"model not served", func(c *Config) { rules(c, Rule{Model: "mistral-large"}) },
			Errors{{"routes[0].rules[0].model", `no upstream serves "mistral-large" (no upstreams[].models pattern matches it)`}}},
		{"model is a pattern", func(c *Config) { rules(c, Rule{Model: "claude-*"}) },
			Errors{{"routes[0].rules[0].model", `must be a model name, not a pattern, got "claude-*"`}}},
		{"model is the route's own", func(c *Config) { rules(c, Rule{Model: "gpt-4o"}) },
			Errors{{"routes[0].rules[0].model", `re-routes to its own route ("gpt-4o" matches routes[gpt-4o]): a loop`}}},
		{"model with another action", func(c *Config) { rules(c, Rule{Model: "gpt-4o-mini", Exclude: []string{"openai"}}) },
			Errors{{"routes[0].rules[0].model", `re-routes, so the rule takes no other action (upstreams, exclude, strategy, priority): give those on the route of "gpt-4o-mini"`}}},
		{"loop A to B to A", func(c *Config) {
			rules(c, Rule{Model: "gpt-4o-mini"})
			r := Route{Model: "gpt-4o-mini", RouteSettings: c.Defaults, Rules: []Rule{{When: RuleWhen{Tools: &yes}, Model: "gpt-4o"}}}
			c.Routes = append(c.Routes, r)
			c.Routes[0].FallbackModels = nil
		}, Errors{
			{"routes[0].rules[0].model", `re-routes to "gpt-4o-mini", whose rule routes[gpt-4o-mini].rules[0] re-routes again to "gpt-4o": a rule cannot re-route twice`},
			{"routes[1].rules[0].model", `re-routes to "gpt-4o", whose rule routes[gpt-4o].rules[0] re-routes again to "gpt-4o-mini": a rule cannot re-route twice`},
		}},
		{"target re-routes elsewhere", func(c *Config) {
			c.Routes[0].Rules = []Rule{{Model: "claude-3-5-sonnet"}}
			c.Routes = append(c.Routes, Route{Model: "claude-*", RouteSettings: c.Defaults, Rules: []Rule{{Model: "gpt-4o-mini"}}})
		}, Errors{{"routes[0].rules[0].model", `re-routes to "claude-3-5-sonnet", whose rule routes[claude-*].rules[0] re-routes again to "gpt-4o-mini": a rule cannot re-route twice`}}},
		{"key tag empty", func(c *Config) { c.Keys[0].Tags = []string{"batch", ""} }, Errors{{"keys[0].tags[1]", "must not be empty"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := validConfig()
			tt.mutate(&c)
			got := c.Validate()
			if !reflect.DeepEqual(got, tt.want) {
				t.Fatalf("Validate() =\n%q\nwant exactly\n%q", got, tt.want)
			}
		})
	}
}

// TestDecodeRuleKeys: unknown keys inside a rule, its when and its
// metadata get a suggestion; a rule decodes into its typed fields.
func TestDecodeRuleKeys(t *testing.T) {
	tests := []struct {
		name, doc string
		want      Errors
	}{
		{"unknown condition", "routes:\n  - model: m\n    rules:\n      - when: {hedaer: {x-team: a}}\n        exclude: [u1]\n" + minimalUpstream,
			Errors{{"routes[0].rules[0].when.hedaer", "unknown key; did you mean header?"}}},
		{"unknown action", "routes:\n  - model: m\n    rules:\n      - when: {stream: true}\n        upstream: [u1]\n" + minimalUpstream,
			Errors{{"routes[0].rules[0].upstream", "unknown key; did you mean upstreams?"}}},
		{"unknown metadata key", "routes:\n  - model: m\n    rules:\n      - when: {metadata: {userid: a}}\n        exclude: [u1]\n" + minimalUpstream,
			Errors{{"routes[0].rules[0].when.metadata.userid", "unknown key; did you mean user_id?"}}},
		{"bool condition type", "routes:\n  - model: m\n    rules:\n      - when: {tools: yes please}\n        exclude: [u1]\n" + minimalUpstream,
			Errors{{"routes[0].rules[0].when.tools", `must be true or false, got "yes please"`}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if errs := parseErrors(t, tt.doc, nil); !reflect.DeepEqual(errs, tt.want) {
				t.Errorf("errors = %q, want %q", errs, tt.want)
			}
		})
	}
}

// TestCompilePatternMatchesGlob: a compiled pattern answers as Glob does.
func TestCompilePatternMatchesGlob(t *testing.T) {
	patterns := []string{"", "*", "research", "research*", "*-nlp", "*search*", "re*ch", "r?search", "[rs]esearch*", "a*b*", "**", "org/*", "res\\*"}
	names := []string{"", "research", "research-nlp", "re-nlp", "search", "rsearch", "sesearch-x", "ab", "axxb", "org/model", "res*", "x"}
	for _, p := range patterns {
		cp := CompilePattern(p)
		for _, n := range names {
			if got, want := cp.Match(n), Glob(p, n); got != want {
				t.Errorf("CompilePattern(%q).Match(%q) = %v, Glob says %v", p, n, got, want)
			}
		}
	}
}
