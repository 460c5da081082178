package sim

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"switchyard/internal/codec"
)

// TestCacheAffinity counts hand-made turn sequences of one session through
// the recorder: only successful turns count, each against the session's
// previous successful one.
func TestCacheAffinity(t *testing.T) {
	type turn struct {
		upstream   string // "" : the turn failed (503)
		start, end time.Duration
	}
	s := time.Second
	tests := []struct {
		name        string
		turns       []turn
		count, warm int64
		rate        float64
	}{
		{"a first turn counts for nothing", []turn{{"a", 0, 2 * s}}, 0, 0, 0},
		{"same upstream", []turn{{"a", 0, 2 * s}, {"a", 20 * s, 22 * s}, {"a", 50 * s, 53 * s}}, 2, 2, 1},
		{"different upstream", []turn{{"a", 0, 2 * s}, {"b", 20 * s, 22 * s}, {"b", 40 * s, 42 * s}}, 2, 1, 0.5},
		{"back home after a move is cold", []turn{{"a", 0, 2 * s}, {"b", 20 * s, 22 * s}, {"a", 40 * s, 42 * s}}, 2, 0, 0},
		{"gap of exactly 5 minutes", []turn{{"a", 0, 2 * s}, {"a", 2*s + cacheLifetime, 3*s + cacheLifetime}}, 1, 1, 1},
		{"gap over 5 minutes", []turn{{"a", 0, 2 * s}, {"a", 2*s + cacheLifetime + 1, 3*s + cacheLifetime}}, 1, 0, 0},
		{"a failed turn is skipped", []turn{{"a", 0, 2 * s}, {"", 20 * s, 21 * s}, {"a", 40 * s, 42 * s}}, 1, 1, 1},
		{"the gap runs from the last successful turn", []turn{{"a", 0, 2 * s}, {"", 4 * time.Minute, 4*time.Minute + s}, {"a", 2*s + cacheLifetime + s, 6 * time.Minute}}, 1, 0, 0},
		{"failed first turn", []turn{{"", 0, 2 * s}, {"a", 20 * s, 22 * s}, {"b", 40 * s, 42 * s}, {"b", 60 * s, 62 * s}}, 2, 1, 0.5},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			rec := newRecorder(&Scenario{Duration: time.Hour, Bucket: time.Minute}, make([]*upstreamSim, 2))
			sess := &session{id: "s"}
			for _, tu := range tc.turns {
				q := &request{sess: sess, start: tu.start}
				q.log.Attempts, q.log.Upstream, q.log.Status = 1, tu.upstream, 200
				label := clientOK
				if tu.upstream == "" {
					q.log.Status, q.log.ErrorClass, label = 503, "no_upstream_available", "503 no_upstream_available"
				}
				rec.request(q, tu.end, label, 0)
			}
			got := rec.cacheAffinity(0, time.Hour)
			want := CacheAffinity{Turns: tc.count, Warm: tc.warm, Rate: tc.rate}
			if got != want {
				t.Errorf("got %+v, want %+v", got, want)
			}
		})
	}
}

