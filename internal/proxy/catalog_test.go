package proxy

import (
	"testing"

	"switchyard/internal/config"
)

// TestTeamShares: a key of no team weighs its weight; the keys of one team
// in one class split the weight of one key by their weights.
func TestTeamShares(t *testing.T) {
	key := func(name, team, class string, w int) config.Key {
		return config.Key{Name: name, Team: team, Class: class, Weight: w}
	}
	keys := []config.Key{
		key("solo", "", config.ClassInteractive, 3),
		key("r1", "research", config.ClassInteractive, 1),
		key("r2", "research", config.ClassInteractive, 3),
		key("rb", "research", config.ClassBatch, 2),
		key("o1", "ops", config.ClassInteractive, 0), // 0 counts as 1
		key("o2", "ops", config.ClassInteractive, 1),
	}
	want := map[string]float64{"solo": 3, "r1": 0.25, "r2": 0.75, "rb": 1, "o1": 0.5, "o2": 0.5}
	shares := teamShares(keys)
	for _, k := range keys {
		if got := shares(k); got != want[k.Name] {
			t.Errorf("%s: weight %v, want %v", k.Name, got, want[k.Name])
		}
	}
}
