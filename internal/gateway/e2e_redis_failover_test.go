package gateway_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"switchyard/internal/mock"
)

// Failover under load (docs/scale-out.md#failover-of-redis): two gateways
// under steady load share state through a Redis deployment of their own
// while it loses a node — Sentinel's primary is killed and a replica
// promoted, or a cluster master is killed and restarted. No client request
// fails beyond those in flight at the moment; each instance's log and
// /readyz say what happened; sharing resumes afterwards; and over the
// window each instance enforces the limits alone, so a 20-RPM upstream
// gets at most 2 × 20 requests in the minute. Each test logs its
// measurements: requests, errors, the window per instance, and what the
// limited upstream got.

// readyzState is the state part of /readyz.
type readyzState struct {
	Mode       string `json:"mode"`
	Shared     bool   `json:"shared"`
	Reason     string `json:"reason"`
	LastOutage *struct {
		From           time.Time `json:"from"`
		To             time.Time `json:"to"`
		Seconds        float64   `json:"seconds"`
		Reason         string    `json:"reason"`
		PrimaryChanged bool      `json:"primary_changed"`
	} `json:"last_outage"`
}

// readyz returns the state part of url's /readyz.
func readyz(client *http.Client, url string) (readyzState, error) {
	resp, err := client.Get(url + "/readyz")
	if err != nil {
		return readyzState{}, err
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var body struct {
		Status string      `json:"status"`
		State  readyzState `json:"state"`
	}
	if err := json.Unmarshal(b, &body); err != nil || resp.StatusCode != http.StatusOK || body.Status != "ready" {
		return readyzState{}, fmt.Errorf("/readyz %d %s", resp.StatusCode, b)
	}
	return body.State, nil
}

// readyWatch polls each instance's /readyz every 50 ms and notes when it
// first said "not shared" after the disruption, and why.
type readyWatch struct {
	mu        sync.Mutex // guards the fields below
	downAt    []time.Time
	downWhy   []string
	lastState []readyzState
}

func watchReadyz(ctx context.Context, client *http.Client, procs []*proc) *readyWatch {
	w := &readyWatch{downAt: make([]time.Time, len(procs)), downWhy: make([]string, len(procs)), lastState: make([]readyzState, len(procs))}
	for i, p := range procs {
		go func() {
			for ctx.Err() == nil {
				st, err := readyz(client, p.url)
				w.mu.Lock()
				if err == nil {
					w.lastState[i] = st
					if !st.Shared && w.downAt[i].IsZero() {
						w.downAt[i], w.downWhy[i] = time.Now(), st.Reason
					}
				}
				w.mu.Unlock()
				time.Sleep(50 * time.Millisecond)
			}
		}()
	}
	return w
}

// recovered reports whether instance i has shared state again after an
// outage that ended after since.
func (w *readyWatch) recovered(i int, since time.Time) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	st := w.lastState[i]
	return st.Shared && st.LastOutage != nil && st.LastOutage.To.After(since)
}

func (w *readyWatch) state(i int) (readyzState, time.Time, string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.lastState[i], w.downAt[i], w.downWhy[i]
}

// failoverCheck is what a failover test expects beyond the common checks.
type failoverCheck struct {
	primaryChanged bool     // /readyz says the primary changed (Sentinel)
	logs           []string // messages every instance must have logged
}

