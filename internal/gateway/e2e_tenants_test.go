package gateway_test

import (
	"bytes"
	"cmp"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"switchyard/internal/config"
	"switchyard/internal/mock"
)

// End-to-end tests of tenants (docs/routing.md#tenants-classes-and-fair-queueing):
// fair queueing across keys, batch shedding and team limits, through the
// real server on the wall clock, against a mock answering in 300 ms.

// tenantKey returns a key named name (secret "sk-"+name) of class class
// ("" is the default) in team team.
func tenantKey(name, class, team string) config.Key {
	k := clientKey(name, "sk-"+name)
	k.Class, k.Team = cmp.Or(class, k.Class), team
	return k
}

// chatAs sends limitsChatBody with the secret of key name and returns the
// answer and how long it took.
func (e *env) chatAs(t testing.TB, name string) (result, time.Duration) {
	t.Helper()
	start := time.Now()
	r := e.postAs(t, "sk-"+name, chatPath, limitsChatBody)
	return r, time.Since(start)
}

// slowUpstream is an upstream with 2 slots and a queue of 32 in front of a
// mock answering after 300 ms, under discipline.
func slowUpstream(t testing.TB, discipline string) config.Upstream {
	_, url := startMock(t, "slow", mock.Behavior{CompletionTokens: 2, Latency: 300 * time.Millisecond})
	up := upstreamAt("slow", config.ProviderOpenAI, url, 0, "gpt-4o")
	up.MaxConcurrency = 2
	up.Queue = config.Queue{Enabled: true, Timeout: 10 * time.Second, MaxLength: 32, Discipline: discipline}
	return up
}

// floodResult is what the fairness scenario measured.
type floodResult struct {
	otherWait   []time.Duration // the second key's requests, each from its sending
	floodServed int             // flood requests answered 200
	failures    []string
}

// chatTo sends limitsChatBody to the gateway at base with the secret of
// key name, and returns the answer (status 0 and the error as body when
// it could not be sent) and how long it took. Safe off the test goroutine.
func chatTo(base, name string) (result, time.Duration) {
	start := time.Now()
	req, err := http.NewRequest(http.MethodPost, base+chatPath, strings.NewReader(limitsChatBody))
	if err != nil {
		return result{body: []byte(err.Error())}, 0
	}
	req.Header.Set("Authorization", "Bearer sk-"+name)
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return result{body: []byte(err.Error())}, time.Since(start)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return result{body: []byte(err.Error())}, time.Since(start)
	}
	return result{status: resp.StatusCode, header: resp.Header, body: b}, time.Since(start)
}

// floodScenario sends 16 requests of key flood at once and, 150 ms later,
// 2 of key other, through the gateways at bases (round robin), and waits
// for all.
func floodScenario(t *testing.T, bases ...string) floodResult {
	t.Helper()
	var (
		mu  sync.Mutex
		res floodResult
		wg  sync.WaitGroup
	)
	send := func(i int, key string) {
		r, took := chatTo(bases[i%len(bases)], key)
		mu.Lock()
		defer mu.Unlock()
		if r.status != http.StatusOK {
			res.failures = append(res.failures, key+": "+string(r.body))
			return
		}
		if key == "flood" {
			res.floodServed++
		} else {
			res.otherWait = append(res.otherWait, took)
		}
	}
	for i := range 16 {
		wg.Go(func() { send(i, "flood") })
	}
	time.Sleep(150 * time.Millisecond) // the scenario's own timing, not a synchronisation
	for i := range 2 {
		wg.Go(func() { send(i, "other") })
	}
	wg.Wait()
	return res
}

// TestFairQueueAcrossKeys: one key floods 16 requests into an upstream with
// 2 slots and a 300 ms answer; a second key's 2 requests, sent 150 ms
// later, are served within 1.3 s under the fair discipline (both within
// the first three rounds of slots), where fifo makes them wait behind the
// whole flood (over 2 s). Every flood request is still served.
func TestFairQueueAcrossKeys(t *testing.T) {
	tests := []struct {
		discipline string
		check      func(time.Duration) bool
		want       string
	}{
		{config.DisciplineFair, func(d time.Duration) bool { return d <= 1300*time.Millisecond }, "≤ 1.3s"},
		{config.DisciplineFIFO, func(d time.Duration) bool { return d >= 2*time.Second }, "≥ 2s (behind the flood)"},
	}
	for _, tc := range tests {
		t.Run(tc.discipline, func(t *testing.T) {
			e := startGateway(t, spec{
				upstreams: []config.Upstream{slowUpstream(t, tc.discipline)},
				keys:      []config.Key{tenantKey("flood", "", ""), tenantKey("other", "", "")},
			})
			res := floodScenario(t, e.URL)
			res.check(t, tc.check, tc.want)
			t.Logf("%s: the second key's requests took %v", tc.discipline, res.otherWait)
		})
	}
}

