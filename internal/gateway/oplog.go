package gateway

import (
	"cmp"
	"context"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"slices"
	"sync"
	"time"

	"switchyard/internal/clock"
	"switchyard/internal/limits"
	"switchyard/internal/proxy"
	"switchyard/internal/state"
	"switchyard/internal/store"
)

// RequestSummaryInterval is how often the log sums up, per route, the
// requests that were refused or failed over: one line per route and
// interval however many there were, so that a storm of 429s or an outage
// is a few lines a minute, not one per request.
const RequestSummaryInterval = 10 * time.Second

// opLog writes what an operator acts on (docs/logs.md, issue "logs that
// speak"): breaker transitions, cooldowns starting and ending, probes
// marking an upstream unhealthy and healthy again, a summary of refused
// and failed-over requests per route every RequestSummaryInterval and,
// with log.access, one line per request. Each line says what changed and
// why; none carries a secret (reasons are the same secret-free details the
// client and the request log get).
type opLog struct {
	log    *slog.Logger
	clock  clock.Clock
	access bool
	// serves reports whether some upstream serves a model; nil: any. A
	// refusal of a model nothing serves is summed under "(unknown model)"
	// without its message: the name is the client's, any string at all.
	serves func(model string) bool

	mu      sync.Mutex             // guards cooling and summary
	cooling map[string]*coolState  // upstream → its running cooldown
	summary map[string]*routeTally // route (client model) → this interval's tally
}

// coolState is one upstream's running cooldown.
type coolState struct {
	since, until time.Time
	limitType    string
	hits         int // 429s since it started, the first included
}

// routeTally is what one route's requests did in the current interval.
type routeTally struct {
	refused    int
	causes     map[string]int // refused: error code → count
	lastError  string         // the last refusal's message
	failedOver int            // served after more than one attempt
}

func newOpLog(l *slog.Logger, clk clock.Clock, access bool) *opLog {
	return &opLog{log: l, clock: clk, access: access, cooling: map[string]*coolState{}, summary: map[string]*routeTally{}}
}

// breaker logs a circuit breaker's transition; shared says it is the
// breaker state shared through Redis.
func (o *opLog) breaker(upstream, from, to, reason string, shared bool) {
	level := slog.LevelInfo
	if to == "open" {
		level = slog.LevelWarn
	}
	attrs := []any{"upstream", upstream, "to", to, "reason", reason}
	if from != "" {
		attrs = append(attrs, "from", from)
	}
	if shared {
		attrs = append(attrs, "shared", true)
	}
	o.log.Log(context.Background(), level, "breaker "+to, attrs...)
}

// health logs a probe finding an upstream unhealthy, or healthy again.
func (o *opLog) health(upstream string, healthy bool, detail string) {
	if healthy {
		o.log.Info("upstream healthy again", "upstream", upstream)
		return
	}
	o.log.Warn("upstream unhealthy", "upstream", upstream, "reason", detail)
}

