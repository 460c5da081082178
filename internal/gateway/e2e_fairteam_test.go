package gateway_test

import (
	"net/http"
	"sync"
	"testing"
	"time"

	"github.com/tidwall/gjson"

	"switchyard/internal/config"
	"switchyard/internal/mock"
)

// TestTeamSharesInState: the admin state gives each waiting key's share in
// the fair queue (docs/routing.md#tenants-classes-and-fair-queueing): a
// team of weight 4 with two keys waiting splits it 2 and 2, a key of no
// team weighs its weight; once one of the team's keys is served, its
// partner, alone, has the team's whole 4.
func TestTeamSharesInState(t *testing.T) {
	_, url := startMock(t, "slow", mock.Behavior{CompletionTokens: 2, Latency: 600 * time.Millisecond})
	up := upstreamAt("slow", config.ProviderOpenAI, url, 0, "gpt-4o")
	up.MaxConcurrency = 2
	up.Queue = config.Queue{Enabled: true, Timeout: 10 * time.Second, MaxLength: 32, Discipline: config.DisciplineFair}
	e := startGateway(t, spec{
		upstreams: []config.Upstream{up},
		keys:      []config.Key{tenantKey("r1", "", "research"), tenantKey("r2", "", "research"), tenantKey("solo", "", "")},
		edit: func(c *config.Config) {
			withAdmin(c)
			c.Teams = []config.Team{{Name: "research", Weight: 4, SpendLimit: config.SpendLimit{Period: "month"}}}
		},
	})
	var wg sync.WaitGroup
	defer wg.Wait()
	send := func(key string) {
		wg.Go(func() {
			if r, _ := e.chatAs(t, key); r.status != http.StatusOK {
				t.Errorf("%s: %d %s", key, r.status, r.body)
			}
		})
	}
	send("solo") // the two slots
	send("solo")
	if !waitFor(hangGuard, func() bool { return upstreamInFlight(e, "slow") == 2 }) {
		t.Fatal("the slots were never taken")
	}
	for i, k := range []string{"solo", "r1", "r2"} { // queued in this order
		send(k)
		if !waitFor(hangGuard, func() bool { return queueDepth(e, "slow") == i+1 }) {
			t.Fatalf("%s never queued", k)
		}
	}
	shares := func() map[string]float64 {
		st := e.mustAdmin(t, http.MethodGet, "/state", "", http.StatusOK)
		out := map[string]float64{}
		for k, v := range gjson.GetBytes(st.body, "upstreams.0.queue_share_by_key").Map() {
			out[k] = v.Float()
		}
		return out
	}
	if got := shares(); got["r1"] != 2 || got["r2"] != 2 || got["solo"] != 1 || len(got) != 3 {
		t.Fatalf("shares while r1, r2 and solo wait = %v, want r1 2, r2 2, solo 1", got)
	}
	// The team and solo split the two freed slots: solo and r1 are
	// served (all three start at the virtual time: by arrival), r2 waits
	// alone.
	if !waitFor(hangGuard, func() bool { return queueDepth(e, "slow") == 1 }) {
		t.Fatal("the queue never went down to 1")
	}
	if got := shares(); len(got) != 1 || got["r2"] != 4 {
		t.Fatalf("shares with r2 waiting alone = %v, want r2 4", got)
	}
}

// upstreamInFlight returns upstream's requests in flight.
func upstreamInFlight(e *env, upstream string) int64 {
	for _, s := range e.G.UpstreamStates() {
		if s.Name == upstream {
			return s.InFlight
		}
	}
	return -1
}
