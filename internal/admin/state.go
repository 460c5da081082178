package admin

import (
	"time"
)

// State is GET /state: every upstream's live state.
type State struct {
	// At is when the state was read (the gateway's clock).
	At time.Time `json:"at"`
	// WindowSeconds is the length of the recent-traffic window the *_5m
	// counts, rates and shares cover, in seconds.
	WindowSeconds int `json:"window_seconds"`
	// Upstreams holds one entry per upstream, ordered by tier, then name.
	Upstreams []UpstreamState `json:"upstreams"`
	// Routes holds one entry per client model, ordered by model: its
	// upstreams by tier, each with its share of that model's attempts.
	Routes []RouteState `json:"routes"`
	// HistoryStepSeconds and HistoryEnd describe the routes' upstreams'
	// History when the query asked for it (StateQuery.History): its step,
	// and the end of its last step. 0 and absent otherwise.
	HistoryStepSeconds int        `json:"history_step_seconds,omitempty"`
	HistoryEnd         *time.Time `json:"history_end,omitempty"`
}

// UpstreamState is one upstream's live state.
type UpstreamState struct {
	// Name and Provider are the upstream's.
	Name     string `json:"name"`
	Provider string `json:"provider"`
	// Tier is the upstream's priority; lower tiers are tried first.
	Tier int `json:"tier"`
	// Weight is the configured weight, 1–100.
	Weight int `json:"weight"`
	// SlowStart is the breaker's slow-start factor in [0.1, 1].
	SlowStart float64 `json:"slow_start"`
	// EffectiveWeight is Weight × SlowStart.
	EffectiveWeight float64 `json:"effective_weight"`
	// Active says whether the upstream takes part in routing.
	Active bool `json:"active"`
	// Breaker is the circuit breaker's state.
	Breaker BreakerState `json:"breaker"`
	// InFlight counts requests being served now; MaxConcurrency is the
	// limit (0 = unlimited).
	InFlight       int64 `json:"in_flight"`
	MaxConcurrency int   `json:"max_concurrency"`
	// QueueDepth counts requests waiting for a slot; QueueMax is the
	// queue's bound (0 when the queue is disabled).
	QueueDepth int `json:"queue_depth"`
	QueueMax   int `json:"queue_max"`
	// QueueByClass and QueueByKey split this instance's waiting requests
	// by class (critical, interactive, batch) and by client key; absent
	// when none waits (docs/routing.md#tenants-classes-and-fair-queueing).
	QueueByClass map[string]int `json:"queue_by_class,omitempty"`
	QueueByKey   map[string]int `json:"queue_by_key,omitempty"`
	// QueueShareByKey is each waiting key's weight in the fair queue now:
	// its own weight for a key of no team, else its team's weight split
	// among the team's keys waiting here, by their weights
	// (docs/routing.md#tenants-classes-and-fair-queueing); absent when
	// none waits.
	QueueShareByKey map[string]float64 `json:"queue_share_by_key,omitempty"`
	// RPMUsed and TPMUsed count the last minute's requests and tokens;
	// RPMLimit and TPMLimit are the configured or learned limits (0 = unknown).
	RPMUsed  int64 `json:"rpm_used"`
	RPMLimit int64 `json:"rpm_limit"`
	TPMUsed  int64 `json:"tpm_used"`
	TPMLimit int64 `json:"tpm_limit"`
	// CooldownUntil is the end of the cooldown after a 429; null when not cooling down.
	CooldownUntil *time.Time `json:"cooldown_until"`
	// RateLimitReason says why the upstream is rate limited now; "" when it is not.
	RateLimitReason string `json:"rate_limit_reason,omitempty"`
	// LatencyMs, TTFTMs and TPS are the EWMAs of non-streaming latency,
	// streaming time to first token (ms) and streaming tokens per second;
	// 0 = no data.
	LatencyMs float64 `json:"latency_ms"`
	TTFTMs    float64 `json:"ttft_ms"`
	TPS       float64 `json:"tps"`
	// ProbeLatencyMs is the last active probe's round trip; 0 = none.
	ProbeLatencyMs float64 `json:"probe_latency_ms"`
	// Requests5m, Errors5m and RateLimited5m count, over the window, the
	// attempts sent to the upstream, those that failed (server or auth
	// error) and those answered 429.
	Requests5m    int64 `json:"requests_5m"`
	Errors5m      int64 `json:"errors_5m"`
	RateLimited5m int64 `json:"rate_limited_5m"`
	// ErrorRate and RateLimitedRate are Errors5m and RateLimited5m over
	// Requests5m (0 without requests).
	ErrorRate       float64 `json:"error_rate"`
	RateLimitedRate float64 `json:"rate_limited_rate"`
	// Hedges5m counts, over the window, the attempts raced on this
	// upstream alongside a slower one (docs/routing.md#hedged-requests);
	// HedgesWon5m those whose answer the client got.
	Hedges5m    int64 `json:"hedges_5m"`
	HedgesWon5m int64 `json:"hedges_won_5m"`
	// RequestsTotal counts the attempts since the gateway started (for
	// rates over time: the dashboard's chart differentiates it).
	RequestsTotal int64 `json:"requests_total"`
	// Share is the upstream's part of its tier's attempts over the window;
	// ConfiguredShare is its weight over the total weight of its tier's
	// active upstreams (0 when inactive). Both in [0, 1], and both over
	// every model the tier serves: Routes has them per model.
	Share           float64 `json:"share"`
	ConfiguredShare float64 `json:"configured_share"`
	// Models splits the upstream's attempts by the client model they were
	// for, ordered by model (at most MaxTrafficModels); Routes groups them.
	Models []ModelTraffic `json:"models"`
	// SpendTodayUSD and SpendMonthUSD are what the upstream cost in the
	// current UTC day and month.
	SpendTodayUSD float64 `json:"spend_today_usd"`
	SpendMonthUSD float64 `json:"spend_month_usd"`
}

