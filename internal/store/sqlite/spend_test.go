package sqlite

import (
	"context"
	"reflect"
	"testing"
	"time"

	"switchyard/internal/store"
	"switchyard/internal/store/storetest"
)

func TestSpendSurvivesReopen(t *testing.T) {
	ctx := context.Background()
	s, path := openTest(t)
	deltas := []store.SpendDelta{
		{Scope: "upstream", Name: "openai-main", PeriodStart: storetest.Day(3, 1), USD: 1.5},
		{Scope: "key", Name: "team-a", PeriodStart: storetest.Day(3, 2), USD: 0.25},
	}
	if err := s.AddSpend(ctx, deltas); err != nil {
		t.Fatalf("AddSpend: %v", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(ctx, path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s2.Close()
	if err := s2.AddSpend(ctx, deltas[:1]); err != nil {
		t.Fatalf("AddSpend after reopen: %v", err)
	}
	got, err := s2.LoadSpend(ctx, time.Time{})
	want := []store.SpendTotal{
		{Scope: "key", Name: "team-a", PeriodStart: storetest.Day(3, 2), USD: 0.25},
		{Scope: "upstream", Name: "openai-main", PeriodStart: storetest.Day(3, 1), USD: 3},
	}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("LoadSpend after reopen = %+v, %v\nwant %+v", got, err, want)
	}
}

func TestAddSpendIsOneTransaction(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	if _, err := s.w.Exec(`CREATE TRIGGER fail BEFORE INSERT ON spend
		WHEN NEW.name = 'boom' BEGIN SELECT RAISE(ABORT, 'boom'); END`); err != nil {
		t.Fatal(err)
	}
	batch := []store.SpendDelta{
		{Scope: "key", Name: "a", PeriodStart: storetest.Day(3, 1), USD: 1},
		{Scope: "key", Name: "boom", PeriodStart: storetest.Day(3, 1), USD: 1},
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
