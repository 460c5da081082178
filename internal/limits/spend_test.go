package limits

import (
	"context"
	"errors"
	"fmt"
	"math"
	"path/filepath"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/store"
	"switchyard/internal/store/sqlite"
)

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestSpendPeriodsRollOverInUTC(t *testing.T) {
	tests := []struct {
		name               string
		start              time.Time // clock when the first amount is added
		advance            time.Duration
		wantDay, wantMonth float64 // totals after advancing, of 1 USD added before and 2 after
	}{
		{"same day", time.Date(2025, 1, 15, 10, 0, 0, 0, time.UTC), time.Hour, 3, 3},
		{"next day, same month", time.Date(2025, 1, 15, 23, 59, 0, 0, time.UTC), 2 * time.Minute, 2, 3},
		{"next month", time.Date(2025, 1, 31, 23, 59, 59, 0, time.UTC), time.Second, 2, 2},
		{"leap day to March", time.Date(2024, 2, 29, 23, 0, 0, 0, time.UTC), time.Hour, 2, 2},
		// 07:30 on Feb 1 in UTC+8 is still Jan 31 in UTC; 17:00 the same
		// local day is Feb 1 in UTC.
		{"periods are UTC, not local", time.Date(2025, 2, 1, 7, 30, 0, 0, time.FixedZone("UTC+8", 8*3600)), 9*time.Hour + 30*time.Minute, 2, 2},
		{"local midnight is no rollover", time.Date(2025, 2, 1, 23, 30, 0, 0, time.FixedZone("UTC+8", 8*3600)), time.Hour, 3, 3},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fc := clock.NewFake(tc.start)
			s := NewSpend(fc)
			s.Add(ScopeUpstream, "u", 1)
			if d, m := s.Total(ScopeUpstream, "u", PeriodDay), s.Total(ScopeUpstream, "u", PeriodMonth); d != 1 || m != 1 {
				t.Fatalf("before: day %v month %v, want 1 1", d, m)
			}
			fc.Advance(tc.advance)
			s.Add(ScopeUpstream, "u", 2)
			if d, m := s.Total(ScopeUpstream, "u", PeriodDay), s.Total(ScopeUpstream, "u", PeriodMonth); d != tc.wantDay || m != tc.wantMonth {
				t.Fatalf("after: day %v month %v, want %v %v", d, m, tc.wantDay, tc.wantMonth)
			}
		})
	}
}

func TestSpendTotalsReadAcrossRollover(t *testing.T) {
	fc := clock.NewFake(time.Date(2025, 1, 31, 12, 0, 0, 0, time.UTC))
	s := NewSpend(fc)
	s.Add(ScopeKey, "team-a", 5)
	fc.Advance(24 * time.Hour) // Feb 1, nothing added yet
	if d, m := s.Total(ScopeKey, "team-a", PeriodDay), s.Total(ScopeKey, "team-a", ""); d != 0 || m != 0 {
		t.Fatalf("a new day and month read day %v month %v, want 0 0", d, m)
	}
}

func TestSpendScopesAndNamesAreSeparate(t *testing.T) {
	s := NewSpend(clock.NewFake(t0))
	s.Add(ScopeUpstream, "x", 1)
	s.Add(ScopeKey, "x", 2)
	s.Add(ScopeKey, "y", 4)
	s.Add(ScopeKey, "y", 0)           // ignored
	s.Add(ScopeKey, "y", -3)          // ignored
	s.Add(ScopeKey, "y", math.NaN())  // ignored
	s.Add(ScopeKey, "y", math.Inf(1)) // ignored
	for _, c := range []struct {
		scope Scope
		name  string
		want  float64
	}{{ScopeUpstream, "x", 1}, {ScopeKey, "x", 2}, {ScopeKey, "y", 4}, {ScopeUpstream, "y", 0}} {
		if got := s.Total(c.scope, c.name, PeriodMonth); got != c.want {
			t.Errorf("Total(%s, %s) = %v, want %v", c.scope, c.name, got, c.want)
		}
	}
}

