package sim

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"time"

	"switchyard/internal/config"
)

// Report is the outcome of a run: the summary and the time series the
// charts draw.
type Report struct {
	// Summary is what summary.json holds.
	Summary Summary
	sc      *Scenario
	rec     *recorder
	names   []string
}

// Summary is the report's numbers. Field order is the JSON key order.
type Summary struct {
	Scenario  string            `json:"scenario"`
	Seed      uint64            `json:"seed"`
	DurationS float64           `json:"duration_s"`
	Overall   Overall           `json:"overall"`
	Upstreams []UpstreamSummary `json:"upstreams"`
	// Comparison is the second run of Scenario.Compare; nil without one.
	Comparison *Comparison `json:"comparison,omitempty"`
}

// Overall is what the clients saw.
type Overall struct {
	// Requests counts client requests; Succeeded those answered 200 whole.
	Requests    int64   `json:"requests"`
	Succeeded   int64   `json:"succeeded"`
	SuccessRate float64 `json:"success_rate"`
	// ClientErrors counts every other answer by status and code, by label.
	ClientErrors []LabelCount `json:"client_errors"`
	// Attempts counts upstream attempts; Failovers those after a request's
	// first but its hedges; Rescued the successful requests that needed a
	// failover; Hedges the attempts raced alongside a slow one
	// (docs/routing.md#hedged-requests).
	Attempts  int64 `json:"attempts"`
	Failovers int64 `json:"failovers"`
	Rescued   int64 `json:"rescued_by_failover"`
	Hedges    int64 `json:"hedges,omitempty"`
	// LatencyMs is over successful requests; TTFTMs over successful streams.
	LatencyMs Percentiles `json:"latency_ms"`
	TTFTMs    Percentiles `json:"ttft_ms"`
	CostUSD   float64     `json:"cost_usd"`
	// CostPer1000 is CostUSD per 1,000 client requests.
	CostPer1000 float64 `json:"cost_per_1000_requests_usd"`
	// PromptCache counts the answers to requests that opened with a shared
	// prompt and those that found it in their account's prompt cache;
	// only for scenarios with shared prompts.
	PromptCache *PromptCache `json:"prompt_cache,omitempty"`
	// Affinity counts the plans of requests with a session by what their
	// binding did (docs/routing.md#2-candidates-and-session-affinity).
	Affinity AffinityCounts `json:"affinity"`
	// CacheAffinity is how often a session's turn went to the upstream
	// holding its prompt cache; only for scenarios with sessions.
	CacheAffinity *CacheAffinity `json:"cache_affinity,omitempty"`
}

// PromptCache is how often a shared prompt was read from the prompt
// cache of the account that served it (docs/simulator.md).
type PromptCache struct {
	// Lookups counts successful answers to requests with a shared prompt;
	// Hits those whose account had seen the prompt within 5 minutes.
	Lookups int64 `json:"lookups"`
	Hits    int64 `json:"hits"`
	// HitRate is Hits ÷ Lookups (0 without lookups).
	HitRate float64 `json:"hit_rate"`
	// CacheReadTokens and CacheWriteTokens are the input tokens read from
	// and written to the caches, as billed.
	CacheReadTokens  int64 `json:"cache_read_tokens"`
	CacheWriteTokens int64 `json:"cache_write_tokens"`
}

// AffinityCounts counts plans by their session-affinity result.
type AffinityCounts struct {
	Hit         int64 `json:"hit"`
	Miss        int64 `json:"miss"`
	Fallthrough int64 `json:"fallthrough"`
	Migrated    int64 `json:"migrated"`
}

// LabelCount is one client-visible answer and how often it was given.
type LabelCount struct {
	Answer string `json:"answer"`
	Count  int64  `json:"count"`
}

// Percentiles are nearest-rank percentiles in milliseconds (0 without data).
type Percentiles struct {
	P50 float64 `json:"p50"`
	P95 float64 `json:"p95"`
	P99 float64 `json:"p99"`
}

