package sim

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"switchyard/internal/config"
)

// maxDuration bounds a scenario's simulated time.
const maxDuration = 7 * 24 * time.Hour

// checker collects FieldErrors, like the config's validator.
type checker struct{ errs config.Errors }

func (c *checker) add(path, format string, args ...any) {
	c.errs = append(c.errs, config.FieldError{Path: path, Msg: fmt.Sprintf(format, args...)})
}

func (c *checker) positive(path string, d time.Duration) {
	if d <= 0 {
		c.add(path, "must be > 0, got %s", d)
	}
}

func (c *checker) share(path string, f float64) {
	if math.IsNaN(f) || f < 0 || f > 1 {
		c.add(path, "must be 0–1, got %v", f)
	}
}

func (c *checker) durations(path string, d DurationDist) {
	c.positive(path+".p50", d.P50)
	if d.P95 < d.P50 {
		c.add(path+".p95", "must be ≥ p50 (%s), got %s", d.P50, d.P95)
	}
}

func (c *checker) counts(path string, d CountDist, lo float64) {
	if math.IsNaN(d.P50) || d.P50 < lo {
		c.add(path+".p50", "must be ≥ %v, got %v", lo, d.P50)
	}
	if math.IsNaN(d.P95) || d.P95 < d.P50 {
		c.add(path+".p95", "must be ≥ p50 (%v), got %v", d.P50, d.P95)
	}
}

func (c *checker) window(path string, start, end, limit time.Duration) {
	switch {
	case start < 0:
		c.add(path+".start", "must be ≥ 0, got %s", start)
	case end <= start:
		c.add(path+".end", "must be after start (%s), got %s", start, end)
	case start >= limit:
		c.add(path+".start", "must be before the scenario's end (%s), got %s", limit, start)
	}
}

// Validate checks s (with defaults applied) against cfg and returns every
// problem with its field path, in file order: every phase's model must be
// served by a config upstream, and every upstream that serves one needs a
// provider model here (and every provider model a config upstream).
func (s *Scenario) Validate(cfg *config.Config) config.Errors {
	var c checker
	switch {
	case s.Duration <= 0:
		c.add("duration", "required; must be > 0, got %s", s.Duration)
	case s.Duration < time.Second || s.Duration > maxDuration:
		c.add("duration", "must be 1s–%s, got %s", maxDuration, s.Duration)
	}
	if s.Bucket < time.Second {
		c.add("bucket", "must be ≥ 1s, got %s", s.Bucket)
	}
	if s.Key != "" && !slices.ContainsFunc(cfg.Keys, func(k config.Key) bool { return k.Name == s.Key }) {
		c.add("key", "no client key named %q in the config", s.Key)
	}
	if s.Protocol != "" && s.Protocol != ProtocolOpenAI && s.Protocol != ProtocolAnthropic {
		c.add("protocol", "must be %s or %s, got %q", ProtocolOpenAI, ProtocolAnthropic, s.Protocol)
	}
	if cmp, ok := comparisons[s.Compare]; ok {
		if problem := cmp.needs(cfg); problem != "" {
			c.add("compare", "%s", problem)
		}
	} else if s.Compare != "" {
		c.add("compare", "must be one of %s, or empty; got %q", strings.Join(compareNames(), ", "), s.Compare)
	}
	if len(s.Traffic) == 0 {
		c.add("traffic", "required: at least one phase")
	}
	needed := map[string]string{} // upstream → the first path that needs it
	for i := range s.Traffic {
		s.Traffic[i].check(&c, fmt.Sprintf("traffic[%d]", i), s.Duration, cfg, needed)
	}
	for _, name := range sortedNames(s.Upstreams) {
		path := "upstreams." + name
		if !slices.ContainsFunc(cfg.Upstreams, func(u config.Upstream) bool { return u.Name == name }) {
			c.add(path, "no upstream named %q in the config", name)
			continue
		}
		u := s.Upstreams[name]
		u.check(&c, path, s.Duration)
	}
	missing := make([]string, 0, len(needed))
	for name := range needed {
		if _, ok := s.Upstreams[name]; !ok {
			missing = append(missing, name)
		}
	}
	sort.Strings(missing)
	for _, name := range missing {
		c.add("upstreams."+name, "required: the config upstream %q serves the model of %s", name, needed[name])
	}
	return c.errs
}

