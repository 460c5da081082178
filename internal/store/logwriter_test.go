package store_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/store"
)

// fakeStore records request-log batches. When block is set, every insert
// waits for a receive from it (or ctx). err, when set, fails every insert.
type fakeStore struct {
	block chan struct{}

	mu      sync.Mutex // guards batches and err
	batches [][]store.RequestLog
	err     error
}

var _ store.Store = (*fakeStore)(nil)

func (f *fakeStore) InsertRequestLogs(ctx context.Context, logs []store.RequestLog) error {
	if f.block != nil {
		select {
		case <-f.block:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	f.batches = append(f.batches, slices.Clone(logs))
	return nil
}

func (f *fakeStore) setErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

// sizes returns the length of every batch stored so far.
func (f *fakeStore) sizes() []int {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []int
	for _, b := range f.batches {
		out = append(out, len(b))
	}
	return out
}

// ids returns the ids of every stored log, in storage order.
func (f *fakeStore) ids() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for _, b := range f.batches {
		for _, l := range b {
			out = append(out, l.ID)
		}
	}
	return out
}

func (f *fakeStore) Ping(context.Context) error                            { return nil }
func (f *fakeStore) UpsertUpstream(context.Context, config.Upstream) error { return nil }
func (f *fakeStore) DeleteUpstream(context.Context, string) error          { return nil }
func (f *fakeStore) ListUpstreams(context.Context) ([]config.Upstream, error) {
	return nil, nil
}
func (f *fakeStore) UpsertKey(context.Context, config.Key) error        { return nil }
func (f *fakeStore) DeleteKey(context.Context, string) error            { return nil }
func (f *fakeStore) ListKeys(context.Context) ([]config.Key, error)     { return nil, nil }
func (f *fakeStore) UpsertRoute(context.Context, config.Route) error    { return nil }
func (f *fakeStore) DeleteRoute(context.Context, string) error          { return nil }
func (f *fakeStore) ListRoutes(context.Context) ([]config.Route, error) { return nil, nil }
func (f *fakeStore) Close() error                                       { return nil }
func (f *fakeStore) RecentRequestLogs(context.Context, int) ([]store.RequestLog, error) {
	return nil, nil
}
func (f *fakeStore) RequestLog(context.Context, string) (store.RequestLog, error) {
	return store.RequestLog{}, store.ErrNotFound
}
func (f *fakeStore) UsageTotals(context.Context, time.Time) ([]store.UsageTotal, error) {
	return nil, nil
}
func (f *fakeStore) AddSpend(context.Context, []store.SpendDelta) error { return nil }
func (f *fakeStore) LoadSpend(context.Context, time.Time) ([]store.SpendTotal, error) {
	return nil, nil
}

var epoch = time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)

func logN(i int) store.RequestLog {
	return store.RequestLog{ID: fmt.Sprintf("r%03d", i), Time: epoch.Add(time.Duration(i) * time.Millisecond), Status: 200}
}

func idsUpTo(n int) []string {
	var out []string
	for i := range n {
		out = append(out, logN(i).ID)
	}
	return out
}

// enqueue enqueues logs [from, to) and fails the test when one is refused.
func enqueue(t *testing.T, w *store.LogWriter, from, to int) {
	t.Helper()
	for i := from; i < to; i++ {
		if !w.Enqueue(logN(i)) {
			t.Fatalf("Enqueue(%d) = false, want true", i)
		}
	}
}

// startRun starts w.Run in the bubble and returns a func that cancels it and
// waits for it to return.
func startRun(w *store.LogWriter) (stop func()) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.Run(ctx)
	}()
	return func() {
		cancel()
		<-done
	}
}

func TestLogWriterBatchesBySize(t *testing.T) {
	tests := []struct {
		name      string
		batchSize int
		n         int
		wantRun   []int // batch sizes written by Run before Close
		wantAll   []int // after Close
	}{
		{"exact multiple", 3, 6, []int{3, 3}, []int{3, 3}},
		{"remainder left for close", 3, 7, []int{3, 3}, []int{3, 3, 1}},
		{"below one batch", 5, 4, nil, []int{4}},
		{"batch of one", 1, 3, []int{1, 1, 1}, []int{1, 1, 1}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fs := &fakeStore{}
				w := store.NewLogWriter(fs, store.LogWriterOptions{
					BatchSize: tt.batchSize, FlushInterval: time.Hour, Clock: clock.NewFake(epoch),
				})
				stop := startRun(w)
				defer stop()
				enqueue(t, w, 0, tt.n)
				synctest.Wait()
				if got := fs.sizes(); !slices.Equal(got, tt.wantRun) {
					t.Errorf("batches before Close = %v, want %v", got, tt.wantRun)
				}
				if err := w.Close(context.Background()); err != nil {
					t.Fatalf("Close: %v", err)
				}
				if got := fs.sizes(); !slices.Equal(got, tt.wantAll) {
					t.Errorf("batches after Close = %v, want %v", got, tt.wantAll)
				}
				if got := fs.ids(); !slices.Equal(got, idsUpTo(tt.n)) {
					t.Errorf("stored ids = %v, want %v in order", got, idsUpTo(tt.n))
				}
				if w.Written() != uint64(tt.n) || w.Dropped() != 0 {
					t.Errorf("Written, Dropped = %d, %d, want %d, 0", w.Written(), w.Dropped(), tt.n)
				}
			})
		})
	}
}

