package state

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"io"
	"math"
	"net"
	"net/url"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"switchyard/internal/affinity"
	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/limits"
	"switchyard/internal/outcome"
)

// Tests of the Redis shared state (state.driver: redis) against a real
// Redis server named by SWITCHYARD_TEST_REDIS_URL. Every test works under a
// key prefix of its own, deleted at the end, and drives time with a fake
// clock: the scripts take "now" as an argument, so only Redis's own key TTLs
// (and the 429 cooldown, a PX key) run on the wall clock.

const redisURLEnv = "SWITCHYARD_TEST_REDIS_URL"

// Shared-state timing of the tests.
const (
	testLeaseTTL     = 3 * time.Second
	testSyncInterval = 250 * time.Millisecond
	testRedisTimeout = time.Second
)

// testCircuit is the breaker configuration of most tests.
var testCircuit = config.Circuit{
	FailureThreshold: 3, Window: 30 * time.Second, OpenDuration: 10 * time.Second,
	ProbeInterval: 5 * time.Second, SuccessThreshold: 1,
}

// testRedisURL returns the Redis URL the tests may write to, or skips tb.
func testRedisURL(tb testing.TB) string {
	tb.Helper()
	u := os.Getenv(redisURLEnv)
	if u == "" {
		tb.Skip("SWITCHYARD_TEST_REDIS_URL is not set; the redis driver tests need a real Redis")
	}
	return u
}

// testOpt adjusts one test instance's configuration.
type testOpt func(*config.State, *RedisOptions)

// sharing puts the new instance under other's key prefix: a second gateway.
func sharing(other *Redis) testOpt {
	return func(s *config.State, _ *RedisOptions) { s.RedisPrefix = other.prefix }
}

// withURL points the instance at url instead of SWITCHYARD_TEST_REDIS_URL.
func withURL(u string, timeout time.Duration) testOpt {
	return func(s *config.State, _ *RedisOptions) { s.RedisURL, s.RedisTimeout = u, timeout }
}

// withOptions sets the instance's callbacks (Clock is kept).
func withOptions(o RedisOptions) testOpt {
	return func(_ *config.State, ro *RedisOptions) {
		clk := ro.Clock
		*ro = o
		ro.Clock = clk
	}
}

// newTestRedis returns an instance on the test Redis under a fresh key
// prefix (or the one an option gives), closed and with every key under the
// prefix deleted at the end of the test. It skips tb when
// SWITCHYARD_TEST_REDIS_URL is unset, unless an option names another URL.
func newTestRedis(tb testing.TB, circuit config.Circuit, clk clock.Clock, opts ...testOpt) *Redis {
	tb.Helper()
	cfg := config.State{
		Driver: "redis", LeaseTTL: testLeaseTTL, SyncInterval: testSyncInterval, RedisTimeout: testRedisTimeout,
	}
	ro := RedisOptions{Clock: clk}
	for _, o := range opts {
		o(&cfg, &ro)
	}
	real := cfg.RedisURL == ""
	if real {
		cfg.RedisURL = testRedisURL(tb)
	}
	if cfg.RedisPrefix == "" {
		cfg.RedisPrefix = testPrefix(tb)
	}
	r, err := NewRedis(cfg, circuit, ro)
	if err != nil {
		tb.Fatalf("NewRedis: %v", err)
	}
	tb.Cleanup(func() { _ = r.Close() })
	if real {
		prefix := cfg.RedisPrefix
		tb.Cleanup(func() {
			rdb := rawClient(tb)
			ctx := context.Background()
			for _, k := range keysUnder(tb, rdb, prefix) {
				rdb.Del(ctx, k)
			}
		})
	}
	return r
}

// testPrefix returns a key prefix of tb's own.
func testPrefix(tb testing.TB) string {
	name := strings.Map(func(c rune) rune {
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' {
			return c
		}
		return '_'
	}, tb.Name())
	var b [4]byte
	_, _ = rand.Read(b[:])
	return "sy-unit-" + name + "-" + hex.EncodeToString(b[:]) + ":"
}

// rawClient returns a plain client of the test Redis, to look behind the
// implementation's back.
func rawClient(tb testing.TB) *redis.Client {
	tb.Helper()
	o, err := redis.ParseURL(testRedisURL(tb))
	if err != nil {
		tb.Fatalf("%s: %v", redisURLEnv, err)
	}
	rdb := redis.NewClient(o)
	tb.Cleanup(func() { _ = rdb.Close() })
	return rdb
}

// keysUnder lists every key under prefix.
func keysUnder(tb testing.TB, rdb *redis.Client, prefix string) []string {
	tb.Helper()
	var keys []string
	iter := rdb.Scan(context.Background(), 0, prefix+"*", 1000).Iterator()
	for iter.Next(context.Background()) {
		keys = append(keys, iter.Val())
	}
	if err := iter.Err(); err != nil {
		tb.Fatalf("SCAN %s*: %v", prefix, err)
	}
	slices.Sort(keys)
	return keys
}

// admitOK admits a on r and fails the test unless Redis admitted it.
func admitOK(tb testing.TB, r *Redis, a Admission) Ticket {
	tb.Helper()
	tk, d := r.Admit(context.Background(), a)
	if d != nil {
		tb.Fatalf("Admit(%s) denied %q (wait %v), want admitted", a.Upstream, d.Reason, d.Wait)
	}
	if !tk.Shared {
		tb.Fatalf("Admit(%s) admitted from local state, want a shared ticket", a.Upstream)
	}
	return tk
}

// admitDenied admits a on r and fails the test unless it is refused for
// reason with a Wait in [lo, hi].
func admitDenied(tb testing.TB, r *Redis, a Admission, reason string, lo, hi time.Duration) *Denial {
	tb.Helper()
	tk, d := r.Admit(context.Background(), a)
	if d == nil {
		tb.Fatalf("Admit(%s) admitted (shared %v, probe %v), want denied %q", a.Upstream, tk.Shared, tk.Probe, reason)
	}
	if d.Reason != reason || d.Wait < lo || d.Wait > hi {
		tb.Fatalf("Admit(%s) denied %q wait %v, want %q wait in [%v, %v]", a.Upstream, d.Reason, d.Wait, reason, lo, hi)
	}
	return d
}

// waitFor polls cond in real time (for goroutines to reach a point, never
// for time-based logic) and fails the test after 5 s.
func waitFor(tb testing.TB, what string, cond func() bool) {
	tb.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			tb.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// recorder collects an instance's callbacks.
type recorder struct {
	mu          sync.Mutex
	fallbacks   map[string]int
	roundTrips  map[string]int
	ups         []bool
	transitions []string // upstream/to/reason
}

func newRecorder() *recorder {
	return &recorder{fallbacks: map[string]int{}, roundTrips: map[string]int{}}
}

func (rc *recorder) options() RedisOptions {
	return RedisOptions{
		OnRoundTrip: func(op string) { rc.mu.Lock(); rc.roundTrips[op]++; rc.mu.Unlock() },
		OnFallback:  func(op string) { rc.mu.Lock(); rc.fallbacks[op]++; rc.mu.Unlock() },
		OnUp:        func(up bool) { rc.mu.Lock(); rc.ups = append(rc.ups, up); rc.mu.Unlock() },
		OnTransition: func(upstream, to, reason string) {
			rc.mu.Lock()
			rc.transitions = append(rc.transitions, upstream+"/"+to+"/"+reason)
			rc.mu.Unlock()
		},
	}
}

func (rc *recorder) transitionsTo() []string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	out := []string{}
	for _, tr := range rc.transitions {
		parts := strings.SplitN(tr, "/", 3)
		out = append(out, parts[0]+"/"+parts[1])
	}
	return out
}

