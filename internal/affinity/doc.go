// Package affinity keeps a conversation on the upstream that served it before,
// so that the provider's prompt cache and any per-account conversation state
// stay warm (docs/reference.md#session-affinity; seed 000 "会话亲和 (Session
// Affinity)" and the trace stickiness of seed 001 "会话一致性 (Trace Sticky)").
//
// It has three parts, one file each:
//
//   - extract.go: Extract finds a session id in a request's headers and body,
//     per protocol, in the documented order (first found wins).
//   - table.go: Table, the in-memory sticky table (apiKey, route, session) →
//     upstream with a sliding TTL, an absolute TTL and an LRU bound. The
//     gateway uses it through the Store interface (store.go) so that a shared
//     Redis implementation can replace it.
//   - migrate.go: ShouldMigrate, the per-upstream affinity_migration policy
//     that decides whether a bound session may move to a better tier.
//
// The package decides nothing about availability: the balancer places a live
// binding first only when its upstream survives the filters, and otherwise
// falls through to normal selection without deleting the binding (seed 000:
// "不清除亲和缓存"). A successful response (re)binds the session with Bind,
// except a success elsewhere while the bound upstream is only temporarily
// unavailable: the binding is kept so that the session returns to it (and
// to its prompt cache) once it recovers within the TTL.
package affinity