// UpstreamSummary is one upstream's part.
type UpstreamSummary struct {
	Name     string `json:"name"`
	Priority int    `json:"priority"`
	Weight   int    `json:"weight"`
	// ConfiguredShare is weight ÷ the weights of the first tier serving the
	// traffic's models (0 in later tiers and for upstreams only of fallback
	// models); Share is its part of all attempts.
	ConfiguredShare float64 `json:"configured_share"`
	Share           float64 `json:"share"`
	Requests        int64   `json:"requests"`
	Served          int64   `json:"served"`
	RateLimited     int64   `json:"rate_limited_429"`
	Errors          int64   `json:"errors"`
	BreakerTrips    int64   `json:"breaker_trips"`
	InputTokens     int64   `json:"input_tokens"`
	OutputTokens    int64   `json:"output_tokens"`
	CacheReadTokens int64   `json:"cache_read_tokens,omitempty"`
	// CacheHitRate is the share of its answers to requests with a shared
	// prompt that found it cached; only with shared prompts.
	CacheHitRate *float64 `json:"cache_hit_rate,omitempty"`
	CostUSD      float64  `json:"cost_usd"`
}

// report builds the Report at the end of the run.
func (r *run) report(seed uint64) *Report {
	rec := r.rec
	c := rec.client
	s := Summary{Scenario: r.sc.Name, Seed: seed, DurationS: r.sc.Duration.Seconds()}
	s.Overall = Overall{
		Requests: c.requests, Succeeded: c.succeeded, SuccessRate: round(ratio(c.succeeded, c.requests), 6),
		Attempts: c.attempts, Failovers: c.failovers, Rescued: c.rescued, Hedges: c.hedges,
		LatencyMs: percentiles(slices.Concat(rec.lat...)), TTFTMs: percentiles(slices.Concat(rec.ttft...)),
		CostUSD: round(c.cost, 6), ClientErrors: []LabelCount{}, Affinity: rec.affinity,
		CacheAffinity: r.cacheAffinitySummary(), PromptCache: r.promptCacheSummary(),
	}
	if c.requests > 0 {
		s.Overall.CostPer1000 = round(1000*c.cost/float64(c.requests), 6)
	}
	for _, l := range sortedNames(rec.labels) {
		if l != clientOK {
			s.Overall.ClientErrors = append(s.Overall.ClientErrors, LabelCount{Answer: l, Count: rec.labels[l]})
		}
	}
	// The configured split is that of the first tier serving the phases'
	// models (fallback models' upstreams take no planned share).
	firstTier, weights := -1, 0
	planned := make([]bool, len(r.ups))
	for i, u := range r.ups {
		for _, p := range r.sc.Traffic {
			planned[i] = planned[i] || config.MatchAny(u.cfg.Models, p.Model)
		}
		if planned[i] && (firstTier < 0 || u.cfg.Priority < firstTier) {
			firstTier = u.cfg.Priority
		}
	}
	for i, u := range r.ups {
		if planned[i] && u.cfg.Priority == firstTier {
			weights += u.cfg.Weight
		}
	}
	names := make([]string, len(r.ups))
	for i, u := range r.ups {
		t := rec.ups[i]
		names[i] = u.cfg.Name
		us := UpstreamSummary{
			Name: u.cfg.Name, Priority: u.cfg.Priority, Weight: u.cfg.Weight,
			Share: round(ratio(t.attempts, c.attempts), 4), Requests: t.attempts, Served: t.served,
			RateLimited: t.r429, Errors: t.errors, BreakerTrips: t.trips,
			InputTokens: t.in, OutputTokens: t.out, CacheReadTokens: t.cacheRead, CostUSD: round(t.cost, 6),
		}
		if s.Overall.PromptCache != nil {
			rate := round(ratio(u.prov.hits, u.prov.lookups), 4)
			us.CacheHitRate = &rate
		}
		if planned[i] && u.cfg.Priority == firstTier && weights > 0 {
			us.ConfiguredShare = round(float64(u.cfg.Weight)/float64(weights), 4)
		}
		s.Upstreams = append(s.Upstreams, us)
	}
	return &Report{Summary: s, sc: r.sc, rec: rec, names: names}
}