func TestSpendExceeded(t *testing.T) {
	tests := []struct {
		name  string
		spent float64
		limit config.SpendLimit
		want  bool
	}{
		{"no limit", 1e6, config.SpendLimit{USD: 0, Period: PeriodMonth}, false},
		{"under", 9.99, config.SpendLimit{USD: 10, Period: PeriodMonth}, false},
		{"exactly at", 10, config.SpendLimit{USD: 10, Period: PeriodMonth}, true},
		{"over", 12, config.SpendLimit{USD: 10, Period: PeriodDay}, true},
		{"empty period is month", 12, config.SpendLimit{USD: 10}, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSpend(clock.NewFake(t0))
			s.Add(ScopeKey, "k", tc.spent)
			if got := s.Exceeded(ScopeKey, "k", tc.limit); got != tc.want {
				t.Fatalf("Exceeded = %v, want %v", got, tc.want)
			}
		})
	}
	// A day limit ignores yesterday; a month limit does not.
	fc := clock.NewFake(time.Date(2025, 1, 10, 20, 0, 0, 0, time.UTC))
	s := NewSpend(fc)
	s.Add(ScopeUpstream, "u", 10)
	fc.Advance(6 * time.Hour)
	if s.Exceeded(ScopeUpstream, "u", config.SpendLimit{USD: 5, Period: PeriodDay}) {
		t.Error("yesterday's spend exceeded today's day limit")
	}
	if !s.Exceeded(ScopeUpstream, "u", config.SpendLimit{USD: 5, Period: PeriodMonth}) {
		t.Error("this month's spend did not exceed the month limit")
	}
}

func openSQLite(t *testing.T, path string) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), path)
	if err != nil {
		t.Fatalf("opening %s: %v", path, err)
	}
	return st
}

func TestSpendPersistsThroughSQLite(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "switchyard.db")
	fc := clock.NewFake(time.Date(2025, 1, 30, 9, 0, 0, 0, time.UTC))

	st := openSQLite(t, path)
	s := NewSpend(fc)
	s.Add(ScopeUpstream, "openai-main", 1.25)
	s.Add(ScopeKey, "team-a", 1.25)
	s.Add(ScopeTeam, "research", 1.25)
	if err := s.Flush(ctx, st); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	fc.Advance(24 * time.Hour) // Jan 31
	s.Add(ScopeUpstream, "openai-main", 0.5)
	s.Add(ScopeUpstream, "openai-main", 0.25)
	s.Add(ScopeKey, "team-a", 0.75)
	s.Add(ScopeTeam, "research", 0.75)
	if s.Pending() != 3 {
		t.Fatalf("Pending = %d, want 3 (one per scope and name for the day)", s.Pending())
	}
	if err := s.Flush(ctx, st); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	if s.Pending() != 0 {
		t.Fatalf("Pending = %d after a good flush, want 0", s.Pending())
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	// A restart: a new Spend seeded from a reopened store.
	st = openSQLite(t, path)
	defer st.Close()
	restarted := NewSpend(fc)
	totals, err := st.LoadSpend(ctx, restarted.LoadSince())
	if err != nil {
		t.Fatalf("LoadSpend: %v", err)
	}
	restarted.Load(totals)
	for _, c := range []struct {
		scope      Scope
		name       string
		day, month float64
	}{{ScopeUpstream, "openai-main", 0.75, 2}, {ScopeKey, "team-a", 0.75, 2}, {ScopeTeam, "research", 0.75, 2}} {
		if d, m := restarted.Total(c.scope, c.name, PeriodDay), restarted.Total(c.scope, c.name, PeriodMonth); !near(d, c.day) || !near(m, c.month) {
			t.Errorf("after reopen %s %s: day %v month %v, want %v %v", c.scope, c.name, d, m, c.day, c.month)
		}
	}
	if restarted.Pending() != 0 {
		t.Fatalf("Load queued %d amounts for the store, want 0", restarted.Pending())
	}
	// Spending goes on from the loaded totals, and February starts at 0.
	restarted.Add(ScopeKey, "team-a", 1)
	if m := restarted.Total(ScopeKey, "team-a", PeriodMonth); !near(m, 3) {
		t.Fatalf("month after another dollar = %v, want 3", m)
	}
	fc.Advance(24 * time.Hour)
	feb := NewSpend(fc)
	totals, err = st.LoadSpend(ctx, feb.LoadSince())
	if err != nil || len(totals) != 0 {
		t.Fatalf("LoadSpend since Feb 1 = %v, %v, want none", totals, err)
	}
}

