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
