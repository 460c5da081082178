package limits

import (
	"cmp"
	"context"
	"fmt"
	"math"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/store"
)

// Scope says what a spend amount is charged to.
type Scope string

// Spend scopes (docs/reference.md#spend: spend per upstream and per key).
const (
	// ScopeUpstream charges an upstream; over its spend_limit it is filtered.
	ScopeUpstream Scope = "upstream"
	// ScopeKey charges a client key; over its spend_limit it gets 429
	// spend_limit_exceeded.
	ScopeKey Scope = "key"
)

// Spend periods (spend_limit.period). Periods are calendar days and months
// in UTC.
const (
	// PeriodDay is the UTC calendar day.
	PeriodDay = "day"
	// PeriodMonth is the UTC calendar month (the default).
	PeriodMonth = "month"
)

// Spend persistence parameters.
const (
	// DefaultSpendFlushInterval is RunFlusher's period when given ≤ 0.
	DefaultSpendFlushInterval = 5 * time.Second
	// MaxPendingSpend bounds the distinct (scope, name, day) amounts waiting
	// for the store. While the store is failing, amounts for keys beyond it
	// are not persisted (they still count in memory) and are reported by
	// DroppedUSD.
	MaxPendingSpend = 10000
	// spendBatch is the most deltas given to one AddSpend.
	spendBatch = 500
	// finalFlushTimeout bounds RunFlusher's last flush after its context ends.
	finalFlushTimeout = 5 * time.Second
)

// SpendWriter is the part of a store Spend writes through; store.Store
// satisfies it.
type SpendWriter interface {
	// AddSpend adds deltas to the stored totals in one transaction.
	AddSpend(ctx context.Context, deltas []store.SpendDelta) error
}

var _ SpendWriter = store.Store(nil)

// Spend tracks the USD spent per upstream and per client key in the current
// UTC day and month, so quotas (spend_limit) can be checked on the hot path
// without I/O. Add counts an amount in memory and queues it for the store;
// Flush (or RunFlusher in the background) writes the queued amounts in
// batches, one total per UTC day, and Load seeds the totals from the store at
// start, so a restart does not reset a quota. A failed flush keeps its
// amounts for the next one, up to MaxPendingSpend distinct totals.
type Spend struct {
	clk clock.Clock

	mu         sync.Mutex // guards totals, pending and droppedUSD
	totals     map[spendKey]*spendTotals
	pending    map[pendingKey]float64
	droppedUSD float64

	flushMu sync.Mutex // serialises Flush, so batches reach the store in order

	onError atomic.Pointer[func(error)]
}

type spendKey struct {
	scope Scope
	name  string
}

// spendTotals is one scope and name's spend in the current periods.
type spendTotals struct {
	day, month       int64 // Unix seconds of the periods' starts
	dayUSD, monthUSD float64
}

// pendingKey names one stored total: a scope, name and UTC day.
type pendingKey struct {
	scope Scope
	name  string
	day   int64 // Unix seconds of the day's start
}

// NewSpend returns an empty Spend; clk decides the current day and month.
func NewSpend(clk clock.Clock) *Spend {
	return &Spend{clk: clk, totals: map[spendKey]*spendTotals{}, pending: map[pendingKey]float64{}}
}

// periodStarts returns the Unix seconds of the UTC day and month holding t.
func periodStarts(t time.Time) (day, month int64) {
	t = t.UTC()
	y, m, d := t.Date()
	return time.Date(y, m, d, 0, 0, 0, 0, time.UTC).Unix(), time.Date(y, m, 1, 0, 0, 0, 0, time.UTC).Unix()
}

// roll starts new periods when now's differ from the stored ones.
func (t *spendTotals) roll(day, month int64) {
	if t.day != day {
		t.day, t.dayUSD = day, 0
	}
	if t.month != month {
		t.month, t.monthUSD = month, 0
	}
}

// Add charges usd to scope's name in the current day and month and queues
// it for the store. A usd that is not a positive finite number is ignored.
func (s *Spend) Add(scope Scope, name string, usd float64) {
	if !(usd > 0) || math.IsInf(usd, 1) {
		return
	}
	day, month := periodStarts(s.clk.Now())
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.entryLocked(spendKey{scope, name})
	t.roll(day, month)
	t.dayUSD += usd
	t.monthUSD += usd
	s.queueLocked(pendingKey{scope, name, day}, usd)
}

func (s *Spend) entryLocked(k spendKey) *spendTotals {
	t := s.totals[k]
	if t == nil {
		t = &spendTotals{}
		s.totals[k] = t
	}
	return t
}

// queueLocked adds usd to the amount pending for k, within MaxPendingSpend.
func (s *Spend) queueLocked(k pendingKey, usd float64) {
	if v, ok := s.pending[k]; ok {
		s.pending[k] = v + usd
		return
	}
	if len(s.pending) >= MaxPendingSpend {
		s.droppedUSD += usd
		return
	}
	s.pending[k] = usd
}

// Total returns what scope's name spent in the current period: PeriodDay,
// or PeriodMonth (also for "" and any other value).
func (s *Spend) Total(scope Scope, name, period string) float64 {
	day, month := periodStarts(s.clk.Now())
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.totals[spendKey{scope, name}]
	switch {
	case t == nil:
		return 0
	case period == PeriodDay:
		if t.day != day {
			return 0
		}
		return t.dayUSD
	default:
		if t.month != month {
			return 0
		}
		return t.monthUSD
	}
}

