// Package doclinks checks that the repository explains itself: every
// document a file points to is in the repository, and every anchor names a
// heading of it. Its test runs Check over the repository root, so a renamed
// heading, a moved page or a citation of a document kept elsewhere fails
// `go test`.
//
// What counts as a pointer:
//   - in a Markdown file, the target of a link or image (`[text](target)`,
//     `[label]: target`) that is not a URL: resolved from the file's
//     directory, as GitHub renders it; `#anchor` alone is a heading of the
//     file itself;
//   - in any scanned file, a path that names a Markdown file
//     (`docs/routing.md#hedged-requests`, `../../docs/metrics.md`): resolved
//     from the file's directory or from the repository root;
//   - in any scanned file, an upper-case Markdown name on its own
//     (`README.md`): the file's directory or the root must hold it.
//
// An anchor into a Markdown file must equal the slug GitHub gives one of its
// headings (Slug), or an explicit `<a id>`/`<a name>`.
package doclinks

import (
	"bufio"
	"fmt"
	"io/fs"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// Problem is one pointer that does not resolve.
type Problem struct {
	// File is the citing file, slash-separated and relative to the root.
	File string
	// Line is the 1-based line of the pointer in File.
	Line int
	// Target is the pointer as written.
	Target string
	// Reason says what is missing.
	Reason string
}

// String formats p as file:line: target: reason.
func (p Problem) String() string {
	return fmt.Sprintf("%s:%d: %s: %s", p.File, p.Line, p.Target, p.Reason)
}

// scanned reports whether the file at rel (slash-separated) is read: Markdown,
// Go, YAML, SQL and shell files, and the scripts under .ci/.
func scanned(rel string) bool {
	switch path.Ext(rel) {
	case ".md", ".go", ".yaml", ".yml", ".sql", ".sh":
		return true
	}
	return strings.HasPrefix(rel, ".ci/")
}

// skippedDir reports whether a directory is not walked: fixtures and
// golden outputs under testdata point at what their test makes.
func skippedDir(name string) bool {
	return name == ".git" || name == "testdata" || name == "node_modules" || name == "vendor"
}

var (
	// mdLink is an inline link or image target, with an optional title.
	mdLink = regexp.MustCompile(`\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	// mdRefDef is a reference-style link definition.
	mdRefDef = regexp.MustCompile(`^\s{0,3}\[[^\]]+\]:\s*<?([^\s>]+)`)
	// mdPath is a path to a Markdown file with at least one directory.
	mdPath = regexp.MustCompile(`[\w.-]*(?:/[\w.-]+)+\.md(?:#[\w-]+)?`)
	// bareDoc is an upper-case Markdown file name with no directory.
	bareDoc = regexp.MustCompile(`(?:^|[^\w./-])([A-Z][A-Z0-9_-]*\.md)\b`)
	// urlRE spans a URL, whose path is not the repository's.
	urlRE = regexp.MustCompile(`[a-zA-Z][a-zA-Z0-9+.-]*://\S+`)
	// scheme starts a link target that is a URL or another protocol.
	scheme = regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`)
	// fence opens or closes a fenced code block.
	fence = regexp.MustCompile("^\\s{0,3}(```|~~~)")
	// atxHeading is a Markdown heading line.
	atxHeading = regexp.MustCompile(`^\s{0,3}#{1,6}[ \t]+(.*?)(?:[ \t]+#+)?[ \t]*$`)
	// htmlAnchor is an explicit anchor.
	htmlAnchor = regexp.MustCompile(`<a\s+(?:id|name)="([^"]+)"`)
	// inlineLink is a link inside heading text, rendered as its text.
	inlineLink = regexp.MustCompile(`!?\[([^\]]*)\]\([^)]*\)`)
	// htmlTag is markup inside heading text, not rendered as text.
	htmlTag = regexp.MustCompile(`<[^>]+>`)
)

// Slug returns the anchor GitHub gives a heading whose text is heading: the
// rendered text (inline code and links reduced to their text, HTML tags and
// emphasis markers dropped), lower-cased, with every character that is not
// a letter, digit, mark, '-' or '_' removed and each space turned into '-'.
// Repeated headings are told apart by Anchors, not here.
func Slug(heading string) string {
	text := inlineLink.ReplaceAllString(heading, "$1")
	text = htmlTag.ReplaceAllString(text, "")
	text = strings.NewReplacer("`", "", "*", "").Replace(text)
	var b strings.Builder
	for _, r := range strings.TrimSpace(text) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsNumber(r) || unicode.IsMark(r):
			b.WriteRune(unicode.ToLower(r))
		}
	}
	return b.String()
}

// Anchors returns the anchors of a Markdown document: each heading's slug
// (outside fenced code blocks), the second of two equal slugs suffixed
// "-1", the third "-2" and so on, as GitHub does, and every explicit
// `<a id>` or `<a name>`.
func Anchors(markdown string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	inFence := false
	for line := range strings.Lines(markdown) {
		line = strings.TrimRight(line, "\r\n")
		if fence.MatchString(line) {
			inFence = !inFence
			continue
		}
		if inFence {
			continue
		}
		for _, m := range htmlAnchor.FindAllStringSubmatch(line, -1) {
			anchors[m[1]] = true
		}
		m := atxHeading.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		slug := Slug(m[1])
		if n := seen[slug]; n > 0 {
			anchors[slug+"-"+strconv.Itoa(n)] = true
		} else {
			anchors[slug] = true
		}
		seen[slug]++
	}
	return anchors
}

