package pricing

import (
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestBuiltinLookup: providers' ids find their canonical entries.
func TestBuiltinLookup(t *testing.T) {
	c := Builtin()
	if _, err := time.Parse(time.DateOnly, c.Date()); err != nil {
		t.Fatalf("built-in catalogue date %q: %v", c.Date(), err)
	}
	tests := []struct {
		model  string
		input  float64
		output float64
	}{
		{"gpt-4o", 2.5, 10},
		{"gpt-4o-2024-08-06", 2.5, 10},
		{"gpt-4o-mini", 0.15, 0.6},
		{"gpt-4.1-nano-2025-04-14", 0.1, 0.4},
		{"o4-mini-2025-04-16", 1.1, 4.4},
		{"gpt-5-mini", 0.25, 2},
		{"claude-sonnet-4-20250514", 3, 15},
		{"us.anthropic.claude-sonnet-4-20250514-v1:0", 3, 15},
		{"eu.anthropic.claude-3-7-sonnet-20250219-v1:0", 3, 15},
		{"anthropic.claude-3-5-haiku-20241022-v1:0", 0.8, 4},
		{"claude-opus-4-1@20250805", 15, 75},
		{"claude-haiku-4-5-20251001", 1, 5},
		{"gemini-2.5-flash-lite", 0.1, 0.4},
		{"gemini-2.0-flash-001", 0.1, 0.4},
		{"models/gemini-2.5-pro", 1.25, 10},
	}
	for _, tc := range tests {
		t.Run(tc.model, func(t *testing.T) {
			p, ok := c.Lookup(tc.model)
			if !ok || p.InputPerMTok != tc.input || p.OutputPerMTok != tc.output {
				t.Errorf("Lookup(%q) = %+v, %v; want input %v output %v", tc.model, p, ok, tc.input, tc.output)
			}
		})
	}
	for _, model := range []string{"gpt-4o*", "my-finetune", "claude-sonnet-9", ""} {
		if p, ok := c.Lookup(model); ok {
			t.Errorf("Lookup(%q) = %+v, want not listed", model, p)
		}
	}
}

// TestBuiltinAnthropicCachePrices: every Claude entry writes the cache at
// 1.25× and reads it at 0.1× its input price (but Claude 3 Haiku, which
// Anthropic lists at 0.30 and 0.03); every entry of the others leaves no
// cache price above the input price; every name is in normal form.
func TestBuiltinAnthropicCachePrices(t *testing.T) {
	c := Builtin()
	for _, m := range c.Models() {
		p, _ := c.Lookup(m)
		switch {
		case m == "claude-3-haiku":
		case strings.HasPrefix(m, "claude-"):
			if !near(p.CacheWritePerMTok, 1.25*p.InputPerMTok) || !near(p.CacheReadPerMTok, 0.1*p.InputPerMTok) {
				t.Errorf("%s: cache write %v, read %v; want 1.25× and 0.1× of input %v", m, p.CacheWritePerMTok, p.CacheReadPerMTok, p.InputPerMTok)
			}
		case p.CacheReadPerMTok > p.InputPerMTok || p.CacheWritePerMTok > p.InputPerMTok:
			t.Errorf("%s: cache prices %+v above the input price", m, p)
		}
		if n := Normalize(m); n != m {
			t.Errorf("%s: not in normal form (Normalize gives %q), so dated ids would miss it", m, n)
		}
	}
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestLoadCatalogue(t *testing.T) {
	dir := t.TempDir()
	write := func(name, body string) {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write("ok.yaml", "date: 2026-03-04\nmodels:\n  in-house-7b: {input_per_mtok: 0.2, output_per_mtok: 0.4}\n")
	write("ok.json", `{"date": "2026-03-05", "models": {"in-house-7b": {"input_per_mtok": 0.3, "output_per_mtok": 0.6}}}`)
	write("negative.yaml", "date: 2026-03-04\nmodels:\n  m1: {input_per_mtok: -1, output_per_mtok: 1}\n  m2: {input_per_mtok: 1, output_per_mtok: 1}\n")
	write("unknown.yaml", "date: 2026-03-04\nmodels:\n  m1: {input_per_mtok: 1, ouput_per_mtok: 1}\n")
	write("nodate.yaml", "models:\n  m1: {input_per_mtok: 1}\n")
	write("free.yaml", "date: 2026-03-04\nmodels:\n  m1: {cache_read_per_mtok: 1}\n")
	write("glob.yaml", "date: 2026-03-04\nmodels:\n  'gpt-*': {input_per_mtok: 1}\n")
	write("empty.yaml", "date: 2026-03-04\n")
	write("broken.yaml", "date: [\n")

	t.Run("builtin and none", func(t *testing.T) {
		for _, spec := range []string{"", "builtin"} {
			if c, err := LoadCatalogue(spec, dir); err != nil || c != Builtin() {
				t.Errorf("LoadCatalogue(%q) = %p, %v; want the built-in one", spec, c, err)
			}
		}
		if c, err := LoadCatalogue("none", dir); err != nil || c != nil {
			t.Errorf(`LoadCatalogue("none") = %v, %v; want nil, nil`, c, err)
		}
	})
	for _, tc := range []struct {
		spec  string
		date  string
		input float64
	}{
		{"ok.yaml", "2026-03-04", 0.2},
		{"ok.json", "2026-03-05", 0.3},
		{filepath.Join(dir, "ok.yaml"), "2026-03-04", 0.2}, // absolute
	} {
		t.Run(tc.spec, func(t *testing.T) {
			c, err := LoadCatalogue(tc.spec, dir)
			if err != nil {
				t.Fatal(err)
			}
			p, ok := c.Lookup("in-house-7b")
			if c.Date() != tc.date || !ok || p.InputPerMTok != tc.input || p.CacheReadPerMTok != tc.input {
				t.Errorf("date %q, price %+v, %v; want %s, input and cache read %v", c.Date(), p, ok, tc.date, tc.input)
			}
		})
	}
	for _, tc := range []struct {
		spec string
		want []string // each in the error
	}{
		{"missing.yaml", []string{"missing.yaml", "no such file"}},
		{"broken.yaml", []string{"broken.yaml", "parsing"}},
		{"negative.yaml", []string{"negative.yaml", "models.m1.input_per_mtok: must be a number ≥ 0, got -1"}},
		{"unknown.yaml", []string{"unknown.yaml", "ouput_per_mtok"}},
		{"nodate.yaml", []string{"nodate.yaml", "date: must be a date YYYY-MM-DD"}},
		{"free.yaml", []string{"free.yaml", "models.m1: input_per_mtok or output_per_mtok is required"}},
		{"glob.yaml", []string{"glob.yaml", "models.gpt-*: a model name"}},
		{"empty.yaml", []string{"empty.yaml", "models: at least one"}},
	} {
		t.Run(tc.spec, func(t *testing.T) {
			_, err := LoadCatalogue(tc.spec, dir)
			if err == nil {
				t.Fatal("loaded; want an error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not contain %q", err, w)
				}
			}
		})
	}
}
