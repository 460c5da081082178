package proxy

import (
	"testing"

	"switchyard/internal/config"
	"switchyard/internal/limits"
)

// TestTenantOf: a key waits as its class, key and team with their
// weights (0 counts as 1); a key of no team is a tenant of its own.
func TestTenantOf(t *testing.T) {
	research := &config.Team{Name: "research", Weight: 3}
	tests := []struct {
		name string
		k    config.Key
		tm   *config.Team
		want limits.Tenant
	}{
		{"no team", config.Key{Name: "solo", Class: config.ClassInteractive, Weight: 2}, nil,
			limits.Tenant{Key: "solo", Weight: 2}},
		{"a team's batch key", config.Key{Name: "nightly", Team: "research", Class: config.ClassBatch, Weight: 1}, research,
			limits.Tenant{Class: limits.ClassBatch, Team: "research", Key: "nightly", Weight: 1, TeamWeight: 3}},
		{"weights 0 count as 1", config.Key{Name: "o1", Team: "ops", Class: config.ClassCritical}, &config.Team{Name: "ops"},
			limits.Tenant{Class: limits.ClassCritical, Team: "ops", Key: "o1", Weight: 1, TeamWeight: 1}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := tenantOf(tc.k, tc.tm); got != tc.want {
				t.Fatalf("tenantOf = %+v, want %+v", got, tc.want)
			}
		})
	}
}
