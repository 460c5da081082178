package admin_test

import (
	"encoding/json"
	"math"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"switchyard/internal/admin"
	"switchyard/internal/config"
)

const token = "admin-token-for-tests"

// serve sends one request to a handler over f with the given Authorization
// header value ("" for none).
func serve(t *testing.T, f *fakeBackend, method, path, body, auth string) *httptest.ResponseRecorder {
	t.Helper()
	h := admin.New(f.svc, token, nil)
	var r *http.Request
	if body != "" {
		r = httptest.NewRequest(method, path, strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
	} else {
		r = httptest.NewRequest(method, path, nil)
	}
	if auth != "" {
		r.Header.Set("Authorization", auth)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, r)
	return w
}

func object(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatalf("answer is not a JSON object: %v\n%s", err, b)
	}
	return m
}

func list(t *testing.T, b []byte) []map[string]any {
	t.Helper()
	var l []map[string]any
	if err := json.Unmarshal(b, &l); err != nil {
		t.Fatalf("answer is not a JSON list of objects: %v\n%s", err, b)
	}
	return l
}

// fieldErrors returns the {path: message} of an error answer.
func fieldErrors(t *testing.T, b []byte) map[string]string {
	t.Helper()
	var e struct {
		Error struct {
			Message string `json:"message"`
			Fields  []struct {
				Path    string `json:"path"`
				Message string `json:"message"`
			} `json:"fields"`
		} `json:"error"`
	}
	if err := json.Unmarshal(b, &e); err != nil || e.Error.Message == "" {
		t.Fatalf("not an error answer: %s", b)
	}
	out := map[string]string{}
	for _, f := range e.Error.Fields {
		out[f.Path] = f.Message
	}
	return out
}

// wantField fails unless the error answer b names path with a message containing msg.
func wantField(t *testing.T, b []byte, path, msg string) {
	t.Helper()
	fields := fieldErrors(t, b)
	got, ok := fields[path]
	if !ok || !strings.Contains(got, msg) {
		t.Fatalf("want a field error at %q containing %q, got %v", path, msg, fields)
	}
}

func TestAuth(t *testing.T) {
	endpoints := []struct{ method, path string }{
		{"GET", "/admin/api/upstreams"}, {"POST", "/admin/api/upstreams"},
		{"GET", "/admin/api/upstreams/a"}, {"PUT", "/admin/api/upstreams/a"},
		{"PATCH", "/admin/api/upstreams/a"}, {"DELETE", "/admin/api/upstreams/a"},
		{"GET", "/admin/api/keys"}, {"POST", "/admin/api/keys"}, {"DELETE", "/admin/api/keys/team"},
		{"GET", "/admin/api/routes"}, {"PUT", "/admin/api/routes/gpt-4o"},
		{"GET", "/admin/api/state"}, {"GET", "/admin/api/explain?model=gpt-4o"},
		{"GET", "/admin/api/decisions"}, {"GET", "/admin/api/affinity?session=s"},
		{"DELETE", "/admin/api/affinity?session=s"}, {"GET", "/admin/api/usage"},
		{"GET", "/admin/api/nope"}, {"GET", "/admin/api"},
	}
	auths := []struct {
		name, header string
		ok           bool
	}{
		{"none", "", false},
		{"wrong token", "Bearer not-the-token", false},
		{"token prefix", "Bearer " + token[:5], false},
		{"token with suffix", "Bearer " + token + "x", false},
		{"basic scheme", "Basic " + token, false},
		{"no scheme", token, false},
		{"right token", "Bearer " + token, true},
		{"lowercase scheme", "bearer " + token, true},
	}
	for _, ep := range endpoints {
		for _, a := range auths {
			t.Run(ep.method+" "+ep.path+"/"+a.name, func(t *testing.T) {
				f := newFakeBackend(t)
				w := serve(t, f, ep.method, ep.path, "", a.header)
				if a.ok {
					if w.Code == http.StatusUnauthorized {
						t.Fatalf("status 401 with the right token: %s", w.Body)
					}
					return
				}
				if w.Code != http.StatusUnauthorized {
					t.Fatalf("status %d, want 401: %s", w.Code, w.Body)
				}
				if got := w.Header().Get("WWW-Authenticate"); !strings.HasPrefix(got, "Bearer") {
					t.Fatalf("WWW-Authenticate %q", got)
				}
				if msg := object(t, w.Body.Bytes())["error"].(map[string]any)["message"]; msg == "" {
					t.Fatal("401 without a message")
				}
				if f.changed() != 0 {
					t.Fatal("an unauthorized request changed something")
				}
			})
		}
	}
}

func TestEmptyTokenDisablesTheAPI(t *testing.T) {
	h := admin.New(newFakeBackend(t).svc, "", nil)
	for _, auth := range []string{"", "Bearer ", "Bearer  "} {
		r := httptest.NewRequest("GET", "/admin/api/state", nil)
		if auth != "" {
			r.Header.Set("Authorization", auth)
		}
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if w.Code != http.StatusUnauthorized {
			t.Fatalf("Authorization %q: status %d, want 401", auth, w.Code)
		}
	}
}

// endpointCase is one request against a fresh fake backend.
type endpointCase struct {
	name         string
	method, path string
	body         string
	status       int
	check        func(t *testing.T, f *fakeBackend, body []byte)
}

