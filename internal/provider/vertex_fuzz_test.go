package provider

import (
	"bytes"
	"slices"
	"testing"

	"github.com/tidwall/gjson"
)

// FuzzVertexClaudeBody: whatever JSON object a Claude request body is, the
// Vertex body is a JSON object without model (count-tokens keeps it), with
// an anthropic_version, and every other member kept; the input is never
// modified. Other JSON is refused.
func FuzzVertexClaudeBody(f *testing.F) {
	for _, s := range []string{
		claudeBody, `{}`, ` { } `, `{"model":"m"}`, `{"anthropic_version":"x","model":"m","stream":true}`,
		`{"model":{"nested":"model"},"messages":[{"model":"inner"}]}`, `[1]`, `"s"`, `{"a":1,}`, ``,
	} {
		f.Add([]byte(s), true)
	}
	f.Fuzz(func(t *testing.T, body []byte, dropModel bool) {
		in := bytes.Clone(body)
		out, err := vertexClaudeBody(body, dropModel)
		if !bytes.Equal(in, body) {
			t.Fatalf("the input changed: %q -> %q", in, body)
		}
		switch {
		case !gjson.ValidBytes(body):
			return // the proxy answers 400 to a body that is not JSON before any upstream sees it
		case !gjson.ParseBytes(body).IsObject():
			if err == nil {
				t.Fatalf("%q: no error for a body that is no object", body)
			}
			return
		}
		if err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		r := gjson.ParseBytes(out)
		if !gjson.ValidBytes(out) || !r.IsObject() || !r.Get("anthropic_version").Exists() || (dropModel && r.Get("model").Exists()) {
			t.Fatalf("%q -> %q", body, out)
		}
		members := func(obj gjson.Result, skip func(key string) bool) []string {
			var ms []string
			obj.ForEach(func(k, v gjson.Result) bool {
				if !skip(k.Str) {
					ms = append(ms, k.Raw+":"+v.Raw)
				}
				return true
			})
			return ms
		}
		had := gjson.GetBytes(body, "anthropic_version").Exists()
		first := true
		want := members(gjson.ParseBytes(body), func(k string) bool { return dropModel && k == "model" })
		got := members(r, func(k string) bool {
			added := first && !had && k == "anthropic_version"
			first = false
			return added
		})
		if !slices.Equal(got, want) {
			t.Fatalf("%q -> %q: members %q, want %q", body, out, got, want)
		}
	})
}