func (rc *recorder) lastReason() string {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if len(rc.transitions) == 0 {
		return ""
	}
	return strings.SplitN(rc.transitions[len(rc.transitions)-1], "/", 3)[2]
}

func (rc *recorder) snapshot() (fallbacks map[string]int, ups []bool) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return cloneCounts(rc.fallbacks), slices.Clone(rc.ups)
}

func cloneCounts(m map[string]int) map[string]int {
	out := make(map[string]int, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

// syncView syncs r watching upstream and returns its view.
func syncView(tb testing.TB, r *Redis, upstream string) View {
	tb.Helper()
	r.SetWatch(Watch{Upstreams: []string{upstream}})
	r.Sync(nil)
	v, ok := r.View(upstream)
	if !ok {
		tb.Fatalf("View(%s) not ok after Sync (Redis up: %v)", upstream, r.Up())
	}
	return v
}

var keep = Settlement{Outcome: outcome.Outcome{Class: outcome.Success}}

// Two instances on one prefix share one sliding 60 s request window.
func TestRedisRPMWindowShared(t *testing.T) {
	clk := clock.NewFake(t0)
	a := newTestRedis(t, testCircuit, clk)
	b := newTestRedis(t, testCircuit, clk, sharing(a))
	adm := Admission{Upstream: "u", RPM: 3}
	inst := map[string]*Redis{"A": a, "B": b}
	steps := []struct {
		advance time.Duration
		on      string
		reason  string        // "" = admitted
		wait    time.Duration // the denial's Wait
	}{
		{0, "A", "", 0},                                  // t0
		{10 * time.Second, "B", "", 0},                   // t0+10s
		{10 * time.Second, "A", "", 0},                   // t0+20s: 3 in the window
		{10 * time.Second, "B", "rpm", 30 * time.Second}, // the oldest (t0) leaves at t0+60s
		{0, "A", "rpm", 30 * time.Second},                // a refusal is not counted
		{30*time.Second - time.Millisecond, "A", "rpm", time.Millisecond},
		{time.Millisecond, "B", "", 0},                  // t0+60s: t0's entry left
		{0, "A", "rpm", 10 * time.Second},               // now t0+10s's is the oldest
		{60*time.Second - time.Millisecond, "A", "", 0}, // t0+119.999s: all but t0+60s's have left
		{0, "B", "", 0},
		{0, "A", "rpm", time.Millisecond},
		{time.Millisecond, "B", "", 0},                     // t0+120s: t0+60s's left too
		{0, "A", "rpm", 60*time.Second - time.Millisecond}, // the oldest is t0+119.999s's
	}
	for i, s := range steps {
		clk.Advance(s.advance)
		if s.reason == "" {
			admitOK(t, inst[s.on], adm)
			continue
		}
		tk, d := inst[s.on].Admit(context.Background(), adm)
		if d == nil || d.Reason != s.reason || d.Wait != s.wait {
			t.Fatalf("step %d (%s at +%v): ticket %+v denial %+v, want %q wait %v",
				i, s.on, clk.Now().Sub(t0), tk, d, s.reason, s.wait)
		}
	}
	if got := syncView(t, b, "u").RPMUsed; got != 3 {
		t.Fatalf("View.RPMUsed = %d, want 3", got)
	}
}

// Token reservations share a 60 s window, corrected by the real usage.
func TestRedisTPMWindow(t *testing.T) {
	clk := clock.NewFake(t0)
	a := newTestRedis(t, testCircuit, clk)
	b := newTestRedis(t, testCircuit, clk, sharing(a))
	adm := func(tokens int64) Admission { return Admission{Upstream: "u", TPM: 100, Tokens: tokens} }

	first := admitOK(t, a, adm(40))
	admitOK(t, b, adm(40))
	admitDenied(t, a, adm(40), "tpm", time.Minute, time.Minute) // 80 + 40 > 100
	admitDenied(t, b, adm(40), "tpm", time.Minute, time.Minute)
	if got := syncView(t, b, "u").TPMUsed; got != 80 {
		t.Fatalf("TPMUsed = %d, want 80", got)
	}
	// The first used 10 tokens, not 40: 30 are given back.
	a.Settle(first, Settlement{Outcome: outcome.Outcome{Class: outcome.Success, InputTokens: 10}})
	if got := syncView(t, b, "u").TPMUsed; got != 50 {
		t.Fatalf("TPMUsed after the correction = %d, want 50", got)
	}
	second := admitOK(t, b, adm(40)) // 90
	admitDenied(t, a, adm(11), "tpm", time.Minute, time.Minute)
	admitOK(t, a, adm(10)) // exactly 100
	// Usage equal to the estimate changes nothing.
	b.Settle(second, Settlement{Outcome: outcome.Outcome{Class: outcome.Success, InputTokens: 30, OutputTokens: 10}})
	if got := syncView(t, a, "u").TPMUsed; got != 100 {
		t.Fatalf("TPMUsed after settling with the estimate = %d, want 100", got)
	}

	clk.Advance(30 * time.Second)
	admitDenied(t, a, adm(1), "tpm", 30*time.Second, 30*time.Second)
	clk.Advance(30 * time.Second) // t0's bucket leaves the window
	// A request larger than the whole limit passes on an empty window, and
	// then fills it.
	admitOK(t, a, adm(150))
	admitDenied(t, b, adm(1), "tpm", time.Minute, time.Minute)
	if got := syncView(t, b, "u").TPMUsed; got != 150 {
		t.Fatalf("TPMUsed = %d, want 150", got)
	}
}

// A 429 cooldown started through one instance refuses on every instance.
func TestRedisCooldownShared(t *testing.T) {
	clk := clock.NewFake(t0)
	a := newTestRedis(t, testCircuit, clk)
	b := newTestRedis(t, testCircuit, clk, sharing(a))
	adm := Admission{Upstream: "u"}
	tk := admitOK(t, a, adm)
	a.Settle(tk, Settlement{Outcome: outcome.Outcome{Class: outcome.RateLimited, Cooldown: 5 * time.Second, LimitType: "requests"}})
	// The cooldown is a PX key: its Wait runs on the wall clock.
	for name, r := range map[string]*Redis{"A": a, "B": b} {
		t.Run(name, func(t *testing.T) {
			admitDenied(t, r, adm, "cooldown", 4*time.Second, 5*time.Second)
		})
	}
	v := syncView(t, b, "u")
	if d := v.CooldownUntil.Sub(clk.Now()); d < 4*time.Second || d > 5*time.Second {
		t.Fatalf("View.CooldownUntil = now+%v, want about now+5s", d)
	}
	raw := rawClient(t)
	if got := raw.Get(context.Background(), a.keys.upstream("u", "cd")).Val(); got != "requests" {
		t.Fatalf("cooldown key holds %q, want the limit type %q", got, "requests")
	}
	// A shorter cooldown does not cut a longer one short (a request
	// admitted before the first 429 ends with another).
	b.Settle(Ticket{upstream: "u", id: "in-flight-before"}, Settlement{Outcome: outcome.Outcome{Class: outcome.RateLimited, Cooldown: time.Second}})
	admitDenied(t, a, adm, "cooldown", 3*time.Second, 5*time.Second)

	// A short real cooldown ends by itself.
	short := Admission{Upstream: "short"}
	tk = admitOK(t, b, short)
	start := time.Now()
	b.Settle(tk, Settlement{Outcome: outcome.Outcome{Class: outcome.RateLimited, Cooldown: 50 * time.Millisecond}})
	admitDenied(t, a, short, "cooldown", time.Millisecond, 50*time.Millisecond)
	var admitted bool
	for time.Since(start) < 3*time.Second {
		if _, d := a.Admit(context.Background(), short); d == nil {
			admitted = true
			break
		} else if d.Reason != "cooldown" {
			t.Fatalf("denied %q during the cooldown, want cooldown", d.Reason)
		}
		time.Sleep(5 * time.Millisecond)
	}
	if el := time.Since(start); !admitted || el < 45*time.Millisecond {
		t.Fatalf("admitted %v after %v, want admitted after the 50ms cooldown", admitted, el)
	}
}

// The breaker is shared: failures through one instance open it for all;
// exactly one probe is let through when it turns half-open; a failed probe
// doubles the open period and a good one closes it.
func TestRedisBreakerShared(t *testing.T) {
	clk := clock.NewFake(t0)
	ra, rb := newRecorder(), newRecorder()
	a := newTestRedis(t, testCircuit, clk, withOptions(ra.options()))
	b := newTestRedis(t, testCircuit, clk, sharing(a), withOptions(rb.options()))
	adm := Admission{Upstream: "u"}
	fail := Settlement{Outcome: outcome.Outcome{Class: outcome.ServerError, Detail: "HTTP 500"}}

	for i := range testCircuit.FailureThreshold {
		tk := admitOK(t, b, adm) // closed until the third failure
		a.Settle(tk, fail)
		if i < testCircuit.FailureThreshold-1 && len(ra.transitionsTo()) != 0 {
			t.Fatalf("transitions after %d failures: %v", i+1, ra.transitionsTo())
		}
	}
	if got := ra.transitionsTo(); !slices.Equal(got, []string{"u/open"}) {
		t.Fatalf("A's transitions = %v, want [u/open]", got)
	}
	if r := ra.lastReason(); r != "HTTP 500" {
		t.Fatalf("transition reason %q, want the failure's detail", r)
	}
	if got := rb.transitionsTo(); len(got) != 0 {
		t.Fatalf("B caused no transition, got %v", got)
	}
	admitDenied(t, b, adm, "breaker", 10*time.Second, 10*time.Second)
	v := syncView(t, b, "u")
	if v.Breaker != "open" || !v.BreakerUntil.Equal(t0.Add(10*time.Second)) || !strings.Contains(v.BreakerReason, "3 failures within 30s") {
		t.Fatalf("view while open = %+v", v)
	}
	if v.Admits(clk.Now()) || !v.Admits(t0.Add(10*time.Second)) {
		t.Fatalf("View.Admits wrong for %+v", v)
	}
	clk.Advance(4 * time.Second)
	admitDenied(t, a, adm, "breaker", 6*time.Second, 6*time.Second)
	clk.Advance(6 * time.Second)
	if v := syncView(t, a, "u"); v.Breaker != "half_open" || v.ProbeHeld {
		t.Fatalf("view when due = %+v, want half_open, probe free", v)
	}

	// Half-open: of many concurrent admissions exactly one is the probe.
	probe := raceForProbe(t, []*Redis{a, b}, adm, 5*time.Second)
	if v := syncView(t, a, "u"); v.Breaker != "half_open" || !v.ProbeHeld || !v.BreakerUntil.Equal(clk.Now().Add(5*time.Second)) {
		t.Fatalf("view with the probe out = %+v", v)
	}
	// The probe fails: open again, for twice as long.
	probe.settleOn.Settle(probe.ticket, Settlement{Outcome: outcome.Outcome{Class: outcome.ServerError, Detail: "HTTP 503"}})
	rec := map[*Redis]*recorder{a: ra, b: rb}[probe.settleOn]
	if got := rec.transitionsTo(); got[len(got)-1] != "u/open" || rec.lastReason() != "HTTP 503" {
		t.Fatalf("transitions after the failed probe = %v (%q)", got, rec.lastReason())
	}
	if v := syncView(t, b, "u"); v.Breaker != "open" || v.BreakerReason != "half-open probe failed: HTTP 503" || !v.BreakerUntil.Equal(clk.Now().Add(20*time.Second)) {
		t.Fatalf("view after the failed probe = %+v", v)
	}
	admitDenied(t, b, adm, "breaker", 20*time.Second, 20*time.Second)
	clk.Advance(20*time.Second - time.Millisecond)
	admitDenied(t, a, adm, "breaker", time.Millisecond, time.Millisecond)
	clk.Advance(time.Millisecond)

	// An unsettled probe blocks the next until probe_interval has passed.
	lost := raceForProbe(t, []*Redis{a, b}, adm, 5*time.Second)
	_ = lost
	clk.Advance(5*time.Second - time.Millisecond)
	admitDenied(t, b, adm, "breaker", time.Millisecond, time.Millisecond)
	clk.Advance(time.Millisecond)
	probe = raceForProbe(t, []*Redis{a, b}, adm, 5*time.Second)

	// A good probe closes it; everything passes.
	probe.settleOn.Settle(probe.ticket, Settlement{Outcome: outcome.Outcome{Class: outcome.Success}})
	rec = map[*Redis]*recorder{a: ra, b: rb}[probe.settleOn]
	if got := rec.transitionsTo(); got[len(got)-1] != "u/closed" {
		t.Fatalf("transitions after the good probe = %v, want ... u/closed", got)
	}
	for i := range 10 {
		r := []*Redis{a, b}[i%2]
		if tk := admitOK(t, r, adm); tk.Probe {
			t.Fatal("a request on a closed breaker is marked as the probe")
		} else {
			r.Settle(tk, keep)
		}
	}
	if v := syncView(t, b, "u"); v.Breaker != "closed" || v.BreakerReason != "" {
		t.Fatalf("view after closing = %+v", v)
	}
}

type probeTicket struct {
	ticket   Ticket
	settleOn *Redis
}

// raceForProbe admits 40 requests at once across rs and checks that exactly
// one is the probe and the rest are refused with wait.
func raceForProbe(t *testing.T, rs []*Redis, adm Admission, wait time.Duration) probeTicket {
	t.Helper()
	type result struct {
		r  *Redis
		tk Ticket
		d  *Denial
	}
	results := make(chan result, 40)
	var wg sync.WaitGroup
	for i := range 40 {
		r := rs[i%len(rs)]
		wg.Go(func() {
			tk, d := r.Admit(context.Background(), adm)
			results <- result{r, tk, d}
		})
	}
	wg.Wait()
	close(results)
	var probes []probeTicket
	for res := range results {
		switch {
		case res.d == nil:
			if !res.tk.Shared || !res.tk.Probe {
				t.Fatalf("half-open admitted a ticket with Shared %v Probe %v", res.tk.Shared, res.tk.Probe)
			}
			probes = append(probes, probeTicket{res.tk, res.r})
		case res.d.Reason != "breaker" || res.d.Wait != wait:
			t.Fatalf("half-open denial %+v, want breaker wait %v", *res.d, wait)
		}
	}
	if len(probes) != 1 {
		t.Fatalf("%d probes admitted, want exactly 1", len(probes))
	}
	return probes[0]
}

// Each failed probe doubles the open period, up to 10 × open_duration; a
// trip a full window after the breaker closed starts again from one.
func TestRedisBreakerBackoff(t *testing.T) {
	clk := clock.NewFake(t0)
	a := newTestRedis(t, testCircuit, clk)
	adm := Admission{Upstream: "u"}
	fail := Settlement{Outcome: outcome.Outcome{Class: outcome.ServerError}}
	for range testCircuit.FailureThreshold {
		a.Settle(admitOK(t, a, adm), fail)
	}
	open := testCircuit.OpenDuration
	for i, want := range []time.Duration{open, 2 * open, 4 * open, 8 * open, 10 * open, 10 * open} {
		admitDenied(t, a, adm, "breaker", want, want)
		clk.Advance(want)
		tk := admitOK(t, a, adm)
		if !tk.Probe {
			t.Fatalf("trip %d: the first request after the open period is not the probe", i+1)
		}
		if i < 5 {
			a.Settle(tk, fail)
		} else {
			a.Settle(tk, keep) // closes
		}
	}
	// Within a window of closing, a trip keeps the count; a window later it
	// starts over.
	for _, tc := range []struct {
		after time.Duration
		want  time.Duration
	}{{testCircuit.Window - time.Second, 10 * open}, {testCircuit.Window, open}} {
		clk.Advance(tc.after)
		a.Settle(admitOK(t, a, adm), Settlement{Outcome: outcome.Outcome{Class: outcome.AuthError}})
		admitDenied(t, a, adm, "breaker", tc.want, tc.want)
		clk.Advance(tc.want)
		a.Settle(admitOK(t, a, adm), keep)
	}
}

// An auth failure trips the breaker at once.
func TestRedisBreakerAuthTripsAtOnce(t *testing.T) {
	clk := clock.NewFake(t0)
	ra := newRecorder()
	a := newTestRedis(t, testCircuit, clk, withOptions(ra.options()))
	b := newTestRedis(t, testCircuit, clk, sharing(a))
	tk := admitOK(t, a, Admission{Upstream: "u"})
	a.Settle(tk, Settlement{Outcome: outcome.Outcome{Class: outcome.AuthError, Detail: "HTTP 401"}})
	if got := ra.transitionsTo(); !slices.Equal(got, []string{"u/open"}) || ra.lastReason() != "HTTP 401" {
		t.Fatalf("transitions = %v (%q), want [u/open] (HTTP 401)", got, ra.lastReason())
	}
	if v := syncView(t, b, "u"); v.Breaker != "open" || v.BreakerReason != "auth error: HTTP 401" {
		t.Fatalf("view = %+v, want open for the auth error", v)
	}
	admitDenied(t, b, Admission{Upstream: "u"}, "breaker", 10*time.Second, 10*time.Second)
	// Neutral outcomes never trip it.
	for range 5 {
		tk := admitOK(t, b, Admission{Upstream: "n"})
		b.Settle(tk, Settlement{Outcome: outcome.Outcome{Class: outcome.RateLimited}})
	}
	admitOK(t, a, Admission{Upstream: "n"})
}

// Failures older than the window do not add up to a trip.
func TestRedisBreakerWindow(t *testing.T) {
	clk := clock.NewFake(t0)
	a := newTestRedis(t, testCircuit, clk)
	adm := Admission{Upstream: "u"}
	fail := Settlement{Outcome: outcome.Outcome{Class: outcome.ServerError}}
	for _, adv := range []time.Duration{0, 20 * time.Second, 11 * time.Second, 5 * time.Second} {
		clk.Advance(adv)
		a.Settle(admitOK(t, a, adm), fail) // the first leaves the window before the third
	}
	// t0+20s, t0+31s, t0+36s: three within 30 s: open.
	admitDenied(t, a, adm, "breaker", 10*time.Second, 10*time.Second)
}

// Leases bound the requests in flight across instances; a dead instance's
// leases expire after lease_ttl unless renewed.
func TestRedisLeases(t *testing.T) {
	adm := func(u string) Admission { return Admission{Upstream: u, MaxConcurrency: 2} }
	t.Run("max concurrency", func(t *testing.T) {
		clk := clock.NewFake(t0)
		a := newTestRedis(t, testCircuit, clk)
		b := newTestRedis(t, testCircuit, clk, sharing(a))
		first := admitOK(t, a, adm("u"))
		admitOK(t, b, adm("u"))
		admitDenied(t, a, adm("u"), "full", 0, 0)
		admitDenied(t, b, adm("u"), "full", 0, 0)
		if v := syncView(t, b, "u"); v.InFlight != 2 {
			t.Fatalf("View.InFlight = %d, want 2", v.InFlight)
		}
		a.Settle(first, keep)
		admitOK(t, b, adm("u"))
		admitDenied(t, a, adm("u"), "full", 0, 0)
	})
	t.Run("expiry", func(t *testing.T) {
		clk := clock.NewFake(t0)
		a := newTestRedis(t, testCircuit, clk)
		b := newTestRedis(t, testCircuit, clk, sharing(a))
		admitOK(t, a, adm("u")) // A dies holding both: never settled, never renewed
		admitOK(t, a, adm("u"))
		clk.Advance(testLeaseTTL - time.Millisecond)
		admitDenied(t, b, adm("u"), "full", 0, 0)
		clk.Advance(2 * time.Millisecond)
		admitOK(t, b, adm("u"))
		admitOK(t, b, adm("u"))
		admitDenied(t, b, adm("u"), "full", 0, 0)
	})
	t.Run("renew", func(t *testing.T) {
		clk := clock.NewFake(t0)
		a := newTestRedis(t, testCircuit, clk)
		b := newTestRedis(t, testCircuit, clk, sharing(a))
		admitOK(t, a, adm("u"))
		settled := admitOK(t, a, adm("u"))
		held := admitOK(t, a, adm("v"))
		_ = held
		a.Settle(settled, keep)
		admitOK(t, a, adm("u"))
		clk.Advance(testLeaseTTL / 2)
		a.Renew()
		clk.Advance(testLeaseTTL/2 + time.Millisecond)
		admitDenied(t, b, adm("u"), "full", 0, 0) // the renewal kept them
		raw := rawClient(t)
		ids := raw.ZRange(context.Background(), a.keys.upstream("u", "lease"), 0, -1).Val()
		if len(ids) != 2 || slices.Contains(ids, settled.id) {
			t.Fatalf("lease zset = %v, want the 2 held tickets and not the settled %s", ids, settled.id)
		}
		if n := raw.ZCard(context.Background(), a.keys.upstream("v", "lease")).Val(); n != 1 {
			t.Fatalf("v's lease zset has %d, want 1", n)
		}
		clk.Advance(testLeaseTTL / 2) // lease_ttl after the renewal
		admitOK(t, b, adm("u"))
	})
}

// A renewal racing with Settle must not bring a settled lease back: the
// slot would stay taken until the ghost lease expired.
func TestRedisRenewDoesNotResurrectSettled(t *testing.T) {
	clk := clock.NewFake(t0)
	a := newTestRedis(t, testCircuit, clk)
	raw := rawClient(t)
	adm := Admission{Upstream: "u", MaxConcurrency: 1000}
	for round := range 20 {
		var tickets []Ticket
		for range 50 {
			tickets = append(tickets, admitOK(t, a, adm))
		}
		var wg sync.WaitGroup
		wg.Go(a.Renew)
		for _, tk := range tickets {
			wg.Go(func() { a.Settle(tk, keep) })
		}
		wg.Wait()
		if ids := raw.ZRange(context.Background(), a.keys.upstream("u", "lease"), 0, -1).Val(); len(ids) != 0 {
			t.Fatalf("round %d: %d settled leases are back in Redis after a concurrent Renew: %v", round, len(ids), ids)
		}
	}
}

// The per-second request window and the lease zset stay bounded under
// steady traffic: their keys' TTLs are refreshed by every admission and
// renewal, so only pruning keeps them small.
func TestRedisStateStaysBounded(t *testing.T) {
	t.Run("request window", func(t *testing.T) {
		clk := clock.NewFake(t0)
		a := newTestRedis(t, testCircuit, clk)
		raw := rawClient(t)
		for range 150 { // one request a second for 150 s
			a.Settle(admitOK(t, a, Admission{Upstream: "u"}), keep)
			clk.Advance(time.Second)
		}
		if n := raw.HLen(context.Background(), a.keys.upstream("u", "win")).Val(); n > 61 {
			t.Fatalf("window hash holds %d per-second buckets after 150 s, want at most 61", n)
		}
		if got := syncView(t, a, "u").Stats.WindowRequests; got != 59 { // t0+91s … t0+149s
			t.Fatalf("WindowRequests = %d, want 59", got)
		}
	})
	t.Run("leases renewed without admissions", func(t *testing.T) {
		clk := clock.NewFake(t0)
		a := newTestRedis(t, testCircuit, clk)
		dead := newTestRedis(t, testCircuit, clk, sharing(a))
		raw := rawClient(t)
		adm := Admission{Upstream: "u", MaxConcurrency: 10}
		ghost := admitOK(t, dead, adm) // then the instance dies
		admitOK(t, a, adm)             // the last admission: only renewals sweep from here on
		for range 5 {
			clk.Advance(testLeaseTTL / 3)
			a.Renew()
		}
		ids := raw.ZRange(context.Background(), a.keys.upstream("u", "lease"), 0, -1).Val()
		if slices.Contains(ids, ghost.id) {
			t.Fatalf("lease zset %v still holds the dead instance's lease, expired %v ago", ids, 5*testLeaseTTL/3-testLeaseTTL)
		}
		if len(ids) != 1 {
			t.Fatalf("lease zset = %v, want the live one", ids)
		}
	})
}

type admitResult struct {
	tk Ticket
	d  *Denial
}

// admitAsync runs a waiting Admit in a goroutine.
func admitAsync(r *Redis, ctx context.Context, a Admission) <-chan admitResult {
	ch := make(chan admitResult, 1)
	go func() {
		tk, d := r.Admit(ctx, a)
		ch <- admitResult{tk, d}
	}()
	return ch
}

// waitQueued waits until the waiting Admit is parked on the fake clock:
// its queue timeout and its next poll pending on top of the base timers
// pending before it started (or it has returned).
func waitQueued(t *testing.T, clk *clock.Fake, base int, res <-chan admitResult) {
	t.Helper()
	waitFor(t, "the request to wait in the queue", func() bool { return clk.Pending() >= base+2 || len(res) > 0 })
	if len(res) > 0 {
		r := <-res
		t.Fatalf("waiting Admit returned %+v %+v, want it queued", r.tk, r.d)
	}
}

func receive(t *testing.T, res <-chan admitResult) admitResult {
	t.Helper()
	select {
	case r := <-res:
		return r
	case <-time.After(5 * time.Second):
		t.Fatal("the waiting Admit did not return")
		return admitResult{}
	}
}

// The slot queue is shared: a request waiting on one instance gets the slot
// another instance frees, in order; the queue is bounded and timed.
func TestRedisQueueAcrossInstances(t *testing.T) {
	q := config.Queue{Enabled: true, MaxLength: 1, Timeout: 2 * time.Second}
	adm := Admission{Upstream: "u", MaxConcurrency: 1, Queue: q, Wait: true}
	noWait := adm
	noWait.Wait = false
	ctx := context.Background()

	t.Run("admitted after the slot is freed elsewhere", func(t *testing.T) {
		clk := clock.NewFake(t0)
		a := newTestRedis(t, testCircuit, clk)
		b := newTestRedis(t, testCircuit, clk, sharing(a))
		raw := rawClient(t)
		holder := admitOK(t, a, adm)
		base := clk.Pending()
		res := admitAsync(b, ctx, adm)
		waitQueued(t, clk, base, res)
		if n := raw.ZCard(ctx, a.keys.upstream("u", "queue")).Val(); n != 1 {
			t.Fatalf("queue zset has %d, want 1", n)
		}
		if v := syncView(t, a, "u"); v.QueueDepth != 1 || v.InFlight != 1 {
			t.Fatalf("view = in flight %d, queue %d; want 1, 1", v.InFlight, v.QueueDepth)
		}
		// A second waiter beyond max_length is refused at once.
		admitDenied(t, a, adm, "queue_full", 0, 0)
		// Polling while the slot is taken keeps it waiting.
		clk.Advance(queuePoll)
		waitQueued(t, clk, base, res)
		// The slot is freed on A; a request that does not wait cannot take
		// it before the one queued.
		a.Settle(holder, keep)
		admitDenied(t, a, noWait, "full", 0, 0)
		clk.Advance(queuePoll) // B asks again
		r := receive(t, res)
		if r.d != nil || !r.tk.Shared {
			t.Fatalf("queued Admit = %+v %+v, want admitted", r.tk, r.d)
		}
		if n := raw.ZCard(ctx, a.keys.upstream("u", "queue")).Val(); n != 0 {
			t.Fatalf("queue zset has %d after admission, want 0", n)
		}
		if ids := raw.ZRange(ctx, a.keys.upstream("u", "lease"), 0, -1).Val(); !slices.Equal(ids, []string{r.tk.id}) {
			t.Fatalf("leases = %v, want [%s]", ids, r.tk.id)
		}
		admitDenied(t, a, noWait, "full", 0, 0)
		b.Settle(r.tk, keep)
		admitOK(t, a, noWait)
	})

	t.Run("timeout", func(t *testing.T) {
		clk := clock.NewFake(t0)
		a := newTestRedis(t, testCircuit, clk)
		b := newTestRedis(t, testCircuit, clk, sharing(a))
		raw := rawClient(t)
		admitOK(t, a, adm)
		base := clk.Pending()
		res := admitAsync(b, ctx, adm)
		waitQueued(t, clk, base, res)
		clk.Advance(q.Timeout - queuePoll)
		waitQueued(t, clk, base, res)
		clk.Advance(queuePoll)
		r := receive(t, res)
		if r.d == nil || r.d.Reason != "queue_timeout" || !errors.Is(r.d, limits.ErrQueueTimeout) {
			t.Fatalf("Admit = %+v %+v, want queue_timeout", r.tk, r.d)
		}
		if n := raw.ZCard(ctx, a.keys.upstream("u", "queue")).Val(); n != 0 {
			t.Fatalf("queue zset has %d after the timeout, want 0", n)
		}
		// With the queue empty again, the next waiter gets in line.
		base = clk.Pending()
		res = admitAsync(a, ctx, adm)
		waitQueued(t, clk, base, res)
	})

	// A caller that left is not a queue timeout (it was reported as one).
	t.Run("context canceled leaves the queue", func(t *testing.T) {
		clk := clock.NewFake(t0)
		a := newTestRedis(t, testCircuit, clk)
		raw := rawClient(t)
		admitOK(t, a, adm)
		cctx, cancel := context.WithCancel(ctx)
		base := clk.Pending()
		res := admitAsync(a, cctx, adm)
		waitQueued(t, clk, base, res)
		cancel()
		r := receive(t, res)
		if r.d == nil || r.d.Reason != "canceled" || !errors.Is(r.d, context.Canceled) || errors.Is(r.d, limits.ErrQueueTimeout) {
			t.Fatalf("Admit = %+v %+v, want canceled wrapping context.Canceled", r.tk, r.d)
		}
		if n := raw.ZCard(ctx, a.keys.upstream("u", "queue")).Val(); n != 0 {
			t.Fatalf("queue zset has %d after the cancel, want 0", n)
		}
	})
}

// A slot freed on this instance wakes a request queued here at once,
// without waiting for the next poll. The fake clock never moves here: a
// waiter that misses the wake-up sits until the test gives up.
func TestRedisQueueLocalWakeUp(t *testing.T) {
	q := config.Queue{Enabled: true, MaxLength: 10, Timeout: 2 * time.Second}
	adm := Admission{Upstream: "u", MaxConcurrency: 1, Queue: q, Wait: true}
	tests := []struct {
		name string
		// queued: free the slot only once the request waits in the queue;
		// otherwise free it while the request is joining.
		queued bool
	}{{"freed after it queued", true}, {"freed while it joins the queue", false}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			clk := clock.NewFake(t0)
			a := newTestRedis(t, testCircuit, clk)
			for i := range 50 {
				holder := admitOK(t, a, adm)
				base := clk.Pending()
				res := admitAsync(a, context.Background(), adm)
				if tc.queued {
					waitQueued(t, clk, base, res)
				}
				a.Settle(holder, keep)
				select {
				case r := <-res:
					if r.d != nil {
						t.Fatalf("round %d: woken Admit denied %+v", i, *r.d)
					}
					a.Settle(r.tk, keep)
				case <-time.After(2 * time.Second):
					t.Fatalf("round %d: the slot freed here did not wake the request queued here", i)
				}
			}
		})
	}
}

