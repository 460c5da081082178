// Package storetest is the conformance suite every store.Store backend runs
// from its tests: Run checks the behaviour store.Store documents on one
// instance, RunShared checks two instances sharing one database (writes seen
// across instances, store.Watcher). The fixtures (Upstream, Key, Route, Log)
// set every field, so that a field added to config later is round-tripped
// too. Only tests import this package.
package storetest

import (
	"context"
	"errors"
	"reflect"
	"slices"
	"testing"

	"switchyard/internal/config"
	"switchyard/internal/store"
)

// Opener returns a new, empty Store for t and arranges, with t.Cleanup, for
// it to be closed and its data removed at the end of t. The suite may close
// a Store itself, so the cleanup must tolerate a second Close.
type Opener func(t *testing.T) store.Store

// Run runs the backend-neutral conformance tests against the Stores open
// returns, each test (and subtest) on a Store of its own.
func Run(t *testing.T, open Opener) {
	tests := []struct {
		name string
		run  func(t *testing.T, open Opener)
	}{
		{"Ping", testPing},
		{"UpsertListDelete", testUpsertListDelete},
		{"RoundTripEveryField", testRoundTripEveryField},
		{"UpsertKeyRejectsPlaintext", testUpsertKeyRejectsPlaintext},
		{"RequestLogs", testRequestLogs},
		{"RequestLogsNotRetained", testRequestLogsNotRetained},
		{"RequestLogsOddText", testRequestLogsOddText},
		{"RequestLogByID", testRequestLogByID},
		{"UsageTotals", testUsageTotals},
		{"SpendAddsAndLoadFilters", testSpendAddsAndLoadFilters},
		{"SpendRejectsBadDeltasWholeBatch", testSpendRejectsBadDeltas},
		{"ConcurrentUse", testConcurrentUse},
		{"ConcurrentSpend", testConcurrentSpend},
		{"LogWriter", testLogWriter},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, open) })
	}
}

func testPing(t *testing.T, open Opener) {
	s := open(t)
	if err := s.Ping(context.Background()); err != nil {
		t.Fatalf("Ping: %v", err)
	}
}

// crud adapts one config kind (upstream, key, route) to a common harness.
type crud struct {
	kind   string
	upsert func(s store.Store, id string, version int) error // version lands in a queryable field
	list   func(s store.Store) (ids []string, versions []int, err error)
	delete func(s store.Store, id string) error
}

func crudKinds() []crud {
	ctx := context.Background()
	return []crud{
		{
			kind: "upstream",
			upsert: func(s store.Store, id string, v int) error {
				u := Upstream(id)
				u.Weight = v
				return s.UpsertUpstream(ctx, u)
			},
			list: func(s store.Store) ([]string, []int, error) {
				us, err := s.ListUpstreams(ctx)
				var ids []string
				var vs []int
				for _, u := range us {
					ids, vs = append(ids, u.Name), append(vs, u.Weight)
				}
				return ids, vs, err
			},
			delete: func(s store.Store, id string) error { return s.DeleteUpstream(ctx, id) },
		},
		{
			kind: "key",
			upsert: func(s store.Store, id string, v int) error {
				k := Key(id)
				k.RPM = v
				return s.UpsertKey(ctx, k)
			},
			list: func(s store.Store) ([]string, []int, error) {
				ks, err := s.ListKeys(ctx)
				var ids []string
				var vs []int
				for _, k := range ks {
					ids, vs = append(ids, k.Name), append(vs, k.RPM)
				}
				return ids, vs, err
			},
			delete: func(s store.Store, id string) error { return s.DeleteKey(ctx, id) },
		},
		{
			kind: "route",
			upsert: func(s store.Store, id string, v int) error {
				r := Route(id)
				r.Retries = v
				return s.UpsertRoute(ctx, r)
			},
			list: func(s store.Store) ([]string, []int, error) {
				rs, err := s.ListRoutes(ctx)
				var ids []string
				var vs []int
				for _, r := range rs {
					ids, vs = append(ids, r.Model), append(vs, r.Retries)
				}
				return ids, vs, err
			},
			delete: func(s store.Store, id string) error { return s.DeleteRoute(ctx, id) },
		},
	}
}

