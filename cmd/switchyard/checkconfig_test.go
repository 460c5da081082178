package main

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"switchyard/internal/config"
)

// runSplit executes the root command with args and returns what it wrote
// to stdout and to stderr, apart.
func runSplit(t *testing.T, args ...string) (stdout, stderr string, err error) {
	t.Helper()
	cmd := newRootCmd()
	var out, errOut bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&errOut)
	cmd.SetArgs(args)
	err = cmd.Execute()
	return out.String(), errOut.String(), err
}

// oneUpstream is a valid upstreams block for cases about other keys.
const oneUpstream = `upstreams:
  - name: u1
    provider: openai-compatible
    base_url: http://127.0.0.1:9000/v1
    models: [gpt-4o]
`

// TestCheckConfigMessages runs check-config on small files: the key meant
// for an unknown one, the error count in words after a blank line, and
// files that configure no upstream.
func TestCheckConfigMessages(t *testing.T) {
	tests := []struct {
		name      string
		file      string
		wantLines []string // stdout, exactly
		wantCount string   // "" for a valid file, else the count in the error
	}{
		{"typo at the same level", "defaults:\n  first_byte_timout: 3s\n" + oneUpstream,
			[]string{"defaults.first_byte_timout: unknown key; did you mean first_byte_timeout?"}, "1 error"},
		{"key from another block", oneUpstream + "    rpm: 500\n",
			[]string{"upstreams[0].rpm: unknown key; did you mean rate_limit.rpm?"}, "1 error"},
		{"key from a block elsewhere", "retries: 3\n" + oneUpstream,
			[]string{"retries: unknown key; did you mean defaults.retries or routes[].retries?"}, "1 error"},
		{"no suggestion when nothing is close", oneUpstream + "    colour: blue\n",
			[]string{"upstreams[0].colour: unknown key"}, "1 error"},
		{"two errors", "listen: 8080\n" + oneUpstream + "    wieght: 3\n",
			[]string{
				"upstreams[0].wieght: unknown key; did you mean weight?",
				`listen: must be host:port such as ":8080" or "127.0.0.1:8080", got "8080"`,
			}, "2 errors"},
		{"empty file", "",
			[]string{"the file is empty: at least one upstream is required; see switchyard.example.yaml"}, "1 error"},
		{"no upstreams", "listen: \":8080\"\nupstreams: []\n",
			[]string{"upstreams: at least one upstream is required; see switchyard.example.yaml"}, "1 error"},
		{"one of each", "keys:\n  - {name: k, key: sk-1}\nroutes:\n  - model: gpt-4o\n" + oneUpstream,
			[]string{"FILE: ok (1 upstream, 1 key, 1 route)"}, ""},
		{"plurals", "keys:\n  - {name: k, key: sk-1}\n  - {name: k2, key: sk-2}\n" + oneUpstream +
			"  - {name: u2, provider: openai-compatible, base_url: http://127.0.0.1:9001/v1, models: [gpt-4o]}\n",
			[]string{"FILE: ok (2 upstreams, 2 keys, 0 routes)"}, ""},
		{"redis sentinel", "state:\n  driver: redis\n  redis:\n    mode: sentinel\n    master_name: mymaster\n    addrs: [s1:26379, s2:26379]\n" +
			"    username: gw\n    password: pw-SECRET-1\n    tls: {enabled: true}\n" + oneUpstream,
			[]string{`state: redis sentinel: the primary "mymaster" named by 2 sentinel(s) (s1:26379, s2:26379), database 0, user gw, with a password, TLS, prefix switchyard:`,
				"FILE: ok (1 upstream, 0 keys, 0 routes)"}, ""},
		{"redis cluster", "state:\n  driver: redis\n  redis_prefix: 'gw:'\n  redis: {mode: cluster, addrs: ['n1:7000', 'n2:7000', 'n3:7000']}\n" + oneUpstream,
			[]string{"state: redis cluster: 3 seed node(s) (n1:7000, n2:7000, n3:7000), prefix gw:",
				"FILE: ok (1 upstream, 0 keys, 0 routes)"}, ""},
		{"redis url", "state:\n  driver: redis\n  redis_url: rediss://gw:pw-SECRET-2@cache:6380/2\n" + oneUpstream,
			[]string{"state: redis single server cache:6380, database 2 (state.redis_url), TLS, user gw, prefix switchyard:",
				"FILE: ok (1 upstream, 0 keys, 0 routes)"}, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "switchyard.yaml")
			if err := os.WriteFile(path, []byte(tc.file), 0o600); err != nil {
				t.Fatal(err)
			}
			stdout, stderr, err := runSplit(t, "check-config", path)
			want := strings.ReplaceAll(strings.Join(tc.wantLines, "\n")+"\n", "FILE", path)
			if stdout != want {
				t.Errorf("stdout:\n%s\nwant:\n%s", stdout, want)
			}
			if tc.wantCount == "" {
				if err != nil || stderr != "" {
					t.Fatalf("valid file: error %v, stderr %q", err, stderr)
				}
				return
			}
			if !errors.Is(err, errInvalidConfig) {
				t.Fatalf("error %v, want errInvalidConfig", err)
			}
			if want := path + ": configuration is invalid (" + tc.wantCount + ")"; err.Error() != want {
				t.Errorf("error %q, want %q", err, want)
			}
			// main prints the error on stderr after this blank line.
			if stderr != "\n" {
				t.Errorf("stderr %q, want a blank line before the count", stderr)
			}
		})
	}
}