// Shared statistics: EWMAs, the failure streak and the request window.
func TestRedisStats(t *testing.T) {
	clk := clock.NewFake(t0)
	circuit := testCircuit
	circuit.FailureThreshold = 100 // the streak, not the breaker
	a := newTestRedis(t, circuit, clk)
	b := newTestRedis(t, circuit, clk, sharing(a))
	adm := Admission{Upstream: "u"}
	settle := func(r *Redis, s Settlement) {
		t.Helper()
		r.Settle(admitOK(t, r, adm), s)
	}
	approx := func(name string, got, want float64) {
		t.Helper()
		if math.Abs(got-want) > 1e-6 {
			t.Fatalf("%s = %v, want %v", name, got, want)
		}
	}

	settle(a, Settlement{Outcome: outcome.Outcome{Class: outcome.Success, Latency: 100 * time.Millisecond}})
	settle(b, Settlement{Outcome: outcome.Outcome{Class: outcome.Success, Latency: 200 * time.Millisecond}})
	settle(a, Settlement{Outcome: outcome.Outcome{Class: outcome.Success, TTFT: 500 * time.Millisecond, TPS: 40}})
	settle(b, Settlement{Outcome: outcome.Outcome{Class: outcome.Success, TTFT: 300 * time.Millisecond, TPS: 60}})
	v := syncView(t, a, "u")
	approx("LatencyEWMA", v.Stats.LatencyEWMA, 0.3*200+0.7*100)
	approx("TTFTEWMA", v.Stats.TTFTEWMA, 0.3*300+0.7*500)
	approx("TPSEWMA", v.Stats.TPSEWMA, 0.3*60+0.7*40)
	if s := NewRedisDriver(a, NewLocal(LocalOptions{Clock: clk})).Upstream("u", 0).Stats; s != v.Stats {
		t.Fatalf("driver's Stats = %+v, want the view's %+v", s, v.Stats)
	}

	failAt := clk.Now().Add(time.Second)
	for i, s := range []struct {
		on    *Redis
		class outcome.Class
		want  int
	}{{a, outcome.ServerError, 1}, {b, outcome.ServerError, 2}, {a, outcome.RateLimited, 2}, {b, outcome.ServerError, 3}, {a, outcome.Success, 0}, {b, outcome.ServerError, 1}} {
		clk.Advance(time.Second)
		if s.class == outcome.ServerError {
			failAt = clk.Now()
		}
		settle(s.on, Settlement{Outcome: outcome.Outcome{Class: s.class}})
		st := syncView(t, b, "u").Stats
		if st.ConsecutiveFailures != s.want {
			t.Fatalf("step %d: ConsecutiveFailures = %d, want %d", i, st.ConsecutiveFailures, s.want)
		}
		if !st.LastFailure.Equal(failAt) {
			t.Fatalf("step %d: LastFailure = %v, want %v", i, st.LastFailure, failAt)
		}
	}
	// Failures do not feed the EWMAs.
	approx("LatencyEWMA after failures", syncView(t, a, "u").Stats.LatencyEWMA, 0.3*200+0.7*100)

	// The request window counts admissions (not refusals) in the last 60 s.
	w := Admission{Upstream: "w", MaxConcurrency: 3}
	start := clk.Now()
	for range 3 {
		admitOK(t, a, w)
	}
	admitDenied(t, b, w, "full", 0, 0)
	clk.Advance(30 * time.Second)
	for _, r := range []*Redis{a, b} {
		r.Settle(admitOK(t, r, Admission{Upstream: "w"}), keep)
	}
	checks := []struct {
		at   time.Duration // after start
		want int64
	}{{30 * time.Second, 5}, {59 * time.Second, 5}, {61 * time.Second, 2}, {91 * time.Second, 0}}
	for _, c := range checks {
		clk.Advance(start.Add(c.at).Sub(clk.Now()))
		if got := syncView(t, a, "w").Stats.WindowRequests; got != c.want {
			t.Fatalf("WindowRequests at +%v = %d, want %d", c.at, got, c.want)
		}
	}
}

