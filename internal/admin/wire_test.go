package admin

import (
	"encoding/json"
	"reflect"
	"strings"
	"testing"
	"time"

	"switchyard/internal/config"
)

func TestRedactSecret(t *testing.T) {
	cases := []struct{ in, want string }{
		{"", ""},
		{"short", "…"},
		{"sk-1234", "…"},
		{"sk-proj-abcdefgh1234", "sk-…1234"},
		{"sk-ant-api03-xyzw", "sk-…xyzw"},
		{"0123456789abcdef0123456789abcdef", "…cdef"},
		{"sk-abcd12", "…cd12"}, // an sk- key under 12 characters shows no prefix
	}
	for _, c := range cases {
		t.Run(c.in, func(t *testing.T) {
			got := redactSecret(c.in)
			if got != c.want {
				t.Fatalf("redactSecret(%q) = %q, want %q", c.in, got, c.want)
			}
			if len(c.in) >= 8 && strings.Contains(got, c.in[:len(c.in)-4]) {
				t.Fatalf("%q reveals more than the last four characters", got)
			}
		})
	}
}

func parse(t *testing.T, s string) any {
	t.Helper()
	var v any
	if err := decodeJSON(strings.NewReader(s), &v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestMergePatch(t *testing.T) {
	// The examples of RFC 7386, appendix A.
	cases := []struct{ target, patch, want string }{
		{`{"a":"b"}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"b"}`, `{"b":"c"}`, `{"a":"b","b":"c"}`},
		{`{"a":"b"}`, `{"a":null}`, `{}`},
		{`{"a":"b","b":"c"}`, `{"a":null}`, `{"b":"c"}`},
		{`{"a":["b"]}`, `{"a":"c"}`, `{"a":"c"}`},
		{`{"a":"c"}`, `{"a":["b"]}`, `{"a":["b"]}`},
		{`{"a":{"b":"c"}}`, `{"a":{"b":"d","c":null}}`, `{"a":{"b":"d"}}`},
		{`{"a":[{"b":"c"}]}`, `{"a":[1]}`, `{"a":[1]}`},
		{`{"e":null}`, `{"a":1}`, `{"a":1,"e":null}`},
		{`{}`, `{"a":{"bb":{"ccc":null}}}`, `{"a":{"bb":{}}}`},
	}
	for _, c := range cases {
		t.Run(c.target+" + "+c.patch, func(t *testing.T) {
			got := mergePatch(parse(t, c.target), parse(t, c.patch))
			if want := parse(t, c.want); !reflect.DeepEqual(got, want) {
				t.Fatalf("got %v, want %v", got, want)
			}
		})
	}
}

func TestWireRoundTrip(t *testing.T) {
	u := config.DefaultUpstream()
	u.Name, u.Provider, u.BaseURL, u.Models = "a", "openai", "https://x/v1", []string{"m"}
	u.ModelMap = map[string]string{"m": "m-2024"}
	u.Queue.Timeout = 1500 * time.Millisecond
	tr, err := toWire(u)
	if err != nil {
		t.Fatal(err)
	}
	if q := tr["queue"].(tree); q["timeout"] != "1.5s" {
		t.Fatalf("queue.timeout %v, want 1.5s", q["timeout"])
	}
	back, errs := fromWire[config.Upstream](tr)
	if len(errs) > 0 || !reflect.DeepEqual(back, u) {
		t.Fatalf("round trip: %+v (%v), want %+v", back, errs, u)
	}

	r := config.Route{Model: "m", RouteSettings: config.Default().Defaults}
	rt, err := toWire(r)
	if err != nil {
		t.Fatal(err)
	}
	if rt["timeout"] != "5m0s" || rt["max_wait"] != "0s" {
		t.Fatalf("route durations %v %v: embedded settings must be promoted and stringified", rt["timeout"], rt["max_wait"])
	}
	rt["stream_idle_timeout"] = json.Number("2000000000") // nanoseconds are still read
	back2, errs := fromWire[config.Route](rt)
	if len(errs) > 0 || back2.StreamIdleTimeout != 2*time.Second || back2.Timeout != 5*time.Minute {
		t.Fatalf("route %+v (%v)", back2, errs)
	}
}

func TestFromWireErrors(t *testing.T) {
	cases := []struct {
		name, body string
		want       map[string]string // path → message fragment
	}{
		{"wrong scalar types", `{"weight":"3","active":"yes","name":7}`,
			map[string]string{"weight": "must be an integer", "active": "true or false", "name": "must be a string, got 7"}},
		{"fraction for an integer", `{"weight":1.5}`, map[string]string{"weight": "must be an integer"}},
		{"nested and indexed", `{"models":[1],"model_map":{"m":2},"queue":{"max_length":"x"}}`,
			map[string]string{"models[0]": "string", "model_map.m": "string", "queue.max_length": "integer"}},
		{"unknown fields at every level", `{"x":1,"queue":{"y":2}}`, map[string]string{"x": "unknown field", "queue.y": "unknown field"}},
		{"bad durations", `{"queue":{"timeout":true}}`, map[string]string{"queue.timeout": "duration"}},
		{"object for a list", `{"models":{}}`, map[string]string{"models": "must be a list, got an object"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, errs := fromWire[config.Upstream](parse(t, c.body).(tree))
			got := map[string]string{}
			for _, e := range errs {
				got[e.Path] = e.Msg
			}
			if len(got) != len(c.want) {
				t.Fatalf("errors %v, want paths %v", got, c.want)
			}
			for p, frag := range c.want {
				if !strings.Contains(got[p], frag) {
					t.Fatalf("at %s: %q, want it to contain %q (all: %v)", p, got[p], frag, got)
				}
			}
		})
	}
}
