package proxy

import (
	"math"
	"net/http"
	"sync/atomic"
	"testing"

	"switchyard/internal/config"
	"switchyard/internal/limits"
	"switchyard/internal/pricing"
)

// TestSpendUsesPriceLookup: an attempt's spend is its usage (7 in, 3 out:
// chatOK) at the price its upstream's rules give the client model, and
// nothing for an unpriced model.
func TestSpendUsesPriceLookup(t *testing.T) {
	var hits atomic.Int64
	url := upstreamServer(t, chatOK(&hits))
	catalogue := upstreamCfg("catalogue", config.ProviderOpenAI, url, "gpt-4o")
	catalogue.ModelMap = map[string]string{"gpt-4o": "gpt-4o-2024-08-06"}
	catalogue.PriceMultiplier = 0.5
	configured := upstreamCfg("configured", config.ProviderOpenAI, url, "gpt-4o-mini")
	configured.Prices = map[string]config.Price{"gpt-4o-mini*": {InputPerMTok: 1, OutputPerMTok: 4}}
	unpriced := upstreamCfg("unpriced", config.ProviderOpenAI, url, "in-house")
	f := newFixture(t, []config.Upstream{catalogue, configured, unpriced}, fixtureOpts{catalogue: pricing.Builtin()})
	tests := []struct {
		model, upstream string
		want            float64
	}{
		{"gpt-4o", "catalogue", (7*2.5 + 3*10) * 0.5 / 1e6},
		{"gpt-4o-mini", "configured", (7*1 + 3*4) / 1e6},
		{"in-house", "unpriced", 0},
	}
	for _, tc := range tests {
		t.Run(tc.model, func(t *testing.T) {
			resp := f.post("/v1/chat/completions", `{"model":"`+tc.model+`","messages":[]}`)
			readAll(t, resp)
			if resp.StatusCode != http.StatusOK {
				t.Fatalf("status %d", resp.StatusCode)
			}
			f.logs.next(t) // the attempt has ended
			got := f.srv.opts.Spend.Total(limits.ScopeUpstream, tc.upstream, limits.PeriodMonth)
			if math.Abs(got-tc.want) > 1e-12 {
				t.Errorf("spend of %s = %v, want %v", tc.upstream, got, tc.want)
			}
			if key := f.srv.opts.Spend.Total(limits.ScopeKey, "test", limits.PeriodMonth); key < got {
				t.Errorf("key spend %v below the upstream's %v", key, got)
			}
		})
	}
}