// check fails t unless every request was served and the second key's
// waits pass ok.
func (res floodResult) check(t *testing.T, ok func(time.Duration) bool, want string) {
	t.Helper()
	if len(res.failures) > 0 {
		t.Fatalf("failed requests: %v", res.failures)
	}
	if res.floodServed != 16 || len(res.otherWait) != 2 {
		t.Fatalf("served %d flood and %d other requests, want 16 and 2", res.floodServed, len(res.otherWait))
	}
	for _, d := range res.otherWait {
		if !ok(d) {
			t.Errorf("the second key waited %s, want %s (all: %v)", d, want, res.otherWait)
		}
	}
}

// TestFairQueueScaleOut: the fairness scenario of TestFairQueueAcrossKeys
// through two gateway processes sharing one Redis, each request sent to
// them in turn: the queue, its scores and the keys' virtual times are
// shared, so the second key is still served within 1.3 s. It runs on each
// Redis deployment (forEachRedisMode).
func TestFairQueueScaleOut(t *testing.T) { forEachRedisMode(t, fairQueueScaleOut) }

func fairQueueScaleOut(t *testing.T, target redisTarget, prefix string) {
	bin := scaleOutBinary(t)
	_, url := startMock(t, "slow", mock.Behavior{CompletionTokens: 2, Latency: 300 * time.Millisecond})
	procs := startFleet(t, bin, 2, soConfig{
		target: &target, prefix: prefix,
		keys: "  - {name: flood, key: sk-flood}\n  - {name: other, key: sk-other}\n",
		upstreams: []soUpstream{{name: "slow", url: url, models: []string{"gpt-4o"},
			extra: "    max_concurrency: 2\n    queue: {enabled: true, timeout: 10s, max_length: 32}\n"}},
	})
	res := floodScenario(t, procs[0].url, procs[1].url)
	res.check(t, func(d time.Duration) bool { return d <= 1300*time.Millisecond }, "≤ 1.3s")
	t.Logf("two instances: the second key's requests took %v", res.otherWait)
}

// TestBatchShed: a batch request meeting a full upstream with interactive
// requests waiting is not queued: 429 overloaded with Retry-After, at once.
// The admin state splits the queue by class and key; the metrics count the
// shed request and the interactive waits.
func TestBatchShed(t *testing.T) {
	e := startGateway(t, spec{
		upstreams: []config.Upstream{slowUpstream(t, config.DisciplineFair)},
		keys:      []config.Key{tenantKey("chat", "interactive", ""), tenantKey("nightly", "batch", "")},
		edit:      withAdmin,
	})
	var wg sync.WaitGroup
	for range 4 { // 2 in flight, 2 waiting
		wg.Go(func() {
			if r, _ := e.chatAs(t, "chat"); r.status != http.StatusOK {
				t.Errorf("interactive request: %d %s", r.status, r.body)
			}
		})
	}
	defer wg.Wait()
	if !waitFor(hangGuard, func() bool { return queueDepth(e, "slow") == 2 }) {
		t.Fatal("2 interactive requests never queued")
	}
	st := e.mustAdmin(t, http.MethodGet, "/state", "", http.StatusOK)
	if c, k := gjson.GetBytes(st.body, "upstreams.0.queue_by_class.interactive").Int(), gjson.GetBytes(st.body, "upstreams.0.queue_by_key.chat").Int(); c != 2 || k != 2 {
		t.Errorf("state: queue by class interactive %d, by key chat %d; want 2 and 2: %s", c, k, st.body)
	}
	r, took := e.chatAs(t, "nightly")
	if r.status != http.StatusTooManyRequests || errCode(r) != "overloaded" || r.header.Get("Retry-After") == "" {
		t.Fatalf("batch request answered %d %s (Retry-After %q), want 429 overloaded with Retry-After",
			r.status, r.body, r.header.Get("Retry-After"))
	}
	if !strings.Contains(string(r.body), "shed: batch") {
		t.Errorf("the error does not say the request was shed: %s", r.body)
	}
	if took > 250*time.Millisecond {
		t.Errorf("the batch request took %s to be refused, want well under a second (no wait)", took)
	}
	wg.Wait()
	m := scrapeMetrics(t, e, "")
	if !bytes.Contains(m.raw, []byte(`switchyard_shed_total{class="batch"} 1`)) ||
		!bytes.Contains(m.raw, []byte(`switchyard_queue_wait_seconds_count{class="interactive"} 2`)) {
		t.Errorf("metrics lack the shed request or the 2 interactive waits:\n%s", m.raw)
	}
}