func TestLogWriterFlushesOnInterval(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := &fakeStore{}
		clk := clock.NewFake(epoch)
		w := store.NewLogWriter(fs, store.LogWriterOptions{BatchSize: 100, FlushInterval: time.Second, Clock: clk})
		stop := startRun(w)
		defer stop()

		steps := []struct {
			enqueue int           // logs to enqueue before advancing
			advance time.Duration // fake time to advance
			want    []int         // batch sizes after the step
		}{
			{enqueue: 2, advance: 999 * time.Millisecond, want: nil},
			{enqueue: 0, advance: time.Millisecond, want: []int{2}},
			{enqueue: 0, advance: time.Second, want: []int{2}}, // empty tick writes nothing
			{enqueue: 3, advance: 500 * time.Millisecond, want: []int{2}},
			{enqueue: 1, advance: 500 * time.Millisecond, want: []int{2, 4}},
		}
		next := 0
		for i, s := range steps {
			enqueue(t, w, next, next+s.enqueue)
			next += s.enqueue
			synctest.Wait() // Run has taken every log and waits on its timer
			clk.Advance(s.advance)
			synctest.Wait()
			if got := fs.sizes(); !slices.Equal(got, s.want) {
				t.Fatalf("step %d: batches = %v, want %v", i, got, s.want)
			}
		}
		if w.Written() != uint64(next) {
			t.Errorf("Written = %d, want %d", w.Written(), next)
		}
	})
}

func TestLogWriterCloseFlushesRest(t *testing.T) {
	tests := []struct {
		name string
		// setup starts (or not) Run and returns after the logs are enqueued.
		setup func(w *store.LogWriter) (cleanup func())
	}{
		{"run still running", func(w *store.LogWriter) func() {
			stop := startRun(w)
			return stop
		}},
		{"run context ended before close", func(w *store.LogWriter) func() {
			stop := startRun(w)
			synctest.Wait()
			stop()
			return func() {}
		}},
		{"run never started", func(*store.LogWriter) func() { return func() {} }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			synctest.Test(t, func(t *testing.T) {
				fs := &fakeStore{}
				w := store.NewLogWriter(fs, store.LogWriterOptions{
					BatchSize: 4, FlushInterval: time.Hour, Clock: clock.NewFake(epoch),
				})
				enqueue(t, w, 0, 10)
				cleanup := tt.setup(w)
				defer cleanup()
				if err := w.Close(context.Background()); err != nil {
					t.Fatalf("Close: %v", err)
				}
				if got := fs.ids(); !slices.Equal(got, idsUpTo(10)) {
					t.Errorf("stored ids = %v, want %v", got, idsUpTo(10))
				}
				for _, n := range fs.sizes() {
					if n > 4 {
						t.Errorf("batch of %d logs exceeds BatchSize 4", n)
					}
				}
				if w.Written() != 10 || w.Dropped() != 0 {
					t.Errorf("Written, Dropped = %d, %d, want 10, 0", w.Written(), w.Dropped())
				}
				if err := w.Close(context.Background()); err != nil {
					t.Errorf("second Close: %v", err)
				}
				if w.Enqueue(logN(99)) {
					t.Errorf("Enqueue after Close = true, want false")
				}
				if w.Dropped() != 1 {
					t.Errorf("Dropped after refused Enqueue = %d, want 1", w.Dropped())
				}
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				w.Run(ctx) // returns at once after Close
			})
		})
	}
}

func TestLogWriterFullBufferDrops(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := &fakeStore{block: make(chan struct{})}
		w := store.NewLogWriter(fs, store.LogWriterOptions{
			BufferSize: 3, BatchSize: 1, FlushInterval: time.Hour, Clock: clock.NewFake(epoch),
		})
		stop := startRun(w)
		defer stop()

		enqueue(t, w, 0, 1)
		synctest.Wait() // Run holds log 0 and blocks in InsertRequestLogs
		enqueue(t, w, 1, 4)
		for i := 4; i < 9; i++ {
			// Enqueue returning here at all shows it does not block; a
			// blocked Enqueue would deadlock the bubble and fail the test.
			if w.Enqueue(logN(i)) {
				t.Fatalf("Enqueue(%d) on a full buffer = true, want false", i)
			}
		}
		if got := w.Dropped(); got != 5 {
			t.Errorf("Dropped = %d, want 5", got)
		}
		close(fs.block) // unblock every insert
		if err := w.Close(context.Background()); err != nil {
			t.Fatalf("Close: %v", err)
		}
		if got := fs.ids(); !slices.Equal(got, idsUpTo(4)) {
			t.Errorf("stored ids = %v, want %v", got, idsUpTo(4))
		}
		if w.Written() != 4 || w.Dropped() != 5 {
			t.Errorf("Written, Dropped = %d, %d, want 4, 5", w.Written(), w.Dropped())
		}
	})
}