// checker resolves pointers under one root, reading each Markdown target once.
type checker struct {
	root    string
	anchors map[string]map[string]bool // by slash path relative to root
}

// Check walks root and returns every pointer that does not resolve, in
// file and line order.
func Check(root string) ([]Problem, error) {
	c := &checker{root: root, anchors: map[string]map[string]bool{}}
	var problems []Problem
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if p != root && skippedDir(d.Name()) {
				return filepath.SkipDir
			}
			return nil
		}
		rel, err := filepath.Rel(root, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if !scanned(rel) {
			return nil
		}
		found, err := c.file(rel)
		problems = append(problems, found...)
		return err
	})
	return problems, err
}

// file checks the pointers of one file.
func (c *checker) file(rel string) ([]Problem, error) {
	f, err := os.Open(filepath.Join(c.root, filepath.FromSlash(rel)))
	if err != nil {
		return nil, fmt.Errorf("reading %s: %w", rel, err)
	}
	defer f.Close()
	var problems []Problem
	seen := map[Problem]bool{} // a link's target is often a path mention too
	report := func(line int, target, reason string) {
		p := Problem{File: rel, Line: line, Target: target, Reason: reason}
		if !seen[p] {
			seen[p] = true
			problems = append(problems, p)
		}
	}
	markdown := path.Ext(rel) == ".md"
	inFence := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 0, 64*1024), 4*1024*1024)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		if markdown && fence.MatchString(line) {
			inFence = !inFence
		}
		if markdown && !inFence {
			for _, t := range linkTargets(line) {
				if reason := c.link(rel, t); reason != "" {
					report(n, t, reason)
				}
			}
		}
		text := urlRE.ReplaceAllString(line, " ")
		for _, loc := range mdPath.FindAllStringIndex(text, -1) {
			if loc[0] > 0 && strings.IndexByte("${}*<", text[loc[0]-1]) >= 0 {
				continue // a variable or placeholder: $OUT/table.md, {dir}/x.md
			}
			t := text[loc[0]:loc[1]]
			if reason := c.mention(rel, t); reason != "" {
				report(n, t, reason)
			}
		}
		for _, m := range bareDoc.FindAllStringSubmatch(text, -1) {
			if reason := c.mention(rel, m[1]); reason != "" {
				report(n, m[1], reason)
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("reading %s: %w", rel, err)
	}
	return problems, nil
}

// linkTargets returns the Markdown link targets on line that are not URLs.
func linkTargets(line string) []string {
	var out []string
	for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
		out = append(out, m[1])
	}
	if m := mdRefDef.FindStringSubmatch(line); m != nil {
		out = append(out, m[1])
	}
	return slices.DeleteFunc(out, func(t string) bool {
		return scheme.MatchString(t) || strings.HasPrefix(t, "//")
	})
}

// link resolves a Markdown link target from the linking file's directory,
// returning "" or what is missing.
func (c *checker) link(from, target string) string {
	p, anchor, _ := strings.Cut(target, "#")
	if p == "" {
		return c.anchor(from, anchor)
	}
	unescaped, err := url.PathUnescape(p)
	if err != nil {
		return "malformed path"
	}
	return c.resolve(path.Join(path.Dir(from), unescaped), anchor)
}

// mention resolves a path written in text, from the citing file's directory
// or else from the root, returning "" or what is missing.
func (c *checker) mention(from, target string) string {
	p, anchor, _ := strings.Cut(target, "#")
	local := c.resolve(path.Join(path.Dir(from), p), anchor)
	if local == "" {
		return ""
	}
	if root := c.resolve(path.Clean(p), anchor); root != "no such file" {
		return root
	}
	return local
}

// resolve checks that rel exists in the repository and, for a Markdown
// file, that anchor (if any) is one of its anchors.
func (c *checker) resolve(rel, anchor string) string {
	if rel == ".." || strings.HasPrefix(rel, "../") {
		return "no such file"
	}
	if _, err := os.Stat(filepath.Join(c.root, filepath.FromSlash(rel))); err != nil {
		return "no such file"
	}
	if anchor == "" || path.Ext(rel) != ".md" {
		return ""
	}
	return c.anchor(rel, anchor)
}

// anchor checks that the Markdown file rel has the anchor, returning "" or
// what is missing.
func (c *checker) anchor(rel, anchor string) string {
	if anchor == "" {
		return ""
	}
	a, ok := c.anchors[rel]
	if !ok {
		b, err := os.ReadFile(filepath.Join(c.root, filepath.FromSlash(rel)))
		if err != nil {
			return "no such file"
		}
		a = Anchors(string(b))
		c.anchors[rel] = a
	}
	if !a[anchor] {
		return "no heading with anchor #" + anchor + " in " + rel
	}
	return ""
}