func runCases(t *testing.T, cases []endpointCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			f := newFakeBackend(t)
			w := serve(t, f, c.method, c.path, c.body, "Bearer "+token)
			if w.Code != c.status {
				t.Fatalf("%s %s: status %d, want %d: %s", c.method, c.path, w.Code, c.status, w.Body)
			}
			body := w.Body.String()
			for _, secret := range []string{upstreamSecret, teamSecret, config.HashKey(upstreamSecret)} {
				if strings.Contains(body, secret) {
					t.Fatalf("the answer contains a secret: %s", body)
				}
			}
			if ct := w.Header().Get("Content-Type"); w.Code != http.StatusNoContent && ct != "application/json" {
				t.Fatalf("Content-Type %q", ct)
			}
			if c.check != nil {
				c.check(t, f, w.Body.Bytes())
			}
		})
	}
}

func TestUpstreamEndpoints(t *testing.T) {
	newUpstream := `{"name":"new","provider":"openai","base_url":"https://api.example.org/v1","api_key":"sk-new-secret-9876","models":["gpt-4o-mini"]}`
	runCases(t, []endpointCase{
		{name: "list", method: "GET", path: "/admin/api/upstreams", status: 200, check: func(t *testing.T, _ *fakeBackend, b []byte) {
			l := list(t, b)
			if len(l) != 2 || l[0]["name"] != "a" || l[1]["name"] != "b" {
				t.Fatalf("list %v", l)
			}
			if l[0]["api_key"] != "sk-…1234" {
				t.Fatalf("api_key shown as %v, want sk-…1234", l[0]["api_key"])
			}
			if _, ok := l[1]["api_key"]; ok {
				t.Fatalf("an upstream without a key shows api_key %v", l[1]["api_key"])
			}
			if q := l[0]["queue"].(map[string]any); q["timeout"] != "5s" {
				t.Fatalf("queue.timeout %v, want the duration string 5s", q["timeout"])
			}
		}},
		{name: "get", method: "GET", path: "/admin/api/upstreams/a", status: 200, check: func(t *testing.T, _ *fakeBackend, b []byte) {
			if o := object(t, b); o["name"] != "a" || o["weight"] != 3.0 || o["api_key"] != "sk-…1234" {
				t.Fatalf("got %v", o)
			}
		}},
		{name: "get unknown", method: "GET", path: "/admin/api/upstreams/nope", status: 404},
		{name: "create", method: "POST", path: "/admin/api/upstreams", body: newUpstream, status: 201, check: func(t *testing.T, f *fakeBackend, b []byte) {
			o := object(t, b)
			if o["name"] != "new" || o["weight"] != 1.0 || o["active"] != true || o["api_key"] != "sk-…9876" {
				t.Fatalf("created %v: want the defaults weight 1, active true and the key's hint", o)
			}
			u, ok := f.upstream("new")
			if !ok || u.APIKey != "sk-new-secret-9876" || u.Queue.Timeout != 5*time.Second || u.AffinityMigration.Mode != "never" {
				t.Fatalf("stored %+v", u)
			}
			if strings.Contains(string(b), "sk-new-secret-9876") {
				t.Fatal("the create answer echoes the api_key")
			}
		}},
		{name: "create existing", method: "POST", path: "/admin/api/upstreams", body: `{"name":"a","provider":"openai-compatible","base_url":"http://x/v1","models":["m"]}`, status: 409},
		{name: "create invalid weight", method: "POST", path: "/admin/api/upstreams",
			body: `{"name":"w","provider":"openai-compatible","base_url":"http://x/v1","models":["m"],"weight":0}`, status: 400,
			check: func(t *testing.T, f *fakeBackend, b []byte) {
				wantField(t, b, "weight", "must be 1–100, got 0")
				if msg := object(t, b)["error"].(map[string]any)["message"]; msg != "invalid upstream" {
					t.Fatalf("message %q", msg)
				}
				if f.changed() != 0 {
					t.Fatal("an invalid upstream was stored")
				}
			}},
		{name: "create missing fields", method: "POST", path: "/admin/api/upstreams", body: `{"name":"m"}`, status: 400,
			check: func(t *testing.T, _ *fakeBackend, b []byte) {
				wantField(t, b, "provider", "")
				wantField(t, b, "base_url", "required")
				wantField(t, b, "models", "at least one")
			}},
		{name: "create unknown field", method: "POST", path: "/admin/api/upstreams", body: `{"name":"m","wieght":3}`, status: 400,
			check: func(t *testing.T, _ *fakeBackend, b []byte) { wantField(t, b, "wieght", "unknown field") }},
		{name: "create bad duration", method: "POST", path: "/admin/api/upstreams", body: `{"name":"m","queue":{"timeout":"soon"}}`, status: 400,
			check: func(t *testing.T, _ *fakeBackend, b []byte) {
				wantField(t, b, "queue.timeout", `duration such as "30s"`)
			}},
		{name: "create wrong type in a list", method: "POST", path: "/admin/api/upstreams", body: `{"name":"m","models":["x",3]}`, status: 400,
			check: func(t *testing.T, _ *fakeBackend, b []byte) { wantField(t, b, "models[1]", "must be a string, got 3") }},
		{name: "create not JSON", method: "POST", path: "/admin/api/upstreams", body: `{"name":`, status: 400},
		{name: "create empty body", method: "POST", path: "/admin/api/upstreams", status: 400},
		{name: "create a list", method: "POST", path: "/admin/api/upstreams", body: `[1]`, status: 400},
		{name: "replace", method: "PUT", path: "/admin/api/upstreams/a",
			body: `{"provider":"openai","base_url":"https://api.example.com/v2","models":["gpt-4o","o1"],"weight":9}`, status: 200,
			check: func(t *testing.T, f *fakeBackend, b []byte) {
				o := object(t, b)
				if o["name"] != "a" || o["weight"] != 9.0 || o["base_url"] != "https://api.example.com/v2" || o["api_key"] != "sk-…1234" {
					t.Fatalf("replaced %v", o)
				}
				if u, _ := f.upstream("a"); u.APIKey != upstreamSecret || len(u.Models) != 2 {
					t.Fatalf("stored %+v: a PUT without api_key keeps the key", u)
				}
			}},
		{name: "replace unknown", method: "PUT", path: "/admin/api/upstreams/nope", body: `{"provider":"openai-compatible","base_url":"http://x/v1","models":["m"]}`, status: 404},
		{name: "replace renaming", method: "PUT", path: "/admin/api/upstreams/a",
			body: `{"name":"z","provider":"openai-compatible","base_url":"http://x/v1","models":["m"]}`, status: 400,
			check: func(t *testing.T, _ *fakeBackend, b []byte) { wantField(t, b, "name", "cannot be renamed") }},
		{name: "patch weight", method: "PATCH", path: "/admin/api/upstreams/a", body: `{"weight":7}`, status: 200,
			check: func(t *testing.T, f *fakeBackend, b []byte) {
				if o := object(t, b); o["weight"] != 7.0 || o["base_url"] != "https://api.example.com/v1" {
					t.Fatalf("patched %v", o)
				}
				if u, _ := f.upstream("a"); u.Weight != 7 || u.APIKey != upstreamSecret || u.Models[0] != "gpt-4o" {
					t.Fatalf("stored %+v", u)
				}
			}},
		{name: "patch active", method: "PATCH", path: "/admin/api/upstreams/a", body: `{"active":false}`, status: 200,
			check: func(t *testing.T, f *fakeBackend, b []byte) {
				if u, _ := f.upstream("a"); u.Active || u.Weight != 3 {
					t.Fatalf("stored %+v", u)
				}
			}},
		{name: "patch invalid", method: "PATCH", path: "/admin/api/upstreams/a", body: `{"weight":0}`, status: 400,
			check: func(t *testing.T, f *fakeBackend, b []byte) {
				wantField(t, b, "weight", "must be 1–100, got 0")
				if u, _ := f.upstream("a"); u.Weight != 3 || f.changed() != 0 {
					t.Fatalf("an invalid PATCH changed the upstream: %+v", u)
				}
			}},
		{name: "patch nested invalid", method: "PATCH", path: "/admin/api/upstreams/a", body: `{"queue":{"enabled":true}}`, status: 400,
			check: func(t *testing.T, _ *fakeBackend, b []byte) { wantField(t, b, "queue.enabled", "max_concurrency") }},
		{name: "patch nested merge", method: "PATCH", path: "/admin/api/upstreams/a", body: `{"max_concurrency":4,"queue":{"enabled":true}}`, status: 200,
			check: func(t *testing.T, f *fakeBackend, _ []byte) {
				if u, _ := f.upstream("a"); !u.Queue.Enabled || u.Queue.Timeout != 5*time.Second || u.Queue.MaxLength != 100 {
					t.Fatalf("queue %+v: the other queue fields must be kept", u.Queue)
				}
			}},
		{name: "patch null resets to the default", method: "PATCH", path: "/admin/api/upstreams/a", body: `{"weight":null}`, status: 200,
			check: func(t *testing.T, f *fakeBackend, _ []byte) {
				if u, _ := f.upstream("a"); u.Weight != 1 {
					t.Fatalf("weight %d, want the default 1", u.Weight)
				}
			}},
		{name: "patch sending back the key hint", method: "PATCH", path: "/admin/api/upstreams/a", body: `{"api_key":"sk-…1234","weight":2}`, status: 200,
			check: func(t *testing.T, f *fakeBackend, _ []byte) {
				if u, _ := f.upstream("a"); u.APIKey != upstreamSecret {
					t.Fatalf("api_key became %q", u.APIKey)
				}
			}},
		{name: "patch new key", method: "PATCH", path: "/admin/api/upstreams/a", body: `{"api_key":"sk-rotated-key-wxyz"}`, status: 200,
			check: func(t *testing.T, f *fakeBackend, b []byte) {
				if o := object(t, b); o["api_key"] != "sk-…wxyz" {
					t.Fatalf("api_key shown as %v", o["api_key"])
				}
				if u, _ := f.upstream("a"); u.APIKey != "sk-rotated-key-wxyz" {
					t.Fatalf("api_key %q", u.APIKey)
				}
			}},
		{name: "patch rename", method: "PATCH", path: "/admin/api/upstreams/a", body: `{"name":"z"}`, status: 400,
			check: func(t *testing.T, _ *fakeBackend, b []byte) { wantField(t, b, "name", "cannot be renamed") }},
		{name: "patch unknown", method: "PATCH", path: "/admin/api/upstreams/nope", body: `{"weight":2}`, status: 404},
		{name: "delete", method: "DELETE", path: "/admin/api/upstreams/a", status: 204, check: func(t *testing.T, f *fakeBackend, _ []byte) {
			if _, ok := f.upstream("a"); ok {
				t.Fatal("not deleted")
			}
			if f.changed() != 1 || !slices.Equal(f.forgotten, []string{"a"}) {
				t.Fatalf("reloads %d, forgotten %v; want 1 reload, then a forgotten", f.changed(), f.forgotten)
			}
		}},
		{name: "delete unknown", method: "DELETE", path: "/admin/api/upstreams/nope", status: 404},
	})
}