func testUpsertListDelete(t *testing.T, open Opener) {
	for _, c := range crudKinds() {
		t.Run(c.kind, func(t *testing.T) {
			s := open(t)
			expect := func(step string, wantIDs []string, wantVersions []int) {
				t.Helper()
				ids, vs, err := c.list(s)
				if err != nil {
					t.Fatalf("%s: list: %v", step, err)
				}
				if !slices.Equal(ids, wantIDs) || !slices.Equal(vs, wantVersions) {
					t.Errorf("%s: list = %v %v, want %v %v", step, ids, vs, wantIDs, wantVersions)
				}
			}
			expect("empty", nil, nil)
			for i, id := range []string{"charlie", "alpha", "bravo"} {
				if err := c.upsert(s, id, i+1); err != nil {
					t.Fatalf("insert %s: %v", id, err)
				}
			}
			expect("after inserts (ordered by id)", []string{"alpha", "bravo", "charlie"}, []int{2, 3, 1})
			if err := c.upsert(s, "alpha", 9); err != nil {
				t.Fatalf("update alpha: %v", err)
			}
			expect("after update", []string{"alpha", "bravo", "charlie"}, []int{9, 3, 1})
			if err := c.delete(s, "bravo"); err != nil {
				t.Fatalf("delete bravo: %v", err)
			}
			expect("after delete", []string{"alpha", "charlie"}, []int{9, 1})
			for _, id := range []string{"bravo", "nope"} {
				if err := c.delete(s, id); !errors.Is(err, store.ErrNotFound) {
					t.Errorf("delete absent %s = %v, want ErrNotFound", id, err)
				}
			}
			if err := c.upsert(s, "", 1); err == nil {
				t.Errorf("upsert with an empty id succeeded, want an error")
			}
			expect("after the refused upsert", []string{"alpha", "charlie"}, []int{9, 1})
		})
	}
}

func testRoundTripEveryField(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	u, k, r := Upstream("azure-east"), Key("team-a"), Route("gpt-4o")
	AssertAllFieldsSet(t, u)
	AssertAllFieldsSet(t, k)
	AssertAllFieldsSet(t, r)
	if err := s.UpsertUpstream(ctx, u); err != nil {
		t.Fatalf("UpsertUpstream: %v", err)
	}
	if err := s.UpsertKey(ctx, k); err != nil {
		t.Fatalf("UpsertKey: %v", err)
	}
	if err := s.UpsertRoute(ctx, r); err != nil {
		t.Fatalf("UpsertRoute: %v", err)
	}
	CheckConfig(t, s, u, k, r)
}

// CheckConfig asserts that s holds exactly the upstream u, the key k and the
// route r, every field equal.
func CheckConfig(t *testing.T, s store.Store, u config.Upstream, k config.Key, r config.Route) {
	t.Helper()
	ctx := context.Background()
	us, err := s.ListUpstreams(ctx)
	if err != nil || len(us) != 1 || !reflect.DeepEqual(us[0], u) {
		t.Errorf("ListUpstreams = %+v, %v\nwant [%+v]", us, err, u)
	}
	ks, err := s.ListKeys(ctx)
	if err != nil || len(ks) != 1 || !reflect.DeepEqual(ks[0], k) {
		t.Errorf("ListKeys = %+v, %v\nwant [%+v]", ks, err, k)
	}
	rs, err := s.ListRoutes(ctx)
	if err != nil || len(rs) != 1 || !reflect.DeepEqual(rs[0], r) {
		t.Errorf("ListRoutes = %+v, %v\nwant [%+v]", rs, err, r)
	}
}

func testUpsertKeyRejectsPlaintext(t *testing.T, open Opener) {
	TryPlaintextKeys(t, open(t))
}
