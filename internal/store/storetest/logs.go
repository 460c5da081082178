package storetest

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"switchyard/internal/store"
)

func testRequestLogs(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	AssertAllFieldsSet(t, Log(0))

	// Two batches, out of time order; recent is by Time, newest first, and
	// the zero time sorts oldest.
	if err := s.InsertRequestLogs(ctx, []store.RequestLog{Log(2), Log(0), Log(4)}); err != nil {
		t.Fatalf("InsertRequestLogs: %v", err)
	}
	zero := store.RequestLog{ID: "zero-time"}
	if err := s.InsertRequestLogs(ctx, []store.RequestLog{Log(3), Log(1), zero}); err != nil {
		t.Fatalf("InsertRequestLogs: %v", err)
	}
	if err := s.InsertRequestLogs(ctx, nil); err != nil {
		t.Fatalf("InsertRequestLogs(nil): %v", err)
	}
	if err := s.InsertRequestLogs(ctx, []store.RequestLog{}); err != nil {
		t.Fatalf("InsertRequestLogs(empty): %v", err)
	}

	tests := []struct {
		limit int
		want  []store.RequestLog
	}{
		{10, []store.RequestLog{Log(4), Log(3), Log(2), Log(1), Log(0), zero}},
		{2, []store.RequestLog{Log(4), Log(3)}},
		{0, []store.RequestLog{}},
		{-1, []store.RequestLog{}},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("limit=%d", tt.limit), func(t *testing.T) {
			got, err := s.RecentRequestLogs(ctx, tt.limit)
			if err != nil {
				t.Fatal(err)
			}
			checkLogs(t, got, tt.want)
		})
	}

	t.Run("same time: last inserted first", func(t *testing.T) {
		s := open(t)
		a, b, c := Log(7), Log(7), Log(7)
		a.ID, b.ID, c.ID = "a", "b", "c"
		if err := s.InsertRequestLogs(ctx, []store.RequestLog{a, b}); err != nil {
			t.Fatal(err)
		}
		if err := s.InsertRequestLogs(ctx, []store.RequestLog{c}); err != nil {
			t.Fatal(err)
		}
		got, err := s.RecentRequestLogs(ctx, 10)
		if err != nil {
			t.Fatal(err)
		}
		checkLogs(t, got, []store.RequestLog{c, b, a})
	})
}

// testRequestLogByID checks RequestLog: a log found by its id with every
// field, the newest of several sharing an id, ErrNotFound for an id no log has.
func testRequestLogByID(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	older, newer, sameTimeLater := Log(1), Log(5), Log(5)
	older.ID, newer.ID, sameTimeLater.ID = "shared", "shared", "tie"
	newer.Status, sameTimeLater.Status = 201, 202
	tieFirst := Log(5)
	tieFirst.ID = "tie"
	// The newer log goes in first: the newest by Time wins, not the last inserted.
	if err := s.InsertRequestLogs(ctx, []store.RequestLog{newer, Log(0), older, tieFirst}); err != nil {
		t.Fatal(err)
	}
	if err := s.InsertRequestLogs(ctx, []store.RequestLog{sameTimeLater, Log(2)}); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		id   string
		want store.RequestLog
	}{
		{"req-0000", Log(0)},
		{"req-0002", Log(2)},
		{"shared", newer},
		{"tie", sameTimeLater},
	}
	for _, tt := range tests {
		t.Run(tt.id, func(t *testing.T) {
			got, err := s.RequestLog(ctx, tt.id)
			if err != nil {
				t.Fatalf("RequestLog(%q): %v", tt.id, err)
			}
			checkLogs(t, []store.RequestLog{got}, []store.RequestLog{tt.want})
		})
	}
	for _, id := range []string{"req-0003", "", "SHARED"} {
		if got, err := s.RequestLog(ctx, id); !errors.Is(err, store.ErrNotFound) {
			t.Errorf("RequestLog(%q) = %+v, %v; want ErrNotFound", id, got, err)
		}
	}
}

// checkLogs asserts that got equals want, Times compared with Equal, to the
// nanosecond.
func checkLogs(t *testing.T, got, want []store.RequestLog) {
	t.Helper()
	if got == nil {
		t.Errorf("got nil logs, want a non-nil slice")
	}
	if len(got) != len(want) {
		t.Fatalf("got %d logs, want %d: %+v", len(got), len(want), got)
	}
	for i := range got {
		if !got[i].Time.Equal(want[i].Time) {
			t.Errorf("[%d].Time = %v, want %v", i, got[i].Time, want[i].Time)
		}
		g, w := got[i], want[i]
		g.Time, w.Time = time.Time{}, time.Time{}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("[%d] = %+v, want %+v", i, g, w)
		}
	}
}

// testRequestLogsNotRetained checks that InsertRequestLogs copies what it
// needs: the LogWriter reuses the slice as soon as the call returns.
func testRequestLogsNotRetained(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	batch := []store.RequestLog{Log(1), Log(2)}
	if err := s.InsertRequestLogs(ctx, batch); err != nil {
		t.Fatal(err)
	}
	for i := range batch {
		batch[i].ID, batch[i].Status, batch[i].Error = "reused", 200, ""
	}
	got, err := s.RecentRequestLogs(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	checkLogs(t, got, []store.RequestLog{Log(2), Log(1)})
}

// testRequestLogsOddText checks that text a backend cannot hold as is (a NUL
// byte, invalid UTF-8), as an upstream's error message may carry, does not
// lose the batch.
func testRequestLogsOddText(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	odd := Log(1)
	odd.Error = "bad\x00byte \xff\xfe end"
	odd.Model = "gpt-\x004o"
	if err := s.InsertRequestLogs(ctx, []store.RequestLog{Log(0), odd}); err != nil {
		t.Fatalf("InsertRequestLogs with odd text: %v", err)
	}
	got, err := s.RecentRequestLogs(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 {
		t.Fatalf("stored %d logs, want 2", len(got))
	}
	if !strings.HasPrefix(got[0].Error, "bad") || !strings.HasSuffix(got[0].Error, " end") {
		t.Errorf("Error = %q, want the text kept around what could not be stored", got[0].Error)
	}
	if got[0].ID != odd.ID || got[0].Status != odd.Status {
		t.Errorf("odd log = %+v, want the other fields intact", got[0])
	}
}

func testLogWriter(t *testing.T, open Opener) {
	ctx := context.Background()
	s := open(t)
	var (
		mu   sync.Mutex // guards errs
		errs []error
	)
	w := store.NewLogWriter(s, store.LogWriterOptions{BatchSize: 64, OnError: func(err error) {
		mu.Lock()
		defer mu.Unlock()
		errs = append(errs, err)
	}})
	runCtx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(runCtx)
	}()
	const n = 1000
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range n / 4 {
				if !w.Enqueue(Log(g*n + i)) {
					t.Errorf("Enqueue refused with a 10000 buffer")
					return
				}
			}
		})
	}
	wg.Wait()
	if err := w.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
	cancel()
	<-done
	mu.Lock()
	defer mu.Unlock()
	if len(errs) != 0 || w.Written() != n || w.Dropped() != 0 {
		t.Errorf("Written, Dropped, errors = %d, %d, %v; want %d, 0, none", w.Written(), w.Dropped(), errs, n)
	}
	logs, err := s.RecentRequestLogs(ctx, 2*n)
	if err != nil || len(logs) != n {
		t.Errorf("stored %d logs, %v; want %d", len(logs), err, n)
	}
}