func TestKeyEndpoints(t *testing.T) {
	runCases(t, []endpointCase{
		{name: "list", method: "GET", path: "/admin/api/keys", status: 200, check: func(t *testing.T, _ *fakeBackend, b []byte) {
			l := list(t, b)
			if len(l) != 1 || l[0]["name"] != "team" || l[0]["key_sha256"] != config.HashKey(teamSecret) {
				t.Fatalf("list %v", l)
			}
			if _, ok := l[0]["key"]; ok {
				t.Fatal("a listed key has a plaintext field")
			}
		}},
		{name: "get", method: "GET", path: "/admin/api/keys/team", status: 200},
		{name: "get unknown", method: "GET", path: "/admin/api/keys/nope", status: 404},
		{name: "create with a generated secret", method: "POST", path: "/admin/api/keys", body: `{"name":"ci","allowed_models":["gpt-4o*"],"rpm":60}`, status: 201,
			check: func(t *testing.T, f *fakeBackend, b []byte) {
				o := object(t, b)
				secret, _ := o["key"].(string)
				if !strings.HasPrefix(secret, "sk-sy-") || len(secret) < 30 {
					t.Fatalf("generated secret %q", secret)
				}
				k, ok := f.key("ci")
				if !ok || k.Key != "" || k.KeySHA256 != config.HashKey(secret) || k.RPM != 60 || k.SpendLimit.Period != "month" {
					t.Fatalf("stored %+v: want only the secret's hash", k)
				}
				if o["key_sha256"] != config.HashKey(secret) {
					t.Fatalf("key_sha256 %v", o["key_sha256"])
				}
			}},
		{name: "create with a given secret", method: "POST", path: "/admin/api/keys", body: `{"name":"ci","key":"client-chosen-secret-1"}`, status: 201,
			check: func(t *testing.T, f *fakeBackend, b []byte) {
				if strings.Contains(string(b), "client-chosen-secret-1") {
					t.Fatal("the answer echoes a client-chosen secret")
				}
				if _, ok := object(t, b)["key"]; ok {
					t.Fatal("the answer has a key field for a client-chosen secret")
				}
				if k, _ := f.key("ci"); k.Key != "" || k.KeySHA256 != config.HashKey("client-chosen-secret-1") {
					t.Fatalf("stored %+v", k)
				}
			}},
		{name: "create with a hash", method: "POST", path: "/admin/api/keys", body: `{"name":"ci","key_sha256":"` + strings.ToUpper(config.HashKey("x")) + `"}`, status: 201,
			check: func(t *testing.T, f *fakeBackend, _ []byte) {
				if k, _ := f.key("ci"); k.KeySHA256 != config.HashKey("x") {
					t.Fatalf("stored hash %q, want it lowercased", k.KeySHA256)
				}
			}},
		{name: "create existing", method: "POST", path: "/admin/api/keys", body: `{"name":"team"}`, status: 409},
		{name: "create with both", method: "POST", path: "/admin/api/keys", body: `{"name":"ci","key":"abc","key_sha256":"` + config.HashKey("x") + `"}`, status: 400,
			check: func(t *testing.T, _ *fakeBackend, b []byte) { wantField(t, b, "key_sha256", "only one") }},
		{name: "create bad hash", method: "POST", path: "/admin/api/keys", body: `{"name":"ci","key_sha256":"xyz"}`, status: 400,
			check: func(t *testing.T, _ *fakeBackend, b []byte) { wantField(t, b, "key_sha256", "") }},
		{name: "create bad name", method: "POST", path: "/admin/api/keys", body: `{"name":"a b"}`, status: 400,
			check: func(t *testing.T, _ *fakeBackend, b []byte) { wantField(t, b, "name", "") }},
		{name: "create same secret", method: "POST", path: "/admin/api/keys", body: `{"name":"ci","key":"` + teamSecret + `"}`, status: 400,
			check: func(t *testing.T, _ *fakeBackend, b []byte) { wantField(t, b, "key", `same secret as key "team"`) }},
		{name: "patch", method: "PATCH", path: "/admin/api/keys/team", body: `{"rpm":5}`, status: 200,
			check: func(t *testing.T, f *fakeBackend, _ []byte) {
				if k, _ := f.key("team"); k.RPM != 5 || k.KeySHA256 != config.HashKey(teamSecret) {
					t.Fatalf("stored %+v", k)
				}
			}},
		{name: "patch rotating the secret", method: "PATCH", path: "/admin/api/keys/team", body: `{"key":"rotated-secret-2"}`, status: 200,
			check: func(t *testing.T, f *fakeBackend, b []byte) {
				if strings.Contains(string(b), "rotated-secret-2") {
					t.Fatal("the answer echoes the secret")
				}
				if k, _ := f.key("team"); k.KeySHA256 != config.HashKey("rotated-secret-2") || k.Key != "" {
					t.Fatalf("stored %+v", k)
				}
			}},
		{name: "patch invalid", method: "PATCH", path: "/admin/api/keys/team", body: `{"rpm":-1}`, status: 400,
			check: func(t *testing.T, _ *fakeBackend, b []byte) { wantField(t, b, "rpm", "") }},
		{name: "replace keeps the hash", method: "PUT", path: "/admin/api/keys/team", body: `{"allowed_models":["gpt-*"]}`, status: 200,
			check: func(t *testing.T, f *fakeBackend, _ []byte) {
				if k, _ := f.key("team"); k.KeySHA256 != config.HashKey(teamSecret) || k.AllowedModels[0] != "gpt-*" {
					t.Fatalf("stored %+v", k)
				}
			}},
		{name: "delete", method: "DELETE", path: "/admin/api/keys/team", status: 204},
		{name: "delete unknown", method: "DELETE", path: "/admin/api/keys/nope", status: 404},
	})
}

