package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	"switchyard/internal/store"
)

// testConcurrentUse hammers one Store from many goroutines with every kind
// of call; run it with -race.
func testConcurrentUse(t *testing.T, open Opener) {
	const (
		workers = 12
		rounds  = 8
		perLog  = 10
	)
	ctx := context.Background()
	s := open(t)
	var wg sync.WaitGroup
	errs := make(chan error, workers*rounds*8)
	for w := range workers {
		wg.Go(func() {
			for r := range rounds {
				name := fmt.Sprintf("w%02d-%02d", w, r%4)
				logs := make([]store.RequestLog, perLog)
				for i := range logs {
					logs[i] = Log(w*10000 + r*100 + i)
				}
				errs <- s.UpsertUpstream(ctx, Upstream(name))
				errs <- s.UpsertKey(ctx, Key(name))
				errs <- s.UpsertRoute(ctx, Route(name))
				errs <- s.InsertRequestLogs(ctx, logs)
				_, err := s.ListUpstreams(ctx)
				errs <- err
				_, err = s.RecentRequestLogs(ctx, 50)
				errs <- err
				_, err = s.LoadSpend(ctx, Day(1, 1))
				errs <- err
				errs <- s.Ping(ctx)
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Errorf("concurrent call: %v", err)
		}
	}
	us, err := s.ListUpstreams(ctx)
	if err != nil || len(us) != workers*4 {
		t.Errorf("ListUpstreams = %d, %v, want %d", len(us), err, workers*4)
	}
	ks, err := s.ListKeys(ctx)
	if err != nil || len(ks) != workers*4 {
		t.Errorf("ListKeys = %d, %v, want %d", len(ks), err, workers*4)
	}
	logs, err := s.RecentRequestLogs(ctx, workers*rounds*perLog+1)
	if err != nil || len(logs) != workers*rounds*perLog {
		t.Errorf("RecentRequestLogs = %d, %v, want %d", len(logs), err, workers*rounds*perLog)
	}
}

// testConcurrentSpend adds to the same totals from many goroutines, half of
// them listing the keys in the opposite order: no addition may be lost, and
// no batch may fail (as it would on a lock-order deadlock).
func testConcurrentSpend(t *testing.T, open Opener) {
	const (
		workers = 8
		batches = 25
		usd     = 0.25 // exact in binary, so the sums are exact
	)
	ctx := context.Background()
	s := open(t)
	names := []string{"a", "b", "c", "d"}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			order := slices.Clone(names)
			if w%2 == 1 {
				slices.Reverse(order)
			}
			for range batches {
				deltas := make([]store.SpendDelta, 0, len(order))
				for _, n := range order {
					deltas = append(deltas, store.SpendDelta{Scope: "key", Name: n, PeriodStart: Day(3, 1), USD: usd})
				}
				if err := s.AddSpend(ctx, deltas); err != nil {
					t.Errorf("AddSpend: %v", err)
					return
				}
			}
		})
	}
	wg.Wait()
	got, err := s.LoadSpend(ctx, Day(3, 1))
	if err != nil {
		t.Fatalf("LoadSpend: %v", err)
	}
	var want []store.SpendTotal
	for _, n := range names {
		want = append(want, store.SpendTotal{Scope: "key", Name: n, PeriodStart: Day(3, 1), USD: workers * batches * usd})
	}
	if !slices.Equal(got, want) {
		t.Errorf("LoadSpend = %+v\nwant %+v", got, want)
	}
}
