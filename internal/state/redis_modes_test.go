package state

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"switchyard/internal/affinity"
	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/outcome"
)

// Tests of every Redis call of the driver on each deployment go-redis's
// universal client reaches: one server, a Sentinel-managed primary and a
// Redis Cluster. On a cluster a script or a multi-key command whose keys
// are in two slots fails (CROSSSLOT), which the driver would take for an
// outage; so every operation must stay shared, with no fallback.

// The deployments .ci/redis-topologies starts (docs/scale-out.md).
const (
	redisClusterEnv        = "SWITCHYARD_TEST_REDIS_CLUSTER_ADDRS"
	redisSentinelEnv       = "SWITCHYARD_TEST_REDIS_SENTINEL_ADDRS"
	redisSentinelMasterEnv = "SWITCHYARD_TEST_REDIS_SENTINEL_MASTER"
)

// redisModeConfigs returns the connection of each deployment whose
// environment variable is set, by mode.
func redisModeConfigs() map[string]config.State {
	out := map[string]config.State{}
	if u := os.Getenv(redisURLEnv); u != "" {
		out[config.RedisSingle] = config.State{RedisURL: u}
	}
	if a := os.Getenv(redisClusterEnv); a != "" {
		out[config.RedisCluster] = config.State{Redis: config.RedisConn{Mode: config.RedisCluster, Addrs: strings.Split(a, ",")}}
	}
	if a := os.Getenv(redisSentinelEnv); a != "" {
		out[config.RedisSentinel] = config.State{Redis: config.RedisConn{Mode: config.RedisSentinel, Addrs: strings.Split(a, ","),
			MasterName: os.Getenv(redisSentinelMasterEnv)}}
	}
	return out
}

// modeRedis returns an instance on conn under prefix, closed at the end.
func modeRedis(t *testing.T, conn config.State, prefix string, clk clock.Clock, rec *recorder) *Redis {
	t.Helper()
	conn.Driver, conn.RedisPrefix = "redis", prefix
	conn.LeaseTTL, conn.SyncInterval, conn.RedisTimeout = testLeaseTTL, testSyncInterval, testRedisTimeout
	o := rec.options()
	o.Clock = clk
	r, err := NewRedis(conn, testCircuit, o)
	if err != nil {
		t.Fatalf("NewRedis: %v", err)
	}
	t.Cleanup(func() { _ = r.Close() })
	return r
}

// keysByNode lists the keys under prefix on every primary of r's
// deployment (every master of a cluster), by the node's address.
func keysByNode(t *testing.T, r *Redis, prefix string) map[string][]string {
	t.Helper()
	ctx := context.Background()
	out := map[string][]string{}
	scan := func(ctx context.Context, c *redis.Client) error {
		iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		var keys []string
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		if len(keys) > 0 {
			out[c.Options().Addr] = keys
		}
		return iter.Err()
	}
	var err error
	switch c := r.rdb.(type) {
	case *redis.ClusterClient:
		var mu sync.Mutex // guards out
		err = c.ForEachMaster(ctx, func(ctx context.Context, n *redis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			return scan(ctx, n)
		})
	case *redis.Client:
		err = scan(ctx, c)
	}
	if err != nil {
		t.Fatalf("SCAN %s*: %v", prefix, err)
	}
	return out
}

// Two instances on each deployment go through every kind of call the
// driver makes — admission and settlement scripts, the pipelined sync,
// bindings (script, index, lookup, delete), pins, kept conversations, a
// client key's window, lease renewal and the active probe — and each sees
// the other's state, with no call served from local state. On a cluster
// the keys spread over more than one master, so the test is not vacuous.
func TestRedisModesEveryOperation(t *testing.T) {
	modes := redisModeConfigs()
	if len(modes) == 0 {
		t.Skip("no Redis deployment: set " + redisURLEnv + ", " + redisClusterEnv + " or " + redisSentinelEnv + " (.ci/redis-topologies start)")
	}
	for _, mode := range []string{config.RedisSingle, config.RedisSentinel, config.RedisCluster} {
		conn, ok := modes[mode]
		if !ok {
			continue
		}
		t.Run(mode, func(t *testing.T) {
			clk := clock.NewFake(time.Now())
			prefix := testPrefix(t)
			recA, recB := newRecorder(), newRecorder()
			a := modeRedis(t, conn, prefix, clk, recA)
			b := modeRedis(t, conn, prefix, clk, recB)
			t.Cleanup(func() {
				ctx := context.Background()
				for _, keys := range keysByNode(t, a, prefix) {
					for _, k := range keys {
						a.rdb.Del(ctx, k)
					}
				}
			})
			runEveryOperation(t, a, b, clk)
			for name, rec := range map[string]*recorder{"A": recA, "B": recB} {
				if fb, _ := rec.snapshot(); len(fb) > 0 || !a.Up() || !b.Up() {
					t.Errorf("instance %s: fallbacks %v (up A %v, B %v): a call failed on %s", name, fb, a.Up(), b.Up(), mode)
				}
			}
			nodes := keysByNode(t, a, prefix)
			t.Logf("%s: keys on %d node(s)", mode, len(nodes))
			if mode == config.RedisCluster && len(nodes) < 2 {
				t.Errorf("every key is on one master (%v): the cluster test is vacuous", nodes)
			}
		})
	}
}