func TestRouteEndpoints(t *testing.T) {
	runCases(t, []endpointCase{
		{name: "list", method: "GET", path: "/admin/api/routes", status: 200, check: func(t *testing.T, _ *fakeBackend, b []byte) {
			l := list(t, b)
			if len(l) != 1 || l[0]["name"] != "gpt-4o" || l[0]["model"] != "gpt-4o" || l[0]["timeout"] != "5m0s" || l[0]["retries"] != 1.0 {
				t.Fatalf("list %v", l)
			}
		}},
		{name: "get", method: "GET", path: "/admin/api/routes/gpt-4o", status: 200},
		{name: "get unknown", method: "GET", path: "/admin/api/routes/nope", status: 404},
		{name: "put existing", method: "PUT", path: "/admin/api/routes/gpt-4o", body: `{"retries":3,"strategy":"smooth-wrr","first_byte_timeout":"10s"}`, status: 200,
			check: func(t *testing.T, f *fakeBackend, b []byte) {
				o := object(t, b)
				if o["retries"] != 3.0 || o["strategy"] != "smooth-wrr" || o["first_byte_timeout"] != "10s" || o["timeout"] != "5m0s" {
					t.Fatalf("answer %v: want the body over the defaults", o)
				}
				r, _ := f.route("gpt-4o")
				if r.FirstByteTimeout != 10*time.Second || r.MaxBodyBytes != 10<<20 {
					t.Fatalf("stored %+v", r)
				}
			}},
		{name: "put new with a slash and a glob", method: "PUT", path: "/admin/api/routes/meta/llama-*", body: `{"fallback_models":["gpt-4o"]}`, status: 200,
			check: func(t *testing.T, f *fakeBackend, b []byte) {
				if o := object(t, b); o["model"] != "meta/llama-*" {
					t.Fatalf("answer %v", o)
				}
			}},
		{name: "put invalid", method: "PUT", path: "/admin/api/routes/gpt-4o", body: `{"retries":11,"strategy":"fastest"}`, status: 400,
			check: func(t *testing.T, _ *fakeBackend, b []byte) {
				wantField(t, b, "retries", "must be 0–10, got 11")
				wantField(t, b, "strategy", "")
			}},
		{name: "put other model", method: "PUT", path: "/admin/api/routes/gpt-4o", body: `{"model":"o1"}`, status: 400,
			check: func(t *testing.T, _ *fakeBackend, b []byte) { wantField(t, b, "model", "the model in the path") }},
		{name: "post not allowed", method: "POST", path: "/admin/api/routes", body: `{}`, status: 405},
		{name: "delete", method: "DELETE", path: "/admin/api/routes/gpt-4o", status: 204},
		{name: "delete unknown", method: "DELETE", path: "/admin/api/routes/nope", status: 404},
	})
}