// cooldown logs a 429's cooldown when it starts one (a 429 that extends a
// running cooldown is only counted); flush says when it is over.
func (o *opLog) cooldown(upstream string, cd limits.Cooldown) {
	now := o.clock.Now()
	if !cd.Until.After(now) {
		return
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	if c := o.cooling[upstream]; c != nil {
		c.hits++
		if cd.Until.After(c.until) {
			c.until = cd.Until
		}
		return
	}
	o.cooling[upstream] = &coolState{since: now, until: cd.Until, limitType: cd.LimitType, hits: 1}
	o.log.Warn("upstream cooling down", "upstream", upstream, "limit_type", limitLabel(cd.LimitType),
		"duration", cd.Until.Sub(now).Round(time.Millisecond).String(), "source", cd.Source, "consecutive_429s", cd.Consecutive)
}

// cooldownsOver logs each cooldown that has run out by now: how long it
// lasted, when it ended and how many 429s came during it. It runs with
// each summary, so the line comes up to RequestSummaryInterval after the
// end it states (a timer per cooldown would cost a goroutine's wake-up
// per 429 storm and upstream for one log line).
func (o *opLog) cooldownsOver(now time.Time) {
	o.mu.Lock()
	defer o.mu.Unlock()
	for _, upstream := range slices.Sorted(maps.Keys(o.cooling)) {
		c := o.cooling[upstream]
		if c.until.After(now) {
			continue
		}
		delete(o.cooling, upstream)
		o.log.Info("upstream cooldown over", "upstream", upstream, "limit_type", limitLabel(c.limitType),
			"lasted", c.until.Sub(c.since).Round(time.Millisecond).String(), "ended", c.until.UTC().Format(time.RFC3339Nano),
			"rate_limited_answers", c.hits)
	}
}

func limitLabel(t string) string {
	if t == "" {
		return "unknown"
	}
	return t
}

// request takes one finished request: into the route's summary when it
// was refused or failed over, and onto the access log when that is on.
func (o *opLog) request(l *store.RequestLog) {
	if o.access {
		o.log.Info("request", "id", l.ID, "key", l.Key, "model", l.Model, "upstream", l.Upstream, "status", l.Status,
			"attempts", l.Attempts, "stream", l.Stream, "latency_ms", ms(l.Latency), "ttft_ms", ms(l.TTFT),
			"input_tokens", l.InputTokens, "output_tokens", l.OutputTokens,
			"cache_read_tokens", l.CacheReadTokens, "cache_write_tokens", l.CacheWriteTokens, "cost_usd", l.CostUSD, "unpriced", l.Unpriced,
			"error_class", l.ErrorClass, "trace_id", l.TraceID)
	}
	refused := proxy.Refused(l.Status, l.ErrorClass)
	if !refused && l.Attempts < 2 {
		return
	}
	route, lastError := l.Model, l.Error
	if o.serves != nil && !o.serves(route) {
		route, lastError = "", ""
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	t := o.summary[route]
	if t == nil {
		t = &routeTally{causes: map[string]int{}}
		o.summary[route] = t
	}
	if refused {
		t.refused++
		t.causes[l.ErrorClass]++
		t.lastError = cmp.Or(lastError, t.lastError)
	} else {
		t.failedOver++
	}
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// maxSummaryRoutes bounds the summary lines of one interval: clients
// naming many models that do not exist must not flood the log. The
// busiest routes get a line each; the rest are summed into one.
const maxSummaryRoutes = 20

// flush writes one line per route with refused or failed-over requests
// since the last flush, the busiest maxSummaryRoutes of them, and one line
// summing up the others.
func (o *opLog) flush() {
	o.cooldownsOver(o.clock.Now())
	o.mu.Lock()
	summary := o.summary
	o.summary = map[string]*routeTally{}
	o.mu.Unlock()
	routes := slices.Sorted(maps.Keys(summary))
	if len(routes) > maxSummaryRoutes {
		slices.SortStableFunc(routes, func(a, b string) int {
			return (summary[b].refused + summary[b].failedOver) - (summary[a].refused + summary[a].failedOver)
		})
		rest := &routeTally{causes: map[string]int{}}
		for _, r := range routes[maxSummaryRoutes:] {
			t := summary[r]
			rest.refused += t.refused
			rest.failedOver += t.failedOver
			for c, n := range t.causes {
				rest.causes[c] += n
			}
			rest.lastError = cmp.Or(t.lastError, rest.lastError)
		}
		routes = routes[:maxSummaryRoutes]
		defer o.logRoute(fmt.Sprintf("(%d other routes)", len(summary)-maxSummaryRoutes), rest)
	}
	for _, route := range routes {
		o.logRoute(route, summary[route])
	}
}

// logRoute writes the summary line of one route's interval.
func (o *opLog) logRoute(route string, t *routeTally) {
	if route == "" {
		route = "(unknown model)" // no model, or one nothing serves
	}
	if t.refused > 0 {
		o.log.Warn("requests refused", "route", route, "count", t.refused, "failed_over", t.failedOver,
			"causes", t.causes, "last_error", t.lastError, "interval", RequestSummaryInterval.String())
		return
	}
	o.log.Info("requests failed over", "route", route, "count", t.failedOver, "interval", RequestSummaryInterval.String())
}

// run flushes the summary every RequestSummaryInterval until ctx ends,
// then once more.
func (o *opLog) run(ctx context.Context) {
	for clock.Wait(ctx, o.clock, nil, RequestSummaryInterval) != clock.Done {
		o.flush()
	}
	o.flush()
}

// loggedState is the state driver the proxy holds: the gateway's, with
// the cooldowns a 429 starts logged.
type loggedState struct {
	state.Driver
	ops *opLog
}

// RateLimited records the 429 and logs the cooldown it starts.
func (s loggedState) RateLimited(upstream string, h http.Header, body []byte, asked time.Duration) limits.Cooldown {
	cd := s.Driver.RateLimited(upstream, h, body, asked)
	s.ops.cooldown(upstream, cd)
	return cd
}

// loggedSink hands each finished request to the operator log, then to the
// request-log writer (nil with log.requests off).
type loggedSink struct {
	ops  *opLog
	next proxy.LogSink
}

// Enqueue implements proxy.LogSink.
func (s loggedSink) Enqueue(l store.RequestLog) bool {
	s.ops.request(&l)
	if s.next == nil {
		return true
	}
	return s.next.Enqueue(l)
}
