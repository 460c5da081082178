package doclinks

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// md writes ".md" for "{md}": the fixtures below name files that do not
// exist, and this file is scanned by TestRepositoryLinks too.
func md(s string) string { return strings.ReplaceAll(s, "{md}", ".md") }

func TestSlug(t *testing.T) {
	tests := []struct{ heading, want string }{
		{"2. Candidates and session affinity", "2-candidates-and-session-affinity"},
		{"Stateful calls: pinned, not sticky", "stateful-calls-pinned-not-sticky"},
		{"AWS Bedrock (`provider: bedrock`)", "aws-bedrock-provider-bedrock"},
		{"Checking a file: `switchyard check-config`", "checking-a-file-switchyard-check-config"},
		{"`GET /requests/{id}`", "get-requestsid"},
		{"`GET /admin/api/upstreams`, `GET /admin/api/upstreams/{name}`", "get-adminapiupstreams-get-adminapiupstreamsname"},
		{"Health, limits and quotas", "health-limits-and-quotas"},
		{"`defaults` and `routes`", "defaults-and-routes"},
		{"Re-measured on a quiet machine, with translation (2026-12-01)", "re-measured-on-a-quiet-machine-with-translation-2026-12-01"},
		{"After the request path's seams (provider adapters, codecs, two-phase attempts, state driver)", "after-the-request-paths-seams-provider-adapters-codecs-two-phase-attempts-state-driver"},
		{"Anthropic Messages (`POST /v1/messages`)", "anthropic-messages-post-v1messages"},
		{"Refused: needs", "refused-needs"},
		{"A link [to here](other.md) and *emphasis*", "a-link-to-here-and-emphasis"},
		{"snake_case stays", "snake_case-stays"},
		{"Two  spaces — a dash", "two--spaces--a-dash"},
		{"会话亲和 (Session Affinity)", "会话亲和-session-affinity"},
		{"  padded  ", "padded"},
	}
	for _, tt := range tests {
		t.Run(tt.heading, func(t *testing.T) {
			if got := Slug(tt.heading); got != tt.want {
				t.Errorf("Slug(%q) = %q, want %q", tt.heading, got, tt.want)
			}
		})
	}
}

func TestAnchors(t *testing.T) {
	doc := "# Title\n" +
		"text\n" +
		"## Configuration ##\n" +
		"```yaml\n" +
		"# a comment, not a heading\n" +
		"```\n" +
		"### Configuration\n" +
		"#### Configuration\n" +
		"<a id=\"explicit\"></a>\n" +
		"    # indented four: code, but GitHub would not render it as a heading either\n" +
		"#not-a-heading\n"
	got := Anchors(doc)
	var keys []string
	for k := range got {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	want := []string{"configuration", "configuration-1", "configuration-2", "explicit", "title"}
	if !slices.Equal(keys, want) {
		t.Errorf("Anchors = %q, want %q", keys, want)
	}
}

// TestCheck runs Check over a small tree with one pointer of every kind,
// good and bad, and expects exactly the bad ones.
func TestCheck(t *testing.T) {
	files := map[string]string{
		"README.md": md("# Readme title\n" +
			"[ok](docs/a{md}#second-part) [bad anchor](docs/a{md}#nope) [missing](docs/gone{md})\n" +
			"[web](https://example.com/x{md}) [self](#readme-title) [self bad](#nowhere) ![img](docs/pic.png)\n" +
			"```\n[in code](docs/gone{md})\n```\n" +
			"[ref]: docs/a{md}#second-part-1\n" +
			"Text citing docs/a{md}#second-part and CHANGES{md}.\n"),
		md("docs/a{md}"): md("# A\n## Second part\n```sh\n# not a heading\n```\n## Second part\n" +
			"[dup](#second-part-1) [code](#not-a-heading) [up](../README{md}) [out](../../x{md})\n" +
			"[dir](../internal/) [escaped](a%2Emd)\n"),
		"docs/pic.png": "",
		"internal/x/x.go": md("package x\n\n" +
			"// See docs/a{md}#second-part (and PLAN{md} §3),\n" +
			"// docs/a{md}#missing-one, ../../docs/a{md}, README{md} and\n" +
			"// https://github.com/o/r/blob/main/docs/nothere{md}.\n" +
			"// The script writes $OUT/table{md} and {dir}/notes{md}.\n"),
		md("internal/x/testdata/golden{md}"): md("[made by the test](chart.svg) [gone](gone{md})\n"),
		"internal/x/notes.txt":               md("docs/gone{md} is not read: not a scanned kind of file\n"),
	}
	root := t.TempDir()
	for name, body := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	got, err := Check(root)
	if err != nil {
		t.Fatal(err)
	}
	want := []Problem{
		{"README.md", 2, md("docs/a{md}#nope"), md("no heading with anchor #nope in docs/a{md}")},
		{"README.md", 2, md("docs/gone{md}"), "no such file"},
		{"README.md", 3, "#nowhere", "no heading with anchor #nowhere in README.md"},
		{"README.md", 5, md("docs/gone{md}"), "no such file"},
		{"README.md", 8, md("CHANGES{md}"), "no such file"},
		{md("docs/a{md}"), 7, "#not-a-heading", md("no heading with anchor #not-a-heading in docs/a{md}")},
		{md("docs/a{md}"), 7, md("../../x{md}"), "no such file"},
		{"internal/x/x.go", 3, md("PLAN{md}"), "no such file"},
		{"internal/x/x.go", 4, md("docs/a{md}#missing-one"), md("no heading with anchor #missing-one in docs/a{md}")},
	}
	if !slices.Equal(got, want) {
		t.Errorf("Check found:\n%s\nwant:\n%s", lines(got), lines(want))
	}
}

func lines(ps []Problem) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString("  " + p.String() + "\n")
	}
	return b.String()
}

// TestRepositoryLinks checks the repository itself: every document a file
// points to exists and every anchor names a heading.
func TestRepositoryLinks(t *testing.T) {
	problems, err := Check(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Error(p)
	}
}
