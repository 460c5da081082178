package sim

import (
	"bytes"
	"flag"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

const examples = "../../examples/scenarios/"

// simulate loads a config and a scenario and runs them with seed. Under
// the race detector it skips the test: a scenario of tens of thousands of
// requests takes minutes there, and .ci/run runs these tests without it
// (TestSchedTasks and TestRaceSmoke cover the scheduler under it).
func simulate(t *testing.T, cfgPath, scenarioPath string, seed uint64) *Report {
	t.Helper()
	if raceEnabled {
		t.Skip("a whole scenario under -race is too slow; .ci/run runs it without -race")
	}
	return simulateAlways(t, cfgPath, scenarioPath, seed)
}

// simulateAlways is simulate without the skip.
func simulateAlways(t *testing.T, cfgPath, scenarioPath string, seed uint64) *Report {
	t.Helper()
	cfg := loadConfig(t, cfgPath)
	sc, err := LoadScenario(scenarioPath, cfg)
	if err != nil {
		t.Fatalf("loading %s: %v", scenarioPath, err)
	}
	rp, err := Run(cfg, sc, seed)
	if err != nil {
		t.Fatal(err)
	}
	return rp
}

func files(t *testing.T, rp *Report) map[string][]byte {
	t.Helper()
	fs, err := rp.Files()
	if err != nil {
		t.Fatal(err)
	}
	return fs
}

// TestRaceSmoke runs the scenario that touches every path once, under the
// race detector too: every request's goroutine hands control to the next
// through the scheduler, and the detector sees each handoff.
func TestRaceSmoke(t *testing.T) {
	rp := simulateAlways(t, "testdata/mixed.config.yaml", "testdata/mixed.yaml", 1)
	if rp.Summary.Overall.Requests < 1000 {
		t.Fatalf("only %d requests", rp.Summary.Overall.Requests)
	}
}

// TestDeterminism runs the scenario that touches every path (tiers, a slot
// queue, limits with and without headers, fallback models, sessions,
// probes, outages, brown-outs and hangs) three times.
func TestDeterminism(t *testing.T) {
	once := func(seed uint64) map[string][]byte {
		return files(t, simulate(t, "testdata/mixed.config.yaml", "testdata/mixed.yaml", seed))
	}
	a, b, c := once(1), once(1), once(2)
	names := make([]string, 0, len(a))
	for n := range a {
		names = append(names, n)
	}
	sort.Strings(names)
	if len(names) != 6 {
		t.Fatalf("outputs %v, want 6 files", names)
	}
	differs := 0
	for _, n := range names {
		if !bytes.Equal(a[n], b[n]) {
			t.Errorf("%s: two runs with seed 1 differ", n)
		}
		if !bytes.Equal(a[n], c[n]) {
			differs++
		}
	}
	if differs < len(names)-1 { // the breaker chart may coincide; the rest may not
		t.Errorf("only %d of %d outputs differ between seeds 1 and 2", differs, len(names))
	}
}

func TestWeightedSplit(t *testing.T) {
	rp := simulate(t, examples+"weighted-split.config.yaml", examples+"weighted-split.yaml", 1)
	s := rp.Summary
	if s.Overall.Requests < 30000 {
		t.Fatalf("only %d requests", s.Overall.Requests)
	}
	for _, u := range s.Upstreams {
		if d := math.Abs(u.Share - u.ConfiguredShare); d > 0.02 {
			t.Errorf("%s: share %.4f, configured %.4f: more than 2 points apart", u.Name, u.Share, u.ConfiguredShare)
		}
		if u.ConfiguredShare == 0 {
			t.Errorf("%s: no configured share", u.Name)
		}
	}
	if s.Overall.SuccessRate != 1 {
		t.Errorf("success rate %v with healthy upstreams, want 1", s.Overall.SuccessRate)
	}
}

// TestRateLimitStormGolden compares the rate-limit-storm example's summary
// with the committed one; go test -run Golden -update rewrites it.
func TestRateLimitStormGolden(t *testing.T) {
	rp := simulate(t, examples+"rate-limit-storm.config.yaml", examples+"rate-limit-storm.yaml", 2)
	fs := files(t, rp)
	for _, name := range []string{FileSummaryJSON, FileSummaryMD} {
		golden := filepath.Join("testdata", "rate-limit-storm."+name)
		if *update {
			if err := os.WriteFile(golden, fs[name], 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(golden)
		if err != nil {
			t.Fatalf("%v (run with -update to create it)", err)
		}
		if !bytes.Equal(fs[name], want) {
			t.Errorf("%s differs from %s (run with -update if the change is intended):\n%s", name, golden, fs[name])
		}
	}
	// What the golden file must show, whatever its numbers.
	s := rp.Summary
	byName := map[string]UpstreamSummary{}
	for _, u := range s.Upstreams {
		byName[u.Name] = u
	}
	if byName["openai-spare"].RateLimited == 0 {
		t.Error("the spare key (no rate-limit headers) was never answered 429")
	}
	if p := byName["openai-primary"]; p.RateLimited > p.Requests/100 {
		t.Errorf("primary: %d 429s of %d: its headers should let the gateway route around its limit", p.RateLimited, p.Requests)
	}
}

// TestOutageAndRecovery checks the example's story: the upstream that is
// down trips its breaker, gets nothing while down, and traffic comes back.
func TestOutageAndRecovery(t *testing.T) {
	rp := simulate(t, examples+"outage-and-recovery.config.yaml", examples+"outage-and-recovery.yaml", 7)
	rec := rp.rec
	a := -1
	for i, n := range rp.names {
		if n == "openai-a" {
			a = i
		}
	}
	if a < 0 || rp.Summary.Upstreams[a].BreakerTrips == 0 {
		t.Fatalf("openai-a: %+v, want breaker trips", rp.Summary.Upstreams)
	}
	attempts := func(from, to int) (n int32) { // minutes
		for b := from * 2; b < to*2; b++ { // 30 s buckets
			n += rec.attempts[b*rec.nu+a]
		}
		return n
	}
	if got := attempts(12, 20); got > 20 {
		t.Errorf("openai-a took %d attempts while down (minutes 12–20), want only probes' worth", got)
	}
	if got := attempts(40, 60); got < 5000 {
		t.Errorf("openai-a took %d attempts in minutes 40–60 after recovering, want its share back", got)
	}
	if rp.Summary.Overall.SuccessRate < 0.99 {
		t.Errorf("success rate %v, want failover to hide the outage", rp.Summary.Overall.SuccessRate)
	}
}

// TestAdaptiveRecovery checks the adaptive-recovery example: under adaptive,
// a 2:1 weight gives about 2:1 although the heavier upstream has a
// concurrency cap (it never fills), and after its one-minute outage the
// heavier upstream earns its share back within two minutes instead of
// sitting out the five-minute error cooldown
// (docs/routing.md#adaptive-and-seed-001).
func TestAdaptiveRecovery(t *testing.T) {
	rp := simulate(t, examples+"adaptive-recovery.config.yaml", examples+"adaptive-recovery.yaml", 3)
	rec := rp.rec
	main := slices.Index(rp.names, "openai-main")
	if main < 0 {
		t.Fatalf("upstreams %v", rp.names)
	}
	share := func(from, to float64) float64 { // minutes, on the 30 s buckets
		var n, all int32
		for b := int(from * 2); b < int(to*2); b++ {
			for u := range rec.nu {
				all += rec.attempts[b*rec.nu+u]
			}
			n += rec.attempts[b*rec.nu+main]
		}
		return float64(n) / float64(all)
	}
	tests := []struct {
		name     string
		from, to float64 // minutes
		min, max float64
	}{
		{"before the outage", 1, 10, 0.62, 0.71},
		{"the two minutes after it (breaker closed at 11.5)", 11.5, 13.5, 0.45, 0.80},
		{"the rest of the seed's five-minute cooldown", 13.5, 16, 0.55, 0.73},
		{"afterwards", 16, 30, 0.62, 0.71},
	}
	for _, tt := range tests {
		if got := share(tt.from, tt.to); got < tt.min || got > tt.max {
			t.Errorf("%s: openai-main took %.1f%% of the attempts, want %.0f–%.0f%%", tt.name, 100*got, 100*tt.min, 100*tt.max)
		}
	}
}