func TestSpendLoadIgnoresOtherPeriods(t *testing.T) {
	fc := clock.NewFake(time.Date(2025, 3, 14, 12, 0, 0, 0, time.UTC))
	s := NewSpend(fc)
	day := func(m time.Month, d int) time.Time { return time.Date(2025, m, d, 0, 0, 0, 0, time.UTC) }
	s.Load([]store.SpendTotal{
		{Scope: "key", Name: "k", PeriodStart: day(2, 28), USD: 100}, // last month
		{Scope: "key", Name: "k", PeriodStart: day(3, 1), USD: 1},
		{Scope: "key", Name: "k", PeriodStart: day(3, 14), USD: 2},
		{Scope: "key", Name: "k", PeriodStart: day(3, 14), USD: math.NaN()},
		{Scope: "upstream", Name: "k", PeriodStart: day(3, 14), USD: 4},
	})
	if d, m := s.Total(ScopeKey, "k", PeriodDay), s.Total(ScopeKey, "k", PeriodMonth); d != 2 || m != 3 {
		t.Fatalf("key k: day %v month %v, want 2 3", d, m)
	}
	if d := s.Total(ScopeUpstream, "k", PeriodDay); d != 4 {
		t.Fatalf("upstream k: day %v, want 4", d)
	}
}

// fakeSpendWriter records AddSpend batches; while err is set it fails them.
type fakeSpendWriter struct {
	mu      sync.Mutex // guards batches and err
	batches [][]store.SpendDelta
	err     error
}

func (f *fakeSpendWriter) AddSpend(_ context.Context, deltas []store.SpendDelta) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	f.batches = append(f.batches, slices.Clone(deltas))
	return nil
}

func (f *fakeSpendWriter) setErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

// sum returns the USD written per "scope/name".
func (f *fakeSpendWriter) sum() map[string]float64 {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := map[string]float64{}
	for _, b := range f.batches {
		for _, d := range b {
			out[d.Scope+"/"+d.Name] += d.USD
		}
	}
	return out
}

func TestSpendFailedFlushKeepsDeltas(t *testing.T) {
	ctx := context.Background()
	s := NewSpend(clock.NewFake(t0))
	w := &fakeSpendWriter{err: errors.New("disk full")}
	s.Add(ScopeUpstream, "u", 1)
	err := s.Flush(ctx, w)
	if err == nil || !errors.Is(err, w.err) {
		t.Fatalf("Flush = %v, want the store's error wrapped", err)
	}
	s.Add(ScopeUpstream, "u", 2) // merges with the kept delta
	s.Add(ScopeKey, "k", 4)
	if s.Pending() != 2 {
		t.Fatalf("Pending = %d, want 2", s.Pending())
	}
	w.setErr(nil)
	if err := s.Flush(ctx, w); err != nil {
		t.Fatal(err)
	}
	if got := w.sum(); got["upstream/u"] != 3 || got["key/k"] != 4 || len(got) != 2 {
		t.Fatalf("written %v, want upstream/u 3 and key/k 4, each once", got)
	}
	if err := s.Flush(ctx, w); err != nil || len(w.batches) != 1 {
		t.Fatalf("empty Flush = %v with %d batches, want no write", err, len(w.batches))
	}
}

func TestSpendFlushBatchesAndBounds(t *testing.T) {
	ctx := context.Background()
	s := NewSpend(clock.NewFake(t0))
	w := &fakeSpendWriter{err: errors.New("down")}
	for i := range MaxPendingSpend + 10 {
		s.Add(ScopeKey, fmt.Sprintf("k%05d", i), 1)
	}
	if s.Pending() != MaxPendingSpend || s.DroppedUSD() != 10 {
		t.Fatalf("Pending %d, dropped %v; want %d and 10", s.Pending(), s.DroppedUSD(), MaxPendingSpend)
	}
	// In-memory totals still count what could not be queued.
	if got := s.Total(ScopeKey, fmt.Sprintf("k%05d", MaxPendingSpend+5), PeriodDay); got != 1 {
		t.Fatalf("Total of a dropped delta's key = %v, want 1", got)
	}
	if err := s.Flush(ctx, w); err == nil {
		t.Fatal("Flush to a failing store succeeded")
	}
	w.setErr(nil)
	if err := s.Flush(ctx, w); err != nil {
		t.Fatal(err)
	}
	if len(w.batches) != MaxPendingSpend/spendBatch {
		t.Fatalf("%d batches, want %d of %d", len(w.batches), MaxPendingSpend/spendBatch, spendBatch)
	}
	var names []string
	for i, b := range w.batches {
		if len(b) != spendBatch {
			t.Fatalf("batch %d holds %d deltas, want %d", i, len(b), spendBatch)
		}
		for _, d := range b {
			names = append(names, d.Name)
		}
	}
	if !slices.IsSorted(names) {
		t.Fatal("deltas were not written in scope, name, day order")
	}
}