func TestLiveEndpoints(t *testing.T) {
	runCases(t, []endpointCase{
		{name: "state", method: "GET", path: "/admin/api/state", status: 200, check: func(t *testing.T, f *fakeBackend, b []byte) {
			if got := strings.Join(f.stateOf, ","); got != "a,b" {
				t.Fatalf("the gateway was asked the state of %q, want the stored upstreams a,b", got)
			}
			var st admin.State
			if err := json.Unmarshal(b, &st); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, u := range st.Upstreams {
				names = append(names, u.Name)
			}
			if strings.Join(names, ",") != "a,b,d,c" {
				t.Fatalf("order %v, want by tier then name", names)
			}
			ua, ub, ud, uc := st.Upstreams[0], st.Upstreams[1], st.Upstreams[2], st.Upstreams[3]
			if ua.Share != 0.75 || ub.Share != 0.25 || ud.Share != 0 || uc.Share != 0 {
				t.Fatalf("shares a %v b %v d %v c %v", ua.Share, ub.Share, ud.Share, uc.Share)
			}
			if ua.ConfiguredShare != 0.75 || ub.ConfiguredShare != 0.25 || ud.ConfiguredShare != 0 || uc.ConfiguredShare != 1 {
				t.Fatalf("configured shares a %v b %v d %v c %v", ua.ConfiguredShare, ub.ConfiguredShare, ud.ConfiguredShare, uc.ConfiguredShare)
			}
			if ub.ErrorRate != 0.2 || ub.RateLimitedRate != 0.04 || ub.CooldownUntil == nil || ua.Breaker.Reason == "" {
				t.Fatalf("b %+v a %+v", ub, ua)
			}
			if !strings.Contains(string(b), `"cooldown_until":"2025-06-01T12:00:30Z"`) {
				t.Fatalf("cooldown_until not an RFC 3339 time: %s", b)
			}
			// By route: the stored a (tier 0) and b (tier 1) serve gpt-4o;
			// a was also tried for gpt-4o-mini, which it no longer serves.
			want := []admin.RouteState{
				{Model: "gpt-4o", Requests5m: 85, Tiers: []admin.RouteTier{
					{Tier: 0, Weight: 3, Requests5m: 60, Upstreams: []admin.RouteUpstream{{Name: "a", Weight: 3, Active: true, Requests5m: 60, RequestsTotal: 90, Share: 1, ConfiguredShare: 1}}},
					{Tier: 1, Weight: 1, Requests5m: 25, Upstreams: []admin.RouteUpstream{{Name: "b", Weight: 1, Active: true, Requests5m: 25, RequestsTotal: 30, Share: 1, ConfiguredShare: 1}}},
				}},
				{Model: "gpt-4o-mini", Requests5m: 15, Tiers: []admin.RouteTier{
					{Tier: 0, Requests5m: 15, Upstreams: []admin.RouteUpstream{{Name: "a", Weight: 3, Active: true, Requests5m: 15, RequestsTotal: 15, Share: 1}}},
				}},
			}
			if !reflect.DeepEqual(st.Routes, want) {
				t.Fatalf("routes\n%+v\nwant\n%+v", st.Routes, want)
			}
			o := object(t, b)
			if _, ok := o["history_end"]; ok || f.stateQuery != (admin.StateQuery{}) {
				t.Fatalf("history without asking: query %+v, answer %s", f.stateQuery, b)
			}
			if ud.Models == nil || !strings.Contains(string(b), `"models":[{"model":"gpt-4o","requests_5m":60,"requests_total":90},`) {
				t.Fatalf("upstreams' models: %s", b)
			}
		}},
		{name: "state with history", method: "GET", path: "/admin/api/state?history=2s", status: 200, check: func(t *testing.T, f *fakeBackend, b []byte) {
			if f.stateQuery.History != 2*time.Second {
				t.Fatalf("query %+v, want History 2s", f.stateQuery)
			}
			o := object(t, b)
			if o["history_step_seconds"] != 2.0 || o["history_end"] != "2025-06-01T12:00:00Z" {
				t.Fatalf("history_step_seconds %v history_end %v, want 2 and the start of at's second", o["history_step_seconds"], o["history_end"])
			}
			if !strings.Contains(string(b), `"configured_share":1,"history":[20,0,40]}`) {
				t.Fatalf("no history under the route: %s", b)
			}
			if strings.Count(string(b), `"history":`) != 1 {
				t.Fatalf("history outside the routes: %s", b)
			}
		}},
		{name: "state history not seconds", method: "GET", path: "/admin/api/state?history=1500ms", status: 400,
			check: func(t *testing.T, _ *fakeBackend, b []byte) { wantField(t, b, "history", `such as "2s", got "1500ms"`) }},
		{name: "state history too long", method: "GET", path: "/admin/api/state?history=2m", status: 400,
			check: func(t *testing.T, _ *fakeBackend, b []byte) { wantField(t, b, "history", "from 1s to 1m0s") }},
		{name: "state history not a duration", method: "GET", path: "/admin/api/state?history=yes", status: 400,
			check: func(t *testing.T, _ *fakeBackend, b []byte) { wantField(t, b, "history", `got "yes"`) }},
		{name: "explain", method: "GET", path: "/admin/api/explain?model=gpt-4o&session=s1&stream=true&key=team", status: 200,
			check: func(t *testing.T, f *fakeBackend, b []byte) {
				if o := object(t, b); o["chosen"] != "a" || o["model"] != "gpt-4o" {
					t.Fatalf("answer %v", o)
				}
				if q := f.explainQuery; q != (admin.ExplainQuery{Model: "gpt-4o", Session: "s1", Stream: true, Key: "team"}) {
					t.Fatalf("query %+v", q)
				}
			}},
		{name: "explain without model", method: "GET", path: "/admin/api/explain", status: 400,
			check: func(t *testing.T, _ *fakeBackend, b []byte) { wantField(t, b, "model", "required") }},
		{name: "explain bad stream", method: "GET", path: "/admin/api/explain?model=gpt-4o&stream=maybe", status: 400,
			check: func(t *testing.T, _ *fakeBackend, b []byte) { wantField(t, b, "stream", "true or false") }},
		{name: "explain unknown model", method: "GET", path: "/admin/api/explain?model=o9", status: 404},
		{name: "explain unknown key", method: "GET", path: "/admin/api/explain?model=gpt-4o&key=ghost", status: 404},
		{name: "decisions default limit", method: "GET", path: "/admin/api/decisions", status: 200,
			check: func(t *testing.T, f *fakeBackend, b []byte) {
				if l := list(t, b); len(l) != 1 || l[0]["request_id"] != "req_1" {
					t.Fatalf("list %v", l)
				}
				if f.decisionsLimit != 100 {
					t.Fatalf("limit %d, want 100", f.decisionsLimit)
				}
			}},
		{name: "decisions limit capped", method: "GET", path: "/admin/api/decisions?limit=5000", status: 200,
			check: func(t *testing.T, f *fakeBackend, _ []byte) {
				if f.decisionsLimit != 1000 {
					t.Fatalf("limit %d, want 1000", f.decisionsLimit)
				}
			}},
		{name: "decisions bad limit", method: "GET", path: "/admin/api/decisions?limit=0", status: 400,
			check: func(t *testing.T, _ *fakeBackend, b []byte) { wantField(t, b, "limit", "") }},
		{name: "affinity", method: "GET", path: "/admin/api/affinity?session=s1", status: 200,
			check: func(t *testing.T, _ *fakeBackend, b []byte) {
				if strings.TrimSpace(string(b)) != "[]" {
					t.Fatalf("answer %s, want []", b)
				}
			}},
		{name: "affinity of a bound session", method: "GET", path: "/admin/api/affinity?session=s-bound", status: 200,
			check: func(t *testing.T, _ *fakeBackend, b []byte) {
				want := `[{"key":"team","route":"gpt-4o","session":"s-bound","upstream":"a",` +
					`"created_at":"2025-06-01T11:59:00Z","last_used":"2025-06-01T12:00:00Z","expires_at":"2025-06-01T12:05:00Z"}]`
				if got := strings.TrimSpace(string(b)); got != want {
					t.Fatalf("answer\n%s\nwant\n%s", got, want)
				}
			}},
		{name: "affinity without session", method: "GET", path: "/admin/api/affinity", status: 400,
			check: func(t *testing.T, _ *fakeBackend, b []byte) { wantField(t, b, "session", "required") }},
		{name: "affinity delete", method: "DELETE", path: "/admin/api/affinity?session=s1", status: 200,
			check: func(t *testing.T, _ *fakeBackend, b []byte) {
				if o := object(t, b); o["deleted"] != 2.0 {
					t.Fatalf("answer %v", o)
				}
			}},
		{name: "usage default", method: "GET", path: "/admin/api/usage", status: 200,
			check: func(t *testing.T, _ *fakeBackend, b []byte) {
				wantUsage(t, b, []admin.UsageRow{
					{Name: "(none)", Requests: 1, Errors: 1},
					{Name: "a", Requests: 2, InputTokens: 30, OutputTokens: 48, CacheReadTokens: 4, CacheWriteTokens: 2, USD: usdA1 + usdA2, Errors: 1},
					{Name: "b", Requests: 1, InputTokens: 5, OutputTokens: 5, Unpriced: 1},
				})
			}},
		{name: "usage since a duration by key", method: "GET", path: "/admin/api/usage?since=90m&by=key", status: 200,
			check: func(t *testing.T, _ *fakeBackend, b []byte) {
				wantUsage(t, b, []admin.UsageRow{
					{Name: "(none)", Requests: 1, Errors: 1},
					{Name: "team", Requests: 1, InputTokens: 10, OutputTokens: 16, CacheReadTokens: 4, CacheWriteTokens: 2, USD: usdA1},
				})
			}},
		{name: "usage since a time by key", method: "GET", path: "/admin/api/usage?since=2025-05-01T00:00:00Z&by=key", status: 200,
			check: func(t *testing.T, _ *fakeBackend, b []byte) {
				wantUsage(t, b, []admin.UsageRow{
					{Name: "(none)", Requests: 1, Errors: 1},
					{Name: "team", Requests: 4, InputTokens: 42, OutputTokens: 54, CacheReadTokens: 4, CacheWriteTokens: 2, USD: usdA1 + usdA2, Unpriced: 2, Errors: 1},
				})
			}},
		{name: "usage by day", method: "GET", path: "/admin/api/usage?since=2025-05-01T00:00:00Z&by=day", status: 200,
			check: func(t *testing.T, _ *fakeBackend, b []byte) {
				wantUsage(t, b, []admin.UsageRow{
					{Name: fakeNow.Add(-30 * time.Hour).UTC().Format(time.DateOnly), Requests: 1, InputTokens: 7, OutputTokens: 1, Unpriced: 1},
					{Name: fakeNow.UTC().Format(time.DateOnly), Requests: 4, InputTokens: 35, OutputTokens: 53, CacheReadTokens: 4, CacheWriteTokens: 2,
						USD: usdA1 + usdA2, Unpriced: 1, Errors: 2},
				})
			}},
		{name: "usage since a time after every log", method: "GET", path: "/admin/api/usage?since=2025-06-02T00:00:00Z", status: 200,
			check: func(t *testing.T, _ *fakeBackend, b []byte) { wantUsage(t, b, []admin.UsageRow{}) }},
		{name: "usage bad since", method: "GET", path: "/admin/api/usage?since=yesterday", status: 400,
			check: func(t *testing.T, _ *fakeBackend, b []byte) { wantField(t, b, "since", "RFC 3339") }},
		{name: "usage by model", method: "GET", path: "/admin/api/usage?by=model", status: 200,
			check: func(t *testing.T, _ *fakeBackend, b []byte) {
				wantUsage(t, b, []admin.UsageRow{
					{Name: "(none)", Requests: 1, Errors: 1},
					{Name: "gpt-4o", Requests: 2, InputTokens: 15, OutputTokens: 21, CacheReadTokens: 4, CacheWriteTokens: 2, USD: usdA1, Unpriced: 1},
					{Name: "gpt-4o-mini", Requests: 1, InputTokens: 20, OutputTokens: 32, USD: usdA2, Errors: 1},
				})
			}},
		{name: "usage by model since a time", method: "GET", path: "/admin/api/usage?since=2025-05-01T00:00:00Z&by=model", status: 200,
			check: func(t *testing.T, _ *fakeBackend, b []byte) {
				wantUsage(t, b, []admin.UsageRow{
					{Name: "(none)", Requests: 1, Errors: 1},
					{Name: "gpt-4o", Requests: 3, InputTokens: 22, OutputTokens: 22, CacheReadTokens: 4, CacheWriteTokens: 2, USD: usdA1, Unpriced: 2},
					{Name: "gpt-4o-mini", Requests: 1, InputTokens: 20, OutputTokens: 32, USD: usdA2, Errors: 1},
				})
			}},
		{name: "usage bad by", method: "GET", path: "/admin/api/usage?by=route", status: 400,
			check: func(t *testing.T, _ *fakeBackend, b []byte) { wantField(t, b, "by", "upstream, key, model or day") }},
		{name: "unknown endpoint", method: "GET", path: "/admin/api/nope", status: 404},
	})
}