func TestLogWriterInsertErrors(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		errBoom := errors.New("disk on fire")
		fs := &fakeStore{err: errBoom}
		var (
			mu   sync.Mutex // guards errs
			errs []error
		)
		w := store.NewLogWriter(fs, store.LogWriterOptions{
			BatchSize: 3, FlushInterval: time.Hour, Clock: clock.NewFake(epoch),
			OnError: func(err error) {
				mu.Lock()
				defer mu.Unlock()
				errs = append(errs, err)
			},
		})
		stop := startRun(w)
		defer stop()

		enqueue(t, w, 0, 6) // two failing batches
		synctest.Wait()
		if w.Dropped() != 6 || w.Written() != 0 {
			t.Errorf("after failures: Written, Dropped = %d, %d, want 0, 6", w.Written(), w.Dropped())
		}
		mu.Lock()
		if len(errs) != 2 {
			t.Errorf("OnError called %d times, want 2", len(errs))
		}
		for _, err := range errs {
			if !errors.Is(err, errBoom) {
				t.Errorf("OnError got %v, want it to wrap %v", err, errBoom)
			}
		}
		mu.Unlock()

		fs.setErr(nil) // the writer keeps going once the store recovers
		enqueue(t, w, 6, 9)
		synctest.Wait()
		if w.Dropped() != 6 || w.Written() != 3 {
			t.Errorf("after recovery: Written, Dropped = %d, %d, want 3, 6", w.Written(), w.Dropped())
		}
		if got, want := fs.ids(), []string{"r006", "r007", "r008"}; !slices.Equal(got, want) {
			t.Errorf("stored ids = %v, want %v", got, want)
		}
	})
}

func TestLogWriterCloseBoundedByContext(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		fs := &fakeStore{block: make(chan struct{})}
		w := store.NewLogWriter(fs, store.LogWriterOptions{
			BatchSize: 2, FlushInterval: time.Hour, Clock: clock.NewFake(epoch),
		})
		stop := startRun(w)
		enqueue(t, w, 0, 2) // one batch, stuck in the store
		synctest.Wait()
		enqueue(t, w, 2, 5) // buffered (Run may hold one in its partial batch)

		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		err := w.Close(ctx)
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Fatalf("Close with a stuck store = %v, want DeadlineExceeded", err)
		}
		close(fs.block)
		stop() // Run finishes its batch, then drops its partial one
		if w.Written() != 2 || w.Dropped() != 3 {
			t.Errorf("Written, Dropped = %d, %d, want 2, 3", w.Written(), w.Dropped())
		}
	})
}

func TestLogWriterDefaults(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		// Zero options: real clock (the bubble's fake time), 1s interval.
		fs := &fakeStore{}
		w := store.NewLogWriter(fs, store.LogWriterOptions{})
		stop := startRun(w)
		defer stop()
		enqueue(t, w, 0, store.DefaultLogBatchSize+1)
		synctest.Wait()
		if got, want := fs.sizes(), []int{store.DefaultLogBatchSize}; !slices.Equal(got, want) {
			t.Fatalf("batches = %v, want %v", got, want)
		}
		time.Sleep(store.DefaultLogFlushInterval) // bubble time: returns when the interval has passed
		synctest.Wait()
		if got, want := fs.sizes(), []int{store.DefaultLogBatchSize, 1}; !slices.Equal(got, want) {
			t.Errorf("batches after the interval = %v, want %v", got, want)
		}
	})
}

// discardStore accepts every batch.
type discardStore struct{ fakeStore }

func (*discardStore) InsertRequestLogs(context.Context, []store.RequestLog) error { return nil }

func BenchmarkLogWriterEnqueue(b *testing.B) {
	l := store.RequestLog{
		ID: "req-0123456789", Time: epoch, Key: "team-a", Model: "gpt-4o", Upstream: "openai-main",
		Status: 200, Attempts: 1, Stream: true, Latency: time.Second, TTFT: 200 * time.Millisecond,
		InputTokens: 1000, OutputTokens: 200,
	}
	for _, mode := range []string{"draining", "full"} {
		for _, buffer := range []int{1000, 10000} {
			b.Run(fmt.Sprintf("%s/buffer=%d", mode, buffer), func(b *testing.B) {
				w := store.NewLogWriter(&discardStore{}, store.LogWriterOptions{BufferSize: buffer})
				ctx, cancel := context.WithCancel(context.Background())
				defer cancel()
				if mode == "draining" {
					go w.Run(ctx)
				} else {
					for w.Enqueue(l) {
					}
				}
				b.ReportAllocs()
				b.ResetTimer()
				b.RunParallel(func(pb *testing.PB) {
					for pb.Next() {
						w.Enqueue(l)
					}
				})
				b.StopTimer()
				_ = w.Close(ctx)
			})
		}
	}
}
