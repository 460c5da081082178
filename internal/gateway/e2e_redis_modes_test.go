package gateway_test

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// The Redis deployments the scale-out tests run against, one subtest per
// mode: the server of SWITCHYARD_TEST_REDIS_URL, and the three-master
// cluster and the Sentinel-managed primary that .ci/redis-topologies starts
// (docs/scale-out.md#testing-against-sentinel-and-cluster). A mode whose
// variable is unset is skipped.
const (
	redisClusterEnv        = "SWITCHYARD_TEST_REDIS_CLUSTER_ADDRS"
	redisSentinelEnv       = "SWITCHYARD_TEST_REDIS_SENTINEL_ADDRS"
	redisSentinelMasterEnv = "SWITCHYARD_TEST_REDIS_SENTINEL_MASTER"
)

// redisTarget is one Redis deployment the gateways share state through.
type redisTarget struct {
	mode   string   // single, sentinel or cluster
	url    string   // single: the redis:// URL
	addrs  []string // sentinel: the sentinels; cluster: the masters
	master string   // sentinel: the monitored name
}

// stateYAML is the connection part of a gateway's state block.
func (r redisTarget) stateYAML() string {
	if r.mode == "single" {
		return fmt.Sprintf("  redis_url: %q\n", r.url)
	}
	s := fmt.Sprintf("  redis:\n    mode: %s\n    addrs: [%s]\n", r.mode, strings.Join(r.addrs, ", "))
	if r.master != "" {
		s += fmt.Sprintf("    master_name: %s\n", r.master)
	}
	return s
}

// client returns a go-redis client of the deployment, closed at the end of t.
func (r redisTarget) client(t testing.TB) redis.UniversalClient {
	t.Helper()
	var c redis.UniversalClient
	switch r.mode {
	case "single":
		opts, err := redis.ParseURL(r.url)
		if err != nil {
			t.Fatalf("parsing %s: %v", redisURLEnv, err)
		}
		c = redis.NewClient(opts)
	case "sentinel":
		c = redis.NewFailoverClient(&redis.FailoverOptions{MasterName: r.master, SentinelAddrs: r.addrs})
	default:
		c = redis.NewClusterClient(&redis.ClusterOptions{Addrs: r.addrs})
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// redisTargets returns the deployments whose variables are set.
func redisTargets() []redisTarget {
	var out []redisTarget
	if u := os.Getenv(redisURLEnv); u != "" {
		out = append(out, redisTarget{mode: "single", url: u})
	}
	if a := os.Getenv(redisClusterEnv); a != "" {
		out = append(out, redisTarget{mode: "cluster", addrs: strings.Split(a, ",")})
	}
	if a := os.Getenv(redisSentinelEnv); a != "" {
		out = append(out, redisTarget{mode: "sentinel", addrs: strings.Split(a, ","), master: os.Getenv(redisSentinelMasterEnv)})
	}
	return out
}

// forEachRedisMode runs f as a subtest per deployment (redisTargets), each
// with a fresh key prefix whose keys are deleted at its end; t is skipped
// when no deployment is configured.
func forEachRedisMode(t *testing.T, f func(t *testing.T, target redisTarget, prefix string)) {
	targets := redisTargets()
	if len(targets) == 0 {
		t.Skip("no Redis: set " + redisURLEnv + " (and " + redisClusterEnv + ", " + redisSentinelEnv + " from .ci/redis-topologies)")
	}
	for _, target := range targets {
		t.Run(target.mode, func(t *testing.T) {
			f(t, target, cleanPrefix(t, target))
		})
	}
}

// cleanPrefix pings target and returns a fresh key prefix whose keys are
// deleted at the end of t. Call it before starting any process, so that
// the deletion runs after they are stopped.
func cleanPrefix(t testing.TB, target redisTarget) string {
	t.Helper()
	rdb := target.client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := rdb.Ping(ctx).Err(); err != nil {
		t.Fatalf("pinging the %s Redis: %v", target.mode, err)
	}
	prefix := testPrefix(t)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		defer cancel()
		keys, err := scanPrefix(ctx, rdb, prefix)
		if err != nil {
			t.Errorf("listing the test's Redis keys: %v", err)
			return
		}
		// One DEL per key: a cluster refuses a DEL of keys in several slots.
		pipe := rdb.Pipeline()
		for _, k := range keys {
			pipe.Del(ctx, k)
		}
		if _, err := pipe.Exec(ctx); err != nil && len(keys) > 0 {
			t.Errorf("deleting the test's Redis keys: %v", err)
		}
	})
	return prefix
}

