package config

import (
	"path"
	"strings"
)

// Glob reports whether name matches pattern, where `*` matches any run of
// characters (including `/`, so "*" matches "org/model"), `?` one character
// and `[...]` a class, with path.Match syntax otherwise ("\\" escapes). A
// pattern equal to name always matches; any other malformed pattern matches
// nothing (Validate rejects malformed patterns in a configuration).
func Glob(pattern, name string) bool {
	if pattern == name {
		return true
	}
	if strings.IndexByte(name, '/') >= 0 && !strings.Contains(pattern, slashStandIn) &&
		!strings.Contains(name, slashStandIn) {
		// path.Match stops `*` and `?` at '/'; model names such as
		// "org/model" need them to cross it, so hide the slashes.
		pattern = strings.ReplaceAll(pattern, "/", slashStandIn)
		name = strings.ReplaceAll(name, "/", slashStandIn)
	}
	ok, err := path.Match(pattern, name)
	return err == nil && ok
}

// slashStandIn replaces '/' while matching: a private-use rune that model
// names do not contain.
const slashStandIn = "\uE000"

// checkGlob returns an error when pattern is not valid path.Match syntax.
func checkGlob(pattern string) error {
	_, err := path.Match(pattern, "")
	return err
}

// IsGlob reports whether s contains a glob metacharacter.
func IsGlob(s string) bool {
	return strings.ContainsAny(s, "*?[\\")
}

// MatchAny reports whether name matches any of the patterns.
func MatchAny(patterns []string, name string) bool {
	for _, p := range patterns {
		if Glob(p, name) {
			return true
		}
	}
	return false
}

// MatchRoute returns the route for model: an exact match first, else the
// first route whose glob matches.
func MatchRoute(routes []Route, model string) (Route, bool) {
	for _, r := range routes {
		if r.Model == model {
			return r, true
		}
	}
	for _, r := range routes {
		if Glob(r.Model, model) {
			return r, true
		}
	}
	return Route{}, false
}

// Pattern is a glob (see Glob) compiled once, for matching on the hot path:
// an exact name, "*", "prefix*", "*suffix" and "*infix*" match without
// path.Match; anything else falls back to Glob. The zero Pattern matches
// only "".
type Pattern struct {
	kind patternKind
	lit  string // the literal part, or the whole pattern for patternGlob
}

type patternKind uint8

const (
	patternExact patternKind = iota
	patternAny
	patternPrefix
	patternSuffix
	patternInfix
	patternGlob
)

// CompilePattern compiles pattern; a malformed one matches only itself, as
// with Glob.
func CompilePattern(pattern string) Pattern {
	if !IsGlob(pattern) {
		return Pattern{kind: patternExact, lit: pattern}
	}
	if pattern == "*" {
		return Pattern{kind: patternAny}
	}
	inner := strings.Trim(pattern, "*")
	if !IsGlob(inner) {
		lead, trail := pattern[0] == '*', pattern[len(pattern)-1] == '*'
		switch {
		case lead && trail && strings.Count(pattern, "*") == 2:
			return Pattern{kind: patternInfix, lit: inner}
		case trail && !lead && strings.Count(pattern, "*") == 1:
			return Pattern{kind: patternPrefix, lit: inner}
		case lead && !trail && strings.Count(pattern, "*") == 1:
			return Pattern{kind: patternSuffix, lit: inner}
		}
	}
	return Pattern{kind: patternGlob, lit: pattern}
}

// Match reports whether s matches the pattern, as Glob would.
func (p Pattern) Match(s string) bool {
	switch p.kind {
	case patternExact:
		return s == p.lit
	case patternAny:
		return true
	case patternPrefix:
		return strings.HasPrefix(s, p.lit)
	case patternSuffix:
		return strings.HasSuffix(s, p.lit)
	case patternInfix:
		return strings.Contains(s, p.lit)
	}
	return Glob(p.lit, s)
}