// ModelTraffic is an upstream's attempts for one client model.
type ModelTraffic struct {
	// Model is the client model name, as requested (never a glob).
	Model string `json:"model"`
	// Requests5m counts the window's attempts; RequestsTotal those since
	// the model was first counted on the upstream.
	Requests5m    int64 `json:"requests_5m"`
	RequestsTotal int64 `json:"requests_total"`
	// History, when asked for (StateQuery.History), counts the attempts
	// per step, oldest first, the last step ending at HistoryEnd(At) (the
	// start of the current second): as many whole steps as the window holds
	// before that second (149 of 2 s in 5 minutes), less those before the
	// model was first counted on the upstream. /state shows it under Routes.
	History []int64 `json:"-"`
}

// BreakerState is a circuit breaker's state as /state shows it.
type BreakerState struct {
	// State is closed, open or half_open.
	State string `json:"state"`
	// Open means the breaker rejects a new request now.
	Open bool `json:"open"`
	// Reason says why it last tripped; "" if it never has.
	Reason string `json:"reason,omitempty"`
	// Until is when it will next let a request through; null when Open is false.
	Until *time.Time `json:"until"`
}

// fillDerived computes each upstream's rates and its actual and configured
// shares of its tier.
func fillDerived(ups []UpstreamState) {
	type tier struct{ requests, weight int64 }
	tiers := map[int]*tier{}
	for i := range ups {
		u := &ups[i]
		t := tiers[u.Tier]
		if t == nil {
			t = &tier{}
			tiers[u.Tier] = t
		}
		t.requests += u.Requests5m
		if u.Active {
			t.weight += int64(u.Weight)
		}
		u.ErrorRate, u.RateLimitedRate = ratio(u.Errors5m, u.Requests5m), ratio(u.RateLimited5m, u.Requests5m)
	}
	for i := range ups {
		u := &ups[i]
		t := tiers[u.Tier]
		u.Share = ratio(u.Requests5m, t.requests)
		if u.Active {
			u.ConfiguredShare = ratio(int64(u.Weight), t.weight)
		}
	}
}

func ratio(n, d int64) float64 {
	if d <= 0 {
		return 0
	}
	return float64(n) / float64(d)
}