// scanPrefix lists every key that starts with prefix (which must hold no
// glob metacharacters), on every master of a cluster.
func scanPrefix(ctx context.Context, rdb redis.UniversalClient, prefix string) ([]string, error) {
	scan := func(ctx context.Context, c *redis.Client) ([]string, error) {
		var keys []string
		iter := c.Scan(ctx, 0, prefix+"*", 1000).Iterator()
		for iter.Next(ctx) {
			keys = append(keys, iter.Val())
		}
		return keys, iter.Err()
	}
	cc, ok := rdb.(*redis.ClusterClient)
	if !ok {
		c, ok := rdb.(*redis.Client) // one server, or Sentinel's primary
		if !ok {
			return nil, fmt.Errorf("scanning: unexpected client %T", rdb)
		}
		return scan(ctx, c)
	}
	var mu sync.Mutex // guards all
	var all []string
	err := cc.ForEachMaster(ctx, func(ctx context.Context, c *redis.Client) error {
		keys, err := scan(ctx, c)
		mu.Lock()
		all = append(all, keys...)
		mu.Unlock()
		return err
	})
	return all, err
}

// topology is a Redis deployment of .ci/redis-topologies that a test runs
// on its own, to kill its nodes: its exported variables and directory.
type topology struct {
	env map[string]string
	dir string
}

// startTopology runs `.ci/redis-topologies start what` (cluster or
// sentinel) on free ports, stopped at the end of t; t is skipped without
// redis-server and redis-cli.
func startTopology(t *testing.T, what string) *topology {
	t.Helper()
	for _, bin := range []string{"redis-server", "redis-cli"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Skipf("%s is not on PATH", bin)
		}
	}
	script := filepath.Join("..", "..", ".ci", "redis-topologies")
	out, err := exec.Command(script, "start", what).Output()
	top := &topology{env: map[string]string{}}
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		if k, v, ok := strings.Cut(strings.TrimPrefix(sc.Text(), "export "), "="); ok {
			top.env[k] = v
		}
	}
	top.dir = top.env["SWITCHYARD_REDIS_TOPOLOGY_DIR"]
	if top.dir != "" {
		t.Cleanup(func() { _ = exec.Command(script, "stop", top.dir).Run() })
	}
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("%s start %s: %v\n%s", script, what, err, stderr)
	}
	return top
}

// port returns the topology's port base+offset (see .ci/redis-topologies).
func (top *topology) port(t *testing.T, offset int) int {
	var base int
	if _, err := fmt.Sscan(top.env["SWITCHYARD_REDIS_TOPOLOGY_BASE"], &base); err != nil {
		t.Fatalf("no base port in %v", top.env)
	}
	return base + offset
}

// kill stops the node on port with SIGKILL.
func (top *topology) kill(t *testing.T, port int) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(top.dir, fmt.Sprintf("%d.pid", port)))
	if err != nil {
		t.Fatalf("the pid of node %d: %v", port, err)
	}
	if out, err := exec.Command("kill", "-9", strings.TrimSpace(string(b))).CombinedOutput(); err != nil {
		t.Fatalf("killing node %d: %v %s", port, err, out)
	}
}

// restart starts the node on port again from its config file.
func (top *topology) restart(port int) error {
	if out, err := exec.Command("redis-server", filepath.Join(top.dir, fmt.Sprintf("%d.conf", port))).CombinedOutput(); err != nil {
		return fmt.Errorf("restarting node %d: %w %s", port, err, out)
	}
	return nil
}
