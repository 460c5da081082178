// Package metrics holds the gateway's Prometheus collectors and serves them
// on GET /metrics (docs/metrics.md).
//
// Every Metrics value owns a private prometheus.Registry; nothing is
// registered with the global default registry, so two gateways in one
// process never see each other's series.
//
// Recording methods (Request, Attempt, TTFT, …) sit on the proxy's hot path.
// Each turns its names into bounded label values and then finds the
// pre-resolved child collector in a copy-on-write cache read through one
// atomic load, so a call that meets a label combination seen before costs a
// few map lookups, an atomic add and no allocation (bench_test.go).
//
// Label cardinality is bounded: an upstream, model, route or key name that is
// not in the configured sets (read from callbacks the gateway supplies,
// re-read by Refresh, on every scrape and, at most once per refresh
// interval, when a recording call meets an unknown name) is recorded as
// "other"; an empty name is recorded as "none". Class labels (status class,
// attempt outcome, error class, limit type, affinity result) take a fixed set
// of values and anything else becomes "other". Session ids, request ids and
// other per-request values never become labels. When a name leaves the
// configuration its series are deleted at the next refresh.
//
// Per-upstream gauges (in-flight, queue depth, breaker state, cooldown) are
// not pushed: a custom collector reads them from a StateSource at scrape
// time. docs/metrics.md lists every metric; docs/grafana-dashboard.json is a
// ready dashboard.
package metrics
