package affinity

import (
	"net/http"
	"strings"
	"switchyard/internal/codec"
	"unicode"
	"unicode/utf8"

	"github.com/tidwall/gjson"
)

// MaxIDLength is the longest session id Extract accepts, in characters
// (Unicode code points). A longer candidate is ignored as if it were absent,
// not truncated or hashed: a truncated id could merge two sessions, and a
// hashed one would be invisible to an operator looking it up in the admin API.
const MaxIDLength = 128

// headerRules are the header names Extract reads, in precedence order: the
// session headers first, then the trace headers (trace before thread, seed
// 001 "trace 优先、thread 兜底"). Matching ignores case.
var headerRules = [...]string{
	"session_id", "session-id", "x-session-id", "x-session_id", "x_session_id",
	"x-trace-id", "x-thread-id",
}

// numSessionHeaders is how many leading headerRules are session headers; the
// rest are trace headers, which rank after the body rules.
const numSessionHeaders = 5

// headerSources are the sources reported for headerRules, index for index.
var headerSources = [...]string{
	"header:session_id", "header:session-id", "header:x-session-id", "header:x-session_id",
	"header:x_session_id", "header:x-trace-id", "header:x-thread-id",
}

// The body rules and their sources.
const (
	pathPromptCacheKey = "prompt_cache_key"
	pathMetadataSessID = "metadata.session_id"
	pathPreviousRespID = "previous_response_id"
	pathMetadataUserID = "metadata.user_id"

	sourcePromptCacheKey = "body:" + pathPromptCacheKey
	sourceMetadataSessID = "body:" + pathMetadataSessID
	sourcePreviousRespID = "body:" + pathPreviousRespID
	sourceMetadataUserID = "body:" + pathMetadataUserID
)

// openAIBodyRules are the OpenAI body fields, in precedence order.
var openAIBodyRules = [...]struct{ path, source string }{
	{pathPromptCacheKey, sourcePromptCacheKey},
	{pathMetadataSessID, sourceMetadataSessID},
	{pathPreviousRespID, sourcePreviousRespID},
}

// Extract returns the session id of a request and the rule that found it, or
// two empty strings when the request carries none. It never panics, whatever
// the headers and body hold.
//
// The rules, first found wins (docs/reference.md#session-affinity, seed 000
// session-affinity.ts):
//
//  1. Headers, for both protocols, in this order: session_id, session-id,
//     x-session-id, x-session_id, x_session_id. Names match case-insensitively
//     over every key of h, so both canonicalised keys ("X-Session_id", as
//     net/http stores them) and keys set as-is ("x_session_id") are found.
//     When one name appears under several spellings (possible only in a map
//     built by hand) the bytewise smallest key wins, so the result is
//     deterministic. The first acceptable value of a key counts.
//  2. Body, peeked with gjson (no full decode; invalid or truncated JSON is
//     read as far as it goes). OpenAI: prompt_cache_key, metadata.session_id,
//     previous_response_id. Anthropic: metadata.user_id when it contains
//     "_session_" followed by a UUID (8-4-4-4-12 hex digits, not followed by
//     another letter or digit), as Claude Code sends
//     "user_<hash>_account_<uuid>_session_<uuid>"; the UUID is returned, as
//     written. Only JSON strings count; other types are ignored.
//  3. Trace headers, for both protocols: x-trace-id, then x-thread-id (seed
//     001 trace stickiness).
//
// A candidate is acceptable when, after trimming surrounding white space, it is
// non-empty, valid UTF-8, at most MaxIDLength characters and free of control
// characters; an unacceptable candidate is ignored and the next rule is tried.
// The returned id is trimmed and does not alias body.
//
// source names the matching rule for the routing decision: "header:<name>"
// with the lower-case name from the list above, or "body:prompt_cache_key",
// "body:metadata.session_id", "body:previous_response_id",
// "body:metadata.user_id".
func Extract(p codec.Family, h http.Header, body []byte) (id, source string) {
	hdr := scanHeaders(h)
	for i := range numSessionHeaders {
		if hdr[i] != "" {
			return hdr[i], headerSources[i]
		}
	}
	if id, source = extractBody(p, body); id != "" {
		return id, source
	}
	for i := numSessionHeaders; i < len(headerRules); i++ {
		if hdr[i] != "" {
			return hdr[i], headerSources[i]
		}
	}
	return "", ""
}

