package main

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"switchyard/internal/pricing"
)

// pricedFile has a catalogue-priced, a config-priced and an unpriced model,
// a pattern the catalogue has models for and one it has none for.
const pricedFile = `upstreams:
  - name: openai-main
    provider: openai-compatible
    base_url: http://127.0.0.1:9000/v1
    models: [gpt-4o, gpt-4o-mini, my-finetune]
    model_map: {gpt-4o: gpt-4o-2024-08-06}
    prices:
      gpt-4o-mini*: {input_per_mtok: 0.15, output_per_mtok: 0.6, cache_read_per_mtok: 0.075}
    price_multiplier: 0.8
  - name: claude
    provider: openai-compatible
    base_url: http://127.0.0.1:9001/v1
    models: ["claude-opus-4*", "local-*"]
`

// fields splits a table's output into lines of whitespace-separated fields.
func fields(out string) [][]string {
	var rows [][]string
	for _, line := range strings.Split(strings.TrimRight(out, "\n"), "\n") {
		rows = append(rows, strings.Fields(line))
	}
	return rows
}

func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

func TestPricesCommand(t *testing.T) {
	date := pricing.Builtin().Date()
	tests := []struct {
		name  string
		files map[string]string
		want  []string // stdout lines, fields joined by one space; DATE is the built-in catalogue's
	}{
		{"built-in catalogue", map[string]string{"switchyard.yaml": pricedFile}, []string{
			"UPSTREAM MODEL INPUT OUTPUT CACHE_READ CACHE_WRITE SOURCE",
			"openai-main gpt-4o 2 8 1 2 catalogue DATE", // 2.5 / 10 / 1.25 × 0.8; cache write unset: input
			"openai-main gpt-4o-mini 0.15 0.6 0.075 0.15 config",
			"openai-main my-finetune - - - - unpriced",
			"claude claude-opus-4* - - - - unpriced",
			"claude claude-opus-4 15 75 1.5 18.75 catalogue DATE",
			"claude claude-opus-4-1 15 75 1.5 18.75 catalogue DATE",
			"claude claude-opus-4-5 5 25 0.5 6.25 catalogue DATE",
			"claude local-* - - - - unpriced",
			"(USD per million tokens)",
		}},
		{"catalogue file beside the config", map[string]string{
			"switchyard.yaml": "pricing: {catalogue: my-prices.json}\n" + pricedFile,
			"my-prices.json":  `{"date": "2026-02-03", "models": {"local-7b": {"input_per_mtok": 0.01, "output_per_mtok": 0.02}}}`,
		}, []string{
			"UPSTREAM MODEL INPUT OUTPUT CACHE_READ CACHE_WRITE SOURCE",
			"openai-main gpt-4o - - - - unpriced",
			"openai-main gpt-4o-mini 0.15 0.6 0.075 0.15 config",
			"openai-main my-finetune - - - - unpriced",
			"claude claude-opus-4* - - - - unpriced",
			"claude local-* - - - - unpriced",
			"claude local-7b 0.01 0.02 0.01 0.01 catalogue 2026-02-03",
			"(USD per million tokens)",
		}},
		{"no catalogue", map[string]string{"switchyard.yaml": "pricing: {catalogue: none}\n" + pricedFile}, []string{
			"UPSTREAM MODEL INPUT OUTPUT CACHE_READ CACHE_WRITE SOURCE",
			"openai-main gpt-4o - - - - unpriced",
			"openai-main gpt-4o-mini 0.15 0.6 0.075 0.15 config",
			"openai-main my-finetune - - - - unpriced",
			"claude claude-opus-4* - - - - unpriced",
			"claude local-* - - - - unpriced",
			"(USD per million tokens)",
		}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			dir := writeFiles(t, tc.files)
			// From another directory: the catalogue file is found beside the config.
			t.Chdir(t.TempDir())
			stdout, stderr, err := runSplit(t, "prices", "--config", filepath.Join(dir, "switchyard.yaml"))
			if err != nil || stderr != "" {
				t.Fatalf("error %v, stderr %q", err, stderr)
			}
			var got []string
			for _, f := range fields(stdout) {
				got = append(got, strings.Join(f, " "))
			}
			want := strings.Split(strings.ReplaceAll(strings.Join(tc.want, "\n"), "DATE", date), "\n")
			if strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("stdout:\n%s\nwant (fields):\n%s", stdout, strings.Join(want, "\n"))
			}
		})
	}
}

func TestPricesCommandCatalogue(t *testing.T) {
	stdout, _, err := runSplit(t, "prices")
	if err != nil {
		t.Fatal(err)
	}
	rows := fields(stdout)
	c := pricing.Builtin()
	if len(rows) != len(c.Models())+2 {
		t.Fatalf("%d lines, want a header, %d models and the unit line:\n%s", len(rows), len(c.Models()), stdout)
	}
	for i, m := range c.Models() {
		if r := rows[i+1]; r[0] != m || strings.Join(r[5:], " ") != "catalogue "+c.Date() {
			t.Errorf("line %d = %q, want %s from the catalogue of %s", i+1, r, m, c.Date())
		}
	}
}

func TestPricesCommandBadCatalogue(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"switchyard.yaml": "pricing: {catalogue: prices.yaml}\n" + pricedFile,
		"prices.yaml":     "date: 2026-02-03\nmodels:\n  local-7b: {input_per_mtok: -1}\n",
	})
	path := filepath.Join(dir, "switchyard.yaml")
	for _, args := range [][]string{{"prices", "--config", path}, {"check-config", path}} {
		t.Run(args[0], func(t *testing.T) {
			stdout, _, err := runSplit(t, args...)
			msg := stdout
			if err != nil {
				msg += err.Error()
			}
			if err == nil || !strings.Contains(msg, filepath.Join(dir, "prices.yaml")) || !strings.Contains(msg, "models.local-7b.input_per_mtok") {
				t.Errorf("error %v, stdout %q; want an error naming %s and the entry", err, stdout, filepath.Join(dir, "prices.yaml"))
			}
		})
	}
}

// TestCheckConfigWarnsUnpriced: each unpriced (upstream, model) is a
// warning, and the file is still valid.
func TestCheckConfigWarnsUnpriced(t *testing.T) {
	dir := writeFiles(t, map[string]string{"switchyard.yaml": pricedFile})
	path := filepath.Join(dir, "switchyard.yaml")
	stdout, stderr, err := runSplit(t, "check-config", path)
	if err != nil || stderr != "" {
		t.Fatalf("error %v, stderr %q; want a valid file", err, stderr)
	}
	const advice = " unpriced (spend counts its requests as 0, lowest-cost routing sorts it last); " +
		"set upstreams[].price or upstreams[].prices, or list it in the price catalogue (docs/pricing.md)"
	want := strings.Join([]string{
		`warning: upstream openai-main: model "my-finetune"` + advice,
		`warning: upstream claude: models matching "local-*"` + advice,
		path + ": ok (2 upstreams, 0 keys, 0 routes)",
	}, "\n") + "\n"
	if stdout != want {
		t.Errorf("stdout:\n%s\nwant:\n%s", stdout, want)
	}
	if errors.Is(err, errInvalidConfig) {
		t.Error("warnings made the file invalid")
	}
}
