package gateway_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"switchyard/internal/mock"
)

// End-to-end tests of several `switchyard serve` processes sharing routing
// state in Redis (docs/scale-out.md, state.driver: redis): RPM windows,
// affinity bindings, circuit breakers and in-flight leases are shared, so N
// instances act as one; and an instance keeps serving from local state while
// Redis is down. Every test but the outage one talks to the Redis server named
// by SWITCHYARD_TEST_REDIS_URL, under a key prefix of its own that is deleted
// at the end; the outage test runs its own redis-server.

// redisURLEnv names the URL of a Redis server the tests may write to.
const redisURLEnv = "SWITCHYARD_TEST_REDIS_URL"

// Shared-state timing used by every scale-out process: short, so that lease
// expiry and syncing fit in a test.
const (
	soLeaseTTL     = 2 * time.Second
	soSyncInterval = 100 * time.Millisecond
	soRedisTimeout = 200 * time.Millisecond
)

// scaleOutBuild builds the switchyard binary once per test binary.
var scaleOutBuild struct {
	once sync.Once
	bin  string
	err  error
}

// scaleOutBinary returns the switchyard binary, built once for all the
// scale-out tests. It lives next to the test executable, which `go test`
// runs from its work directory and removes afterwards; the test is skipped
// when the build fails, as buildSwitchyard does.
func scaleOutBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds and runs the binary")
	}
	scaleOutBuild.once.Do(func() {
		base := os.TempDir()
		if exe, err := os.Executable(); err == nil {
			base = filepath.Dir(exe)
		}
		dir, err := os.MkdirTemp(base, "switchyard-scaleout-*")
		if err != nil {
			scaleOutBuild.err = err
			return
		}
		bin := filepath.Join(dir, "switchyard")
		cmd := exec.Command("go", "build", "-o", bin, "./cmd/switchyard")
		cmd.Dir = filepath.Join("..", "..")
		if out, err := cmd.CombinedOutput(); err != nil {
			scaleOutBuild.err = fmt.Errorf("%w\n%s", err, out)
			return
		}
		scaleOutBuild.bin = bin
	})
	if scaleOutBuild.err != nil {
		t.Skipf("building switchyard: %v", scaleOutBuild.err)
	}
	return scaleOutBuild.bin
}

// randomHex returns n random bytes in hex.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// testPrefix is a Redis key prefix unique to t, e.g. "sy-test-TestX-1a2b3c4d:".
func testPrefix(t testing.TB) string {
	name := strings.Map(func(r rune) rune {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '_':
			return r
		}
		return '_'
	}, t.Name())
	return "sy-test-" + name + "-" + randomHex(4) + ":"
}

// sharedRedis skips t unless SWITCHYARD_TEST_REDIS_URL names a reachable
// Redis, and returns its URL and a fresh key prefix whose keys are deleted
// at the end of t. Call it before starting any process, so that the deletion
// runs after they are stopped. (forEachRedisMode runs a test on every
// deployment instead.)
func sharedRedis(t testing.TB) (url, prefix string) {
	t.Helper()
	url = os.Getenv(redisURLEnv)
	if url == "" {
		t.Skip(redisURLEnv + " is not set: the scale-out tests need a Redis server (e.g. redis://127.0.0.1:6379/0)")
	}
	return url, cleanPrefix(t, redisTarget{mode: "single", url: url})
}

// soUpstream is one upstream of a scale-out config.
type soUpstream struct {
	name   string
	url    string // the mock's base URL; /v1 is appended
	models []string
	// extra is YAML appended to the upstream's mapping, each line indented
	// by four spaces ("    priority: 1\n").
	extra string
}

// soConfig is what varies between the scale-out configs.
type soConfig struct {
	redisURL, prefix string
	// target, when set, is the Redis deployment instead of redisURL.
	target    *redisTarget
	upstreams []soUpstream
	// top is YAML appended at the top level (circuit, affinity, defaults, routes).
	top string
	// keys is YAML appended to the keys list, after the e2e key ("  - name: …\n").
	keys string
}

