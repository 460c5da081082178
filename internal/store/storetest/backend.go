package storetest

import (
	"context"
	"strings"
	"testing"
	"time"

	"switchyard/internal/store"
)

// The helpers below hold the backend-neutral half of tests that need a
// backend's own SQL for the other half (a failing trigger, a raw column
// read, the config-version counter): the backend's test sets up, then calls.

// FailingID is the request-log ID, and FailingName the spend name, that a
// backend's test makes its database refuse (with a trigger) before calling
// CheckRequestLogsAtomic or CheckSpendAtomic.
const (
	FailingID   = "boom"
	FailingName = "boom"
)

// CheckRequestLogsAtomic asserts that InsertRequestLogs writes a batch whole
// or not at all, on a Store that refuses the log whose ID is FailingID, and
// that the Store takes a batch again afterwards.
func CheckRequestLogsAtomic(t *testing.T, s store.Store) {
	t.Helper()
	ctx := context.Background()
	batch := []store.RequestLog{Log(1), Log(2), {ID: FailingID}, Log(3)}
	if err := s.InsertRequestLogs(ctx, batch); err == nil {
		t.Fatal("InsertRequestLogs with a failing row succeeded, want an error")
	}
	got, err := s.RecentRequestLogs(ctx, 10)
	if err != nil || len(got) != 0 {
		t.Errorf("after a failed batch: %d logs, %v; want none (whole batch rolled back)", len(got), err)
	}
	if err := s.InsertRequestLogs(ctx, batch[:2]); err != nil {
		t.Fatalf("InsertRequestLogs after a failed batch: %v", err)
	}
}

// CheckSpendAtomic asserts that AddSpend adds a batch whole or not at all,
// on a Store that refuses the spend row named FailingName, and that the
// Store takes a batch again afterwards.
func CheckSpendAtomic(t *testing.T, s store.Store) {
	t.Helper()
	ctx := context.Background()
	batch := []store.SpendDelta{
		{Scope: "key", Name: "a", PeriodStart: Day(3, 1), USD: 1},
		{Scope: "key", Name: FailingName, PeriodStart: Day(3, 1), USD: 1},
	}
	if err := s.AddSpend(ctx, batch); err == nil {
		t.Fatal("AddSpend with a failing row succeeded")
	}
	if got, err := s.LoadSpend(ctx, time.Time{}); err != nil || len(got) != 0 {
		t.Fatalf("after a failed batch: %+v, %v; want nothing (rolled back)", got, err)
	}
	if err := s.AddSpend(ctx, batch[:1]); err != nil {
		t.Fatalf("AddSpend after a failed batch: %v", err)
	}
}

// CheckAPIKeyColumn upserts Upstream("a") and asserts, through columns,
// which reads the stored row of the upstream named "a" as text, that its API
// key is in the api_key column and not in the JSON spec.
func CheckAPIKeyColumn(t *testing.T, s store.Store, columns func(ctx context.Context) (spec, apiKey string, err error)) {
	t.Helper()
	ctx := context.Background()
	u := Upstream("a")
	if err := s.UpsertUpstream(ctx, u); err != nil {
		t.Fatal(err)
	}
	spec, apiKey, err := columns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(spec, u.APIKey) {
		t.Errorf("spec %s holds the upstream API key; it belongs in the api_key column only", spec)
	}
	if apiKey != u.APIKey {
		t.Errorf("api_key column = %q, want %q", apiKey, u.APIKey)
	}
}

// VersionStep is one change of CheckConfigVersion's and whether it must
// move the config version.
type VersionStep struct {
	Name   string
	Change func() error
	Moves  bool
}

// CheckConfigVersion runs steps in order, reading the backend's config
// version (the counter its Watch polls) before and after each, and asserts
// that it moves exactly for the steps marked Moves.
func CheckConfigVersion(t *testing.T, version func() (int64, error), steps []VersionStep) {
	t.Helper()
	read := func() int64 {
		t.Helper()
		v, err := version()
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	for _, st := range steps {
		before := read()
		if err := st.Change(); err != nil {
			t.Fatalf("%s: %v", st.Name, err)
		}
		if moved := read() != before; moved != st.Moves {
			t.Errorf("%s: config version moved = %v, want %v", st.Name, moved, st.Moves)
		}
	}
}