// Spend charged through any instance to an upstream, a key and a team adds
// up in the shared day and month counters the sync loop reports for the
// watched ones.
func TestRedisSpend(t *testing.T) {
	clk := clock.NewFake(t0.Add(12 * time.Hour)) // 2026-01-01 12:00 UTC
	a := newTestRedis(t, testCircuit, clk)
	b := newTestRedis(t, testCircuit, clk, sharing(a))
	spend := func(r *Redis, usd float64, key, team string) {
		r.Settle(admitOK(t, r, Admission{Upstream: "u"}), Settlement{Outcome: outcome.Outcome{Class: outcome.Success}, Spend: usd, SpendKey: key, SpendTeam: team})
	}
	type totals struct{ day, month float64 }
	read := func() map[string]totals {
		a.SetWatch(Watch{Upstreams: []string{"u", "idle"}, SpendKeys: []string{"k", "never"}, SpendTeams: []string{"research", "idle"}})
		got := map[string]totals{}
		a.Sync(func(scope, name string, day, month float64) { got[scope+"/"+name] = totals{day, month} })
		return got
	}
	check := func(when string, want map[string]totals) {
		t.Helper()
		got := read()
		if len(got) != len(want) {
			t.Fatalf("%s: onSpend got %v, want %v", when, got, want)
		}
		for k, w := range want {
			if g := got[k]; math.Abs(g.day-w.day) > 1e-9 || math.Abs(g.month-w.month) > 1e-9 {
				t.Fatalf("%s: %s = %+v, want %+v", when, k, g, w)
			}
		}
	}

	check("before any spend", map[string]totals{})
	spend(a, 1.5, "k", "research")
	spend(b, 1.5, "k", "")
	spend(b, 0.25, "", "") // upstream only
	spend(a, 0.5, "unwatched", "research")
	spend(b, 0.125, "unwatched", "unwatched")
	check("same day", map[string]totals{"upstream/u": {3.875, 3.875}, "key/k": {3, 3}, "team/research": {2, 2}})

	clk.Advance(24 * time.Hour) // 2026-01-02: a new day, the same month
	spend(b, 1, "k", "research")
	check("next day", map[string]totals{"upstream/u": {1, 4.875}, "key/k": {1, 4}, "team/research": {1, 3}})

	clk.Advance(31 * 24 * time.Hour) // 2026-02-02: a new month
	check("next month", map[string]totals{})
	spend(a, 2, "k", "research")
	check("next month", map[string]totals{"upstream/u": {2, 2}, "key/k": {2, 2}, "team/research": {2, 2}})
}

