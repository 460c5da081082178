package proxy

import (
	"testing"

	"switchyard/internal/codec"
)

func TestCommentOnly(t *testing.T) {
	for _, tc := range []struct {
		name string
		ev   codec.Event
		want bool
	}{
		{"keep-alive", codec.Event{Raw: []byte(": keep-alive\n\n")}, true},
		{"two comments, CRLF", codec.Event{Raw: []byte(":a\r\n:b\r\n\r\n")}, true},
		{"comment after a BOM", codec.Event{Raw: []byte("\uFEFF: hi\n\n")}, true},
		{"data", codec.Event{Raw: []byte("data: {}\n\n"), Data: []byte("{}")}, false},
		{"named, no data", codec.Event{Raw: []byte("event: ping\n\n"), Name: []byte("ping")}, false},
		{"a line of JSON, no field", codec.Event{Raw: []byte("{\"id\":1}\n\n")}, false},
		{"an AWS exception frame", codec.Event{Exception: true}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := commentOnly(&tc.ev); got != tc.want {
				t.Errorf("commentOnly(%q) = %v, want %v", tc.ev.Raw, got, tc.want)
			}
		})
	}
}
