package gateway_test

import (
	"cmp"
	"encoding/json"
	"net/http"
	"strings"
	"testing"
	"time"

	"switchyard/internal/affinity"
	"switchyard/internal/balancer"
	"switchyard/internal/config"
)

// End-to-end tests of GET and DELETE /admin/api/affinity
// (docs/admin.md#affinity) over a served gateway: bindings made by real traffic
// are listed, removed and then missed by the next request.

// affinityGateway serves two equal upstreams of gpt-4o (route gpt-4o) with
// the admin API and two client keys: e2e (testKey) and k2 (k2Secret).
func affinityGateway(t *testing.T) *env {
	t.Helper()
	p := newPool(t, config.ProviderOpenAI, "gpt-4o", "up-a", "up-b")
	return startGateway(t, spec{
		upstreams: p.upstreams,
		keys:      []config.Key{clientKey("e2e", testKey), clientKey("k2", k2Secret)},
		edit: func(c *config.Config) {
			withAdmin(c)
			c.Routes = []config.Route{{Model: "gpt-4o", RouteSettings: c.Defaults}}
		},
	})
}

// k2Secret is the second client key of affinityGateway.
const k2Secret = "sk-e2e-second-key"

// listBindings GETs the bindings of session through the admin API.
func listBindings(t *testing.T, e *env, session string) []affinity.Binding {
	t.Helper()
	r := e.mustAdmin(t, http.MethodGet, "/affinity?session="+session, "", http.StatusOK)
	var bs []affinity.Binding
	if err := json.Unmarshal(r.body, &bs); err != nil || bs == nil {
		t.Fatalf("GET /affinity?session=%s answered %s (%v), want a JSON array", session, r.body, err)
	}
	return bs
}

// sessionTurn posts affChatBody with the session in x-session-id, as the
// client key secret, and fails the test unless an upstream answered 200.
func sessionTurn(t *testing.T, e *env, secret, session string) turn {
	t.Helper()
	return turnOf(rawRequest(t, http.MethodPost, e.URL+chatPath, strings.NewReader(affChatBody),
		"Authorization", "Bearer "+secret, "x-session-id", session)).mustOK(t, "session "+session)
}

func TestAdminAffinityListsAndDeletes(t *testing.T) {
	e := affinityGateway(t)
	const s1, s2 = "sess-admin-1", "sess-admin-2"

	if bs := listBindings(t, e, s1); len(bs) != 0 {
		t.Fatalf("bindings before any traffic: %+v, want none", bs)
	}

	first := sessionTurn(t, e, testKey, s1)
	wantAffinity(t, "first turn", decisionFor(t, e, first.requestID), balancer.AffinityRecord{Result: balancer.AffinityMiss, Session: s1})
	second := sessionTurn(t, e, testKey, s1)
	if second.upstream != first.upstream {
		t.Fatalf("second turn served by %s, first by %s: the session did not stick", second.upstream, first.upstream)
	}
	wantAffinity(t, "second turn", decisionFor(t, e, second.requestID), balancer.AffinityRecord{Result: balancer.AffinityHit, Bound: first.upstream})
	other := sessionTurn(t, e, testKey, s2)

	bs := listBindings(t, e, s1)
	if len(bs) != 1 {
		t.Fatalf("bindings of %s: %+v, want exactly one (not %s's)", s1, bs, s2)
	}
	b := bs[0]
	if b.Upstream != first.upstream || b.APIKey != "e2e" || b.Route != "gpt-4o" || b.Session != s1 {
		t.Fatalf("binding %+v, want upstream %s, key e2e, route gpt-4o, session %s", b, first.upstream, s1)
	}
	if b.CreatedAt.IsZero() || b.LastUsed.Before(b.CreatedAt) || !b.ExpiresAt.After(b.LastUsed) ||
		b.ExpiresAt.Sub(b.LastUsed) > config.Default().Affinity.SlidingTTL+time.Second {
		t.Fatalf("binding times: created %v, last used %v, expires %v: want created ≤ last used < expires ≤ last used + sliding TTL",
			b.CreatedAt, b.LastUsed, b.ExpiresAt)
	}

	// The raw answer uses the documented field names.
	raw := e.mustAdmin(t, http.MethodGet, "/affinity?session="+s1, "", http.StatusOK)
	var fields []map[string]any
	if err := json.Unmarshal(raw.body, &fields); err != nil || len(fields) != 1 {
		t.Fatalf("GET /affinity answered %s", raw.body)
	}
	for _, f := range []string{"upstream", "key", "route", "session"} {
		if _, ok := fields[0][f]; !ok {
			t.Errorf("binding JSON %s has no %q field", raw.body, f)
		}
	}

	r := e.mustAdmin(t, http.MethodDelete, "/affinity?session="+s1, "", http.StatusOK)
	var del struct {
		Deleted *int `json:"deleted"`
	}
	if err := json.Unmarshal(r.body, &del); err != nil || del.Deleted == nil || *del.Deleted != 1 {
		t.Fatalf("DELETE answered %s, want {\"deleted\":1}", r.body)
	}
	if bs := listBindings(t, e, s1); len(bs) != 0 {
		t.Fatalf("bindings of %s after DELETE: %+v, want none", s1, bs)
	}
	if bs := listBindings(t, e, s2); len(bs) != 1 || bs[0].Upstream != other.upstream {
		t.Fatalf("bindings of %s after deleting %s: %+v, want its one to %s", s2, s1, bs, other.upstream)
	}
	r = e.mustAdmin(t, http.MethodDelete, "/affinity?session="+s1, "", http.StatusOK)
	if err := json.Unmarshal(r.body, &del); err != nil || del.Deleted == nil || *del.Deleted != 0 {
		t.Fatalf("second DELETE answered %s, want {\"deleted\":0}", r.body)
	}

	next := sessionTurn(t, e, testKey, s1)
	wantAffinity(t, "turn after DELETE", decisionFor(t, e, next.requestID), balancer.AffinityRecord{Result: balancer.AffinityMiss, Session: s1})
	if bs := listBindings(t, e, s1); len(bs) != 1 || bs[0].Upstream != next.upstream {
		t.Fatalf("bindings after the next turn: %+v, want one to %s (a success rebinds)", bs, next.upstream)
	}
}