// yaml renders the config for one process whose sqlite file is dsn.
func (c soConfig) yaml(dsn string) string {
	target := redisTarget{mode: "single", url: c.redisURL}
	if c.target != nil {
		target = *c.target
	}
	var b strings.Builder
	fmt.Fprintf(&b, `listen: "127.0.0.1:0"
store:
  driver: sqlite
  dsn: %q
state:
  driver: redis
%s  redis_prefix: %q
  lease_ttl: %s
  sync_interval: %s
  redis_timeout: %s
log:
  level: info
  requests: false
health:
  interval: 0s
keys:
  - name: e2e
    key: %s
`, dsn, target.stateYAML(), c.prefix, soLeaseTTL, soSyncInterval, soRedisTimeout, testKey)
	b.WriteString(c.keys)
	b.WriteString(c.top)
	b.WriteString("upstreams:\n")
	for _, u := range c.upstreams {
		fmt.Fprintf(&b, `  - name: %s
    provider: openai
    base_url: %s/v1
    api_key: sk-upstream-%s
    models: [%s]
`, u.name, u.url, u.name, strings.Join(u.models, ", "))
		b.WriteString(u.extra)
	}
	return b.String()
}

// startFleet starts n switchyard processes on cfg, each with its own sqlite
// file. At the end of the test every process is killed and reaped before
// earlier cleanups (such as deleting the Redis keys) run.
func startFleet(t *testing.T, bin string, n int, cfg soConfig) []*proc {
	t.Helper()
	procs := make([]*proc, n)
	for i := range procs {
		dir := t.TempDir()
		path := filepath.Join(dir, "switchyard.yaml")
		if err := os.WriteFile(path, []byte(cfg.yaml(filepath.Join(dir, "switchyard.db"))), 0o600); err != nil {
			t.Fatal(err)
		}
		p := startProcess(t, bin, path)
		t.Cleanup(func() { stopProc(p) })
		procs[i] = p
	}
	return procs
}

// stopProc kills p and waits (at most 10 s) until it has exited. A process
// already reaped by proc.wait must have had its result put back on p.exited.
func stopProc(p *proc) {
	_ = p.cmd.Process.Kill()
	select {
	case err := <-p.exited:
		p.exited <- err
	case <-time.After(10 * time.Second):
	}
}

// soClient is an HTTP client with enough idle connections for the load
// generators, so that they do not churn through ports.
func soClient(t *testing.T) *http.Client {
	tr := &http.Transport{MaxIdleConns: 256, MaxIdleConnsPerHost: 64, IdleConnTimeout: 30 * time.Second}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: 30 * time.Second}
}

// soAnswer is one client request's outcome.
type soAnswer struct {
	status   int
	upstream string // X-Switchyard-Upstream
	body     string // the start of the body of an answer that is not 200
	err      error
}

// String describes a for failure messages.
func (a soAnswer) String() string {
	if a.err != nil {
		return "error: " + a.err.Error()
	}
	if a.status != http.StatusOK {
		return fmt.Sprintf("%d %s", a.status, a.body)
	}
	return fmt.Sprintf("200 from %s", a.upstream)
}