// TestCacheAffinityWindow splits the turns by the bucket they started in.
func TestCacheAffinityWindow(t *testing.T) {
	rec := newRecorder(&Scenario{Duration: time.Hour, Bucket: time.Minute}, make([]*upstreamSim, 1))
	sess := &session{id: "s"}
	for i, up := range []string{"a", "a", "b", "b", "a"} { // one turn a minute
		q := &request{sess: sess, start: time.Duration(i) * time.Minute}
		q.log.Attempts, q.log.Upstream, q.log.Status = 1, up, 200
		rec.request(q, q.start+time.Second, clientOK, 0)
	}
	tests := []struct {
		from, to time.Duration
		want     CacheAffinity
	}{
		{0, time.Hour, CacheAffinity{Turns: 4, Warm: 2, Rate: 0.5}},
		{0, 2 * time.Minute, CacheAffinity{Turns: 1, Warm: 1, Rate: 1}},
		{2 * time.Minute, 5 * time.Minute, CacheAffinity{Turns: 3, Warm: 1, Rate: 0.333333}},
		{5 * time.Minute, time.Hour, CacheAffinity{}},
	}
	for _, tc := range tests {
		t.Run(fmt.Sprintf("%s-%s", tc.from, tc.to), func(t *testing.T) {
			if got := rec.cacheAffinity(tc.from, tc.to); got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}

// TestChatSessionsCacheAffinity runs issue 17's must-show scenario, and
// chat-sessions for reference: the rate is reported, and the outage of
// anthropic-b costs warm turns. It logs the rate before, during and after
// the outage, docs/simulator.md's table (go test -run CacheAffinity -v).
// TestRateLimitStormGolden holds a scenario without sessions to no
// cache-affinity output.
func TestChatSessionsCacheAffinity(t *testing.T) {
	for _, name := range []string{"chat-sessions-outage", "chat-sessions"} {
		t.Run(name, func(t *testing.T) {
			rp := simulate(t, examples+name+".config.yaml", examples+name+".yaml", 4)
			c := rp.Summary.Overall.CacheAffinity
			if c == nil || c.Turns < 10000 || c.Rate <= 0 || c.Rate > 1 {
				t.Fatalf("cache affinity %+v, want one over more than 10,000 turns", c)
			}
			md := files(t, rp)[FileSummaryMD]
			if row := fmt.Sprintf("| %s (%d of %d) |", pct(c.Rate), c.Warm, c.Turns); !bytes.Contains(md, []byte(row)) {
				t.Errorf("summary.md has no row ending %q", row)
			}
			out := rp.sc.Upstreams["anthropic-b"].Outages
			if len(out) != 1 {
				t.Fatalf("anthropic-b outages %v, want one", out)
			}
			before := rp.rec.cacheAffinity(0, out[0].Start)
			during := rp.rec.cacheAffinity(out[0].Start, out[0].End)
			after := rp.rec.cacheAffinity(out[0].End, rp.sc.Duration)
			text := func(c CacheAffinity) string { return fmt.Sprintf("%s (%d of %d)", pct(c.Rate), c.Warm, c.Turns) }
			t.Logf("cache-affinity rate: overall %s; before the outage %s, during (%s–%s) %s, after %s",
				text(*c), text(before), out[0].Start, out[0].End, text(during), text(after))
			if during.Rate >= before.Rate {
				t.Errorf("rate during the outage %v, before %v: a session whose upstream is down cannot keep its cache", during.Rate, before.Rate)
			}
		})
	}
}

// TestPromptCache walks one account's prompt cache through exact
// sequences: a prompt seen within 5 minutes is read from the cache, sooner;
// otherwise it is written, reported as such by Anthropic's protocol only.
func TestPromptCache(t *testing.T) {
	type look struct {
		at     time.Duration
		prompt int
	}
	s, m := time.Second, time.Minute
	tests := []struct {
		name       string
		fam        codec.Family
		looks      []look
		read, wrte []int64 // per look: cache-read and cache-write tokens
		hits       int64
	}{
		{"first sight writes, then reads", codec.FamilyAnthropic, []look{{0, 1}, {10 * s, 1}, {4 * m, 1}},
			[]int64{0, 1000, 1000}, []int64{1000, 0, 0}, 2},
		{"OpenAI reports no writes", codec.FamilyOpenAI, []look{{0, 1}, {10 * s, 1}},
			[]int64{0, 1000}, []int64{0, 0}, 1},
		{"exactly 5 minutes is a hit", codec.FamilyOpenAI, []look{{0, 1}, {cacheLifetime, 1}},
			[]int64{0, 1000}, []int64{0, 0}, 1},
		{"over 5 minutes is a miss", codec.FamilyBedrock, []look{{0, 1}, {cacheLifetime + 1, 1}},
			[]int64{0, 0}, []int64{1000, 1000}, 0},
		{"each use renews it", codec.FamilyOpenAI, []look{{0, 1}, {4 * m, 1}, {8 * m, 1}, {12 * m, 1}},
			[]int64{0, 1000, 1000, 1000}, []int64{0, 0, 0, 0}, 3},
		{"prompts are cached apart", codec.FamilyGemini, []look{{0, 1}, {s, 2}, {2 * s, 1}, {3 * s, 3}},
			[]int64{0, 0, 1000, 0}, []int64{0, 0, 0, 0}, 1},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := testProvider(Provider{})
			for i, l := range tc.looks {
				a := answer{kind: answerOK, in: 2000, out: 10, first: 800 * time.Millisecond, total: 2 * s}
				p.promptCache(&a, l.at, cacheKey{0, l.prompt}, 1000, tc.fam)
				if a.cacheRead != tc.read[i] || a.cacheWrite != tc.wrte[i] {
					t.Errorf("look %d: read %d write %d, want %d %d", i, a.cacheRead, a.cacheWrite, tc.read[i], tc.wrte[i])
				}
				// A hit of half the prompt saves 0.5 × 800 ms × 1000/2000.
				wantFirst, wantTotal := 800*time.Millisecond, 2*s
				if tc.read[i] > 0 {
					wantFirst, wantTotal = 600*time.Millisecond, 2*s-200*time.Millisecond
				}
				if a.first != wantFirst || a.total != wantTotal {
					t.Errorf("look %d: first %s total %s, want %s %s", i, a.first, a.total, wantFirst, wantTotal)
				}
			}
			if p.hits != tc.hits || p.lookups != int64(len(tc.looks)) {
				t.Errorf("hits %d of %d, want %d of %d", p.hits, p.lookups, tc.hits, len(tc.looks))
			}
		})
	}
}

// TestSharedPromptCost runs examples/scenarios/shared-prompt-cost and
// shared-prompt-lowest-cost (docs/simulator.md#examples): prefix affinity
// raises the prompt-cache hit rate and cuts the cost per request, and
// lowest-cost sends everything to the discounted account.
func TestSharedPromptCost(t *testing.T) {
	run := func(name string) *Report {
		return simulate(t, examples+name+".config.yaml", examples+name+".yaml", 7)
	}
	rp := run("shared-prompt-cost")
	c := rp.Summary.Comparison
	with, without := *c.With.CacheHitRate, *c.Without.CacheHitRate
	t.Logf("prefix affinity: hit rate %.3f without, %.3f with; $%.4f → $%.4f per 1,000 requests",
		without, with, c.Without.CostPer1000, c.With.CostPer1000)
	if with < 0.85 || without > 0.65 || c.With.CostPer1000 >= 0.8*c.Without.CostPer1000 {
		t.Errorf("hit rate %.3f with prefix affinity, %.3f without; cost per 1,000 %.4f vs %.4f", with, without, c.With.CostPer1000, c.Without.CostPer1000)
	}
	if o := rp.Summary.Overall; o.Succeeded != o.Requests || o.PromptCache.Lookups != o.Succeeded {
		t.Errorf("succeeded %d of %d, %d lookups", o.Succeeded, o.Requests, o.PromptCache.Lookups)
	}

	rp = run("shared-prompt-lowest-cost")
	c = rp.Summary.Comparison
	t.Logf("lowest-cost: $%.4f per 1,000 requests, weighted random $%.4f", c.With.CostPer1000, c.Without.CostPer1000)
	for _, u := range rp.Summary.Upstreams {
		if want := u.Name == "anthropic-c"; (u.Requests > 0) != want {
			t.Errorf("%s served %d requests; only the discounted anthropic-c should", u.Name, u.Requests)
		}
	}
	if c.With.CostPer1000 >= 0.9*c.Without.CostPer1000 {
		t.Errorf("lowest-cost costs %.4f per 1,000, weighted random %.4f", c.With.CostPer1000, c.Without.CostPer1000)
	}
}

// TestNoisyNeighbour runs examples/scenarios/noisy-neighbour: with fair
// queueing the steady key is served as if the noisy one were not there;
// with FIFO across tenants it waits behind the flood.
func TestNoisyNeighbour(t *testing.T) {
	rp := simulate(t, examples+"noisy-neighbour.config.yaml", examples+"noisy-neighbour.yaml", 11)
	c := rp.Summary.Comparison
	fair, fifo := byKey(c.With.Keys), byKey(c.Without.Keys)
	for _, name := range []string{"steady", "noisy", "batch-jobs"} {
		f, o := fair[name], fifo[name]
		t.Logf("%-10s fair: %5.1f%% served, wait p50/p99 %.0f/%.0f ms; fifo: %5.1f%%, %.0f/%.0f ms", name,
			100*f.SuccessRate, f.QueueWaitMs.P50, f.QueueWaitMs.P99, 100*o.SuccessRate, o.QueueWaitMs.P50, o.QueueWaitMs.P99)
	}
	// The steady key waits at most for the flood's next request in line,
	// which keeps its share (its timed-out requests are refunded,
	// docs/routing.md#tenants-classes-and-fair-queueing).
	if s := fair["steady"]; s.SuccessRate < 0.99 || s.QueueWaitMs.P50 > 500 || s.QueueWaitMs.P99 > 6000 {
		t.Errorf("fair queueing: steady key %+v, want ≥ 99%% served, p50 wait ≤ 0.5 s, p99 ≤ 6 s", s)
	}
	if s := fifo["steady"]; s.SuccessRate > 0.9 || s.QueueWaitMs.P99 < 10000 {
		t.Errorf("FIFO: steady key %+v, want it to wait behind the flood (< 90%% served, p99 ≥ 10 s)", s)
	}
}

// byKey indexes a run's per-key summaries by key name.
func byKey(ks []KeySummary) map[string]KeySummary {
	m := map[string]KeySummary{}
	for _, k := range ks {
		m[k.Key] = k
	}
	return m
}