func TestMethodNotAllowed(t *testing.T) {
	cases := []struct{ method, path, allow string }{
		{"POST", "/admin/api/upstreams/a", "DELETE, GET, PATCH, PUT"},
		{"DELETE", "/admin/api/upstreams", "GET, POST"},
		{"PATCH", "/admin/api/keys", "GET, POST"},
		{"POST", "/admin/api/keys/team", "DELETE, GET, PATCH, PUT"},
		{"POST", "/admin/api/routes/gpt-4o", "DELETE, GET, PUT"},
		{"POST", "/admin/api/state", "GET"},
		{"DELETE", "/admin/api/decisions", "GET"},
		{"PUT", "/admin/api/affinity", "DELETE, GET"},
		{"POST", "/admin/", "GET, HEAD"},
	}
	for _, c := range cases {
		t.Run(c.method+" "+c.path, func(t *testing.T) {
			w := serve(t, newFakeBackend(t), c.method, c.path, "", "Bearer "+token)
			if w.Code != http.StatusMethodNotAllowed || w.Header().Get("Allow") != c.allow {
				t.Fatalf("status %d Allow %q, want 405 and %q", w.Code, w.Header().Get("Allow"), c.allow)
			}
			fieldErrors(t, w.Body.Bytes()) // a JSON error body
		})
	}
}

