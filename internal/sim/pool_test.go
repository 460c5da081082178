package sim

import (
	"math"
	"testing"
	"time"
)

// TestClaudePoolOverThreeProviders runs examples/scenarios/
// claude-three-providers: claude-sonnet-4 over Anthropic, Bedrock and
// Vertex, with no limit configured, each provider's quota a part of the
// offered load (900 requests a minute) plus 10% headroom between them.
// Each provider tells its limit its own way (Anthropic's headers, Vertex's
// RetryInfo, Bedrock's bare ThrottlingException); every request must be
// served, no provider above its quota, and each one's share of the served
// requests within 6 points of its quota's share of the three quotas.
func TestClaudePoolOverThreeProviders(t *testing.T) {
	tests := []struct {
		name string
		rpm  map[string]int // each upstream's quota: 1/3 each, or 1/6, 1/3, 1/2 (of 990)
	}{
		{"a third each", map[string]int{"claude-anthropic": 330, "claude-bedrock": 330, "claude-vertex": 330}},
		{"a sixth, a third, a half", map[string]int{"claude-anthropic": 165, "claude-bedrock": 330, "claude-vertex": 495}},
		{"a half, a sixth, a third", map[string]int{"claude-anthropic": 495, "claude-bedrock": 165, "claude-vertex": 330}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if raceEnabled {
				t.Skip("a whole scenario under -race is too slow; .ci/run runs it without -race")
			}
			cfg := loadConfig(t, examples+"claude-three-providers.config.yaml")
			sc, err := LoadScenario(examples+"claude-three-providers.yaml", cfg)
			if err != nil {
				t.Fatal(err)
			}
			sc.Duration, sc.Traffic[0].Duration = 10*time.Minute, 10*time.Minute
			total := 0
			for name, rpm := range tc.rpm {
				u := sc.Upstreams[name]
				u.RPM = rpm
				sc.Upstreams[name] = u
				total += rpm
			}
			rp, err := Run(cfg, sc, sc.Seed)
			if err != nil {
				t.Fatal(err)
			}
			o := rp.Summary.Overall
			if o.Requests < 8500 || o.Succeeded != o.Requests {
				t.Fatalf("%d of %d requests succeeded (client errors %v), want every one of about 9,000", o.Succeeded, o.Requests, o.ClientErrors)
			}
			for _, u := range rp.Summary.Upstreams {
				rpm := tc.rpm[u.Name]
				share, want := float64(u.Served)/float64(o.Succeeded), float64(rpm)/float64(total)
				t.Logf("%s: quota %d/min, served %d (%.1f%%, quota share %.1f%%), 429s %d", u.Name, rpm, u.Served, 100*share, 100*want, u.RateLimited)
				// The provider's own window never admits more than its quota
				// in a minute; 11 minutes bound the run and its tail.
				if u.Served > int64(rpm)*11 {
					t.Errorf("%s served %d, more than its quota allows", u.Name, u.Served)
				}
				if math.Abs(share-want) > 0.06 {
					t.Errorf("%s served %.1f%% of the requests, want its quota's share %.1f%% ± 6 points", u.Name, 100*share, 100*want)
				}
			}
		})
	}
}