func ratio(a, b int64) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// round rounds v to d decimals, so that outputs print stable short numbers.
func round(v float64, d int) float64 {
	p := math.Pow10(d)
	return math.Round(v*p) / p
}

// percentiles returns the nearest-rank p50, p95 and p99 of v in ms
// (sorting v).
func percentiles(v []float32) Percentiles {
	if len(v) == 0 {
		return Percentiles{}
	}
	slices.Sort(v)
	at := func(p float64) float64 {
		i := int(math.Ceil(p*float64(len(v)))) - 1
		return round(float64(v[max(i, 0)]), 1)
	}
	return Percentiles{P50: at(0.50), P95: at(0.95), P99: at(0.99)}
}

// Output file names in the output directory.
const (
	FileSummaryMD   = "summary.md"
	FileSummaryJSON = "summary.json"
	FileShareSVG    = "share.svg"
	FileLatencySVG  = "latency.svg"
	FileErrorsSVG   = "errors.svg"
	FileBreakersSVG = "breakers.svg"
)

// Files renders every output file, by name.
func (rp *Report) Files() (map[string][]byte, error) {
	js, err := json.MarshalIndent(rp.Summary, "", "  ")
	if err != nil {
		return nil, fmt.Errorf("encoding summary: %w", err)
	}
	return map[string][]byte{
		FileSummaryJSON: append(js, '\n'),
		FileSummaryMD:   rp.markdown(),
		FileShareSVG:    rp.shareChart(),
		FileLatencySVG:  rp.latencyChart(),
		FileErrorsSVG:   rp.errorsChart(),
		FileBreakersSVG: rp.breakerChart(),
	}, nil
}

// WriteDir writes every output file into dir, creating it.
func (rp *Report) WriteDir(dir string) error {
	files, err := rp.Files()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("creating output directory: %w", err)
	}
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		if err := os.WriteFile(filepath.Join(dir, n), files[n], 0o644); err != nil {
			return fmt.Errorf("writing %s: %w", n, err)
		}
	}
	return nil
}

