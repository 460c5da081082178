package storetest

import (
	"context"
	"math"
	"reflect"
	"testing"
	"time"

	"switchyard/internal/store"
)

func testSpendAddsAndLoadFilters(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	if err := s.AddSpend(ctx, nil); err != nil {
		t.Fatalf("AddSpend(nil): %v", err)
	}
	batches := [][]store.SpendDelta{
		{
			{Scope: "upstream", Name: "openai-main", PeriodStart: Day(2, 28), USD: 7},
			{Scope: "upstream", Name: "openai-main", PeriodStart: Day(3, 1), USD: 1.5},
			{Scope: "key", Name: "team-a", PeriodStart: Day(3, 1), USD: 0.25},
		},
		{
			{Scope: "upstream", Name: "openai-main", PeriodStart: Day(3, 1), USD: 2}, // adds to 1.5
			{Scope: "key", Name: "team-a", PeriodStart: Day(3, 2), USD: 1},
			{Scope: "key", Name: "team-a", PeriodStart: Day(3, 2), USD: 1}, // same key twice in a batch
		},
	}
	for i, b := range batches {
		if err := s.AddSpend(ctx, b); err != nil {
			t.Fatalf("AddSpend batch %d: %v", i, err)
		}
	}
	feb28 := store.SpendTotal{Scope: "upstream", Name: "openai-main", PeriodStart: Day(2, 28), USD: 7}
	teamA1 := store.SpendTotal{Scope: "key", Name: "team-a", PeriodStart: Day(3, 1), USD: 0.25}
	teamA2 := store.SpendTotal{Scope: "key", Name: "team-a", PeriodStart: Day(3, 2), USD: 2}
	openai1 := store.SpendTotal{Scope: "upstream", Name: "openai-main", PeriodStart: Day(3, 1), USD: 3.5}
	tests := []struct {
		name  string
		since time.Time
		want  []store.SpendTotal // ordered by scope, name, period start
	}{
		{"since the month start", Day(3, 1), []store.SpendTotal{teamA1, teamA2, openai1}},
		{"a nanosecond after excludes that day", Day(3, 1).Add(time.Nanosecond), []store.SpendTotal{teamA2}},
		{"a zone other than UTC", Day(3, 1).In(time.FixedZone("UTC+2", 2*3600)), []store.SpendTotal{teamA1, teamA2, openai1}},
		{"everything", time.Time{}, []store.SpendTotal{teamA1, teamA2, feb28, openai1}},
		{"future", Day(4, 1), []store.SpendTotal{}},
	}
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

func testSpendRejectsBadDeltas(t *testing.T, open Opener) {
	ctx := context.Background()
	good := store.SpendDelta{Scope: "key", Name: "k", PeriodStart: Day(3, 1), USD: 1}
	tests := []struct {
		name string
		bad  store.SpendDelta
	}{
		{"empty scope", store.SpendDelta{Name: "k", PeriodStart: Day(3, 1), USD: 1}},
		{"empty name", store.SpendDelta{Scope: "key", PeriodStart: Day(3, 1), USD: 1}},
		{"zero period", store.SpendDelta{Scope: "key", Name: "k", USD: 1}},
		{"NaN", store.SpendDelta{Scope: "key", Name: "k", PeriodStart: Day(3, 1), USD: math.NaN()}},
		{"Inf", store.SpendDelta{Scope: "key", Name: "k", PeriodStart: Day(3, 1), USD: math.Inf(1)}},
		{"-Inf", store.SpendDelta{Scope: "key", Name: "k", PeriodStart: Day(3, 1), USD: math.Inf(-1)}},
	}
	s := open(t)
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
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