// runEveryOperation drives a and b (one deployment, one prefix) through
// every kind of call, checking each sees the other's writes.
func runEveryOperation(t *testing.T, a, b *Redis, clk clock.Clock) {
	ctx := context.Background()
	ups := []string{"alpha", "beta", "gamma", "delta", "epsilon", "zeta"}
	pol := affinityPolicy(time.Hour, 0)
	for i, up := range ups {
		adm := Admission{Upstream: up, Tokens: 10, RPM: 100, TPM: 10000, MaxConcurrency: 1}
		tk := admitOK(t, a, adm)
		admitDenied(t, b, adm, "full", 0, time.Hour)
		a.Renew()
		sess := "sess-" + up + "-{braces}"
		if i%2 == 1 {
			sess = strings.Repeat("x", i) // plain ids too
		}
		a.Settle(tk, Settlement{Outcome: outcome.Outcome{Class: outcome.Success, Latency: time.Second},
			Spend: 0.5, SpendKey: "key-" + up, SpendTeam: "team-" + up, Bind: &Bind{Key: testKey(sess), Upstream: up, Policy: pol}})
		if got, ok := b.Affinity(affinity.NewTable(10, clk)).Get(ctx, testKey(sess), pol); !ok || got.Home != up {
			t.Errorf("%s: B's binding of %q = %+v %v, want %s", up, sess, got, ok, up)
		}
		if bs := b.Affinity(affinity.NewTable(10, clk)).Lookup(ctx, sess); len(bs) != 1 || bs[0].Upstream != up {
			t.Errorf("%s: B's lookup of %q = %+v, want one binding to %s", up, sess, bs, up)
		}
		if ok, _, shared := b.AllowN(ctx, "key-"+up, 1, 1); !ok || !shared {
			t.Errorf("%s: the first request of a key's window: ok %v shared %v", up, ok, shared)
		}
		if ok, _, _ := a.AllowN(ctx, "key-"+up, 1, 1); ok {
			t.Errorf("%s: a second request within the key's rpm 1 was allowed on the other instance", up)
		}
	}
	if n := b.Affinity(affinity.NewTable(10, clk)).DeleteSession(ctx, "sess-alpha-{braces}"); n != 1 {
		t.Errorf("DeleteSession = %d, want 1", n)
	}

	spent := map[string]float64{}
	b.SetWatch(Watch{Upstreams: ups, SpendKeys: []string{"key-alpha", "key-beta"}, SpendTeams: []string{"team-gamma"}})
	b.Sync(func(scope, name string, day, _ float64) { spent[scope+"/"+name] = day })
	for _, up := range ups {
		if v, ok := b.View(up); !ok || v.RPMUsed != 1 || v.Stats.LatencyEWMA == 0 {
			t.Errorf("%s: B's synced view = %+v %v, want 1 request in the window and a latency", up, v, ok)
		}
		if spent["upstream/"+up] != 0.5 {
			t.Errorf("%s: B's synced spend %v, want 0.5", up, spent["upstream/"+up])
		}
	}
	if spent["key/key-beta"] != 0.5 || spent["team/team-gamma"] != 0.5 {
		t.Errorf("B's synced spend of key-beta %v and team-gamma %v, want 0.5 each", spent["key/key-beta"], spent["team/team-gamma"])
	}

	local := NewLocal(LocalOptions{Clock: clk, Pins: affinity.NewPinTable(100, time.Hour, clk),
		Conversations: affinity.NewConversationTable(100, time.Hour, clk)})
	da, db := NewRedisDriver(a, local), NewRedisDriver(b, NewLocal(LocalOptions{Clock: clk,
		Pins: affinity.NewPinTable(100, time.Hour, clk), Conversations: affinity.NewConversationTable(100, time.Hour, clk)}))
	refs := []affinity.StateRef{affinity.ResponseRef("resp_1"), affinity.ResponseRef("resp_2"), affinity.ConversationRef("conv_9")}
	da.Pin(ctx, "beta", refs[1:]...)
	if up, ref, ok := db.Holder(ctx, refs...); !ok || up != "beta" || ref != refs[1] {
		t.Errorf("B's Holder = %q %q %v, want beta for %s", up, ref, ok, refs[1])
	}
	for i := range 4 {
		da.Keep(ctx, "resp_k"+string(rune('0'+i)), affinity.Conversation{Key: "k1", Items: []byte(`[]`)})
	}
	if _, ok := db.Conversation(ctx, "resp_k2"); !ok {
		t.Error("B does not find a conversation A kept")
	}
	db.ForgetKey(ctx, "k1")
	if _, ok := NewRedisDriver(a, NewLocal(LocalOptions{Clock: clk})).Conversation(ctx, "resp_k2"); ok {
		t.Error("Redis still holds a conversation of a key B forgot")
	}

	for _, counter := range []string{"team/t1/concurrency", "k1/concurrency", "team/t2/concurrency"} {
		release, ok := da.AcquireTenant(ctx, counter, 1)
		if !ok {
			t.Fatalf("%s: A's first tenant slot was refused", counter)
		}
		if r, ok := db.AcquireTenant(ctx, counter, 1); ok {
			r()
			t.Errorf("%s: B took a second slot of a limit of 1 that A holds", counter)
		}
		release()
		if r, ok := db.AcquireTenant(ctx, counter, 1); !ok {
			t.Errorf("%s: B was refused the slot A gave back", counter)
		} else {
			r()
		}
	}

	if p, ok := db.ProbeGate().AcquireProbe(ctx, "gamma"); !ok || p.Done == nil {
		t.Errorf("the active probe of gamma was not admitted: %+v %v", p, ok)
	} else {
		p.Done(ctx, outcome.Outcome{Class: outcome.Success})
	}
}
