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
	s, _ := openTest(t)
	if _, err := s.w.Exec(`CREATE TRIGGER fail BEFORE INSERT ON spend
		WHEN NEW.name = '` + storetest.FailingName + `' BEGIN SELECT RAISE(ABORT, 'boom'); END`); err != nil {
		t.Fatal(err)
	}
	storetest.CheckSpendAtomic(t, s)
}