func (p *Phase) check(c *checker, path string, limit time.Duration, cfg *config.Config, needed map[string]string) {
	c.positive(path+".duration", p.Duration)
	if *p.Start < 0 || *p.Start >= limit && limit > 0 {
		c.add(path+".start", "must be in [0, duration), got %s", *p.Start)
	}
	if math.IsNaN(p.Rate) || p.Rate <= 0 || math.IsInf(p.Rate, 0) {
		c.add(path+".rate", "must be > 0 requests per second, got %v", p.Rate)
	}
	if p.Burst < 1 {
		c.add(path+".burst", "must be ≥ 1, got %d", p.Burst)
	}
	c.share(path+".stream_share", p.StreamShare)
	c.share(path+".sessions.share", p.Sessions.Share)
	c.counts(path+".sessions.turns", p.Sessions.Turns, 1)
	c.durations(path+".sessions.think_time", p.Sessions.ThinkTime)
	c.counts(path+".prompt_tokens", p.PromptTokens, 1)
	if sp := p.SharedPrompts; sp.Count != 0 || sp.Tokens != 0 || sp.Share != nil {
		switch {
		case sp.Count < 1:
			c.add(path+".shared_prompts.count", "must be ≥ 1 with shared_prompts, got %d", sp.Count)
		case sp.Tokens < 1:
			c.add(path+".shared_prompts.tokens", "must be ≥ 1 with shared_prompts, got %d", sp.Tokens)
		case sp.Tokens > math.MaxInt32/8:
			c.add(path+".shared_prompts.tokens", "must be ≤ %d, got %d", math.MaxInt32/8, sp.Tokens)
		}
		if sp.Share != nil {
			c.share(path+".shared_prompts.share", *sp.Share)
		}
	}
	c.counts(path+".completion_tokens", p.CompletionTokens, 1)
	if p.MaxTokens < 1 {
		c.add(path+".max_tokens", "must be ≥ 1, got %d", p.MaxTokens)
	}
	if p.Model == "" {
		c.add(path+".model", "required (here or as the scenario's model)")
		return
	}
	served := false
	for _, u := range cfg.Upstreams {
		if config.MatchAny(u.Models, p.Model) {
			served = true
			if _, ok := needed[u.Name]; !ok {
				needed[u.Name] = path
			}
		}
	}
	if !served {
		c.add(path+".model", "no config upstream serves model %q", p.Model)
	}
}

func (u *Provider) check(c *checker, path string, limit time.Duration) {
	c.durations(path+".latency", u.Latency)
	c.durations(path+".ttft", u.TTFT)
	if math.IsNaN(u.TokensPerSecond) || u.TokensPerSecond <= 0 {
		c.add(path+".tokens_per_second", "must be > 0, got %v", u.TokensPerSecond)
	}
	if u.RPM < 0 {
		c.add(path+".rpm", "must be ≥ 0, got %d", u.RPM)
	}
	if u.TPM < 0 {
		c.add(path+".tpm", "must be ≥ 0, got %d", u.TPM)
	}
	if !slices.Contains([]string{HeadersOpenAI, HeadersAnthropic, HeadersNone}, u.Headers) {
		c.add(path+".headers", "must be one of openai, anthropic, none; got %q", u.Headers)
	}
	c.share(path+".error_rate", u.ErrorRate)
	c.positive(path+".probe_rtt", u.ProbeRTT)
	for i, w := range u.Outages {
		c.window(fmt.Sprintf("%s.outages[%d]", path, i), w.Start, w.End, limit)
	}
	for i, b := range u.Brownouts {
		bp := fmt.Sprintf("%s.brownouts[%d]", path, i)
		c.window(bp, b.Start, b.End, limit)
		c.share(bp+".error_rate", b.ErrorRate)
		if math.IsNaN(b.LatencyFactor) || b.LatencyFactor < 1 {
			c.add(bp+".latency_factor", "must be ≥ 1, got %v", b.LatencyFactor)
		}
	}
	for i, w := range u.Hangs {
		c.window(fmt.Sprintf("%s.hangs[%d]", path, i), w.Start, w.End, limit)
	}
	c.share(path+".slow_starts.share", u.SlowStarts.Share)
	if u.SlowStarts.Share > 0 {
		c.positive(path+".slow_starts.ttft", u.SlowStarts.TTFT)
	}
}

// sortedNames returns m's keys in order.
func sortedNames[V any](m map[string]V) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