// repoRoot is where README.md and switchyard.example.yaml live.
const repoRoot = "../.."

// envRefs returns the names of the variables text references as ${NAME}.
func envRefs(text string) []string {
	var names []string
	for _, m := range regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)`).FindAllStringSubmatch(text, -1) {
		names = append(names, m[1])
	}
	return names
}

// readmeBlock returns the body of the first fenced block opened by fence
// (```yaml, or ``` followed by the line first) after heading in README.md.
func readmeBlock(t *testing.T, heading, fence, first string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(b), "\n"+heading+"\n")
	if !ok {
		t.Fatalf("README.md has no %q", heading)
	}
	_, rest, ok = strings.Cut(rest, "\n"+fence+"\n"+first)
	if !ok {
		t.Fatalf("README.md has no %s block starting %q under %q", fence, first, heading)
	}
	body, _, ok := strings.Cut(first+rest, "\n```\n")
	if !ok {
		t.Fatalf("README.md: the block under %q is not closed", heading)
	}
	return body + "\n"
}

// TestExampleConfigPasses runs check-config on switchyard.example.yaml as a
// new user would, none of its variables set: it passes with warnings only,
// and prints what the README shows.
func TestExampleConfigPasses(t *testing.T) {
	const file = "switchyard.example.yaml"
	example, err := os.ReadFile(filepath.Join(repoRoot, file))
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range envRefs(string(example)) {
		t.Setenv(name, "") // restored after the test
		os.Unsetenv(name)
	}
	readme := readmeBlock(t, "## Configure it", "```", "$ switchyard check-config "+file)
	t.Chdir(repoRoot)
	stdout, stderr, err := runSplit(t, "check-config", file)
	if err != nil {
		t.Fatalf("check-config %s: %v\n%s%s", file, err, stdout, stderr)
	}
	if want := strings.TrimPrefix(readme, "$ switchyard check-config "+file+"\n"); stdout != want {
		t.Errorf("check-config printed:\n%s\nthe README shows:\n%s", stdout, want)
	}
}

// TestReadmeConfigBlockValid parses the README's cloud-provider file under
// "Configure it" with its variables set: it is a complete, valid file.
func TestReadmeConfigBlockValid(t *testing.T) {
	block := readmeBlock(t, "## Configure it", "```yaml", "")
	vars := map[string]string{}
	for _, name := range envRefs(block) {
		vars[name] = "sk-test-" + strings.ToLower(name)
	}
	if len(vars) == 0 {
		t.Fatal("the README's block references no variable; did the block move?")
	}
	cfg, err := config.Parse([]byte(block), func(name string) (string, bool) {
		v, ok := vars[name]
		return v, ok
	})
	if err != nil {
		t.Fatalf("the README's yaml block under Configure it:\n%v\n%s", err, block)
	}
	if len(cfg.Warnings) != 0 || len(cfg.Upstreams) == 0 {
		t.Errorf("warnings %q, %d upstreams; want none and some", cfg.Warnings, len(cfg.Upstreams))
	}
}

// TestReadmeExplainSample runs the README's explain command on the example
// file and compares every line but the timing with the README's sample.
func TestReadmeExplainSample(t *testing.T) {
	const command = "$ switchyard explain --config switchyard.example.yaml --model gpt-4o-mini"
	sample := readmeBlock(t, "### Balancing strategies", "```", command)
	t.Chdir(repoRoot)
	stdout, _, err := runSplit(t, strings.Fields(strings.TrimPrefix(command, "$ switchyard "))...)
	if err != nil {
		t.Fatal(err)
	}
	untimed := func(s string) string {
		return regexp.MustCompile(`planned in \S+`).ReplaceAllString(s, "planned in …")
	}
	if got, want := untimed(stdout), untimed(strings.TrimPrefix(sample, command+"\n")); got != want {
		t.Errorf("explain printed:\n%s\nthe README shows:\n%s", got, want)
	}
}
