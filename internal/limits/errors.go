package limits

import "errors"

// Errors Slots.Acquire returns, wrapped with the upstream's name. Classify
// with errors.Is; the proxy maps ErrQueueFull to 503 queue_full and
// ErrQueueTimeout to 503 queue_timeout (docs/reference.md#errors). A caller
// whose context ends while it is queued gets its context's error instead, never
// ErrQueueTimeout: context.Canceled or context.DeadlineExceeded, wrapping
// also the cause given to context.WithCancelCause (classify it with
// errors.Is). That is not an upstream failure.
var (
	// ErrConcurrencyFull means every slot of the upstream is taken and its
	// queue is disabled.
	ErrConcurrencyFull = errors.New("concurrency limit reached")
	// ErrQueueFull means every slot is taken and queue.max_length requests
	// are already waiting.
	ErrQueueFull = errors.New("queue full")
	// ErrQueueTimeout means no slot was handed over within queue.timeout.
	ErrQueueTimeout = errors.New("queue wait timed out")
	// ErrShed means a batch request was not queued, to leave the queue to
	// the others (limits.Shed): the proxy's skip reason "shed: batch",
	// and 429 overloaded when no other upstream takes it.
	ErrShed = errors.New("shed: batch")
)
