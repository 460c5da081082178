package gateway_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"
	"github.com/redis/go-redis/v9"
)

// TestScaleOutResponsesPinned: three `switchyard serve` processes sharing
// Redis, three equal accounts. A 20-turn Responses chain whose turns
// alternate between the processes (a few streamed) is answered every time,
// every turn by the account of the first: each process finds the pin
// another made, under the test's prefix with affinity.response_ttl. With
// that account down, every process answers the next turn 503
// previous_response_unavailable naming it, and the other accounts get
// nothing.
func TestScaleOutResponsesPinned(t *testing.T) {
	redisURL, prefix := sharedRedis(t)
	bin := scaleOutBinary(t)
	p := newPinPool(t)
	var ups []soUpstream
	for _, u := range p.upstreams {
		ups = append(ups, soUpstream{name: u.Name, url: strings.TrimSuffix(u.BaseURL, "/v1"), models: u.Models})
	}
	const ttl = 2 * time.Hour
	procs := startFleet(t, bin, 3, soConfig{
		redisURL: redisURL, prefix: prefix, upstreams: ups,
		top: fmt.Sprintf("affinity:\n  response_ttl: %s\ncircuit:\n  failure_threshold: 2\n", ttl),
	})
	hc := soClient(t)
	clients := make([]openai.Client, len(procs))
	for i, pr := range procs {
		clients[i] = openai.NewClient(option.WithBaseURL(pr.url+"/v1/"), option.WithAPIKey(testKey),
			option.WithMaxRetries(0), option.WithHTTPClient(hc))
	}
	ctx := context.Background()

	const turns = 20
	var chain []respTurn
	prev := ""
	for i := range turns {
		inst := i % len(procs)
		tr, err := sendTurn(ctx, clients[inst], prev, streamedTurn(i))
		if err != nil {
			t.Fatalf("turn %d through instance %d (streamed %v) continuing %s: %v", i, inst+1, streamedTurn(i), prev, err)
		}
		chain = append(chain, tr)
		prev = tr.id
	}
	home := chain[0].upstream
	for i, tr := range chain {
		if tr.upstream != home {
			t.Fatalf("turn %d through instance %d served by %s, want %s (the first turn's)", i, i%len(procs)+1, tr.upstream, home)
		}
	}
	if got := p.requests(); got[home] != turns || got["acct-a"]+got["acct-b"]+got["acct-c"] != turns {
		t.Fatalf("mock requests %v, want all %d on %s", got, turns, home)
	}

	opts, err := redis.ParseURL(redisURL)
	if err != nil {
		t.Fatal(err)
	}
	rdb := redis.NewClient(opts)
	defer rdb.Close()
	for i, tr := range chain {
		key := prefix + "pin:response:" + tr.id
		up, err := rdb.Get(ctx, key).Result()
		if err != nil || up != home {
			t.Fatalf("turn %d: GET %s = %q, %v; want %s", i, key, up, err, home)
		}
		if d, err := rdb.PTTL(ctx, key).Result(); err != nil || d <= ttl-time.Minute || d > ttl {
			t.Fatalf("turn %d: PTTL %s = %v, %v; want about %v", i, key, d, err, ttl)
		}
	}

	before := p.requests()
	p.stop[home]()
	for round := range 2 { // connection refused, then the shared breaker open
		for inst, c := range clients {
			for _, stream := range []bool{false, true} {
				_, err := sendTurn(ctx, c, prev, stream)
				wantUnavailable(t, fmt.Sprintf("round %d through instance %d (streamed %v)", round, inst+1, stream), err, home)
			}
		}
	}
	after := p.requests()
	for _, n := range p.names {
		if n != home && after[n] != before[n] {
			t.Fatalf("%s got %d requests while %s was down, want none", n, after[n]-before[n], home)
		}
	}
}