// With Redis unreachable every operation is served from local state, the
// change is reported once, and the view is not trusted.
func TestRedisFallbackWhenDown(t *testing.T) {
	clk := clock.NewFake(t0)
	rec := newRecorder()
	r := newTestRedis(t, testCircuit, clk, withURL("redis://127.0.0.1:1/0", 100*time.Millisecond), withOptions(rec.options()))
	adm := Admission{Upstream: "u", RPM: 1, MaxConcurrency: 1}
	var tickets []Ticket
	for range 3 { // the limits are not Redis's to enforce now
		tk, d := r.Admit(context.Background(), adm)
		if d != nil || tk.Shared {
			t.Fatalf("Admit while down = %+v %+v, want a local ticket and no denial", tk, d)
		}
		tickets = append(tickets, tk)
	}
	if r.Up() {
		t.Fatal("Up() = true after a failed call")
	}
	r.Settle(tickets[0], keep)
	r.SetWatch(Watch{Upstreams: []string{"u"}})
	r.Sync(func(string, string, float64, float64) { t.Error("onSpend called while Redis is down") })
	if _, ok := r.View("u"); ok {
		t.Fatal("View ok while Redis is down")
	}
	stats := NewMemory(DefaultWindow)
	stats.Observe("u", outcome.Outcome{Latency: 100 * time.Millisecond}, clk.Now())
	if s := NewRedisDriver(r, NewLocal(LocalOptions{Clock: clk, Stats: stats})).Upstream("u", 0).Stats; s.LatencyEWMA != 100 {
		t.Fatalf("driver's Stats while down = %+v, want the local statistics", s)
	}
	fb, ups := rec.snapshot()
	if want := map[string]int{OpAdmit: 3, OpSettle: 1, OpSync: 1}; !equalCounts(fb, want) {
		t.Fatalf("fallbacks = %v, want %v", fb, want)
	}
	if !slices.Equal(ups, []bool{false}) {
		t.Fatalf("OnUp calls = %v, want [false]", ups)
	}
	// Only the first Admit and the Sync (the reconnect attempt) tried Redis.
	rec.mu.Lock()
	trips := cloneCounts(rec.roundTrips)
	rec.mu.Unlock()
	if want := map[string]int{OpAdmit: 1, OpSync: 1}; !equalCounts(trips, want) {
		t.Fatalf("round trips = %v, want %v", trips, want)
	}
	r.mu.Lock()
	held := len(r.held)
	r.mu.Unlock()
	if held != 0 {
		t.Fatalf("%d tickets held, want none: the caller holds a local ticket once its local state admits", held)
	}
}

