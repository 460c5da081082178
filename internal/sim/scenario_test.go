package sim

import (
	"strings"
	"testing"
	"time"

	"switchyard/internal/config"
)

func loadConfig(t *testing.T, path string) *config.Config {
	t.Helper()
	cfg, err := config.LoadForSimulation(path)
	if err != nil {
		t.Fatalf("loading %s: %v", path, err)
	}
	return cfg
}

const validScenario = `
duration: 10m
model: gpt-4o-mini
traffic:
  - duration: 10m
    rate: 5
upstreams:
  openai-main:
    latency: {p50: 1s, p95: 3s}
    ttft: {p50: 300ms}
  azure-east:
    latency: {p50: 1s}
    ttft: {p50: 300ms}
`

func TestParseScenario(t *testing.T) {
	cfg := loadConfig(t, "../../examples/scenarios/weighted-split.config.yaml")
	t.Run("defaults", func(t *testing.T) {
		s, err := ParseScenario([]byte(validScenario), cfg)
		if err != nil {
			t.Fatal(err)
		}
		p := s.Traffic[0]
		u := s.Upstreams["azure-east"]
		switch {
		case s.Seed != 1, s.Bucket != 5*time.Second, *p.Start != 0, p.Burst != 1, p.MaxTokens != 1024, p.Model != "gpt-4o-mini":
			t.Errorf("scenario defaults: %+v, phase %+v", s, p)
		case u.Headers != HeadersOpenAI, !*u.RetryAfter, u.TokensPerSecond != 50, u.ProbeRTT != 50*time.Millisecond, u.Latency.P95 != time.Second:
			t.Errorf("provider defaults: %+v", u)
		}
	})
	tests := []struct {
		name    string
		replace [2]string // in validScenario
		want    string    // one error line
	}{
		{"bad latency", [2]string{"latency: {p50: 1s, p95: 3s}", "latency: {p50: 0s, p95: 3s}"}, "upstreams.openai-main.latency.p50: must be > 0, got 0s"},
		{"p95 below p50", [2]string{"ttft: {p50: 300ms}\n  azure", "ttft: {p50: 300ms, p95: 100ms}\n  azure"}, "upstreams.openai-main.ttft.p95: must be ≥ p50 (300ms), got 100ms"},
		{"unknown upstream", [2]string{"  azure-east:", "  azure-west:"}, `upstreams.azure-west: no upstream named "azure-west" in the config`},
		{"missing upstream model", [2]string{"  azure-east:", "  azure-west:"}, `upstreams.azure-east: required: the config upstream "azure-east" serves the model of traffic[0]`},
		{"unserved model", [2]string{"model: gpt-4o-mini", "model: gpt-5"}, `traffic[0].model: no config upstream serves model "gpt-5"`},
		{"rate", [2]string{"rate: 5", "rate: 0"}, "traffic[0].rate: must be > 0 requests per second, got 0"},
		{"no duration", [2]string{"duration: 10m\nmodel", "model"}, "duration: required; must be > 0, got 0s"},
		{"window after the end", [2]string{"ttft: {p50: 300ms}\n  azure", "ttft: {p50: 300ms}\n    outages: [{start: 20m, end: 30m}]\n  azure"}, "upstreams.openai-main.outages[0].start: must be before the scenario's end (10m0s), got 20m0s"},
		{"empty window", [2]string{"ttft: {p50: 300ms}\n  azure", "ttft: {p50: 300ms}\n    hangs: [{start: 2m, end: 1m}]\n  azure"}, "upstreams.openai-main.hangs[0].end: must be after start (2m0s), got 1m0s"},
		{"error rate", [2]string{"ttft: {p50: 300ms}\n  azure", "ttft: {p50: 300ms}\n    error_rate: 1.5\n  azure"}, "upstreams.openai-main.error_rate: must be 0–1, got 1.5"},
		{"headers", [2]string{"ttft: {p50: 300ms}\n  azure", "ttft: {p50: 300ms}\n    headers: azure\n  azure"}, `upstreams.openai-main.headers: must be one of openai, anthropic, none; got "azure"`},
		{"unknown key", [2]string{"rate: 5", "rate: 5\n    rpm: 5"}, `unknown field "rpm"`},
		{"unknown client key", [2]string{"model: gpt-4o-mini", "model: gpt-4o-mini\nkey: nobody"}, `key: no client key named "nobody" in the config`},
		{"slow start share", [2]string{"ttft: {p50: 300ms}\n  azure", "ttft: {p50: 300ms}\n    slow_starts: {share: 1.5, ttft: 3s}\n  azure"}, "upstreams.openai-main.slow_starts.share: must be 0–1, got 1.5"},
		{"slow start without its ttft", [2]string{"ttft: {p50: 300ms}\n  azure", "ttft: {p50: 300ms}\n    slow_starts: {share: 0.1}\n  azure"}, "upstreams.openai-main.slow_starts.ttft: must be > 0, got 0s"},
		{"compare what", [2]string{"model: gpt-4o-mini", "model: gpt-4o-mini\ncompare: retries"}, `compare: must be one of hedging, lowest-cost, prefix-affinity, or empty; got "retries"`},
		{"shared prompts without tokens", [2]string{"rate: 5", "rate: 5\n    shared_prompts: {count: 3}"}, "traffic[0].shared_prompts.tokens: must be ≥ 1 with shared_prompts, got 0"},
		{"shared prompts without count", [2]string{"rate: 5", "rate: 5\n    shared_prompts: {tokens: 100}"}, "traffic[0].shared_prompts.count: must be ≥ 1 with shared_prompts, got 0"},
		{"shared prompts share", [2]string{"rate: 5", "rate: 5\n    shared_prompts: {count: 2, tokens: 100, share: 2}"}, "traffic[0].shared_prompts.share: must be 0–1, got 2"},
		{"compare lowest-cost without it", [2]string{"model: gpt-4o-mini", "model: gpt-4o-mini\ncompare: lowest-cost"}, "compare: no route of the config uses the lowest-cost strategy"},
		{"compare hedging without hedging", [2]string{"model: gpt-4o-mini", "model: gpt-4o-mini\ncompare: hedging"}, "compare: the config hedges no route: set defaults.hedge or a route's hedge.delay"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			src := strings.Replace(validScenario, tc.replace[0], tc.replace[1], 1)
			if src == validScenario {
				t.Fatalf("replacement %q not found", tc.replace[0])
			}
			_, err := ParseScenario([]byte(src), cfg)
			if err == nil {
				t.Fatalf("no error, want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error:\n%v\nwant a line %q", err, tc.want)
			}
		})
	}
}
