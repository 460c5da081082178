package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const simConfig = "../../examples/scenarios/weighted-split.config.yaml"

// writeScenario writes a short scenario for simConfig and returns its path.
func writeScenario(t *testing.T, latency string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "short.yaml")
	src := `duration: 2m
model: gpt-4o-mini
traffic: [{duration: 2m, rate: 10, stream_share: 0.5}]
upstreams:
  openai-main: {latency: {p50: ` + latency + `, p95: 2s}, ttft: {p50: 300ms}}
  azure-east: {latency: {p50: 1s}, ttft: {p50: 300ms}, outages: [{start: 30s, end: 60s}]}
`
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestSimulate(t *testing.T) {
	scenario := writeScenario(t, "1s")
	outA, outB, outC := t.TempDir(), t.TempDir(), t.TempDir()
	for _, o := range []struct {
		dir  string
		args []string
	}{{outA, nil}, {outB, []string{"--seed", "1"}}, {outC, []string{"--seed", "9"}}} {
		out, err := run(t, append([]string{"simulate", "--config", simConfig, "--scenario", scenario, "--out", o.dir}, o.args...)...)
		if err != nil {
			t.Fatalf("simulate: %v\n%s", err, out)
		}
		if !strings.HasPrefix(out, "short: ") || !strings.Contains(out, "requests over 2m0s") {
			t.Errorf("output %q", out)
		}
	}
	for _, name := range []string{"summary.md", "summary.json", "share.svg", "latency.svg", "errors.svg", "breakers.svg"} {
		a, err := os.ReadFile(filepath.Join(outA, name))
		if err != nil {
			t.Fatal(err)
		}
		b, _ := os.ReadFile(filepath.Join(outB, name))
		if !bytes.Equal(a, b) {
			t.Errorf("%s: the scenario's default seed (1) and --seed 1 differ", name)
		}
		if c, _ := os.ReadFile(filepath.Join(outC, name)); name == "summary.json" && bytes.Equal(a, c) {
			t.Errorf("%s: --seed 9 gives the same output as seed 1", name)
		}
	}
}

func TestSimulateErrors(t *testing.T) {
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"missing flags", []string{"simulate", "--config", simConfig}, `required flag(s) "out", "scenario" not set`},
		{"bad scenario value", []string{"simulate", "--config", simConfig, "--scenario", writeScenario(t, "0s"), "--out", t.TempDir()},
			"upstreams.openai-main.latency.p50: must be > 0, got 0s"},
		{"missing scenario", []string{"simulate", "--config", simConfig, "--scenario", "nope.yaml", "--out", t.TempDir()}, "reading scenario"},
		{"bad config", []string{"simulate", "--config", "testdata/invalid.yaml", "--scenario", writeScenario(t, "1s"), "--out", t.TempDir()},
			"upstreams[0].weight: must be 1–100, got 0"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := run(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %v (output %q), want one containing %q", err, out, tc.want)
			}
		})
	}
}