func TestDashboard(t *testing.T) {
	cases := []struct {
		path, contentType, contains string
	}{
		{"/admin/", "text/html", `<script src="app.js"`},
		{"/admin/app.js", "javascript", "sessionStorage"},
		{"/admin/request.js", "javascript", "requests/"},
		{"/admin/routes.js", "javascript", "?history="},
		{"/admin/spend.js", "javascript", "usage?since="},
		{"/admin/style.css", "text/css", "font-family"},
		{"/admin/favicon.svg", "image/svg+xml", "<svg"},
		{"/admin/favicon.ico", "image/svg+xml", "<svg"},
		{"/favicon.ico", "image/svg+xml", "<svg"},
	}
	for _, c := range cases {
		t.Run(c.path, func(t *testing.T) {
			w := serve(t, newFakeBackend(t), "GET", c.path, "", "") // no token needed
			if w.Code != 200 || !strings.Contains(w.Header().Get("Content-Type"), c.contentType) {
				t.Fatalf("status %d Content-Type %q", w.Code, w.Header().Get("Content-Type"))
			}
			body := w.Body.String()
			if !strings.Contains(body, c.contains) {
				t.Fatalf("body lacks %q", c.contains)
			}
			for _, bad := range []string{`src="http`, `href="http`, "url(", "@import", "@font-face", "localStorage", "document.cookie", "innerHTML"} {
				if strings.Contains(body, bad) {
					t.Fatalf("the dashboard uses %q (external resources, persistent token storage or HTML injection)", bad)
				}
			}
			if csp := w.Header().Get("Content-Security-Policy"); !strings.Contains(csp, "default-src 'none'") {
				t.Fatalf("Content-Security-Policy %q", csp)
			}
		})
	}
	for _, path := range []string{"/admin", "/"} {
		w := serve(t, newFakeBackend(t), "GET", path, "", "")
		if w.Code/100 != 3 || w.Header().Get("Location") != "/admin/" {
			t.Fatalf("GET %s: status %d Location %q, want a redirect to /admin/", path, w.Code, w.Header().Get("Location"))
		}
	}
}

