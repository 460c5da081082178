package sqlite

import (
	"context"
	"math"
	"reflect"
	"testing"
	"time"

	"switchyard/internal/store"
)

func day(m time.Month, d int) time.Time { return time.Date(2025, m, d, 0, 0, 0, 0, time.UTC) }

func TestSpendUpsertAddsAndLoadFilters(t *testing.T) {
	ctx := context.Background()
	s, path := openTest(t)

	if err := s.AddSpend(ctx, nil); err != nil {
		t.Fatalf("AddSpend(nil): %v", err)
	}
	batches := [][]store.SpendDelta{
		{
			{Scope: "upstream", Name: "openai-main", PeriodStart: day(2, 28), USD: 7},
			{Scope: "upstream", Name: "openai-main", PeriodStart: day(3, 1), USD: 1.5},
			{Scope: "key", Name: "team-a", PeriodStart: day(3, 1), USD: 0.25},
		},
		{
			{Scope: "upstream", Name: "openai-main", PeriodStart: day(3, 1), USD: 2}, // adds to 1.5
			{Scope: "key", Name: "team-a", PeriodStart: day(3, 2), USD: 1},
			{Scope: "key", Name: "team-a", PeriodStart: day(3, 2), USD: 1}, // same key twice in a batch
		},
	}
	for i, b := range batches {
		if err := s.AddSpend(ctx, b); err != nil {
			t.Fatalf("AddSpend batch %d: %v", i, err)
		}
	}
	feb28 := store.SpendTotal{Scope: "upstream", Name: "openai-main", PeriodStart: day(2, 28), USD: 7}
	teamA1 := store.SpendTotal{Scope: "key", Name: "team-a", PeriodStart: day(3, 1), USD: 0.25}
	teamA2 := store.SpendTotal{Scope: "key", Name: "team-a", PeriodStart: day(3, 2), USD: 2}
	openai1 := store.SpendTotal{Scope: "upstream", Name: "openai-main", PeriodStart: day(3, 1), USD: 3.5}
	tests := []struct {
		name  string
		since time.Time
		want  []store.SpendTotal // ordered by scope, name, period start
	}{
		{"since the month start", day(3, 1), []store.SpendTotal{teamA1, teamA2, openai1}},
		{"a nanosecond after excludes that day", day(3, 1).Add(time.Nanosecond), []store.SpendTotal{teamA2}},
		{"everything", time.Time{}, []store.SpendTotal{teamA1, teamA2, feb28, openai1}},
		{"future", day(4, 1), []store.SpendTotal{}},
	}
	check := func(t *testing.T, s *Store) {
		for _, tc := range tests {
			t.Run(tc.name, func(t *testing.T) {
				got, err := s.LoadSpend(ctx, tc.since)
				if err != nil {
					t.Fatalf("LoadSpend: %v", err)
				}
				if !reflect.DeepEqual(got, tc.want) {
					t.Fatalf("LoadSpend(%v) = %+v\nwant %+v", tc.since, got, tc.want)
				}
			})
		}
	}
	check(t, s)

	// Totals survive a reopen.
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	s2, err := Open(ctx, path)
	if err != nil {
		t.Fatalf("reopen: %v", err)
	}
	defer s2.Close()
	t.Run("after reopen", func(t *testing.T) { check(t, s2) })
}

func TestAddSpendRejectsBadDeltasWholeBatch(t *testing.T) {
	ctx := context.Background()
	good := store.SpendDelta{Scope: "key", Name: "k", PeriodStart: day(3, 1), USD: 1}
	tests := []struct {
		name string
		bad  store.SpendDelta
	}{
		{"empty scope", store.SpendDelta{Name: "k", PeriodStart: day(3, 1), USD: 1}},
		{"empty name", store.SpendDelta{Scope: "key", PeriodStart: day(3, 1), USD: 1}},
		{"zero period", store.SpendDelta{Scope: "key", Name: "k", USD: 1}},
		{"NaN", store.SpendDelta{Scope: "key", Name: "k", PeriodStart: day(3, 1), USD: math.NaN()}},
		{"Inf", store.SpendDelta{Scope: "key", Name: "k", PeriodStart: day(3, 1), USD: math.Inf(1)}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := openTest(t)
			if err := s.AddSpend(ctx, []store.SpendDelta{good, tc.bad}); err == nil {
				t.Fatal("AddSpend accepted a bad delta")
			}
			got, err := s.LoadSpend(ctx, time.Time{})
			if err != nil || len(got) != 0 {
				t.Fatalf("after a rejected batch: %+v, %v; want nothing stored", got, err)
			}
		})
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
		{Scope: "key", Name: "a", PeriodStart: day(3, 1), USD: 1},
		{Scope: "key", Name: "boom", PeriodStart: day(3, 1), USD: 1},
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
