package gateway_test

import (
	"context"
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"switchyard/internal/mock"
)

// TestTeamLimitsScaleOut: a team's max_concurrency and spend_limit hold
// across two gateway processes sharing one Redis
// (docs/routing.md#tenants-classes-and-fair-queueing), on each Redis
// deployment the environment names. Each process alone
// would admit the team's third request, or never see what the other spent.
func TestTeamLimitsScaleOut(t *testing.T) { forEachRedisMode(t, teamLimitsScaleOut) }

func teamLimitsScaleOut(t *testing.T, target redisTarget, prefix string) {
	bin := scaleOutBinary(t)
	slow, slowURL := startMock(t, "slow", mock.Behavior{CompletionTokens: 2, Latency: 600 * time.Millisecond})
	_, priceyURL := startMock(t, "pricey", mock.Behavior{CompletionTokens: 5}) // $5 an answer
	_, freeURL := startMock(t, "free", mock.Behavior{CompletionTokens: 5})
	procs := startFleet(t, bin, 2, soConfig{
		target: &target, prefix: prefix,
		keys: "  - {name: r1, key: sk-r1, team: research}\n  - {name: r2, key: sk-r2, team: research}\n" +
			"  - {name: f1, key: sk-f1, team: finance}\n  - {name: f2, key: sk-f2, team: finance}\n",
		top: "teams:\n  - {name: research, max_concurrency: 2}\n" +
			"  - {name: finance, spend_limit: {usd: 10, period: day}}\n",
		upstreams: []soUpstream{
			{name: "slow", url: slowURL, models: []string{"gpt-4o"}},
			{name: "pricey", url: priceyURL, models: []string{"priced-model"}, extra: "    price: {output_per_mtok: 1000000}\n"},
			{name: "free", url: freeURL, models: []string{"free-model"}},
		},
	})
	client := soClient(t)
	as := func(key string) []string { return []string{"Authorization", "Bearer sk-" + key} }
	code := func(a soAnswer) string { return gjson.Get(a.body, "error.code").String() }

	t.Run("team max_concurrency", func(t *testing.T) {
		var wg sync.WaitGroup
		held := make([]soAnswer, 2)
		for i, key := range []string{"r1", "r2"} { // one request through each instance
			wg.Go(func() { held[i] = soChat(context.Background(), client, procs[i].url, "gpt-4o", as(key)...) })
		}
		if !waitFor(5*time.Second, func() bool { return slow.Stats().InFlight == 2 }) {
			t.Fatalf("slow has %d requests in flight, want the team's 2", slow.Stats().InFlight)
		}
		for i, key := range []string{"r1", "r2"} { // each instance holds one slot of the team's 2
			a := soChat(context.Background(), client, procs[i].url, "gpt-4o", as(key)...)
			if a.status != http.StatusTooManyRequests || code(a) != "team_concurrency_exceeded" {
				t.Errorf("a third request of the team through instance %d: %s, want 429 team_concurrency_exceeded", i+1, a)
			}
		}
		wg.Wait()
		for i, a := range held {
			if a.err != nil || a.status != http.StatusOK {
				t.Fatalf("held request %d: %s", i+1, a)
			}
		}
		if a := soChat(context.Background(), client, procs[0].url, "gpt-4o", as("r2")...); a.status != http.StatusOK {
			t.Fatalf("once both ended, a request answered %s, want 200: the slots were not given back", a)
		}
		if n := slow.Stats().Requests; n != 3 {
			t.Errorf("slow received %d requests, want 3 (the refused ones must not reach it)", n)
		}
	})

	t.Run("team spend_limit", func(t *testing.T) {
		for i := range 2 { // $10 through instance 1: the team's daily limit
			if a := soChat(context.Background(), client, procs[0].url, "priced-model", as("f1")...); a.status != http.StatusOK {
				t.Fatalf("priced request %d through instance 1: %s", i+1, a)
			}
		}
		charged := time.Now()
		if a := soChat(context.Background(), client, procs[0].url, "free-model", as("f1")...); code(a) != "team_spend_exceeded" {
			t.Fatalf("instance 1 after the team spent its limit: %s, want 429 team_spend_exceeded", a)
		}
		// Instance 2 charged nothing itself: only the shared total refuses.
		// Free requests poll it without spending.
		var last soAnswer
		if !waitFor(2*time.Second, func() bool {
			last = soChat(context.Background(), client, procs[1].url, "free-model", as("f2")...)
			return last.status == http.StatusTooManyRequests
		}) {
			t.Fatalf("instance 2 still answers the team %s 2 s after it spent its limit through instance 1, want 429 team_spend_exceeded", last)
		}
		took := time.Since(charged)
		if code(last) != "team_spend_exceeded" {
			t.Fatalf("instance 2 refused the team with %s, want team_spend_exceeded", last)
		}
		if bound := soSyncInterval + 400*time.Millisecond; took > bound {
			t.Errorf("instance 2 refused %v after the spend, want within sync_interval (%v) + slack: %v", took, soSyncInterval, bound)
		}
		if a := soChat(context.Background(), client, procs[1].url, "priced-model", as("f2")...); code(a) != "team_spend_exceeded" {
			t.Errorf("a priced request of the team through instance 2: %s, want 429 team_spend_exceeded", a)
		}
		t.Logf("instance 2 refused the team %v after it spent its limit through instance 1 (sync_interval %v)",
			took.Round(time.Millisecond), soSyncInterval)
	})
}
