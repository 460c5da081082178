package affinity

import (
	"testing"

	"switchyard/internal/config"
)

func TestShouldMigrate(t *testing.T) {
	mig := func(mode string, max int64) config.AffinityMigration {
		return config.AffinityMigration{Mode: mode, MaxContentLength: max}
	}
	tests := []struct {
		name        string
		m           config.AffinityMigration
		bodyLen     int64
		bound, best int
		want        bool
	}{
		{"never, better tier available", mig("never", 0), 100, 1, 0, false},
		{"empty mode is never", mig("", 0), 100, 1, 0, false},
		{"unknown mode is never", mig("sometimes", 0), 100, 1, 0, false},

		{"cross_tier, better tier", mig("cross_tier", 0), 100, 1, 0, true},
		{"cross_tier, much better tier", mig("cross_tier", 0), 100, 50, 3, true},
		{"cross_tier, same tier", mig("cross_tier", 0), 100, 1, 1, false},
		{"cross_tier, only worse tiers", mig("cross_tier", 0), 100, 1, 2, false},
		{"cross_tier, under max length", mig("cross_tier", 1000), 999, 1, 0, true},
		{"cross_tier, at max length", mig("cross_tier", 1000), 1000, 1, 0, false},
		{"cross_tier, over max length", mig("cross_tier", 1000), 50000, 1, 0, false},
		{"cross_tier, unknown length with max", mig("cross_tier", 1000), -1, 1, 0, false},
		{"cross_tier, unknown length without max", mig("cross_tier", 0), -1, 1, 0, true},

		{"always, better tier", mig("always", 0), 100, 1, 0, true},
		{"always, same tier", mig("always", 0), 100, 0, 0, true},
		{"always, worse tiers only", mig("always", 0), 100, 0, 3, true},
		{"always, under max length", mig("always", 1000), 10, 0, 0, true},
		{"always, at max length", mig("always", 1000), 1000, 0, 0, false},
		{"always, unknown length with max", mig("always", 1000), -1, 0, 0, false},
		{"always, empty body", mig("always", 1000), 0, 0, 0, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := ShouldMigrate(tc.m, tc.bodyLen, tc.bound, tc.best); got != tc.want {
				t.Fatalf("ShouldMigrate(%+v, %d, %d, %d) = %v, want %v", tc.m, tc.bodyLen, tc.bound, tc.best, got, tc.want)
			}
		})
	}
}

// TestMigrationModesMatchConfig keeps the mode constants in step with what
// config validation accepts.
func TestMigrationModesMatchConfig(t *testing.T) {
	for _, mode := range []string{MigrateNever, MigrateCrossTier, MigrateAlways} {
		u := config.DefaultUpstream()
		u.Name, u.Provider, u.BaseURL, u.APIKey, u.Models = "u", "openai", "https://api.openai.com/v1", "k", []string{"m"}
		u.AffinityMigration.Mode = mode
		if errs := u.Validate(); len(errs) != 0 {
			t.Errorf("mode %q rejected by config: %v", mode, errs)
		}
	}
}