func equalCounts(a, b map[string]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range b {
		if a[k] != v {
			return false
		}
	}
	return true
}

// tcpProxy forwards to Redis and can be cut and restored: an outage.
type tcpProxy struct {
	t      *testing.T
	addr   string
	target string
	mu     sync.Mutex
	ln     net.Listener
	conns  []net.Conn
	wg     sync.WaitGroup
}

// proxiedRedis starts a TCP proxy in front of the test Redis, for a test to
// cut, and returns it with the Redis URL that goes through it.
func proxiedRedis(t *testing.T) (*tcpProxy, string) {
	target, err := redis.ParseURL(testRedisURL(t))
	if err != nil {
		t.Fatal(err)
	}
	proxy := newTCPProxy(t, target.Addr)
	u, _ := url.Parse(testRedisURL(t))
	u.Host = proxy.addr
	return proxy, u.String()
}

func newTCPProxy(t *testing.T, target string) *tcpProxy {
	p := &tcpProxy{t: t, target: target, addr: "127.0.0.1:0"}
	p.start()
	t.Cleanup(p.stop)
	return p
}

func (p *tcpProxy) start() {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatalf("proxy listen: %v", err)
	}
	p.mu.Lock()
	p.ln, p.addr = ln, ln.Addr().String()
	p.mu.Unlock()
	p.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			u, err := net.Dial("tcp", p.target)
			if err != nil {
				_ = c.Close()
				continue
			}
			p.mu.Lock()
			p.conns = append(p.conns, c, u)
			p.mu.Unlock()
			p.wg.Go(func() { _, _ = io.Copy(u, c); _ = u.Close() })
			p.wg.Go(func() { _, _ = io.Copy(c, u); _ = c.Close() })
		}
	})
}