// TestAdminAffinityAcrossKeys: one session id used by two client keys has a
// binding per key; both are listed (ordered by route, then key) and one
// DELETE removes both.
func TestAdminAffinityAcrossKeys(t *testing.T) {
	e := affinityGateway(t)
	const s = "sess-shared-id"
	a := sessionTurn(t, e, testKey, s)
	b := sessionTurn(t, e, k2Secret, s)
	bs := listBindings(t, e, s)
	if len(bs) != 2 || bs[0].APIKey != "e2e" || bs[1].APIKey != "k2" ||
		bs[0].Upstream != a.upstream || bs[1].Upstream != b.upstream {
		t.Fatalf("bindings %+v, want e2e→%s then k2→%s", bs, a.upstream, b.upstream)
	}
	r := e.mustAdmin(t, http.MethodDelete, "/affinity?session="+s, "", http.StatusOK)
	var del struct{ Deleted int }
	if err := json.Unmarshal(r.body, &del); err != nil || del.Deleted != 2 {
		t.Fatalf("DELETE answered %s, want {\"deleted\":2}", r.body)
	}
	for _, secret := range []string{testKey, k2Secret} {
		tr := sessionTurn(t, e, secret, s)
		wantAffinity(t, "after DELETE", decisionFor(t, e, tr.requestID), balancer.AffinityRecord{Result: balancer.AffinityMiss})
	}
}

// TestAdminAffinityAuthAndParameters: both methods need the admin token
// (401 otherwise, and an unauthorised DELETE deletes nothing) and the
// session parameter (400 without it).
func TestAdminAffinityAuthAndParameters(t *testing.T) {
	e := affinityGateway(t)
	const s = "sess-guarded"
	served := sessionTurn(t, e, testKey, s)

	unauthorized := []struct {
		name string
		hdr  []string
	}{
		{"no token", nil},
		{"wrong token", []string{"Authorization", "Bearer " + adminToken + "x"}},
		{"client key", []string{"Authorization", "Bearer " + testKey}},
		{"not bearer", []string{"Authorization", "Basic " + adminToken}},
	}
	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		for _, tc := range unauthorized {
			t.Run(method+" "+tc.name, func(t *testing.T) {
				r := rawRequest(t, method, e.URL+"/admin/api/affinity?session="+s, nil, tc.hdr...)
				if r.status != http.StatusUnauthorized {
					t.Fatalf("status %d, want 401: %s", r.status, r.body)
				}
				if bs := listBindings(t, e, s); len(bs) != 1 || bs[0].Upstream != served.upstream {
					t.Fatalf("bindings after an unauthorised %s: %+v, want the one to %s", method, bs, served.upstream)
				}
			})
		}
	}

	for _, method := range []string{http.MethodGet, http.MethodDelete} {
		for _, query := range []string{"", "?session=", "?sessions=" + s} {
			t.Run(method+" query "+cmp.Or(query, "none"), func(t *testing.T) {
				r := e.admin(t, method, "/affinity"+query, "")
				if r.status != http.StatusBadRequest {
					t.Fatalf("status %d, want 400: %s", r.status, r.body)
				}
				var body struct {
					Error struct {
						Fields []struct{ Path string } `json:"fields"`
					} `json:"error"`
				}
				if err := json.Unmarshal(r.body, &body); err != nil || len(body.Error.Fields) != 1 || body.Error.Fields[0].Path != "session" {
					t.Fatalf("400 body %s, want an error naming the session field", r.body)
				}
			})
		}
	}
	if bs := listBindings(t, e, s); len(bs) != 1 {
		t.Fatalf("bindings after the refused calls: %+v, want the one", bs)
	}
}