// runRedisFailure starts two gateways on target, loads them, calls disrupt
// (which must return once the deployment is disrupted; it may restore it
// later by itself) and checks and logs what the clients and the instances
// saw until both share state again.
func runRedisFailure(t *testing.T, target redisTarget, disrupt func(), want failoverCheck) {
	prefix := cleanPrefix(t, target)
	bin := scaleOutBinary(t)
	const rpm, workers = 20, 4
	limited, limitedURL := startMock(t, "limited", mock.Behavior{Latency: 5 * time.Millisecond})
	spare, spareURL := startMock(t, "spare", mock.Behavior{Latency: 5 * time.Millisecond})
	procs := startFleet(t, bin, 2, soConfig{
		target: &target, prefix: prefix,
		top: "defaults:\n  strategy: weighted-random\n",
		upstreams: []soUpstream{
			{name: "limited", url: limitedURL, models: []string{"gpt-4o"}, extra: fmt.Sprintf("    priority: 0\n    rate_limit:\n      rpm: %d\n", rpm)},
			{name: "spare", url: spareURL, models: []string{"gpt-4o"}, extra: "    priority: 1\n"},
		},
	})
	client := soClient(t)
	probe := &http.Client{Timeout: 2 * time.Second}
	for i, p := range procs {
		if st, err := readyz(probe, p.url); err != nil || !st.Shared || st.Mode != target.mode {
			t.Fatalf("instance %d before the failure: /readyz state %+v, %v; want shared in mode %s", i+1, st, err, target.mode)
		}
	}
	watchCtx, stopWatch := context.WithCancel(context.Background())
	defer stopWatch()

	var tally soTally
	stop := make(chan struct{})
	loadDone := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(loadDone)
		runLoad(client, procs, "gpt-4o", workers, 0, stop, &tally)
	}()
	stopLoad := sync.OnceFunc(func() { close(stop); <-loadDone })
	defer stopLoad()

	time.Sleep(1500 * time.Millisecond) // steady load with the state shared
	before := limited.Stats().Requests
	w := watchReadyz(watchCtx, probe, procs)
	disrupted := time.Now()
	disrupt()
	const limit = 25 * time.Second
	back := waitFor(limit, func() bool { return w.recovered(0, disrupted) && w.recovered(1, disrupted) })
	recovered := time.Now()
	if !back {
		for i := range procs {
			st, _, _ := w.state(i)
			t.Logf("instance %d: /readyz state %+v\n%s", i+1, st, stateMetrics(probe, procs[i].url))
		}
		t.Fatalf("the instances did not both share state again within %v of the disruption", limit)
	}
	time.Sleep(time.Second) // steady load with the state shared again
	stopLoad()
	stopWatch()
	elapsed := time.Since(start)

	t.Logf("%s: %s in %v (%.0f/s); limited got %d before the disruption, %d in all (rpm %d), spare %d",
		target.mode, tally.summary(), elapsed.Round(time.Millisecond), float64(tally.total)/elapsed.Seconds(),
		before, limited.Stats().Requests, rpm, spare.Stats().Requests)
	for i, p := range procs {
		st, downAt, why := w.state(i)
		o := st.LastOutage
		t.Logf("instance %d: /readyz first said not shared %v after the disruption (reason %q); outage %.3f s (%v → %v, reason %q, primary changed %v); shared again %v after the disruption",
			i+1, since(downAt, disrupted), why, o.Seconds, o.From.Format("15:04:05.000"), o.To.Format("15:04:05.000"), o.Reason, o.PrimaryChanged,
			o.To.Sub(disrupted).Round(time.Millisecond))
		if downAt.IsZero() {
			t.Errorf("instance %d: /readyz never said the state was not shared", i+1)
		}
		if want.primaryChanged && !o.PrimaryChanged {
			t.Errorf("instance %d: /readyz last_outage does not say the primary changed: %+v", i+1, o)
		}
		logged := strings.Join(p.log(), "\n")
		for _, msg := range append([]string{"redis unreachable: routing on this instance's local state", "redis reachable again: routing state is shared"}, want.logs...) {
			if !strings.Contains(logged, msg) {
				t.Errorf("instance %d did not log %q", i+1, msg)
			}
		}
		t.Logf("instance %d:\n%s", i+1, stateMetrics(probe, p.url))
	}
	t.Logf("both instances shared state again %v after the disruption", recovered.Sub(disrupted).Round(time.Millisecond))
	if n := tally.failed(); n > workers {
		t.Errorf("%d client requests failed, want ≤ %d (those in flight at the disruption): %s", n, workers, tally.summary())
	}
	if got := limited.Stats().Requests; got > 2*rpm {
		t.Errorf("the rpm-%d upstream got %d requests from 2 instances within a minute, want ≤ %d (each instance's own limit during the window)", rpm, got, 2*rpm)
	}
	checkSharingResumed(t, target, prefix, recovered)
}

// since formats how long after from t was ("never" for zero).
func since(t, from time.Time) string {
	if t.IsZero() {
		return "never"
	}
	return t.Sub(from).Round(time.Millisecond).String()
}

// checkSharingResumed: after recovery the deployment (its new primary, its
// restarted node) holds the statistics of requests sent after it.
func checkSharingResumed(t *testing.T, target redisTarget, prefix string, recovered time.Time) {
	t.Helper()
	rdb := target.client(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	win, err := rdb.HGetAll(ctx, prefix+"u:{spare}:win").Result()
	if err != nil {
		t.Fatalf("reading spare's request window after the recovery: %v", err)
	}
	after := 0
	for sec, n := range win {
		if s, _ := strconv.ParseInt(sec, 10, 64); s >= recovered.Unix() {
			k, _ := strconv.Atoi(n)
			after += k
		}
	}
	if after == 0 {
		t.Errorf("the %s deployment counts no request to spare since the recovery (window %v): sharing did not resume", target.mode, win)
	} else {
		t.Logf("the %s deployment counted %d requests to spare since the recovery", target.mode, after)
	}
}

// TestScaleOutSentinelFailover: Sentinel's primary is killed under load;
// the sentinels promote the replica and the gateways follow it.
func TestScaleOutSentinelFailover(t *testing.T) {
	top := startTopology(t, "sentinel")
	target := redisTarget{mode: "sentinel", addrs: strings.Split(top.env[redisSentinelEnv], ","), master: top.env[redisSentinelMasterEnv]}
	primary := top.port(t, 11)
	runRedisFailure(t, target, func() { top.kill(t, primary) }, failoverCheck{
		primaryChanged: true,
		logs:           []string{"redis primary changed: Sentinel failed over"},
	})
}

// TestScaleOutClusterNodeRestart: the cluster master holding the limited
// upstream's keys is killed under load and started again a second later
// (empty: nothing is persisted); the gateways find it again.
func TestScaleOutClusterNodeRestart(t *testing.T) {
	top := startTopology(t, "cluster")
	target := redisTarget{mode: "cluster", addrs: strings.Split(top.env[redisClusterEnv], ",")}
	cc := target.client(t).(*redis.ClusterClient)
	node, err := cc.MasterForKey(context.Background(), "u:{limited}:rpm")
	if err != nil {
		t.Fatalf("finding the master of limited's keys: %v", err)
	}
	_, portStr, _ := strings.Cut(node.Options().Addr, ":")
	port, _ := strconv.Atoi(portStr)
	var restarted sync.WaitGroup
	t.Cleanup(restarted.Wait)
	runRedisFailure(t, target, func() {
		top.kill(t, port)
		restarted.Go(func() {
			time.Sleep(time.Second)
			if err := top.restart(port); err != nil {
				t.Error(err)
			}
		})
	}, failoverCheck{})
}
