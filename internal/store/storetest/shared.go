package storetest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"switchyard/internal/store"
)

// WatchDeadline is how soon after a committed change store.Watcher promises
// a call of onChange; RunShared fails a Watch that is slower.
const WatchDeadline = 5 * time.Second

// PairOpener returns two Store instances on one new, empty database (as two
// gateway instances sharing it would have) and arranges, with t.Cleanup, for
// both to be closed and the data removed at the end of t. The suite may close
// a Store itself, so the cleanup must tolerate a second Close.
type PairOpener func(t *testing.T) (a, b store.Store)

// RunShared runs the conformance tests for two instances sharing one
// database: what one writes the other reads back exactly, and, when the
// Stores implement store.Watcher, a Watch on one reports the other's
// changes within WatchDeadline. Each test gets a pair of its own.
func RunShared(t *testing.T, open PairOpener) {
	tests := []struct {
		name string
		run  func(t *testing.T, open PairOpener)
	}{
		{"WritesSeenAcrossInstances", testWritesSeenAcrossInstances},
		{"WatchReportsOtherInstanceChanges", testWatchReportsChanges},
		{"WatchStopsWhenContextEnds", testWatchStopsOnCancel},
		{"WatchStopsWhenStoreCloses", testWatchStopsOnClose},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { tt.run(t, open) })
	}
}

func testWritesSeenAcrossInstances(t *testing.T, open PairOpener) {
	ctx := context.Background()
	a, b := open(t)
	u, k, r := Upstream("azure-east"), Key("team-a"), Route("gpt-4o")
	if err := a.UpsertUpstream(ctx, u); err != nil {
		t.Fatal(err)
	}
	if err := a.UpsertKey(ctx, k); err != nil {
		t.Fatal(err)
	}
	if err := a.UpsertRoute(ctx, r); err != nil {
		t.Fatal(err)
	}
	CheckConfig(t, b, u, k, r)

	if err := b.DeleteUpstream(ctx, u.Name); err != nil {
		t.Fatal(err)
	}
	if err := a.DeleteUpstream(ctx, u.Name); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("deleting through a what b deleted = %v, want ErrNotFound", err)
	}

	if err := a.InsertRequestLogs(ctx, []store.RequestLog{Log(1)}); err != nil {
		t.Fatal(err)
	}
	if err := b.InsertRequestLogs(ctx, []store.RequestLog{Log(2)}); err != nil {
		t.Fatal(err)
	}
	logs, err := a.RecentRequestLogs(ctx, 10)
	if err != nil {
		t.Fatal(err)
	}
	checkLogs(t, logs, []store.RequestLog{Log(2), Log(1)})

	d := store.SpendDelta{Scope: "upstream", Name: "u", PeriodStart: Day(3, 1), USD: 1.5}
	if err := a.AddSpend(ctx, []store.SpendDelta{d}); err != nil {
		t.Fatal(err)
	}
	if err := b.AddSpend(ctx, []store.SpendDelta{d}); err != nil {
		t.Fatal(err)
	}
	totals, err := a.LoadSpend(ctx, Day(3, 1))
	want := []store.SpendTotal{{Scope: "upstream", Name: "u", PeriodStart: Day(3, 1), USD: 3}}
	if err != nil || !slices.Equal(totals, want) {
		t.Errorf("LoadSpend = %+v, %v, want %+v (both instances' spend added)", totals, err, want)
	}
}

// watcherOf skips t unless s implements store.Watcher.
func watcherOf(t *testing.T, s store.Store) store.Watcher {
	t.Helper()
	w, ok := s.(store.Watcher)
	if !ok {
		t.Skipf("%T does not implement store.Watcher", s)
	}
	return w
}

// snapshot renders what a reload reads from s: every upstream, key and route
// with one queryable field, so that each change of a test yields a snapshot
// of its own.
func snapshot(ctx context.Context, s store.Store) (string, error) {
	us, err := s.ListUpstreams(ctx)
	if err != nil {
		return "", err
	}
	ks, err := s.ListKeys(ctx)
	if err != nil {
		return "", err
	}
	rs, err := s.ListRoutes(ctx)
	if err != nil {
		return "", err
	}
	var b strings.Builder
	b.WriteString("upstreams:")
	for _, u := range us {
		fmt.Fprintf(&b, " %s@%d", u.Name, u.Weight)
	}
	b.WriteString(" keys:")
	for _, k := range ks {
		fmt.Fprintf(&b, " %s@%d", k.Name, k.RPM)
	}
	b.WriteString(" routes:")
	for _, r := range rs {
		fmt.Fprintf(&b, " %s@%d", r.Model, r.Retries)
	}
	return b.String(), nil
}