// soChat sends one non-streaming chat request for model to the gateway at
// url. hdr are extra header name/value pairs.
func soChat(ctx context.Context, client *http.Client, url, model string, hdr ...string) soAnswer {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url+"/v1/chat/completions",
		strings.NewReader(`{"model":"`+model+`","messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		return soAnswer{err: err}
	}
	req.Header.Set("Authorization", "Bearer "+testKey)
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(hdr); i += 2 {
		req.Header.Set(hdr[i], hdr[i+1])
	}
	resp, err := client.Do(req)
	if err != nil {
		return soAnswer{err: err}
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	a := soAnswer{status: resp.StatusCode, upstream: resp.Header.Get("X-Switchyard-Upstream"), err: err}
	if a.status != http.StatusOK {
		a.body = string(body[:min(len(body), 300)])
	}
	return a
}

// soTally collects the answers of a load run.
type soTally struct {
	mu         sync.Mutex // guards the fields below
	total      int
	byUpstream map[string]int
	failures   []string // answers that were not 200, with the instance
}

func (y *soTally) add(instance int, a soAnswer) {
	y.mu.Lock()
	defer y.mu.Unlock()
	if y.byUpstream == nil {
		y.byUpstream = map[string]int{}
	}
	y.total++
	if a.err == nil && a.status == http.StatusOK {
		y.byUpstream[a.upstream]++
		return
	}
	y.failures = append(y.failures, fmt.Sprintf("instance %d: %s", instance+1, a))
}

// summary reports the totals (for t.Log and failure messages).
func (y *soTally) summary() string {
	y.mu.Lock()
	defer y.mu.Unlock()
	s := fmt.Sprintf("%d requests, served by %v, %d failed", y.total, y.byUpstream, len(y.failures))
	if len(y.failures) > 0 {
		s += fmt.Sprintf("; first failures: %q", y.failures[:min(len(y.failures), 5)])
	}
	return s
}

func (y *soTally) failed() int {
	y.mu.Lock()
	defer y.mu.Unlock()
	return len(y.failures)
}

// runLoad sends requests for model from workers goroutines, spreading them
// round-robin over procs, until stop is closed or n requests have been sent
// (n ≤ 0: no count limit). Every answer goes to tally. It returns once every
// worker is done.
func runLoad(client *http.Client, procs []*proc, model string, workers, n int, stop <-chan struct{}, tally *soTally) {
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				i := int(next.Add(1) - 1)
				if n > 0 && i >= n {
					return
				}
				inst := i % len(procs)
				tally.add(inst, soChat(context.Background(), client, procs[inst].url, model))
			}
		}()
	}
	wg.Wait()
}

// loadFor runs runLoad for d and returns when every worker is done.
func loadFor(client *http.Client, procs []*proc, model string, workers int, d time.Duration, tally *soTally) {
	stop := make(chan struct{})
	timer := time.AfterFunc(d, func() { close(stop) })
	defer timer.Stop()
	runLoad(client, procs, model, workers, 0, stop, tally)
}

// metricValue reads the first sample of metric (any labels) from the
// Prometheus text at url/metrics; ok is false when it is absent or the
// scrape failed.
func metricValue(client *http.Client, url, metric string) (v float64, ok bool) {
	resp, err := client.Get(url + "/metrics")
	if err != nil {
		return 0, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, false
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, metric) {
			continue
		}
		rest := line[len(metric):]
		if rest == "" || (rest[0] != ' ' && rest[0] != '{') {
			continue // a longer name
		}
		fields := strings.Fields(rest[strings.LastIndex(rest, "}")+1:])
		if len(fields) == 0 {
			continue
		}
		if f, err := strconv.ParseFloat(fields[0], 64); err == nil {
			return f, true
		}
	}
	return 0, false
}

// stateMetricsRE matches the state driver's counters, for logs.
var stateMetricsRE = regexp.MustCompile(`(?m)^switchyard_state_\S+ \S+$`)

// stateMetrics returns the switchyard_state_* samples of the instance at url.
func stateMetrics(client *http.Client, url string) string {
	resp, err := client.Get(url + "/metrics")
	if err != nil {
		return err.Error()
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	return strings.Join(stateMetricsRE.FindAllString(string(b), -1), "\n")
}

// waitFor polls cond every 25 ms until it holds or d has passed.
func waitFor(d time.Duration, cond func() bool) bool {
	for deadline := time.Now().Add(d); ; time.Sleep(25 * time.Millisecond) {
		if cond() {
			return true
		}
		if time.Now().After(deadline) {
			return false
		}
	}
}

// TestScaleOutSharedRPM: an upstream's rate_limit.rpm is one budget for
// every instance. Three processes send 90 requests in well under a minute;
// the preferred upstream (rpm 30) gets at most 30 of them, the unlimited
// second tier the rest, and every client gets a 200.
func TestScaleOutSharedRPM(t *testing.T) { forEachRedisMode(t, scaleOutSharedRPM) }

// scaleOutSharedRPM is TestScaleOutSharedRPM on one Redis deployment.
func scaleOutSharedRPM(t *testing.T, target redisTarget, prefix string) {
	bin := scaleOutBinary(t)
	limited, limitedURL := startMock(t, "limited", mock.Behavior{})
	spare, spareURL := startMock(t, "spare", mock.Behavior{})
	procs := startFleet(t, bin, 3, soConfig{
		target: &target, prefix: prefix,
		top: "defaults:\n  strategy: weighted-random\n",
		upstreams: []soUpstream{
			{name: "limited", url: limitedURL, models: []string{"gpt-4o"}, extra: "    priority: 0\n    rate_limit:\n      rpm: 30\n"},
			{name: "spare", url: spareURL, models: []string{"gpt-4o"}, extra: "    priority: 1\n"},
		},
	})

	const requests, workers, rpm = 60, 6, 30
	client := soClient(t)
	var tally soTally
	start := time.Now()
	runLoad(client, procs, "gpt-4o", workers, requests, nil, &tally)
	elapsed := time.Since(start)
	t.Logf("%s in %v", tally.summary(), elapsed.Round(time.Millisecond))

	if elapsed >= 50*time.Second {
		t.Fatalf("the load took %v: too slow for a one-minute RPM window to be meaningful", elapsed)
	}
	if n := tally.failed(); n > 0 {
		t.Errorf("%d of %d client requests failed: %s", n, requests, tally.summary())
	}
	gotA, gotB := limited.Stats().Requests, spare.Stats().Requests
	t.Logf("mock limited: %d requests, mock spare: %d requests", gotA, gotB)
	if gotA > rpm {
		t.Errorf("the rpm-%d upstream received %d requests from 3 instances within a minute, want ≤ %d", rpm, gotA, rpm)
	}
	if gotA < 20 {
		t.Errorf("the preferred rpm-%d upstream received only %d requests, want ≥ 20 (it should be used up to its limit)", rpm, gotA)
	}
	if gotA+gotB != requests {
		t.Errorf("the mocks received %d + %d requests, want %d in all (no retries were needed)", gotA, gotB, requests)
	}
	for i, p := range procs {
		t.Logf("instance %d:\n%s", i+1, stateMetrics(client, p.url))
	}
}

// TestScaleOutSharedAffinity: a session bound through one instance stays on
// its upstream when its next turns arrive at the other instances. Their
// strategy is round-robin over three equal upstreams, and before every turn
// the instance is primed with session-less requests until it has just served
// the bound upstream, so that without the shared binding the turn would go
// to another upstream.
func TestScaleOutSharedAffinity(t *testing.T) { forEachRedisMode(t, scaleOutSharedAffinity) }

// scaleOutSharedAffinity is TestScaleOutSharedAffinity on one Redis deployment.
func scaleOutSharedAffinity(t *testing.T, target redisTarget, prefix string) {
	bin := scaleOutBinary(t)
	var ups []soUpstream
	for _, name := range []string{"u1", "u2", "u3"} {
		_, url := startMock(t, name, mock.Behavior{})
		ups = append(ups, soUpstream{name: name, url: url, models: []string{"gpt-4o"}})
	}
	procs := startFleet(t, bin, 3, soConfig{
		target: &target, prefix: prefix, upstreams: ups,
		top: "affinity:\n  enabled: true\n  sliding_ttl: 1m\n  absolute_ttl: 5m\n" +
			"defaults:\n  strategy: round-robin\n",
	})
	client := soClient(t)
	ctx := context.Background()

	// prime sends session-less requests through instance inst until one is
	// served by upstream, so that round-robin's next pick there is another.
	prime := func(t *testing.T, inst int, upstream string) {
		t.Helper()
		var seen []string
		for range 6 {
			a := soChat(ctx, client, procs[inst].url, "gpt-4o")
			if a.err != nil || a.status != http.StatusOK {
				t.Fatalf("session-less request through instance %d: %s", inst+1, a)
			}
			if seen = append(seen, a.upstream); a.upstream == upstream {
				return
			}
		}
		t.Fatalf("round-robin through instance %d served %v, never %s: the strategy does not spread traffic", inst+1, seen, upstream)
	}

	// Three sessions, each started on instance 1, then 10 turns alternating
	// between instances 2 and 3.
	const turns = 10
	bound := map[string]bool{}
	for s := range 3 {
		t.Run(fmt.Sprintf("session%d", s+1), func(t *testing.T) {
			session := "sess-" + randomHex(8)
			first := soChat(ctx, client, procs[0].url, "gpt-4o", "X-Session-Id", session)
			if first.err != nil || first.status != http.StatusOK || first.upstream == "" {
				t.Fatalf("first turn through instance 1: %s", first)
			}
			bound[first.upstream] = true
			var got []string
			for i := range turns {
				inst := 1 + i%2
				prime(t, inst, first.upstream)
				a := soChat(ctx, client, procs[inst].url, "gpt-4o", "X-Session-Id", session)
				if a.err != nil || a.status != http.StatusOK {
					t.Fatalf("turn %d through instance %d: %s", i+2, inst+1, a)
				}
				got = append(got, fmt.Sprintf("%s@%d", a.upstream, inst+1))
				if a.upstream != first.upstream {
					t.Errorf("turn %d through instance %d was served by %s, want %s (bound through instance 1)",
						i+2, inst+1, a.upstream, first.upstream)
				}
			}
			t.Logf("session %s bound to %s; turns (upstream@instance): %v", session, first.upstream, got)
		})
	}
	t.Logf("the sessions were bound to %v", bound)
}

// TestScaleOutSharedBreaker: a circuit breaker tripped through one instance
// is open on all of them, and while the upstream keeps failing the
// instances together send it at most one probe per probe_interval (but do
// probe it). Failing over to the healthy upstream, every client gets a 200.
func TestScaleOutSharedBreaker(t *testing.T) { forEachRedisMode(t, scaleOutSharedBreaker) }

// scaleOutSharedBreaker is TestScaleOutSharedBreaker on one Redis deployment.
func scaleOutSharedBreaker(t *testing.T, target redisTarget, prefix string) {
	bin := scaleOutBinary(t)
	bad, badURL := startMock(t, "bad", mock.Behavior{ForceStatus: 500})
	good, goodURL := startMock(t, "good", mock.Behavior{})
	const (
		threshold     = 3
		openDuration  = time.Second
		probeInterval = time.Second
	)
	procs := startFleet(t, bin, 3, soConfig{
		target: &target, prefix: prefix,
		top: fmt.Sprintf("circuit:\n  failure_threshold: %d\n  window: 30s\n  open_duration: %s\n  probe_interval: %s\n  success_threshold: 1\n  slow_start: 0s\n",
			threshold, openDuration, probeInterval) +
			"defaults:\n  strategy: failover\n  retries: 2\n  retry_budget: 1\n",
		upstreams: []soUpstream{
			{name: "bad", url: badURL, models: []string{"gpt-4o"}, extra: "    priority: 0\n"},
			{name: "good", url: goodURL, models: []string{"gpt-4o"}, extra: "    priority: 1\n"},
		},
	})
	client := soClient(t)
	ctx := context.Background()
	var tally soTally

	// Phase 1: trip the breaker through instance 1.
	var lastSent time.Time // the breaker opened after this
	for i := range threshold {
		lastSent = time.Now()
		a := soChat(ctx, client, procs[0].url, "gpt-4o")
		tally.add(0, a)
		if a.err != nil || a.status != http.StatusOK || a.upstream != "good" {
			t.Fatalf("request %d through instance 1: %s, want 200 from good after bad failed", i+1, a)
		}
	}
	tripped := time.Now()
	if got := bad.Stats().Requests; got != threshold {
		t.Fatalf("bad received %d requests while tripping its breaker, want %d", got, threshold)
	}

	// Phase 2: instance 2 sees the breaker open at once and sends bad nothing
	// for the rest of open_duration.
	// (On a machine so slow that the phase outlasts open_duration, one
	// half-open probe is allowed.)
	phase2 := openDuration / 2
	for time.Since(tripped) < phase2 {
		tally.add(1, soChat(ctx, client, procs[1].url, "gpt-4o"))
	}
	var allowed2 int64
	if time.Since(lastSent) >= openDuration {
		allowed2 = 1
	}
	if got := bad.Stats().Requests - threshold; got > allowed2 {
		t.Errorf("bad received %d requests through instance 2 within %v after its breaker opened through instance 1 (open_duration %v), want ≤ %d",
			got, time.Since(lastSent).Round(time.Millisecond), openDuration, allowed2)
	}

	// Phase 3: load over all three instances while bad keeps failing; all
	// instances together may probe it once per probe_interval.
	before := bad.Stats().Requests
	start := time.Now()
	loadFor(client, procs, "gpt-4o", 6, 4*time.Second, &tally)
	elapsed := time.Since(start)
	probes := bad.Stats().Requests - before
	allowed := int64(elapsed/probeInterval) + 1
	t.Logf("phase 3: %v of load, bad received %d probes (allowed %d); %s; good received %d",
		elapsed.Round(time.Millisecond), probes, allowed, tally.summary(), good.Stats().Requests)
	if probes > allowed {
		t.Errorf("bad received %d requests in %v while failing, want ≤ %d (one probe per %v across all instances)",
			probes, elapsed.Round(time.Millisecond), allowed, probeInterval)
	}
	if probes < 1 {
		t.Errorf("bad received no probe in %v although its breaker opened for %v: it never went half-open",
			elapsed.Round(time.Millisecond), openDuration)
	}
	if n := tally.failed(); n > 0 {
		t.Errorf("%d client requests failed, want every one to fail over to good: %s", n, tally.summary())
	}
}

// TestScaleOutConcurrencyLeases: max_concurrency slots are shared leases.
// Under load from three instances the limited upstream never has more than
// its slots in flight; slots held by an instance that is killed with
// SIGKILL come free once their lease expires.
func TestScaleOutConcurrencyLeases(t *testing.T) { forEachRedisMode(t, scaleOutConcurrencyLeases) }

// scaleOutConcurrencyLeases is TestScaleOutConcurrencyLeases on one Redis deployment.
func scaleOutConcurrencyLeases(t *testing.T, target redisTarget, prefix string) {
	bin := scaleOutBinary(t)
	const slots = 4
	slow, slowURL := startMock(t, "slow", mock.Behavior{Latency: 300 * time.Millisecond})
	_, fastURL := startMock(t, "fast", mock.Behavior{Latency: 20 * time.Millisecond})
	solo, soloURL := startMock(t, "solo", mock.Behavior{Hang: true})
	procs := startFleet(t, bin, 3, soConfig{
		target: &target, prefix: prefix,
		top: "defaults:\n  strategy: failover\n",
		upstreams: []soUpstream{
			{name: "slow", url: slowURL, models: []string{"gpt-4o"},
				extra: fmt.Sprintf("    priority: 0\n    max_concurrency: %d\n", slots)},
			{name: "fast", url: fastURL, models: []string{"gpt-4o"}, extra: "    priority: 1\n"},
			{name: "solo", url: soloURL, models: []string{"solo-model"},
				extra: fmt.Sprintf("    max_concurrency: %d\n    queue:\n      enabled: false\n", slots)},
		},
	})
	client := soClient(t)

	t.Run("shared slots under load", func(t *testing.T) {
		var tally soTally
		loadFor(client, procs, "gpt-4o", 12, 3*time.Second, &tally)
		st := slow.Stats()
		t.Logf("%s; slow: %d requests, max in flight %d", tally.summary(), st.Requests, st.MaxInFlight)
		if st.MaxInFlight > slots {
			t.Errorf("slow had %d requests in flight at once from 3 instances, want ≤ max_concurrency %d", st.MaxInFlight, slots)
			for i, p := range procs { // a fallback to local state (a Redis call slower than redis_timeout) allows slots per instance
				t.Logf("instance %d:\n%s", i+1, stateMetrics(client, p.url))
			}
		}
		if st.Requests < 1 {
			t.Errorf("slow served no request: the concurrency check is vacuous")
		}
		if n := tally.failed(); n > 0 {
			t.Errorf("%d client requests failed, want 0: %s", n, tally.summary())
		}
	})

	t.Run("leases of a killed instance expire", func(t *testing.T) {
		if target.mode != "single" {
			t.Skip("lease expiry does not depend on the deployment: it runs on the single server")
		}
		// Instance 1 takes every slot of solo with requests that hang.
		hangCtx, cancelHang := context.WithCancel(context.Background())
		defer cancelHang()
		hung := make(chan soAnswer, slots)
		for range slots {
			go func() { hung <- soChat(hangCtx, client, procs[0].url, "solo-model") }()
		}
		if !waitFor(10*time.Second, func() bool { return solo.Stats().InFlight == slots }) {
			t.Fatalf("solo has %d requests in flight 10 s after instance 1 sent %d", solo.Stats().InFlight, slots)
		}

		// A fifth request through instance 2 finds no free slot.
		ctx5, cancel5 := context.WithTimeout(context.Background(), 5*time.Second)
		a := soChat(ctx5, client, procs[1].url, "solo-model")
		cancel5()
		if a.err != nil || a.status != http.StatusServiceUnavailable {
			t.Fatalf("a fifth request through instance 2 while instance 1 holds all %d slots: %s, want 503", slots, a)
		}
		if got := solo.Stats().Requests; got != slots {
			t.Fatalf("solo received %d requests, want %d (the fifth must not reach it)", got, slots)
		}

		// kill -9 instance 1: its leases are never released, only expire.
		if err := procs[0].cmd.Process.Signal(syscall.SIGKILL); err != nil {
			t.Fatal(err)
		}
		killed := time.Now()
		err := procs[0].wait(t, 10*time.Second)
		procs[0].exited <- err // for stopProc at cleanup
		solo.SetBehavior(mock.Behavior{})
		for range slots {
			if a := <-hung; a.err == nil {
				t.Errorf("a request hung on the killed instance ended with %s, want a connection error", a)
			}
		}

		bound := soLeaseTTL + time.Second
		var attempts []string
		var served soAnswer
		ok := waitFor(bound-time.Since(killed), func() bool {
			served = soChat(context.Background(), client, procs[1].url, "solo-model")
			attempts = append(attempts, fmt.Sprintf("%v: %s", time.Since(killed).Round(10*time.Millisecond), served))
			return served.err == nil && served.status == http.StatusOK
		})
		freed := time.Since(killed)
		if !ok {
			t.Fatalf("no request through instance 2 succeeded within %v of killing instance 1 (lease_ttl %v + 1 s); %d attempts, last: %q",
				freed.Round(time.Millisecond), soLeaseTTL, len(attempts), attempts[max(len(attempts)-3, 0):])
		}
		t.Logf("the slots came free %v after the kill (%d attempts; first: %s)", freed.Round(time.Millisecond), len(attempts), attempts[0])
		if len(attempts) == 1 {
			t.Errorf("the first request after the kill (%v later) already succeeded: the killed instance's leases did not hold its slots",
				freed.Round(time.Millisecond))
		}
	})
}

// TestScaleOutRedisOutage: when Redis goes away, two instances keep serving
// from local state (only requests in flight at that moment may fail), report
// switchyard_state_redis_up 0, and when it comes back they report 1 again
// and write their state into the new, empty Redis.
func TestScaleOutRedisOutage(t *testing.T) {
	redisServer, err := exec.LookPath("redis-server")
	if err != nil {
		t.Skip("redis-server is not on PATH")
	}
	bin := scaleOutBinary(t)
	port := freePort(t)
	redisURL := fmt.Sprintf("redis://127.0.0.1:%d/0", port)
	prefix := testPrefix(t)
	rs := startRedisServer(t, redisServer, port)

	oa, oaURL := startMock(t, "oa", mock.Behavior{Latency: 10 * time.Millisecond})
	ob, obURL := startMock(t, "ob", mock.Behavior{Latency: 10 * time.Millisecond})
	limits := "    rate_limit:\n      rpm: 100000\n    max_concurrency: 64\n"
	procs := startFleet(t, bin, 2, soConfig{
		redisURL: redisURL, prefix: prefix,
		top: "defaults:\n  strategy: round-robin\n",
		upstreams: []soUpstream{
			{name: "oa", url: oaURL, models: []string{"gpt-4o"}, extra: limits},
			{name: "ob", url: obURL, models: []string{"gpt-4o"}, extra: limits},
		},
	})
	client := soClient(t)
	metricsClient := &http.Client{Timeout: 2 * time.Second}
	redisUp := func(i int) (float64, bool) {
		return metricValue(metricsClient, procs[i].url, "switchyard_state_redis_up")
	}
	for i := range procs {
		if v, ok := redisUp(i); !ok || v != 1 {
			t.Fatalf("instance %d before the outage: switchyard_state_redis_up = %v (present %v), want 1", i+1, v, ok)
		}
	}

	const workers = 4
	var tally soTally
	stop := make(chan struct{})
	loadDone := make(chan struct{})
	go func() {
		defer close(loadDone)
		runLoad(client, procs, "gpt-4o", workers, 0, stop, &tally)
	}()
	stopLoad := sync.OnceFunc(func() { close(stop); <-loadDone })
	defer stopLoad()

	time.Sleep(time.Second) // steady load with Redis up

	// Outage: kill Redis; keep the load on for 2 s while watching the gauge.
	rs.stop()
	outage := time.Now()
	sawDown := map[int]bool{}
	for time.Since(outage) < 2*time.Second {
		for i := range procs {
			if v, ok := redisUp(i); ok && v == 0 {
				sawDown[i] = true
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	failedDuringOutage := tally.failed()
	if len(sawDown) == 0 {
		t.Errorf("no instance reported switchyard_state_redis_up 0 during a 2 s Redis outage")
	}
	t.Logf("during the outage: %s; instances that reported redis_up 0: %v", tally.summary(), sawDown)
	for i, p := range procs {
		t.Logf("instance %d during the outage:\n%s", i+1, stateMetrics(metricsClient, p.url))
	}

	// Restart Redis on the same port, empty.
	rs = startRedisServer(t, redisServer, port)
	restarted := time.Now()
	for i := range procs {
		if !waitFor(5*time.Second, func() bool { v, ok := redisUp(i); return ok && v == 1 }) {
			v, ok := redisUp(i)
			t.Errorf("instance %d: switchyard_state_redis_up = %v (present %v) 5 s after Redis restarted, want 1", i+1, v, ok)
		}
	}
	var keys []string
	converged := waitFor(5*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		keys, _ = scanPrefix(ctx, rs.client, prefix)
		return len(keys) > 0
	})
	if !converged {
		t.Errorf("no key under %q in the restarted Redis 5 s after it came back under steady load", prefix)
	} else {
		t.Logf("the restarted Redis holds %d keys under the prefix after %v, e.g. %q",
			len(keys), time.Since(restarted).Round(time.Millisecond), keys[:min(len(keys), 5)])
	}
	if rest := 2*time.Second - time.Since(restarted); rest > 0 {
		time.Sleep(rest) // steady load with Redis back
	}
	stopLoad()

	t.Logf("whole run: %s (%d failed during the outage phase); oa %d, ob %d requests",
		tally.summary(), failedDuringOutage, oa.Stats().Requests, ob.Stats().Requests)
	for i, p := range procs {
		t.Logf("instance %d at the end:\n%s", i+1, stateMetrics(metricsClient, p.url))
	}
	if n := tally.failed(); n > workers {
		t.Errorf("%d client requests failed around the Redis outage, want ≤ %d (only those in flight when it went away): %s",
			n, workers, tally.summary())
	}
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// redisProc is a redis-server the test runs.
type redisProc struct {
	cmd    *exec.Cmd
	client *redis.Client
	once   sync.Once
}

// startRedisServer runs an empty, non-persistent redis-server on
// 127.0.0.1:port and waits (at most 10 s) until it answers PING. It is
// stopped at the end of the test.
func startRedisServer(t *testing.T, path string, port int) *redisProc {
	t.Helper()
	cmd := exec.Command(path, "--port", strconv.Itoa(port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no")
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting redis-server: %v", err)
	}
	r := &redisProc{cmd: cmd, client: redis.NewClient(&redis.Options{Addr: fmt.Sprintf("127.0.0.1:%d", port)})}
	t.Cleanup(r.stop)
	ok := waitFor(10*time.Second, func() bool {
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		defer cancel()
		return r.client.Ping(ctx).Err() == nil
	})
	if !ok {
		t.Fatalf("redis-server on port %d does not answer PING after 10 s", port)
	}
	return r
}

// stop kills the server with SIGKILL and reaps it.
func (r *redisProc) stop() {
	r.once.Do(func() {
		_ = r.client.Close()
		_ = r.cmd.Process.Kill()
		_ = r.cmd.Wait()
	})
}
