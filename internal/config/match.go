package config

import "path"

// Glob reports whether name matches pattern, where `*` matches any run of
// characters (including `/`), `?` one character and `[...]` a class, as in
// path.Match. A malformed pattern matches nothing.
func Glob(pattern, name string) bool {
	if pattern == name {
		return true
	}
	ok, err := path.Match(pattern, name)
	if err == nil && ok {
		return true
	}
	// path.Match stops `*` at '/'; model names such as "org/model" need it to cross.
	return globAcrossSlash(pattern, name)
}

func globAcrossSlash(pattern, name string) bool {
	for len(pattern) > 0 {
		if pattern[0] == '*' {
			rest := pattern[1:]
			for i := 0; i <= len(name); i++ {
				if globAcrossSlash(rest, name[i:]) {
					return true
				}
			}
			return false
		}
		if len(name) == 0 {
			return false
		}
		if pattern[0] != '?' && pattern[0] != name[0] {
			return false
		}
		pattern, name = pattern[1:], name[1:]
	}
	return len(name) == 0
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