// queueDepth returns the number of requests e has waiting for upstream.
func queueDepth(e *env, upstream string) int {
	for _, s := range e.G.UpstreamStates() {
		if s.Name == upstream {
			return s.QueueDepth
		}
	}
	return -1
}

// TestTeamAndKeyLimits: a team's rpm of 4 over two keys answers the 5th and
// 6th request 429 team_rpm_exceeded with Retry-After, whichever key sends
// them; a key's max_concurrency answers a request beyond it 429
// key_concurrency_exceeded; a key's tpm answers 429 key_tpm_exceeded once
// its estimated tokens are spent.
func TestTeamAndKeyLimits(t *testing.T) {
	t.Run("team rpm", func(t *testing.T) {
		_, url := startMock(t, "fast", mock.Behavior{CompletionTokens: 2})
		e := startGateway(t, spec{
			upstreams: []config.Upstream{upstreamAt("fast", config.ProviderOpenAI, url, 0, "gpt-4o")},
			keys:      []config.Key{tenantKey("r1", "", "research"), tenantKey("r2", "", "research"), tenantKey("solo", "", "")},
			edit: func(c *config.Config) {
				c.Teams = []config.Team{{Name: "research", RPM: 4, SpendLimit: config.SpendLimit{Period: "month"}, Weight: 1}}
			},
		})
		for i, key := range []string{"r1", "r2", "r1", "r2", "r1", "r2"} {
			r, _ := e.chatAs(t, key)
			want := http.StatusOK
			if i >= 4 {
				want = http.StatusTooManyRequests
			}
			if r.status != want {
				t.Fatalf("request %d (key %s) answered %d %s, want %d", i+1, key, r.status, r.body, want)
			}
			if want == http.StatusTooManyRequests && (errCode(r) != "team_rpm_exceeded" || r.header.Get("Retry-After") == "") {
				t.Fatalf("request %d answered %s (Retry-After %q), want team_rpm_exceeded with Retry-After", i+1, r.body, r.header.Get("Retry-After"))
			}
		}
		if r, _ := e.chatAs(t, "solo"); r.status != http.StatusOK {
			t.Fatalf("a key of no team answered %d %s, want 200", r.status, r.body)
		}
	})
	t.Run("key max_concurrency", func(t *testing.T) {
		e := startGateway(t, spec{
			upstreams: []config.Upstream{slowUpstream(t, config.DisciplineFair)},
			keys: []config.Key{func() config.Key {
				k := tenantKey("one", "", "")
				k.MaxConcurrency = 1
				return k
			}()},
		})
		first := make(chan result, 1)
		go func() { r, _ := e.chatAs(t, "one"); first <- r }()
		if !waitFor(hangGuard, func() bool {
			for _, s := range e.G.UpstreamStates() {
				if s.Name == "slow" && s.InFlight == 1 {
					return true
				}
			}
			return false
		}) {
			t.Fatal("the first request never reached the upstream")
		}
		r, _ := e.chatAs(t, "one")
		if r.status != http.StatusTooManyRequests || errCode(r) != "key_concurrency_exceeded" {
			t.Fatalf("second request answered %d %s, want 429 key_concurrency_exceeded", r.status, r.body)
		}
		if r := <-first; r.status != http.StatusOK {
			t.Fatalf("first request answered %d %s", r.status, r.body)
		}
		if r, _ := e.chatAs(t, "one"); r.status != http.StatusOK {
			t.Fatalf("after the first ended, a request answered %d %s, want 200", r.status, r.body)
		}
	})
	t.Run("key tpm", func(t *testing.T) {
		_, url := startMock(t, "fast", mock.Behavior{CompletionTokens: 2})
		k := tenantKey("small", "", "")
		k.TPM = 20 // a request estimates 15 tokens (its body's length / 4)
		e := startGateway(t, spec{
			upstreams: []config.Upstream{upstreamAt("fast", config.ProviderOpenAI, url, 0, "gpt-4o")},
			keys:      []config.Key{k},
		})
		if r, _ := e.chatAs(t, "small"); r.status != http.StatusOK {
			t.Fatalf("first request answered %d %s, want 200", r.status, r.body)
		}
		r, _ := e.chatAs(t, "small")
		if r.status != http.StatusTooManyRequests || errCode(r) != "key_tpm_exceeded" || r.header.Get("Retry-After") == "" {
			t.Fatalf("second request answered %d %s, want 429 key_tpm_exceeded with Retry-After", r.status, r.body)
		}
	})
}