// markdown renders summary.md: the same numbers as summary.json, as tables
// an operator can paste into a change review.
func (rp *Report) markdown() []byte {
	s, sc := &rp.Summary, rp.sc
	o := &s.Overall
	var b bytes.Buffer
	fmt.Fprintf(&b, "# Simulation: %s\n\n", s.Scenario)
	if d := strings.TrimSpace(sc.Description); d != "" {
		fmt.Fprintf(&b, "%s\n\n", d)
	}
	fmt.Fprintf(&b, "Seed %d, %s of simulated traffic, charts in %s buckets.\n\n", s.Seed, sc.Duration, sc.Bucket)
	b.WriteString("## What the clients saw\n\n| metric | value |\n| --- | --- |\n")
	fmt.Fprintf(&b, "| requests | %d |\n", o.Requests)
	fmt.Fprintf(&b, "| succeeded | %d (%s) |\n", o.Succeeded, pct(o.SuccessRate))
	fmt.Fprintf(&b, "| client-visible errors | %d |\n", o.Requests-o.Succeeded)
	fmt.Fprintf(&b, "| upstream attempts | %d |\n", o.Attempts)
	fmt.Fprintf(&b, "| failovers (attempts after the first) | %d |\n", o.Failovers)
	fmt.Fprintf(&b, "| requests rescued by a failover | %d |\n", o.Rescued)
	if o.Hedges > 0 {
		fmt.Fprintf(&b, "| hedges (attempts raced alongside a slow one) | %d |\n", o.Hedges)
	}
	fmt.Fprintf(&b, "| latency p50 / p95 / p99 | %s / %s / %s |\n", msText(o.LatencyMs.P50), msText(o.LatencyMs.P95), msText(o.LatencyMs.P99))
	fmt.Fprintf(&b, "| TTFT p50 / p95 / p99 (streams) | %s / %s / %s |\n", msText(o.TTFTMs.P50), msText(o.TTFTMs.P95), msText(o.TTFTMs.P99))
	fmt.Fprintf(&b, "| cost | $%.2f ($%.4f per 1,000 requests) |\n", o.CostUSD, o.CostPer1000)
	if c := o.PromptCache; c != nil {
		fmt.Fprintf(&b, "| prompt-cache hit rate (shared prompts found in their account's cache) | %s (%d of %d) |\n",
			pct(c.HitRate), c.Hits, c.Lookups)
	}
	if a := o.Affinity; a != (AffinityCounts{}) {
		fmt.Fprintf(&b, "| session affinity: hit / miss / fall-through / migrated | %d / %d / %d / %d |\n", a.Hit, a.Miss, a.Fallthrough, a.Migrated)
	}
	if c := o.CacheAffinity; c != nil {
		fmt.Fprintf(&b, "| cache-affinity rate (later turns on their previous turn's upstream within %g min) | %s (%d of %d) |\n",
			cacheLifetime.Minutes(), pct(c.Rate), c.Warm, c.Turns)
	}
	b.WriteString("\n")
	if len(o.ClientErrors) > 0 {
		b.WriteString("### Client-visible errors\n\n| answer | count | share of requests |\n| --- | ---: | ---: |\n")
		for _, e := range o.ClientErrors {
			fmt.Fprintf(&b, "| %s | %d | %s |\n", e.Answer, e.Count, pct(ratio(e.Count, o.Requests)))
		}
		b.WriteString("\n")
	}
	rp.comparisonMarkdown(&b)
	b.WriteString("## Upstreams\n\n")
	cache := o.PromptCache != nil // a column for the prompt caches only with shared prompts
	b.WriteString("| upstream | tier | weight | configured share | actual share | requests | served | 429s | errors | breaker trips |")
	if cache {
		b.WriteString(" cache hits |")
	}
	b.WriteString(" cost |\n| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	if cache {
		b.WriteString(" ---: |")
	}
	b.WriteString(" ---: |\n")
	for _, u := range s.Upstreams {
		fmt.Fprintf(&b, "| %s | %d | %d | %s | %s | %d | %d | %d | %d | %d |",
			u.Name, u.Priority, u.Weight, pct(u.ConfiguredShare), pct(u.Share), u.Requests, u.Served,
			u.RateLimited, u.Errors, u.BreakerTrips)
		if cache && u.CacheHitRate != nil {
			fmt.Fprintf(&b, " %s |", pct(*u.CacheHitRate))
		}
		fmt.Fprintf(&b, " $%.2f |\n", u.CostUSD)
	}
	b.WriteString("\n## Traffic\n\n| phase | model | start | duration | rate | burst | streams | sessions |\n")
	b.WriteString("| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |\n")
	for _, p := range sc.Traffic {
		fmt.Fprintf(&b, "| %s | %s | %s | %s | %g/s | %d | %s | %s |\n",
			p.Name, p.Model, *p.Start, p.Duration, p.Rate, p.Burst, pct(p.StreamShare), pct(p.Sessions.Share))
	}
	b.WriteString("\n## Charts\n\n")
	for _, c := range [...][2]string{
		{"Traffic share per upstream", FileShareSVG}, {"Latency percentiles", FileLatencySVG},
		{"Errors and 429s", FileErrorsSVG}, {"Breaker states", FileBreakersSVG},
	} {
		fmt.Fprintf(&b, "![%s](%s)\n\n", c[0], c[1])
	}
	return b.Bytes()
}

func pct(f float64) string { return fmt.Sprintf("%.1f%%", 100*f) }

func msText(v float64) string {
	if v >= 10000 {
		return fmt.Sprintf("%.1f s", v/1000)
	}
	return fmt.Sprintf("%.0f ms", v)
}

// minutes converts a duration to minutes for the charts' time axis.
func minutes(d time.Duration) float64 { return d.Minutes() }