// scanHeaders returns, for every headerRules entry, the acceptable id found
// under that name ("" if none), in one pass over h.
func scanHeaders(h http.Header) (found [len(headerRules)]string) {
	var keys [len(headerRules)]string // the key each found id came from
	for k, vs := range h {
		r := headerRank(k)
		if r < 0 || (found[r] != "" && k >= keys[r]) {
			continue
		}
		for _, v := range vs {
			if id, ok := acceptID(v); ok {
				found[r], keys[r] = id, k
				break
			}
		}
	}
	return found
}

// headerRank returns the index in headerRules of the name k matches
// case-insensitively, or -1.
func headerRank(k string) int {
	switch len(k) { // every rule name is 10, 11 or 12 bytes long
	case 10, 11, 12:
	default:
		return -1
	}
	for i, name := range headerRules {
		if len(name) == len(k) && strings.EqualFold(k, name) {
			return i
		}
	}
	return -1
}

// extractBody applies the body rules of protocol p.
func extractBody(p codec.Family, body []byte) (id, source string) {
	if len(body) == 0 {
		return "", ""
	}
	switch p {
	case codec.FamilyOpenAI:
		for _, r := range openAIBodyRules {
			if id, ok := bodyString(body, r.path); ok {
				return id, r.source
			}
		}
	case codec.FamilyAnthropic:
		v := gjson.GetBytes(body, pathMetadataUserID)
		if v.Type != gjson.String {
			return "", ""
		}
		if id, ok := sessionFromUserID(v.Str); ok {
			return strings.Clone(id), sourceMetadataUserID
		}
	}
	return "", ""
}

// bodyString returns the acceptable id held by the JSON string at path.
// gjson.GetBytes copies the value, so the id does not alias body.
func bodyString(body []byte, path string) (string, bool) {
	v := gjson.GetBytes(body, path)
	if v.Type != gjson.String {
		return "", false
	}
	return acceptID(v.Str)
}

// sessionMarker precedes the session UUID in an Anthropic metadata.user_id.
const sessionMarker = "_session_"

// uuidLen is the length of a UUID in its 8-4-4-4-12 text form.
const uuidLen = 36

// sessionFromUserID returns the UUID after the first "_session_" marker of
// userID that is followed by a well-formed UUID which is not itself followed
// by a letter or digit.
func sessionFromUserID(userID string) (string, bool) {
	for rest := userID; ; {
		i := strings.Index(rest, sessionMarker)
		if i < 0 {
			return "", false
		}
		rest = rest[i+len(sessionMarker):]
		if len(rest) >= uuidLen && isUUID(rest[:uuidLen]) &&
			(len(rest) == uuidLen || !isAlnum(rest[uuidLen])) {
			return rest[:uuidLen], true
		}
	}
}

// isUUID reports whether s is 36 bytes of hex digits with dashes at 8, 13,
// 18 and 23. Version and variant nibbles are not checked: clients send v4
// and v7 ids alike.
func isUUID(s string) bool {
	if len(s) != uuidLen {
		return false
	}
	for i := range len(s) {
		c := s[i]
		switch i {
		case 8, 13, 18, 23:
			if c != '-' {
				return false
			}
		default:
			if !isHex(c) {
				return false
			}
		}
	}
	return true
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func isAlnum(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z'
}

// acceptID trims s and reports whether the result is an acceptable session
// id (see Extract).
func acceptID(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > MaxIDLength*utf8.UTFMax {
		return "", false
	}
	ascii := true
	for i := range len(s) {
		c := s[i]
		if c >= utf8.RuneSelf {
			ascii = false
			break
		}
		if c < 0x20 || c == 0x7f {
			return "", false
		}
	}
	if ascii {
		return s, len(s) <= MaxIDLength
	}
	if !utf8.ValidString(s) || utf8.RuneCountInString(s) > MaxIDLength {
		return "", false
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return "", false
		}
	}
	return s, true
}
