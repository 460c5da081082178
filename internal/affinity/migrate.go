package affinity

import "switchyard/internal/config"

// The affinity_migration modes (upstreams[].affinity_migration.mode).
const (
	// MigrateNever keeps a session on its bound upstream while that upstream
	// is available. The default; an empty mode means the same.
	MigrateNever = "never"
	// MigrateCrossTier moves a session when a better tier (a lower priority
	// number) has an available upstream; within the same tier it stays.
	MigrateCrossTier = "cross_tier"
	// MigrateAlways re-selects on every request, as if there were no binding;
	// the response then rebinds the session to whichever upstream served it.
	MigrateAlways = "always"
)

// ShouldMigrate reports whether a request whose session is bound to an
// available upstream should leave it and go through normal selection instead.
// It is the shouldMigrate step of seed 000 (load-balancer.ts:413, "命中但目标更高
// priority 上游可用时，按 shouldMigrate 判断是否迁移"), as
// docs/reference.md#session-affinity states it.
//
// m is the affinity_migration of the bound upstream; bodyLen is the request
// body's length in bytes (< 0 when unknown); boundPriority is the bound
// upstream's priority and bestAvailablePriority the lowest priority number
// among the candidates that survived the filters (pass boundPriority when
// there is none). The rule, in order:
//
//  1. Mode never (or empty, or unknown): false.
//  2. MaxContentLength > 0 and the body is not shorter than it, or its length
//     is unknown: false. Long conversations stay where their prompt cache is.
//  3. Mode always: true.
//  4. Mode cross_tier: true exactly when bestAvailablePriority <
//     boundPriority.
//
// A bound upstream that is unavailable is not a migration: the balancer falls
// through to normal selection without asking and without deleting the binding.
func ShouldMigrate(m config.AffinityMigration, bodyLen int64, boundPriority, bestAvailablePriority int) bool {
	if m.Mode != MigrateCrossTier && m.Mode != MigrateAlways {
		return false
	}
	if m.MaxContentLength > 0 && (bodyLen < 0 || bodyLen >= m.MaxContentLength) {
		return false
	}
	if m.Mode == MigrateAlways {
		return true
	}
	return bestAvailablePriority < boundPriority
}