func TestPprofNeedsTheToken(t *testing.T) {
	tests := []struct {
		name, path, auth string
		want             int
	}{
		{"index with the token", "/admin/api/debug/pprof/", "Bearer " + token, http.StatusOK},
		{"a named profile with the token", "/admin/api/debug/pprof/goroutine?debug=1", "Bearer " + token, http.StatusOK},
		{"index without the token", "/admin/api/debug/pprof/", "", http.StatusUnauthorized},
		{"cpu profile without the token", "/admin/api/debug/pprof/profile?seconds=1", "", http.StatusUnauthorized},
		{"wrong token", "/admin/api/debug/pprof/heap", "Bearer nope", http.StatusUnauthorized},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if w := serve(t, newFakeBackend(t), http.MethodGet, tc.path, "", tc.auth); w.Code != tc.want {
				t.Fatalf("status %d, want %d: %s", w.Code, tc.want, w.Body.String())
			}
		})
	}
}

// wantUsage fails unless b, a GET /usage answer, is want, USD to within
// rounding.
func wantUsage(t *testing.T, b []byte, want []admin.UsageRow) {
	t.Helper()
	var got []admin.UsageRow
	if err := json.Unmarshal(b, &got); err != nil || got == nil {
		t.Fatalf("answer is not a JSON list of rows: %v\n%s", err, b)
	}
	if len(got) != len(want) {
		t.Fatalf("rows %+v, want %+v", got, want)
	}
	for i := range got {
		g, w := got[i], want[i]
		if math.Abs(g.USD-w.USD) > 1e-12 {
			t.Errorf("row %s: usd %v, want %v", g.Name, g.USD, w.USD)
		}
		g.USD, w.USD = 0, 0
		if g != w {
			t.Errorf("row %d = %+v, want %+v", i, g, w)
		}
	}
}