// startWatch runs w.Watch in a goroutine, reloading a snapshot of s on every
// call of onChange and sending it on the returned channel. It waits for the
// first call (which Watch makes once it watches) and stops the watch at the
// end of t, checking that Watch then returns nil.
func startWatch(t *testing.T, w store.Watcher, s store.Store) <-chan string {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	reloads := make(chan string, 100)
	done := make(chan error, 1)
	go func() {
		done <- w.Watch(ctx, func() {
			snap, err := snapshot(ctx, s)
			if err != nil {
				return
			}
			select {
			case reloads <- snap:
			case <-ctx.Done():
			}
		})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Watch after its context ended = %v, want nil", err)
		}
	})
	select {
	case <-reloads:
	case err := <-done:
		t.Fatalf("Watch returned at once: %v", err)
	case <-time.After(WatchDeadline):
		t.Fatalf("no first call of onChange within %v of Watch", WatchDeadline)
	}
	return reloads
}

// awaitReload waits up to WatchDeadline for a reload that reads want.
func awaitReload(t *testing.T, reloads <-chan string, step, want string) {
	t.Helper()
	deadline := time.After(WatchDeadline)
	last := "(none)"
	for {
		select {
		case got := <-reloads:
			if got == want {
				return
			}
			last = got
		case <-deadline:
			t.Fatalf("%s: no call of onChange whose reload reads %q within %v; last reload read %q", step, want, WatchDeadline, last)
		}
	}
}

func testWatchReportsChanges(t *testing.T, open PairOpener) {
	ctx := context.Background()
	a, b := open(t)
	reloads := startWatch(t, watcherOf(t, a), a)

	// Every kind of change made through the other instance is reported, one
	// after the other; each step waits for a reload only its change explains.
	heavier := Upstream("u1")
	heavier.Weight = 99
	steps := []struct {
		name   string
		change func() error
		want   string
	}{
		{"insert upstream", func() error { return b.UpsertUpstream(ctx, Upstream("u1")) }, "upstreams: u1@7 keys: routes:"},
		{"update upstream", func() error { return b.UpsertUpstream(ctx, heavier) }, "upstreams: u1@99 keys: routes:"},
		{"insert key", func() error { return b.UpsertKey(ctx, Key("k1")) }, "upstreams: u1@99 keys: k1@120 routes:"},
		{"insert route", func() error { return b.UpsertRoute(ctx, Route("m1")) }, "upstreams: u1@99 keys: k1@120 routes: m1@4"},
		{"delete upstream", func() error { return b.DeleteUpstream(ctx, "u1") }, "upstreams: keys: k1@120 routes: m1@4"},
		{"delete key", func() error { return b.DeleteKey(ctx, "k1") }, "upstreams: keys: routes: m1@4"},
		{"delete route", func() error { return b.DeleteRoute(ctx, "m1") }, "upstreams: keys: routes:"},
	}
	for _, st := range steps {
		if err := st.change(); err != nil {
			t.Fatalf("%s: %v", st.name, err)
		}
		awaitReload(t, reloads, st.name, st.want)
	}
}

func testWatchStopsOnCancel(t *testing.T, open PairOpener) {
	a, _ := open(t)
	w := watcherOf(t, a)
	ctx, cancel := context.WithCancel(context.Background())
	called := make(chan struct{}, 10)
	done := make(chan error, 1)
	go func() { done <- w.Watch(ctx, func() { called <- struct{}{} }) }()
	select {
	case <-called:
	case <-time.After(WatchDeadline):
		t.Fatalf("no first call of onChange within %v", WatchDeadline)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Watch = %v, want nil when its context ends", err)
		}
	case <-time.After(WatchDeadline):
		t.Fatalf("Watch still running %v after its context ended", WatchDeadline)
	}
}

func testWatchStopsOnClose(t *testing.T, open PairOpener) {
	a, _ := open(t)
	w := watcherOf(t, a)
	called := make(chan struct{}, 10)
	done := make(chan error, 1)
	go func() { done <- w.Watch(context.Background(), func() { called <- struct{}{} }) }()
	select {
	case <-called:
	case <-time.After(WatchDeadline):
		t.Fatalf("no first call of onChange within %v", WatchDeadline)
	}
	if err := a.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, store.ErrClosed) {
			t.Errorf("Watch = %v, want ErrClosed when the store closes", err)
		}
	case <-time.After(WatchDeadline):
		t.Fatalf("Watch still running %v after Close", WatchDeadline)
	}
	if err := w.Watch(context.Background(), func() {}); !errors.Is(err, store.ErrClosed) {
		t.Errorf("Watch on a closed store = %v, want ErrClosed", err)
	}
}
