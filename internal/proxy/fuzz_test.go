package proxy

import (
	"errors"
	"testing"

	"github.com/tidwall/gjson"
)

// FuzzPeek feeds arbitrary request bodies to request.peek. It checks that
// peek does not panic; that a failure is an *apiError; that a success sets a non-empty model that is the body's top-level
// "model" string, mirrors model and stream into the request log, and
// estimates at least a quarter of the body's bytes in tokens (so a negative
// or overflowing max_tokens cannot shrink or wrap the estimate).
func FuzzPeek(f *testing.F) {
	f.Add([]byte(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}],"max_tokens":64}`))
	f.Add([]byte(`{"model":"claude-sonnet-4-5","stream":true,"max_tokens":1024,"messages":[]}`))
	f.Add([]byte(`{"model":"gpt-4o","max_tokens":-9223372036854775808}`))
	f.Add([]byte(`{"model":"","stream":"yes"}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		x := &request{body: body}
		err := x.peek()
		if err != nil {
			var ae *apiError
			if !errors.As(err, &ae) {
				t.Fatalf("peek error %T %v, want *apiError", err, err)
			}
			return
		}
		if x.model == "" {
			t.Fatal("peek succeeded without a model")
		}
		if m := gjson.GetBytes(body, "model"); m.Type != gjson.String || m.Str != x.model {
			t.Fatalf("model %q, body has %v", x.model, m)
		}
		if s := gjson.GetBytes(body, "stream"); s.Type == gjson.True != x.stream {
			t.Fatalf("stream %v, body has %v", x.stream, s)
		}
		if floor := int64(len(body)) / 4; x.est < floor {
			t.Fatalf("estimate %d tokens < %d (body bytes/4)", x.est, floor)
		}
	})
}