// stop refuses new connections and cuts the open ones.
func (p *tcpProxy) stop() {
	p.mu.Lock()
	if p.ln != nil {
		_ = p.ln.Close()
		p.ln = nil
	}
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.conns = nil
	p.mu.Unlock()
	p.wg.Wait()
}

// After an outage in which Redis lost its data (a restart), the leases of
// the requests still in flight are registered again, so the counts
// converge.
func TestRedisOutageAndConvergence(t *testing.T) {
	proxy, proxied := proxiedRedis(t)
	clk := clock.NewFake(t0)
	rec := newRecorder()
	a := newTestRedis(t, testCircuit, clk, withOptions(rec.options()))
	// Same prefix, through the proxy: the instance that sees the outage.
	p := newTestRedis(t, testCircuit, clk, sharing(a), withURL(proxied, 300*time.Millisecond), withOptions(rec.options()))
	raw := rawClient(t)
	ctx := context.Background()
	adm := Admission{Upstream: "u", MaxConcurrency: 3}

	held := []Ticket{admitOK(t, p, adm), admitOK(t, p, adm)}
	settled := admitOK(t, p, adm)
	p.Settle(settled, keep)

	proxy.stop()
	local, d := p.Admit(ctx, adm) // fails, falls back
	if d != nil || local.Shared || p.Up() {
		t.Fatalf("Admit during the outage = %+v %+v (up %v), want a local ticket", local, d, p.Up())
	}
	p.hold(local) // as RedisDriver does once its local state admits it
	held = append(held, local)
	p.SetWatch(Watch{Upstreams: []string{"u"}})
	p.Sync(nil)
	if _, ok := p.View("u"); ok || p.Up() {
		t.Fatal("Sync during the outage succeeded")
	}
	// Redis restarts empty.
	for _, k := range keysUnder(t, raw, a.prefix) {
		raw.Del(ctx, k)
	}
	admitOK(t, a, adm) // another instance takes a slot meanwhile

	proxy.start()
	clk.Advance(testSyncInterval)
	p.Sync(nil) // the sync loop's next tick reaches Redis
	if !p.Up() {
		t.Fatal("Up() = false after a successful Sync")
	}
	if _, ups := rec.snapshot(); !slices.Equal(ups, []bool{false, true}) {
		t.Fatalf("OnUp calls = %v, want [false true]", ups)
	}
	ids := raw.ZRange(ctx, a.keys.upstream("u", "lease"), 0, -1).Val()
	for _, tk := range held {
		if !slices.Contains(ids, tk.id) {
			t.Fatalf("lease zset %v lacks held ticket %s after the reconnect", ids, tk.id)
		}
	}
	if slices.Contains(ids, settled.id) || len(ids) != 4 {
		t.Fatalf("lease zset = %v, want the 3 held here and 1 of the other instance", ids)
	}
	admitDenied(t, a, adm, "full", 0, 0) // 4 in flight, 3 allowed
	p.Sync(nil)                          // the reconnecting Sync read before it renewed
	if v, ok := p.View("u"); !ok || v.InFlight != 4 {
		t.Fatalf("View after the reconnect = %+v %v, want 4 in flight", v, ok)
	}

	// Renew alone does the same after a silent flush.
	for _, k := range keysUnder(t, raw, a.prefix) {
		raw.Del(ctx, k)
	}
	p.Renew()
	ids = raw.ZRange(ctx, a.keys.upstream("u", "lease"), 0, -1).Val()
	if len(ids) != 3 {
		t.Fatalf("lease zset after Renew = %v, want the 3 held tickets", ids)
	}
	for _, tk := range held {
		if sc := raw.ZScore(ctx, a.keys.upstream("u", "lease"), tk.id).Val(); int64(sc) != clk.Now().Add(testLeaseTTL).UnixMilli() {
			t.Fatalf("lease of %s expires at %v, want now+lease_ttl", tk.id, int64(sc))
		}
	}
	if ttl := raw.PTTL(ctx, a.keys.upstream("u", "lease")).Val(); ttl <= 0 {
		t.Fatalf("re-created lease zset has no TTL (%v)", ttl)
	}
	for _, tk := range held {
		p.Settle(tk, keep)
	}
	if n := raw.ZCard(ctx, a.keys.upstream("u", "lease")).Val(); n != 0 {
		t.Fatalf("lease zset has %d after settling all, want 0", n)
	}
}

