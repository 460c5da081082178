package config

import (
	"reflect"
	"slices"
	"strings"
	"sync"
)

// Suggestions for unknown keys (and, by the same distance rule, for wrong
// values of enum-valued fields: suggestValue).
//
// The schema is the yaml tags of Config's types, read by the walk the decoder
// uses (yamlFields), so a key added to a struct is suggested at once and no
// list of names can go stale. A suggestion is, in this order of preference:
//
//  1. the nearest key at the same level: edit distance (optimal string
//     alignment: insertions, deletions, substitutions and transpositions of
//     adjacent characters, each counting 1) of at most 2 and less than half
//     the key's length, after lowercasing and dropping '_' and '-'
//     (`first_byte_timout`, `wieght`, `max-concurrency`, `maxConcurrency`);
//  2. the same key elsewhere in the schema: below the current block, written
//     relative to it (`upstreams[0].rpm` → `rate_limit.rpm`), else anywhere,
//     written from the top (`retries` → `defaults.retries`). When both 1
//     and 2 exist, both are offered, except that a key here spelt another
//     way (distance 0) stands alone and the key itself elsewhere beats a
//     guess two edits away here (`retries` is not `metrics`);
//  3. failing both, a near key elsewhere, by the same distance rule, again
//     below the current block first.
//
// At most three are named, nearest and shallowest first.

// maxSuggestions bounds the keys one message names.
const maxSuggestions = 3

// schemaKey is one key of the schema.
type schemaKey struct {
	// parent is the schema path of the block holding the key, list elements
	// written "[]": "upstreams[].rate_limit"; "" at the top level.
	parent string
	// name is the key as written in the file.
	name string
}

// path returns the key's schema path ("upstreams[].rate_limit.rpm").
func (k schemaKey) path() string { return join(k.parent, k.name) }

// schemaKeys is every key of the file, depth first in declaration order.
var schemaKeys = sync.OnceValue(func() []schemaKey {
	var keys []schemaKey
	walkSchema(reflect.TypeFor[Config](), "", &keys)
	return keys
})

// walkSchema appends the keys of the block of type t at schema path parent,
// then those of its sub-blocks and list elements. Map values (headers,
// model_map) have free-form keys and are not walked.
func walkSchema(t reflect.Type, parent string, keys *[]schemaKey) {
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t.Kind() != reflect.Struct {
		return
	}
	for _, f := range yamlFields(t) {
		*keys = append(*keys, schemaKey{parent: parent, name: f.name})
		ft := f.typ
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		switch {
		case ft == durationType:
		case ft.Kind() == reflect.Struct:
			walkSchema(ft, join(parent, f.name), keys)
		case ft.Kind() == reflect.Slice:
			walkSchema(ft.Elem(), join(parent, f.name)+"[]", keys)
		}
	}
}

// unknownKey returns the message for key name, which the block at path (as
// written: "upstreams[0]") does not have: "unknown key", with a suggestion
// when one is close enough.
func unknownKey(path, name string) string {
	s := suggest(path, name)
	if len(s) == 0 {
		return "unknown key"
	}
	return "unknown key; did you mean " + orList(s) + "?"
}

// unknownKeyOf is unknownKey for a block outside the schema's paths (the
// value of a map entry): the suggestion is the nearest of its own keys.
func unknownKeyOf(fields []yamlField, name string) string {
	names := make([]string, len(fields))
	for i, f := range fields {
		names[i] = f.name
	}
	if s := suggestValue(name, names); len(s) > 0 {
		return "unknown key; did you mean " + orList(s) + "?"
	}
	return "unknown key"
}

// suggest returns the keys to offer for name at path, best first.
func suggest(path, name string) []string {
	here := schemaPath(path)
	want := normKey(name)
	var (
		level        []string // best near key at this level
		levelDist    = -1
		below, other []schemaKey // the same key deeper down / anywhere else
	)
	for _, k := range schemaKeys() {
		if k.parent == here {
			if d, ok := near(want, k.name); ok && (levelDist < 0 || d < levelDist) {
				level, levelDist = []string{k.name}, d
			}
			continue
		}
		if normKey(k.name) == want {
			if isBelow(k.parent, here) {
				below = append(below, k)
			} else {
				other = append(other, k)
			}
		}
	}
	same := below
	if len(same) == 0 {
		same = other
	}
	switch {
	case levelDist == 0: // the key here, in another spelling
		same = nil
	case levelDist == 2 && len(same) > 0: // the key itself elsewhere beats a two-edit guess
		level = nil
	}
	out := append(level, spell(here, path, byDepth(same))...)
	if len(out) == 0 {
		out = spell(here, path, nearElsewhere(here, want))
	}
	if len(out) > maxSuggestions {
		out = out[:maxSuggestions]
	}
	return out
}

// nearElsewhere returns the keys outside the block at here that are near
// want, those at the smallest distance only: the ones below here if any,
// else the others.
func nearElsewhere(here, want string) []schemaKey {
	best := -1
	var below, other []schemaKey
	for _, k := range schemaKeys() {
		d, ok := near(want, k.name)
		if !ok || k.parent == here || (best >= 0 && d > best) {
			continue
		}
		if d < best || best < 0 {
			best, below, other = d, nil, nil
		}
		if isBelow(k.parent, here) {
			below = append(below, k)
		} else {
			other = append(other, k)
		}
	}
	if len(below) > 0 {
		return byDepth(below)
	}
	return byDepth(other)
}

