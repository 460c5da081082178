package proxy

import (
	"testing"

	"switchyard/internal/balancer"
)

// TestBindingOf: how a success binds the session or prefix whose affinity
// record is given (docs/routing.md#2-candidates-and-session-affinity,
// docs/routing.md#prefix-cache-affinity).
func TestBindingOf(t *testing.T) {
	tests := []struct {
		name     string
		rec      balancer.AffinityRecord
		upstream string
		failBack bool
		want     sessionBind
	}{
		{"miss binds home", balancer.AffinityRecord{Result: balancer.AffinityMiss}, "b", true, bindHome},
		{"hit on the home", balancer.AffinityRecord{Result: balancer.AffinityHit, Bound: "a"}, "a", true, bindHome},
		{"hit, the home failed: stand-in", balancer.AffinityRecord{Result: balancer.AffinityHit, Bound: "a"}, "b", true, bindStandIn},
		{"fall-through: stand-in", balancer.AffinityRecord{Result: balancer.AffinityFallthrough, Bound: "a", Reason: balancer.FilterBreakerOpen}, "b", true, bindStandIn},
		{"fall-through without fail_back: new home", balancer.AffinityRecord{Result: balancer.AffinityFallthrough, Bound: "a", Reason: balancer.FilterBreakerOpen}, "b", false, bindHome},
		{"home gone: new home", balancer.AffinityRecord{Result: balancer.AffinityFallthrough, Bound: "a", Reason: balancer.ReasonNotACandidate}, "b", true, bindHome},
		{"migrated: new home", balancer.AffinityRecord{Result: balancer.AffinityMigrated, Bound: "a"}, "b", true, bindHome},
		{"prefix yielded: the binding stays", balancer.AffinityRecord{Result: balancer.AffinityYielded, Bound: "a", Reason: balancer.ReasonMaxShare}, "b", true, bindNone},
		{"prefix yielded, served by its home anyway", balancer.AffinityRecord{Result: balancer.AffinityYielded, Bound: "a", Reason: balancer.ReasonMaxShare}, "a", false, bindNone},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := bindingOf(tc.rec, tc.upstream, tc.failBack); got != tc.want {
				t.Fatalf("bindingOf(%+v, %s, fail_back %v) = %d, want %d", tc.rec, tc.upstream, tc.failBack, got, tc.want)
			}
		})
	}
}
