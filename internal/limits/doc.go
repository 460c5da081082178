// Package limits keeps the per-upstream and per-key limits that decide
// whether a request may go somewhere now
// (docs/reference.md#health-limits-and-quotas):
//
//   - Slots: max_concurrency slots per upstream and, with queue.enabled, a
//     strict FIFO wait for a slot (seed 000 queue_policy).
//   - Limiter: RPM/TPM accounting over a 60 s sliding window with
//     pre-dispatch reservations, limits learned from provider headers, and
//     the cooldown after a 429 (seed 002).
//   - Spend: USD per upstream and per client key per UTC day and month,
//     persisted asynchronously through the store.
//   - KeyLimiter: the per-key rpm limit.
//   - RetryBudget: the share of the request rate retries may add.
//
// Every type is safe for concurrent use, takes a clock.Clock for time and
// keeps its state per instance, so two gateways in one process never share
// it. Nothing here does I/O on the hot path: Spend writes through the store
// only from Flush and RunFlusher.
package limits