// spell writes keys as the user should type them: relative to the block at
// path when below it ("rate_limit.rpm"), else from the top with the list
// indices the user is in ("upstreams[0].weight", "keys[].rpm"). A path from
// the top whose first key also names a key here is marked "top-level", so
// that `routes[0].fail_back` is pointed at the top-level affinity block, not
// at routes[0].affinity.
func spell(here, path string, keys []schemaKey) []string {
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		p := k.path()
		if isBelow(k.parent, here) {
			out = append(out, strings.TrimPrefix(p, here+"."))
			continue
		}
		p = withIndices(p, path)
		first, _, _ := strings.Cut(p, ".")
		first, _, _ = strings.Cut(first, "[")
		if here != "" && slices.ContainsFunc(schemaKeys(), func(s schemaKey) bool { return s.parent == here && s.name == first }) {
			p = "top-level " + p
		}
		out = append(out, p)
	}
	return out
}

// byDepth orders keys shallowest first, keeping schema order among equals.
func byDepth(keys []schemaKey) []schemaKey {
	slices.SortStableFunc(keys, func(a, b schemaKey) int {
		return strings.Count(a.path(), ".") - strings.Count(b.path(), ".")
	})
	return keys
}

// isBelow reports whether the block at schema path parent is, or lies
// under, the block at here.
func isBelow(parent, here string) bool {
	return here == "" || parent == here || strings.HasPrefix(parent, here+".") || strings.HasPrefix(parent, here+"[]")
}

// withIndices fills the "[]" of schema path p with the indices of the written
// path where the two agree: "upstreams[].weight" under "upstreams[2].queue"
// is "upstreams[2].weight".
func withIndices(p, written string) string {
	var b strings.Builder
	for {
		i := strings.Index(p, "[]")
		if i < 0 || !strings.HasPrefix(written, p[:i]+"[") {
			b.WriteString(p)
			return b.String()
		}
		end := strings.IndexByte(written[i:], ']')
		if end < 0 {
			b.WriteString(p)
			return b.String()
		}
		b.WriteString(written[:i+end+1])
		p, written = p[i+2:], written[i+end+1:]
	}
}

// schemaPath turns a written path into a schema path: "upstreams[0].queue"
// into "upstreams[].queue".
func schemaPath(written string) string {
	var b strings.Builder
	for {
		i := strings.IndexByte(written, '[')
		if i < 0 {
			b.WriteString(written)
			return b.String()
		}
		end := strings.IndexByte(written[i:], ']')
		if end < 0 {
			b.WriteString(written)
			return b.String()
		}
		b.WriteString(written[:i] + "[]")
		written = written[i+end+1:]
	}
}

// near reports the distance between the normalised name want and the key
// name, and whether it is close enough to suggest: at most 2 and less than
// half the key's length.
func near(want, name string) (int, bool) {
	key := normKey(name)
	d := osaDistance(want, key)
	return d, d <= 2 && 2*d < len([]rune(key))
}

// normKey lowercases a key and drops '_' and '-', so that spellings of one
// key in other conventions compare equal.
func normKey(s string) string {
	return strings.Map(func(r rune) rune {
		if r == '_' || r == '-' {
			return -1
		}
		return r
	}, strings.ToLower(s))
}

// osaDistance is the optimal string alignment distance between a and b: the
// fewest insertions, deletions, substitutions and transpositions of two
// adjacent runes that turn one into the other, no substring edited twice
// (the restricted Damerau-Levenshtein distance).
func osaDistance(a, b string) int {
	x, y := []rune(a), []rune(b)
	// d[i][j] is the distance between x[:i] and y[:j]; three rows suffice.
	prev2, prev, cur := make([]int, len(y)+1), make([]int, len(y)+1), make([]int, len(y)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(x); i++ {
		cur[0] = i
		for j := 1; j <= len(y); j++ {
			cost := 1
			if x[i-1] == y[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && x[i-1] == y[j-2] && x[i-2] == y[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(y)]
}

// suggestValue returns the values of allowed to offer for s, a value of an
// enum-valued field that is none of them: those nearest to it by the key rule
// (near: case, '_' and '-' ignored, at most 2 edits and less than half the
// value's length), in allowed's order, at most maxSuggestions. "adaptve" gets
// adaptive, "least_conn" least-conn, "Postgres" postgres.
func suggestValue(s string, allowed []string) []string {
	want := normKey(s)
	best := -1
	var out []string
	for _, a := range allowed {
		d, ok := near(want, a)
		switch {
		case !ok || best >= 0 && d > best:
			continue
		case best < 0 || d < best:
			best, out = d, out[:0]
		}
		out = append(out, a)
	}
	if len(out) > maxSuggestions {
		out = out[:maxSuggestions]
	}
	return out
}

// orList joins "a", "a or b", "a, b or c".
func orList(s []string) string {
	if len(s) == 1 {
		return s[0]
	}
	return strings.Join(s[:len(s)-1], ", ") + " or " + s[len(s)-1]
}
