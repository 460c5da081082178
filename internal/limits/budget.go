package limits

import (
	"math"
	"sync"
	"time"

	"switchyard/internal/clock"
)

// Retry budget parameters (defaults.retry_budget,
// docs/config.md#defaults-and-routes).
const (
	// RetryBudgetWindow is the window requests and retries are counted over.
	RetryBudgetWindow = 10 * time.Second
	// MinRetriesPerSecond is the floor of the retry budget: this many
	// retries per second are allowed whatever the request rate.
	MinRetriesPerSecond = 3
	// MinHedgesPerSecond is the floor of the hedge budget
	// (docs/routing.md#hedged-requests).
	MinHedgesPerSecond = 1
	// budgetBuckets divides RetryBudgetWindow: 100 buckets of 100 ms.
	budgetBuckets = 100
)

// RetryBudget caps retries at a share of the request rate, so that a
// failing upstream cannot make every request try all its candidates and
// multiply the load (retry_budget: "retries may add at most 20% to the
// request rate, at least 3/s"). Over the last RetryBudgetWindow, a retry is
// allowed while the retries, itself included, stay within
// max(ratio × requests, MinRetriesPerSecond × 10 s). Windows are sliding,
// in 100 ms buckets. The same budget, with its own ratio and a floor of
// MinHedgesPerSecond, caps hedged attempts (NewHedgeBudget).
type RetryBudget struct {
	clk   clock.Clock
	floor float64 // extra attempts per second allowed whatever the rate

	mu      sync.Mutex // guards ratio, reqs and retries
	ratio   float64
	reqs    window
	retries window
}

// NewRetryBudget returns a budget allowing retries up to ratio (0–1, e.g.
// 0.2) of the requests; a ratio that is negative or not a number counts as
// 0, leaving only the floor.
func NewRetryBudget(clk clock.Clock, ratio float64) *RetryBudget {
	return newBudget(clk, ratio, MinRetriesPerSecond)
}

// NewHedgeBudget returns a budget allowing hedges up to ratio of the
// requests, at least MinHedgesPerSecond (hedge.budget).
func NewHedgeBudget(clk clock.Clock, ratio float64) *RetryBudget {
	return newBudget(clk, ratio, MinHedgesPerSecond)
}

func newBudget(clk clock.Clock, ratio, floor float64) *RetryBudget {
	width := RetryBudgetWindow / budgetBuckets
	return &RetryBudget{clk: clk, floor: floor, ratio: sanitizeRatio(ratio), reqs: newWindow(budgetBuckets, width), retries: newWindow(budgetBuckets, width)}
}

// SetRatio changes the budget's ratio (a reload), keeping its counts.
func (b *RetryBudget) SetRatio(ratio float64) {
	b.mu.Lock()
	b.ratio = sanitizeRatio(ratio)
	b.mu.Unlock()
}

func sanitizeRatio(ratio float64) float64 {
	if !(ratio > 0) || math.IsInf(ratio, 1) {
		return 0
	}
	return ratio
}

// Request records one client request (not its retries).
func (b *RetryBudget) Request() {
	now := b.clk.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reqs.add(b.reqs.advance(now), 1)
}

// TryRetry reports whether one more retry fits the budget and, if so,
// counts it.
func (b *RetryBudget) TryRetry() bool {
	now := b.clk.Now()
	b.mu.Lock()
	defer b.mu.Unlock()
	b.reqs.advance(now)
	e := b.retries.advance(now)
	allowed := max(b.ratio*float64(b.reqs.total), b.floor*RetryBudgetWindow.Seconds())
	if float64(b.retries.total+1) > allowed {
		return false
	}
	b.retries.add(e, 1)
	return true
}
