package limits

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"switchyard/internal/clock"
	"switchyard/internal/config"
)

// TestFairQueueShares hands 12,000 freed slots of a saturated queue to
// waiters that every key tops up at random (seeded) — each keeps between
// 1 and 4 requests waiting, some leaving unserved — and checks each key's share of the grants
// against the hierarchical shares of docs/routing.md#tenants-classes-and-fair-queueing,
// within 0.01.
func TestFairQueueShares(t *testing.T) {
	const picks, tolerance = 12000, 0.01
	research := func(key string, w, tw float64) Tenant {
		return Tenant{Team: "research", Key: key, Weight: w, TeamWeight: tw}
	}
	lone := func(key string, w float64) Tenant { return Tenant{Key: key, Weight: w} }
	tests := []struct {
		name    string
		tenants []Tenant
		// parttime, when set, names a key that tops up only in the even
		// thousands of grants (0–999, 2000–2999, …) and is idle in the others.
		parttime string
		want     map[string]float64
		// abandon is the chance, after each grant, that the oldest waiter
		// of a key drawn at random leaves unserved (a queue timeout).
		abandon float64
	}{
		{"a team of four keys against a lone key: half each",
			[]Tenant{research("w", 1, 1), research("x", 1, 1), research("y", 1, 1), research("z", 1, 1), lone("c", 1)},
			"", map[string]float64{"w": 0.125, "x": 0.125, "y": 0.125, "z": 0.125, "c": 0.5}, 0},
		{"a team's lone busy key has the team's share",
			[]Tenant{research("r", 1, 1), lone("c", 1)},
			"", map[string]float64{"r": 0.5, "c": 0.5}, 0},
		{"a team's key busy half the time: the lone key keeps half all along",
			[]Tenant{research("r", 1, 1), research("s", 1, 1), lone("c", 1)},
			"s", map[string]float64{"r": 0.375, "s": 0.125, "c": 0.5}, 0},
		{"team weight 2, its keys 2:1, against two lone keys",
			[]Tenant{research("r", 2, 2), research("s", 1, 2), lone("c", 1), lone("d", 1)},
			"", map[string]float64{"r": 1.0 / 3, "s": 1.0 / 6, "c": 0.25, "d": 0.25}, 0},
		{"two teams of 3 and 1 keys, weights 1 and 3",
			[]Tenant{research("r", 1, 1), research("s", 1, 1), research("u", 1, 1),
				{Team: "ops", Key: "o", Weight: 1, TeamWeight: 3}},
			"", map[string]float64{"r": 0.25 / 3, "s": 0.25 / 3, "u": 0.25 / 3, "o": 0.75}, 0},
		// Requests that time out give their charge back (Refund): keys
		// whose waiters leave at random still share evenly.
		{"keys whose waiters time out at random still share evenly",
			[]Tenant{lone("a", 1), lone("b", 1), research("r", 1, 1), research("s", 1, 1)},
			"", map[string]float64{"a": 1.0 / 3, "b": 1.0 / 3, "r": 1.0 / 6, "s": 1.0 / 6}, 0.7},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(29, 1))
			q := config.Queue{Enabled: true, Timeout: 1 << 62, MaxLength: 1000, Discipline: config.DisciplineFair}
			sl := &slot{clk: clock.NewFake(t0)}
			depth := map[string]int{}
			keyOf := map[*waiter]string{}
			byKey := map[string][]*waiter{} // each key's waiters, oldest first
			join := func(tn Tenant) {
				w := &waiter{limit: 1, ready: make(chan struct{}), q: q, class: tn.Class, joined: t0}
				keyOf[w] = tn.Key
				byKey[tn.Key] = append(byKey[tn.Key], w)
				sl.fair.join(w, tn)
				sl.pushLocked(w)
				depth[tn.Key]++
			}
			for _, tn := range tc.tenants {
				join(tn)
			}
			got := map[string]int{}
			for n := range picks {
				w := sl.nextLocked()
				sl.grantLocked(w)
				k := keyOf[w]
				delete(keyOf, w)
				byKey[k] = slices.DeleteFunc(byKey[k], func(x *waiter) bool { return x == w })
				got[k]++
				depth[k]--
				if rng.Float64() < tc.abandon {
					k := tc.tenants[rng.IntN(len(tc.tenants))].Key
					if ws := byKey[k]; len(ws) > 0 {
						sl.removeLocked(ws[0])
						sl.fair.left(ws[0])
						delete(keyOf, ws[0])
						byKey[k] = ws[1:]
						depth[k]--
					}
				}
				// Every key tops up in a random order to a random depth.
				for _, i := range rng.Perm(len(tc.tenants)) {
					tn := tc.tenants[i]
					if tn.Key == tc.parttime && n/1000%2 == 1 {
						continue
					}
					for target := 1 + rng.IntN(4); depth[tn.Key] < target; {
						join(tn)
					}
				}
			}
			for k, want := range tc.want {
				if share := float64(got[k]) / picks; math.Abs(share-want) > tolerance {
					t.Errorf("key %s served %.4f of the grants, want %.4f ± %v (all: %v)", k, share, want, tolerance, got)
				}
			}
		})
	}
}