func TestSpendFlushPartialFailureRequeuesTheRest(t *testing.T) {
	ctx := context.Background()
	s := NewSpend(clock.NewFake(t0))
	for i := range spendBatch + 10 {
		s.Add(ScopeKey, fmt.Sprintf("k%05d", i), 1)
	}
	w := &failAfterWriter{ok: 1}
	if err := s.Flush(ctx, w); err == nil {
		t.Fatal("Flush succeeded although the second batch failed")
	}
	if s.Pending() != 10 {
		t.Fatalf("Pending = %d after the second batch failed, want 10", s.Pending())
	}
}

// failAfterWriter accepts ok batches, then fails.
type failAfterWriter struct{ ok int }

func (f *failAfterWriter) AddSpend(context.Context, []store.SpendDelta) error {
	if f.ok == 0 {
		return errors.New("gone")
	}
	f.ok--
	return nil
}

func TestSpendRunFlusher(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fc := clock.NewFake(t0)
		s := NewSpend(fc)
		w := &fakeSpendWriter{}
		var errs []error
		s.OnFlushError(func(err error) { errs = append(errs, err) })
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan struct{})
		go func() {
			s.RunFlusher(ctx, w, 5*time.Second)
			close(done)
		}()
		synctest.Wait()
		s.Add(ScopeUpstream, "u", 1)
		fc.Advance(5*time.Second - time.Nanosecond)
		synctest.Wait()
		if got := w.sum(); len(got) != 0 {
			t.Fatalf("flushed %v before the interval", got)
		}
		fc.Advance(time.Nanosecond)
		synctest.Wait()
		if got := w.sum(); got["upstream/u"] != 1 {
			t.Fatalf("after one interval: %v, want upstream/u 1", got)
		}

		w.setErr(errors.New("locked"))
		s.Add(ScopeUpstream, "u", 2)
		fc.Advance(5 * time.Second)
		synctest.Wait()
		if len(errs) != 1 || s.Pending() != 1 {
			t.Fatalf("failed flush: errors %v, pending %d; want 1 error and the delta kept", errs, s.Pending())
		}
		w.setErr(nil)
		s.Add(ScopeKey, "k", 4)
		cancel() // the last flush happens on the way out
		<-done
		s.OnFlushError(nil) // removing the handler is allowed
		if got := w.sum(); got["upstream/u"] != 3 || got["key/k"] != 4 {
			t.Fatalf("after shutdown: %v, want upstream/u 3, key/k 4", got)
		}
	})
}

func TestSpendRaise(t *testing.T) {
	clk := clock.NewFake(time.Date(2026, 3, 15, 12, 0, 0, 0, time.UTC))
	tests := []struct {
		name             string
		local            float64
		day, month       float64
		wantDay, wantMon float64
	}{
		{"shared totals above local win", 1, 3, 5, 3, 5},
		{"local above shared stays", 4, 3, 3, 4, 4},
		{"NaN and infinities are ignored", 2, math.NaN(), math.Inf(1), 2, 2},
		{"negative is ignored", 2, -1, -1, 2, 2},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := NewSpend(clk)
			s.Add(ScopeUpstream, "u", tc.local)
			s.Raise(ScopeUpstream, "u", tc.day, tc.month)
			if d, m := s.Total(ScopeUpstream, "u", PeriodDay), s.Total(ScopeUpstream, "u", PeriodMonth); d != tc.wantDay || m != tc.wantMon {
				t.Fatalf("day %v month %v, want %v %v", d, m, tc.wantDay, tc.wantMon)
			}
			if s.Pending() != 1 {
				t.Fatalf("Raise queued amounts for the store: %d pending", s.Pending())
			}
		})
	}
}