// Exceeded reports whether scope's name has spent limit.USD or more in the
// current limit.Period; a limit of 0 (or less) never is.
func (s *Spend) Exceeded(scope Scope, name string, limit config.SpendLimit) bool {
	return limit.USD > 0 && s.Total(scope, name, limit.Period) >= limit.USD
}

// LoadSince returns the earliest period start Load needs: the start of the
// current UTC month. Pass it to the store's LoadSpend.
func (s *Spend) LoadSince() time.Time {
	_, month := periodStarts(s.clk.Now())
	return time.Unix(month, 0).UTC()
}

// Load adds stored totals (from the store's LoadSpend) to the current day
// and month; totals of other periods are ignored. Call it once at start,
// before traffic: the amounts loaded are not queued for the store again.
func (s *Spend) Load(totals []store.SpendTotal) {
	day, month := periodStarts(s.clk.Now())
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range totals {
		if math.IsNaN(st.USD) || math.IsInf(st.USD, 0) {
			continue
		}
		d, m := periodStarts(st.PeriodStart)
		if m != month {
			continue
		}
		t := s.entryLocked(spendKey{Scope(st.Scope), st.Name})
		t.roll(day, month)
		t.monthUSD += st.USD
		if d == day {
			t.dayUSD += st.USD
		}
	}
}

// Raise lifts scope's name's totals for the current day and month to at
// least dayUSD and monthUSD: the totals all gateway instances counted in
// shared state (state.driver: redis), which include this one's. Nothing is
// queued for the store — each instance stores only what it charged itself.
// Amounts that are not finite and positive are ignored.
func (s *Spend) Raise(scope Scope, name string, dayUSD, monthUSD float64) {
	day, month := periodStarts(s.clk.Now())
	s.mu.Lock()
	defer s.mu.Unlock()
	t := s.entryLocked(spendKey{scope, name})
	t.roll(day, month)
	if dayUSD > t.dayUSD && !math.IsInf(dayUSD, 1) {
		t.dayUSD = dayUSD
	}
	if monthUSD > t.monthUSD && !math.IsInf(monthUSD, 1) {
		t.monthUSD = monthUSD
	}
}

// Pending returns how many stored totals have amounts waiting for a flush.
func (s *Spend) Pending() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.pending)
}

// DroppedUSD returns the USD that could not be queued for the store
// (MaxPendingSpend reached while flushes failed). It still counted in memory.
func (s *Spend) DroppedUSD() float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.droppedUSD
}

// OnFlushError sets the function RunFlusher tells of every failed flush
// (nil: none). It runs on the flusher's goroutine and must not block long.
func (s *Spend) OnFlushError(f func(error)) {
	if f == nil {
		s.onError.Store(nil)
		return
	}
	s.onError.Store(&f)
}

// Flush writes every pending amount to w, in batches of at most 500 deltas
// ordered by scope, name and day. When a batch fails, it and the batches
// after it go back to the pending amounts for the next flush, and Flush
// returns the error. Concurrent calls are serialised. Never call it on the
// hot path: it waits on the store.
func (s *Spend) Flush(ctx context.Context, w SpendWriter) error {
	s.flushMu.Lock()
	defer s.flushMu.Unlock()
	s.mu.Lock()
	if len(s.pending) == 0 {
		s.mu.Unlock()
		return nil
	}
	batch := make([]store.SpendDelta, 0, len(s.pending))
	for k, usd := range s.pending {
		batch = append(batch, store.SpendDelta{
			Scope: string(k.scope), Name: k.name, PeriodStart: time.Unix(k.day, 0).UTC(), USD: usd,
		})
	}
	clear(s.pending)
	s.mu.Unlock()
	slices.SortFunc(batch, func(a, b store.SpendDelta) int {
		return cmp.Or(cmp.Compare(a.Scope, b.Scope), cmp.Compare(a.Name, b.Name), a.PeriodStart.Compare(b.PeriodStart))
	})
	for i := 0; i < len(batch); i += spendBatch {
		if err := w.AddSpend(ctx, batch[i:min(i+spendBatch, len(batch))]); err != nil {
			s.requeue(batch[i:])
			return fmt.Errorf("flushing spend: writing %d deltas: %w", len(batch)-i, err)
		}
	}
	return nil
}

// requeue puts deltas that failed to be written back in the pending amounts.
func (s *Spend) requeue(deltas []store.SpendDelta) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, d := range deltas {
		s.queueLocked(pendingKey{Scope(d.Scope), d.Name, d.PeriodStart.Unix()}, d.USD)
	}
}

// RunFlusher flushes to w every `every` (DefaultSpendFlushInterval when
// ≤ 0) on the Spend's clock until ctx ends, then flushes once more under a
// fresh 5 s deadline so a shutdown keeps what was spent. Failed flushes are
// reported to the OnFlushError function and retried on the next tick. Run it
// once, in its own goroutine.
func (s *Spend) RunFlusher(ctx context.Context, w SpendWriter, every time.Duration) {
	if every <= 0 {
		every = DefaultSpendFlushInterval
	}
	for {
		select {
		case <-ctx.Done():
			fctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), finalFlushTimeout)
			s.report(s.Flush(fctx, w))
			cancel()
			return
		case <-s.clk.After(every):
			s.report(s.Flush(ctx, w))
		}
	}
}

func (s *Spend) report(err error) {
	if err == nil {
		return
	}
	if f := s.onError.Load(); f != nil {
		(*f)(err)
	}
}
