package affinity

import (
	"net/http"
	"strings"
	"switchyard/internal/codec"
	"testing"
	"unicode/utf8"
)

const (
	testUUID    = "0f8fad5b-d9cb-469f-a165-70867728950e"
	testAccount = "7c9e6679-7425-40de-944b-e07fc1f90ae7"
	testHash    = "a3f1c2d4e5b6a7980f1e2d3c4b5a69788796a5b4c3d2e1f0a1b2c3d4e5f60718"
)

// hdr builds a header map with keys exactly as given (not canonicalised),
// from name, value pairs.
func hdr(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h[kv[i]] = append(h[kv[i]], kv[i+1])
	}
	return h
}

// canon builds a header map through Header.Add, which canonicalises names as
// net/http does for incoming requests.
func canon(kv ...string) http.Header {
	h := http.Header{}
	for i := 0; i+1 < len(kv); i += 2 {
		h.Add(kv[i], kv[i+1])
	}
	return h
}

func TestExtract(t *testing.T) {
	long128 := strings.Repeat("a", 128)
	long129 := strings.Repeat("a", 129)
	wide128 := strings.Repeat("é", 128) // 256 bytes, 128 characters
	wide129 := strings.Repeat("é", 129)
	userID := func(s string) string { return `{"metadata":{"user_id":"` + s + `"}}` }

	tests := []struct {
		name       string
		proto      codec.Family
		h          http.Header
		body       string
		wantID     string
		wantSource string
	}{
		{"nothing", codec.FamilyOpenAI, nil, "", "", ""},
		{"empty object", codec.FamilyOpenAI, http.Header{}, `{}`, "", ""},

		// Headers, both spellings of every name.
		{"session_id as sent", codec.FamilyOpenAI, hdr("session_id", "s1"), "", "s1", "header:session_id"},
		{"session_id canonicalised", codec.FamilyOpenAI, canon("session_id", "s1"), "", "s1", "header:session_id"},
		{"SESSION_ID upper case", codec.FamilyOpenAI, hdr("SESSION_ID", "s1"), "", "s1", "header:session_id"},
		{"session-id", codec.FamilyOpenAI, canon("session-id", "s2"), "", "s2", "header:session-id"},
		{"x-session-id", codec.FamilyOpenAI, canon("x-session-id", "s3"), "", "s3", "header:x-session-id"},
		{"x-session_id canonicalised", codec.FamilyOpenAI, canon("x-session_id", "s4"), "", "s4", "header:x-session_id"},
		{"x-session_id as sent", codec.FamilyOpenAI, hdr("x-session_id", "s4"), "", "s4", "header:x-session_id"},
		{"x_session_id canonicalised", codec.FamilyOpenAI, canon("x_session_id", "s5"), "", "s5", "header:x_session_id"},
		{"x_session_id as sent", codec.FamilyOpenAI, hdr("x_session_id", "s5"), "", "s5", "header:x_session_id"},
		{"similar names do not match", codec.FamilyOpenAI, canon("x-session-ids", "a", "sessionid", "b", "x-sessionid", "c"), "", "", ""},
		{"underscore and dash differ", codec.FamilyOpenAI, hdr("session-id", "dash", "session_id", "underscore"), "", "underscore", "header:session_id"},

		// Header precedence.
		{"session_id beats session-id", codec.FamilyOpenAI, canon("session-id", "b", "session_id", "a"), "", "a", "header:session_id"},
		{"session-id beats x-session-id", codec.FamilyOpenAI, canon("x-session-id", "c", "session-id", "b"), "", "b", "header:session-id"},
		{"x-session-id beats x-session_id", codec.FamilyOpenAI, canon("x-session_id", "d", "x-session-id", "c"), "", "c", "header:x-session-id"},
		{"x-session_id beats x_session_id", codec.FamilyOpenAI, canon("x_session_id", "e", "x-session_id", "d"), "", "d", "header:x-session_id"},
		{"all five", codec.FamilyOpenAI, canon("x_session_id", "e", "x-session_id", "d", "x-session-id", "c", "session-id", "b", "session_id", "a"), "", "a", "header:session_id"},
		{"same name two spellings: smallest key wins", codec.FamilyOpenAI, hdr("session_id", "lower", "Session_id", "canonical"), "", "canonical", "header:session_id"},
		{"header beats body", codec.FamilyOpenAI, canon("x-session-id", "h"), `{"prompt_cache_key":"b"}`, "h", "header:x-session-id"},
		{"header for anthropic too", codec.FamilyAnthropic, canon("session-id", "h"), userID("user_x_session_" + testUUID), "h", "header:session-id"},

		// Header values.
		{"empty header value ignored", codec.FamilyOpenAI, canon("session_id", "", "session-id", "b"), "", "b", "header:session-id"},
		{"blank header value ignored", codec.FamilyOpenAI, canon("session_id", "   ", "x-session-id", "c"), "", "c", "header:x-session-id"},
		{"header value trimmed", codec.FamilyOpenAI, hdr("session_id", "  s1\t"), "", "s1", "header:session_id"},
		{"first acceptable value of a key", codec.FamilyOpenAI, hdr("Session_id", "", "Session_id", "second"), "", "second", "header:session_id"},
		{"control character ignored", codec.FamilyOpenAI, canon("session_id", "a\x00b", "session-id", "ok"), "", "ok", "header:session-id"},
		{"non-ASCII control character ignored", codec.FamilyOpenAI, canon("session_id", "é\u0085x", "session-id", "ok"), "", "ok", "header:session-id"},
		{"invalid UTF-8 ignored", codec.FamilyOpenAI, canon("session_id", "a\xffb", "session-id", "ok"), "", "ok", "header:session-id"},

		// The 128-character limit: longer is ignored and the next rule applies.
		{"128 chars accepted", codec.FamilyOpenAI, canon("session_id", long128), "", long128, "header:session_id"},
		{"129 chars ignored", codec.FamilyOpenAI, canon("session_id", long129, "session-id", "next"), "", "next", "header:session-id"},
		{"very long ignored", codec.FamilyOpenAI, canon("session_id", strings.Repeat("a", 4096), "x-trace-id", "t"), "", "t", "header:x-trace-id"},
		{"128 wide chars accepted", codec.FamilyOpenAI, canon("session_id", wide128), "", wide128, "header:session_id"},
		{"129 wide chars ignored", codec.FamilyOpenAI, canon("session_id", wide129), `{"prompt_cache_key":"b"}`, "b", "body:prompt_cache_key"},
		{"129 chars in body ignored", codec.FamilyOpenAI, nil, `{"prompt_cache_key":"` + long129 + `","previous_response_id":"resp_1"}`, "resp_1", "body:previous_response_id"},
		{"128 chars in body accepted", codec.FamilyOpenAI, nil, `{"prompt_cache_key":"` + long128 + `"}`, long128, "body:prompt_cache_key"},

		// OpenAI body.
		{"prompt_cache_key", codec.FamilyOpenAI, nil, `{"model":"gpt-4o","prompt_cache_key":"pck"}`, "pck", "body:prompt_cache_key"},
		{"metadata.session_id", codec.FamilyOpenAI, nil, `{"model":"gpt-4o","metadata":{"session_id":"ms"}}`, "ms", "body:metadata.session_id"},
		{"previous_response_id", codec.FamilyOpenAI, nil, `{"model":"gpt-4o","previous_response_id":"resp_abc"}`, "resp_abc", "body:previous_response_id"},
		{"prompt_cache_key beats metadata.session_id", codec.FamilyOpenAI, nil, `{"metadata":{"session_id":"ms"},"prompt_cache_key":"pck"}`, "pck", "body:prompt_cache_key"},
		{"metadata.session_id beats previous_response_id", codec.FamilyOpenAI, nil, `{"previous_response_id":"r","metadata":{"session_id":"ms"}}`, "ms", "body:metadata.session_id"},
		{"empty prompt_cache_key ignored", codec.FamilyOpenAI, nil, `{"prompt_cache_key":"","previous_response_id":"r"}`, "r", "body:previous_response_id"},
		{"escaped body string", codec.FamilyOpenAI, nil, `{"prompt_cache_key":"a\u0062c"}`, "abc", "body:prompt_cache_key"},
		{"body value trimmed", codec.FamilyOpenAI, nil, `{"prompt_cache_key":" k "}`, "k", "body:prompt_cache_key"},
		{"body control char ignored", codec.FamilyOpenAI, nil, `{"prompt_cache_key":"a\nb"}`, "", ""},
		{"nested prompt_cache_key not top level", codec.FamilyOpenAI, nil, `{"messages":[{"prompt_cache_key":"x"}]}`, "", ""},
		{"anthropic user_id ignored for openai", codec.FamilyOpenAI, nil, userID("user_x_session_" + testUUID), "", ""},
		{"body beats trace", codec.FamilyOpenAI, canon("x-trace-id", "t"), `{"prompt_cache_key":"b"}`, "b", "body:prompt_cache_key"},

		// Wrong types are ignored.
		{"number prompt_cache_key", codec.FamilyOpenAI, nil, `{"prompt_cache_key":123,"previous_response_id":"r"}`, "r", "body:previous_response_id"},
		{"object prompt_cache_key", codec.FamilyOpenAI, nil, `{"prompt_cache_key":{"a":"b"}}`, "", ""},
		{"metadata a string", codec.FamilyOpenAI, nil, `{"metadata":"session_id"}`, "", ""},
		{"metadata.session_id an array", codec.FamilyOpenAI, nil, `{"metadata":{"session_id":["a"]}}`, "", ""},
		{"previous_response_id null", codec.FamilyOpenAI, nil, `{"previous_response_id":null}`, "", ""},
		{"bool", codec.FamilyOpenAI, nil, `{"prompt_cache_key":true}`, "", ""},

		// Invalid JSON never panics; gjson reads as far as it can.
		{"not json", codec.FamilyOpenAI, nil, `not json at all`, "", ""},
		{"top-level array", codec.FamilyOpenAI, nil, `[{"prompt_cache_key":"x"}]`, "", ""},
		{"top-level string", codec.FamilyOpenAI, nil, `"prompt_cache_key"`, "", ""},
		{"truncated before value", codec.FamilyOpenAI, nil, `{"prompt_cache_key":`, "", ""},
		{"truncated in value", codec.FamilyOpenAI, nil, `{"prompt_cache_key":"abc`, "", ""},
		{"truncated after value", codec.FamilyOpenAI, nil, `{"prompt_cache_key":"abc","messages":[{"role":`, "abc", "body:prompt_cache_key"},
		{"invalid json falls to trace", codec.FamilyOpenAI, canon("x-trace-id", "t"), `{{{`, "t", "header:x-trace-id"},
		{"anthropic invalid json", codec.FamilyAnthropic, nil, `{"metadata":{"user_id":`, "", ""},

		// Anthropic metadata.user_id.
		{"claude code user_id", codec.FamilyAnthropic, nil, userID("user_" + testHash + "_account_" + testAccount + "_session_" + testUUID), testUUID, "body:metadata.user_id"},
		{"empty account", codec.FamilyAnthropic, nil, userID("user_" + testHash + "_account__session_" + testUUID), testUUID, "body:metadata.user_id"},
		{"upper-case uuid kept as written", codec.FamilyAnthropic, nil, userID("user_x_session_" + strings.ToUpper(testUUID)), strings.ToUpper(testUUID), "body:metadata.user_id"},
		{"uuid followed by a separator", codec.FamilyAnthropic, nil, userID("user_x_session_" + testUUID + "_v2"), testUUID, "body:metadata.user_id"},
		{"uuid followed by a letter", codec.FamilyAnthropic, nil, userID("user_x_session_" + testUUID + "x"), "", ""},
		{"second marker valid", codec.FamilyAnthropic, nil, userID("user_x_session_nope_session_" + testUUID), testUUID, "body:metadata.user_id"},
		{"short uuid", codec.FamilyAnthropic, nil, userID("user_x_session_" + testUUID[:35]), "", ""},
		{"non-hex uuid", codec.FamilyAnthropic, nil, userID("user_x_session_" + "0f8fad5b-d9cb-469f-a165-70867728950g"), "", ""},
		{"misplaced dash", codec.FamilyAnthropic, nil, userID("user_x_session_" + "0f8fad5bd-9cb-469f-a165-70867728950e"), "", ""},
		{"no marker", codec.FamilyAnthropic, nil, userID("user_" + testHash), "", ""},
		{"marker without underscore prefix", codec.FamilyAnthropic, nil, userID("session_" + testUUID), "", ""},
		{"user_id a number", codec.FamilyAnthropic, nil, `{"metadata":{"user_id":42}}`, "", ""},
		{"metadata.session_id ignored for anthropic", codec.FamilyAnthropic, nil, `{"metadata":{"session_id":"ms"},"prompt_cache_key":"p"}`, "", ""},
		{"anthropic no session falls to trace", codec.FamilyAnthropic, canon("x-thread-id", "th"), userID("user_" + testHash), "th", "header:x-thread-id"},

		// Trace headers come last, trace before thread.
		{"x-trace-id", codec.FamilyOpenAI, canon("x-trace-id", "t"), "", "t", "header:x-trace-id"},
		{"x-thread-id", codec.FamilyOpenAI, canon("x-thread-id", "th"), "", "th", "header:x-thread-id"},
		{"trace beats thread", codec.FamilyOpenAI, canon("x-thread-id", "th", "x-trace-id", "t"), "", "t", "header:x-trace-id"},
		{"session header beats trace", codec.FamilyOpenAI, canon("x-trace-id", "t", "x_session_id", "s"), "", "s", "header:x_session_id"},
		{"trace as sent lower case", codec.FamilyAnthropic, hdr("x-trace-id", "t"), `{}`, "t", "header:x-trace-id"},
		{"empty trace falls to thread", codec.FamilyOpenAI, canon("x-trace-id", "", "x-thread-id", "th"), "", "th", "header:x-thread-id"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var body []byte
			if tc.body != "" {
				body = []byte(tc.body)
			}
			id, source := Extract(tc.proto, tc.h, body)
			if id != tc.wantID || source != tc.wantSource {
				t.Fatalf("Extract = (%q, %q), want (%q, %q)", id, source, tc.wantID, tc.wantSource)
			}
		})
	}
}

