// Package balancer turns a snapshot of an upstream pool into an ordered
// attempt plan for one request.
//
// The balancer is pure: Plan reads the Candidates it is given (static settings
// plus a snapshot of live stats taken by the caller), never does I/O, never
// blocks on anything but its own short mutex, and never reads the wall clock
// except through the injected Options.Now. The proxy performs the attempts and
// reports outcomes elsewhere (internal/health, internal/limits).
//
// Plan groups candidates into priority tiers (lower first), drops the ones a
// filter rejects (recording which filter and the raw details), lets the
// route's Strategy order each tier's survivors, concatenates the tiers up to
// K = 1 + retries entries, and lists full-but-queueable candidates as
// Waitable after them. Every call yields a Decision, a JSON-serialisable
// record of all of it, whose reasons are put into words only when it is read
// or marshalled. See docs/reference.md#balancing and docs/routing.md.
//
// Strategies live one per file (strategy_<name>.go) and are registered by
// name in strategy.go; Plan does not know any of them: weighted-random (the
// default), smooth-wrr, round-robin, least-conn, p2c-ewma, adaptive and
// failover. Those that rank by a score share one top-K partial selection
// (rank.go). Plan costs two allocations whatever the strategy and pool size;
// docs/benchmarks.md has the numbers.
package balancer
