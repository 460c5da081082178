package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// run executes the root command with args and returns its output.
func run(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newRootCmd()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestCheckConfig(t *testing.T) {
	tests := []struct {
		name      string
		file      string
		wantErr   bool
		wantLines []string // exact lines, in order
	}{
		{
			name:    "every error with its path",
			file:    "testdata/invalid.yaml",
			wantErr: true,
			wantLines: []string{
				"defaults.retries: must be 0–10, got 11",
				`keys[0].allowed_upstreams[0]: unknown upstream "no-such-upstream"`,
				"upstreams[0].weight: must be 1–100, got 0",
				`upstreams[1].provider: must be one of openai, anthropic, azure-openai, openai-compatible, gemini, vertex, bedrock; got "bogus"`,
			},
		},
		{
			name:      "valid file",
			file:      "testdata/valid.yaml",
			wantLines: []string{"testdata/valid.yaml: ok (2 upstreams, 1 key, 1 route)"},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := run(t, "check-config", tc.file)
			if got := strings.Split(strings.TrimRight(out, "\n"), "\n"); strings.Join(got, "\n") != strings.Join(tc.wantLines, "\n") {
				t.Errorf("output:\n%s\nwant:\n%s", out, strings.Join(tc.wantLines, "\n"))
			}
			if !tc.wantErr {
				if err != nil {
					t.Fatalf("valid file: %v", err)
				}
				return
			}
			if !errors.Is(err, errInvalidConfig) {
				t.Fatalf("error %v, want errInvalidConfig", err)
			}
			if !strings.Contains(err.Error(), "(4 errors)") {
				t.Errorf("error %q does not count the errors", err)
			}
			for _, secret := range []string{"sk-team-a-secret", "sk-openai-secret"} {
				if strings.Contains(out, secret) {
					t.Errorf("output echoes a secret: %s", out)
				}
			}
		})
	}
	t.Run("missing file", func(t *testing.T) {
		if _, err := run(t, "check-config", filepath.Join(t.TempDir(), "nope.yaml")); err == nil || errors.Is(err, errInvalidConfig) {
			t.Fatalf("error %v, want a read error", err)
		}
	})
	t.Run("no argument", func(t *testing.T) {
		if _, err := run(t, "check-config"); err == nil {
			t.Fatal("check-config without a file succeeded")
		}
	})
}

func TestVersion(t *testing.T) {
	out, err := run(t, "version")
	if err != nil {
		t.Fatal(err)
	}
	if out != "switchyard "+version+"\n" || version == "" {
		t.Fatalf("version printed %q", out)
	}
	if _, err := run(t, "version", "extra"); err == nil {
		t.Fatal("version accepted an argument")
	}
}

// TestMainExitCode runs main in a child process: an invalid file exits 1
// after printing its errors, a valid one exits 0.
func TestMainExitCode(t *testing.T) {
	if args := os.Getenv("SWITCHYARD_TEST_MAIN_ARGS"); args != "" {
		os.Args = append([]string{"switchyard"}, strings.Split(args, " ")...)
		main()
		os.Exit(0)
	}
	tests := []struct {
		args     string
		wantCode int
		wantOut  string
	}{
		{"check-config testdata/invalid.yaml", 1, "upstreams[0].weight: must be 1–100, got 0"},
		{"check-config testdata/valid.yaml", 0, "ok (2 upstreams"},
		{"no-such-command", 1, "unknown command"},
	}
	for _, tc := range tests {
		t.Run(tc.args, func(t *testing.T) {
			cmd := exec.Command(os.Args[0], "-test.run=^TestMainExitCode$")
			cmd.Env = append(os.Environ(), "SWITCHYARD_TEST_MAIN_ARGS="+tc.args)
			out, err := cmd.CombinedOutput()
			code := 0
			var exit *exec.ExitError
			if errors.As(err, &exit) {
				code = exit.ExitCode()
			} else if err != nil {
				t.Fatal(err)
			}
			if code != tc.wantCode || !strings.Contains(string(out), tc.wantOut) {
				t.Fatalf("exit %d, output:\n%s\nwant exit %d and %q", code, out, tc.wantCode, tc.wantOut)
			}
		})
	}
}

func TestExplain(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		wantErr  string
		wantText []string
	}{
		{"table", []string{"--model", "gpt-4o"}, "", []string{
			"model gpt-4o  strategy weighted-random", "order: openai-main  (chosen: openai-main)",
			"TIER  UPSTREAM", "0     openai-main  3       1", "effective_weight=3",
		}},
		{"with a key, a session and streaming", []string{"--model", "gpt-4o", "--key", "team-a", "--stream", "--session", "s1"}, "", []string{
			"session s1  stream true  key team-a",
		}},
		{"unknown model", []string{"--model", "nope"}, "no upstream serves model nope", nil},
		{"unknown key", []string{"--model", "gpt-4o", "--key", "ghost"}, "no client key named ghost", nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := run(t, append([]string{"explain", "--config", "testdata/valid.yaml"}, tc.args...)...)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
					t.Fatalf("err %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.wantText {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	// lowest-cost: 1000 input, 100 output → cheap 0.0005 + 0.0002, dear 0.005 + 0.0015.
	prices := []struct {
		name string
		args []string
		want []string
	}{
		{"lowest-cost estimates", []string{"--max-tokens", "100"}, []string{
			"strategy lowest-cost", "order: cheap → dear → unknown", "EST. COST",
			"cheap     1       1     -       -       $0.000700", "dear      1       2     -       -       $0.006500", "unknown   1       3     -       -       unpriced",
		}},
		{"preferences", []string{"--provider", `{"ignore":["cheap"],"max_price":{"prompt":6}}`}, []string{
			"order: dear  (chosen: dear)", "cheap     1       -     preferences  preferences: ignored", "unknown   1       -     preferences  preferences: over max_price",
		}},
	}
	for _, tc := range prices {
		t.Run(tc.name, func(t *testing.T) {
			out, err := run(t, append([]string{"explain", "--config", "testdata/prices.yaml", "--model", "gpt-4o"}, tc.args...)...)
			if err != nil {
				t.Fatal(err)
			}
			for _, w := range tc.want {
				if !strings.Contains(out, w) {
					t.Errorf("output lacks %q:\n%s", w, out)
				}
			}
		})
	}
	if _, err := run(t, "explain", "--config", "testdata/prices.yaml", "--model", "gpt-4o", "--provider", `{"sort":"x"}`); err == nil ||
		!strings.Contains(err.Error(), "provider.sort") {
		t.Errorf("bad --provider: err %v, want one naming provider.sort", err)
	}
	out, err := run(t, "explain", "--config", "testdata/valid.yaml", "--model", "claude-3-5-haiku", "--json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Chosen string   `json:"chosen"`
		Order  []string `json:"order"`
	}
	if err := json.Unmarshal([]byte(out), &d); err != nil || d.Chosen != "anthropic-main" || len(d.Order) != 1 {
		t.Fatalf("json output %s (%v)", out, err)
	}
}

func TestMemoryLimit(t *testing.T) {
	tests := []struct {
		name       string
		mb         int
		gomemlimit string
		want       int64
	}{
		{"the configured limit", 48, "", 48 << 20},
		{"0 leaves the runtime's", 0, "", 0},
		{"GOMEMLIMIT wins", 48, "1GiB", 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOMEMLIMIT", tc.gomemlimit)
			if got := memoryLimit(tc.mb); got != tc.want {
				t.Fatalf("memoryLimit(%d) = %d, want %d", tc.mb, got, tc.want)
			}
		})
	}
}