// TestExtractDoesNotAliasBody checks that the returned id survives the caller
// reusing the body buffer.
func TestExtractDoesNotAliasBody(t *testing.T) {
	tests := []struct {
		name  string
		proto codec.Family
		body  string
		want  string
	}{
		{"openai", codec.FamilyOpenAI, `{"prompt_cache_key":"keep-me"}`, "keep-me"},
		{"anthropic", codec.FamilyAnthropic, `{"metadata":{"user_id":"user_x_session_` + testUUID + `"}}`, testUUID},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			body := []byte(tc.body)
			id, _ := Extract(tc.proto, nil, body)
			for i := range body {
				body[i] = 'X'
			}
			if id != tc.want {
				t.Fatalf("id = %q after the body was overwritten, want %q", id, tc.want)
			}
		})
	}
}

// FuzzExtract feeds arbitrary headers and bodies to Extract. It checks that
// Extract does not panic, that an id comes with a source and the reverse, that
// every id is acceptable (trimmed, ≤ MaxIDLength characters, valid UTF-8, no
// control characters), that an Anthropic user_id hit is a UUID, and that the
// result is deterministic.
func FuzzExtract(f *testing.F) {
	f.Add(false, "x-session-id", "abc", []byte(`{"model":"gpt-4o","messages":[]}`))
	f.Add(true, "x-trace-id", "", []byte(`{"metadata":{"user_id":"user_`+testHash+`_account__session_`+testUUID+`"}}`))
	f.Add(false, "", "", []byte(`{"prompt_cache_key":"a\u0000b"}`))
	f.Fuzz(func(t *testing.T, anthropic bool, name, value string, body []byte) {
		p := codec.FamilyOpenAI
		if anthropic {
			p = codec.FamilyAnthropic
		}
		h := http.Header{}
		if name != "" {
			h[name] = []string{value}
			h.Add(name, value) // the canonical spelling too
		}
		id, source := Extract(p, h, body)
		if (id == "") != (source == "") {
			t.Fatalf("id %q with source %q", id, source)
		}
		if id == "" {
			return
		}
		if n := utf8.RuneCountInString(id); n > MaxIDLength {
			t.Fatalf("id of %d characters > %d", n, MaxIDLength)
		}
		if _, ok := acceptID(id); !ok || strings.TrimSpace(id) != id {
			t.Fatalf("unacceptable id %q", id)
		}
		if source == sourceMetadataUserID && !isUUID(id) {
			t.Fatalf("user_id session %q is not a UUID", id)
		}
		if id2, source2 := Extract(p, h, body); id2 != id || source2 != source {
			t.Fatalf("not deterministic: (%q, %q) then (%q, %q)", id, source, id2, source2)
		}
	})
}
