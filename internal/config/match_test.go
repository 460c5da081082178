package config

import "testing"

func TestGlob(t *testing.T) {
	tests := []struct {
		pattern, name string
		want          bool
	}{
		{"gpt-4o", "gpt-4o", true},
		{"gpt-4o", "gpt-4o-mini", false},
		{"gpt-4o*", "gpt-4o-mini", true},
		{"gpt-4o*", "gpt-4", false},
		{"*", "gpt-4o", true},
		{"*", "meta-llama/Llama-3.1-8B", true},
		{"meta-llama/*", "meta-llama/Llama-3.1-8B", true},
		{"*/Llama-*", "meta-llama/Llama-3.1-8B", true},
		{"*Llama*", "org/team/Llama-3", true},
		{"meta-*-8B", "meta-llama/Llama-3.1-8B", true},
		{"claude-*", "gpt-4o", false},
		{"claude-3-?-haiku", "claude-3-5-haiku", true},
		{"a?b", "a/b", true},
		{"gpt-[34]*", "gpt-4o", true},
		{"gpt-[34]*", "gpt-5", false},
		{"gpt-[^5]*", "gpt-4o", true},
		{"org/[a-m]*", "org/llama/x", true},
		{"gpt-4o\\*", "gpt-4o*", true},
		{"gpt-4o\\*", "gpt-4o-mini", false},
		{"gpt-[", "gpt-4o", false},
		{"gpt-[", "gpt-[", true}, // a name equal to the pattern matches
		{"", "", true},
		{"", "gpt-4o", false},
	}
	for _, tt := range tests {
		t.Run(tt.pattern+" "+tt.name, func(t *testing.T) {
			if got := Glob(tt.pattern, tt.name); got != tt.want {
				t.Errorf("Glob(%q, %q) = %v, want %v", tt.pattern, tt.name, got, tt.want)
			}
		})
	}
}

func TestMatchAny(t *testing.T) {
	tests := []struct {
		name     string
		patterns []string
		model    string
		want     bool
	}{
		{"none", nil, "gpt-4o", false},
		{"second matches", []string{"claude-*", "gpt-*"}, "gpt-4o", true},
		{"no match", []string{"claude-*"}, "gpt-4o", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := MatchAny(tt.patterns, tt.model); got != tt.want {
				t.Errorf("MatchAny(%q, %q) = %v, want %v", tt.patterns, tt.model, got, tt.want)
			}
		})
	}
}

func TestMatchRoute(t *testing.T) {
	routes := []Route{{Model: "gpt-*", RouteSettings: RouteSettings{Retries: 1}},
		{Model: "gpt-4o", RouteSettings: RouteSettings{Retries: 2}}}
	tests := []struct {
		model       string
		wantRetries int
		wantOK      bool
	}{
		{"gpt-4o", 2, true}, // exact beats an earlier glob
		{"gpt-4o-mini", 1, true},
		{"claude-3", 0, false},
	}
	for _, tt := range tests {
		t.Run(tt.model, func(t *testing.T) {
			r, ok := MatchRoute(routes, tt.model)
			if ok != tt.wantOK || r.Retries != tt.wantRetries {
				t.Errorf("MatchRoute(%q) = retries %d, %v; want %d, %v", tt.model, r.Retries, ok, tt.wantRetries, tt.wantOK)
			}
		})
	}
}