// Settle and the binding go by script hash; after SCRIPT FLUSH (a Redis
// restart) the batch runs them again by source.
func TestRedisScriptFlush(t *testing.T) {
	clk := clock.NewFake(t0)
	rec := newRecorder()
	a := newTestRedis(t, testCircuit, clk, withOptions(rec.options()))
	raw := rawClient(t)
	ctx := context.Background()
	tk := admitOK(t, a, Admission{Upstream: "u", MaxConcurrency: 1})
	if err := raw.ScriptFlush(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	a.Settle(tk, Settlement{Outcome: outcome.Outcome{Class: outcome.AuthError, Detail: "x"}})
	if got := rec.transitionsTo(); !slices.Equal(got, []string{"u/open"}) {
		t.Fatalf("transitions = %v, want [u/open] from the re-run script", got)
	}
	if n := raw.ZCard(ctx, a.keys.upstream("u", "lease")).Val(); n != 0 {
		t.Fatalf("lease not released after NOSCRIPT: %d", n)
	}
	fb, _ := rec.snapshot()
	if len(fb) != 0 || !a.Up() {
		t.Fatalf("fallbacks %v, up %v: NOSCRIPT treated as an outage", fb, a.Up())
	}
}

// Every key a full cycle creates has a TTL, so nothing leaks.
func TestRedisKeysHaveTTLs(t *testing.T) {
	clk := clock.NewFake(t0)
	a := newTestRedis(t, testCircuit, clk)
	b := newTestRedis(t, testCircuit, clk, sharing(a))
	raw := rawClient(t)
	ctx := context.Background()
	q := config.Queue{Enabled: true, MaxLength: 5, Timeout: time.Second}
	adm := Admission{Upstream: "u", Tokens: 10, RPM: 100, TPM: 1000, MaxConcurrency: 1, Queue: q, Wait: true}
	pol := affinityPolicy(0, 0) // no TTLs: the binding still gets one
	tk := admitOK(t, a, adm)
	base := clk.Pending()
	res := admitAsync(b, ctx, adm) // queued
	waitQueued(t, clk, base, res)
	a.Settle(tk, Settlement{Outcome: outcome.Outcome{Class: outcome.ServerError, Detail: "HTTP 500", InputTokens: 5, Latency: time.Second}, Spend: 1, SpendKey: "k", SpendTeam: "tm", Bind: &Bind{Key: testKey("s1"), Upstream: "u", Policy: pol}})
	a.Settle(admitOK(t, a, Admission{Upstream: "u"}), Settlement{Outcome: outcome.Outcome{Class: outcome.RateLimited, Cooldown: time.Minute}})
	a.Affinity(affinity.NewTable(10, clk)).Bind(context.Background(), testKey("s2"), "u", affinityPolicy(time.Minute, time.Hour))
	tk2 := admitOK(t, a, Admission{Upstream: "trip"})
	a.Settle(tk2, Settlement{Outcome: outcome.Outcome{Class: outcome.AuthError}})
	if _, ok, _ := a.acquireTenant(ctx, teamSlots, 1); !ok {
		t.Fatal("no tenant lease taken")
	}
	a.SetWatch(Watch{Upstreams: []string{"u", "trip"}, SpendKeys: []string{"k"}, SpendTeams: []string{"tm"}})
	a.Sync(nil)

	want := []string{"aff:b:", "aff:s:", "key:{" + teamSlots + "}:conc", "spend:key:k:d:", "spend:key:k:m:",
		"spend:team:tm:d:", "spend:team:tm:m:", "spend:upstream:u:d:", "spend:upstream:u:m:",
		"u:{trip}:brk", "u:{trip}:stats", "u:{u}:cd", "u:{u}:fails", "u:{u}:queue", "u:{u}:rpm", "u:{u}:stats", "u:{u}:tpm", "u:{u}:win"}
	keys := keysUnder(t, raw, a.prefix)
	for _, w := range want {
		if !slices.ContainsFunc(keys, func(k string) bool { return strings.HasPrefix(k, a.prefix+w) }) {
			t.Errorf("no key %s* after the cycle; keys: %q", w, keys)
		}
	}
	for _, k := range keys {
		if ttl, err := raw.PTTL(ctx, k).Result(); err != nil || ttl <= 0 {
			t.Errorf("key %q has no TTL (PTTL %v, %v)", k, ttl, err)
		}
	}
	clk.Advance(q.Timeout)
	if r := receive(t, res); r.d == nil {
		b.Settle(r.tk, keep)
	}
}

// NewRedis fails only on an invalid URL.
func TestNewRedisInvalidURL(t *testing.T) {
	_, err := NewRedis(config.State{RedisURL: "http://nope", RedisTimeout: time.Second, LeaseTTL: time.Second}, testCircuit, RedisOptions{})
	if err == nil {
		t.Fatal("NewRedis accepted an http:// URL")
	}
	r, err := NewRedis(config.State{RedisURL: "redis://127.0.0.1:1/0", RedisTimeout: time.Second, LeaseTTL: time.Second}, testCircuit, RedisOptions{})
	if err != nil {
		t.Fatalf("NewRedis with Redis down: %v", err)
	}
	if !r.Up() {
		t.Fatal("a new instance starts pessimistic")
	}
	_ = r.Close()
}

func BenchmarkRedisAdmitSettle(b *testing.B) {
	r := newTestRedis(b, testCircuit, clock.Real{})
	adm := Admission{Upstream: "bench", Tokens: 100, TPM: 1 << 40, MaxConcurrency: 1 << 20}
	s := Settlement{Outcome: outcome.Outcome{Class: outcome.Success, InputTokens: 80, Latency: 100 * time.Millisecond}}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		tk, d := r.Admit(ctx, adm)
		if d != nil || !tk.Shared {
			b.Fatalf("Admit = %+v %+v", tk, d)
		}
		r.Settle(tk, s)
	}
}

func BenchmarkRedisAdmitSettleParallel(b *testing.B) {
	r := newTestRedis(b, testCircuit, clock.Real{})
	adm := Admission{Upstream: "bench", Tokens: 100, TPM: 1 << 40, MaxConcurrency: 1 << 20}
	s := Settlement{Outcome: outcome.Outcome{Class: outcome.Success, InputTokens: 80, Latency: 100 * time.Millisecond}}
	ctx := context.Background()
	b.ReportAllocs()
	var failed sync.Once
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			tk, d := r.Admit(ctx, adm)
			if d != nil || !tk.Shared {
				failed.Do(func() { b.Errorf("Admit = %+v %+v", tk, d) })
				return
			}
			r.Settle(tk, s)
		}
	})
}
