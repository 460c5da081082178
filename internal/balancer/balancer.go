package balancer

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"time"
)

// Options configures a Balancer.
type Options struct {
	// Strategy names the registered strategy that orders each tier; ""
	// means StrategyWeightedRandom. See StrategyNames.
	Strategy string
	// Rand is the balancer's source of randomness; nil means a PCG seeded
	// from the runtime's random source. The Balancer uses it only under its
	// mutex, so it must not be shared with anything else.
	Rand *rand.Rand
	// Now tells the time: Decision.At and ElapsedNs, and the planning time
	// strategies score against (Tier.Now, e.g. adaptive's failure cooldown).
	// Required. Pass the gateway Clock's Now so tests and the simulator
	// control it.
	Now func() time.Time
}

// Balancer plans attempt orders with one strategy. It is safe for concurrent
// use; Plan calls are serialised by a mutex held only for the computation.
type Balancer struct {
	now             func() time.Time
	strategy        Strategy
	keepRateLimited bool           // the strategy scores rate-limited candidates itself
	sorts           sortStrategies // what Preferences.Sort selects instead of strategy

	mu      sync.Mutex // guards the strategy's state (and its Rand) and scratch
	scratch scratch
}

// scratch holds buffers reused by every Plan call so that planning allocates
// only what the returned Plan and Decision keep.
type scratch struct {
	prios  []int        // distinct priorities, ascending
	starts []int        // starts[t] = first index in byTier of tier t; len = tiers+1
	next   []int        // placement cursor per tier
	tierOf []int        // tier index per input candidate
	lut    []int        // per priority in range: count, then tier index
	byTier []int        // input indices grouped by tier, input order within a tier
	orig   []*Candidate // the tier's candidates as handed to the strategy
	recIdx []int        // decision record index per element of orig
	scores []Scores     // Tier.Scores
	tier   Tier         // the Tier handed to Strategy.Order (kept here so it does not escape per call)
	st     Strategy     // the strategy ordering this Plan call's tiers
}

// New returns a Balancer using opts.Strategy. It fails with
// ErrUnknownStrategy naming the strategy if none is registered under that
// name, and with ErrNoClock if opts.Now is nil.
func New(opts Options) (*Balancer, error) {
	name := opts.Strategy
	if name == "" {
		name = StrategyWeightedRandom
	}
	newStrategy, ok := strategies[name]
	if !ok {
		return nil, fmt.Errorf("creating balancer: %w %q (known: %s)",
			ErrUnknownStrategy, name, strings.Join(StrategyNames(), ", "))
	}
	if opts.Now == nil {
		return nil, fmt.Errorf("creating balancer: %w", ErrNoClock)
	}
	rng := opts.Rand
	if rng == nil {
		rng = rand.New(rand.NewPCG(rand.Uint64(), rand.Uint64()))
	}
	env := strategyEnv{rand: rng}
	st := newStrategy(env)
	_, keep := st.(rateLimitScorer)
	return &Balancer{now: opts.Now, strategy: st, keepRateLimited: keep, sorts: newSortStrategies(env)}, nil
}

// Strategy returns the name of the balancer's strategy.
func (b *Balancer) Strategy() string { return b.strategy.Name() }

// Plan orders cands for req (docs/reference.md#balancing): it groups them into
// tiers by Priority ascending; in each tier drops, recording the first filter
// that matches, those req.Prefs leave out, the inactive, breaker-open, spend-exceeded, excluded,
// rate-limited (unless the strategy keeps those as fallbacks) and
// concurrency-full candidates (full ones with a queue become waitable); lets
// the strategy order each tier's survivors; and concatenates the tiers until
// the order holds K names, so a later tier only fills the slots an earlier one
// left. Kept rate-limited fallbacks come after the healthy survivors of every
// tier. req.Prefs may replace the strategy (Sort), put named survivors ahead
// of every tier (Order) and shorten the plan (NoFallbacks). Waitable candidates are ordered the same way, tier by tier, and listed
// after. An empty Order means nothing is available.
//
// Plan makes two allocations whatever the strategy: one for all the
// Decision's records and one shared by Order, Waitable and their Decision
// copies. It formats no text. It does not retain cands and is safe for
// concurrent use.
func (b *Balancer) Plan(req Request, cands []Candidate) Plan {
	start := b.now()
	k := max(req.K, 1)

	b.mu.Lock()
	p := b.planLocked(&req, k, cands, start)
	b.mu.Unlock()

	p.Decision.RequestID = req.RequestID
	p.Decision.Model = req.Model
	p.Decision.Key = req.Key
	p.Decision.Session = req.Session
	p.Decision.Stream = req.Stream
	p.Decision.At = start
	p.Decision.ElapsedNs = b.now().Sub(start).Nanoseconds()
	return p
}

func (b *Balancer) planLocked(req *Request, k int, cands []Candidate, now time.Time) Plan {
	s := &b.scratch
	s.groupLocked(cands)
	nt := len(s.prios)
	s.st = b.strategy
	keep := b.keepRateLimited
	if req.Prefs != nil {
		if st := b.sorts.get(req.Prefs.Sort); st != nil {
			s.st, keep = st, false
		}
	}

	// Filter every candidate into its decision record, in tier order.
	records := make([]CandidateRecord, len(cands))
	survivors, waitable := 0, 0
	for j, i := range s.byTier {
		c, r := &cands[i], &records[j]
		r.Name, r.Weight, r.Priority = c.Name, c.Weight, c.Priority
		r.InFlight, r.MaxConcurrency, r.Translate = c.InFlight, c.MaxConcurrency, c.Translate
		filter(c, req.Exclude, req.Prefs, keep, r)
		switch r.Filter {
		case "":
			survivors++
		case FilterWaitable:
			waitable++
		}
	}

	var aff AffinityRecord
	first, second := pinLocked(req, records, &aff)
	pinned := [2]int{first, second}
	s.tier.Stream, s.tier.Now = req.Stream, now
	s.tier.InputTokens, s.tier.OutputTokens = float64(max(req.InputTokens, 0)), ExpectedOutputTokens(req)
	no := min(k, survivors)
	if req.Prefs != nil && req.Prefs.NoFallbacks && len(req.Prefs.Order) == 0 {
		// Only the first candidate: the first of the order, else the first
		// waitable one.
		no = min(no, 1)
		waitable = min(waitable, 1-no)
	}
	names := make([]string, 0, 2*(no+waitable))
	if req.Prefs != nil {
		names = preferLocked(req.Prefs, cands, s.byTier, records, no, names)
	}
	for _, p := range pinned {
		if p >= 0 && len(names) < no && records[p].Filter == "" {
			// The session's upstreams go first; the strategy orders the
			// rest, and its state advances only for a real pick of its own.
			names = append(names, records[p].Name)
			records[p].Rank, records[p].Filter = len(names), filterPinned
		}
	}
	// Healthy survivors of every tier first; then the rate-limited ones a
	// strategy kept as fallbacks, so a cooling upstream of tier 0 never goes
	// before a healthy one of tier 1.
	for _, fallback := range [2]bool{false, true} {
		for t := range nt {
			if len(names) == no {
				break
			}
			names = b.orderTierLocked(cands, records, t, "", fallback, no-len(names), !req.DryRun && len(names) == 0, names)
		}
	}
	for _, p := range pinned {
		if p >= 0 {
			records[p].Filter = ""
		}
	}
	if req.Prefs != nil {
		for j := range records {
			if records[j].Filter == filterPrefOrder {
				records[j].Filter = ""
			}
		}
	}
	order := names[:len(names):len(names)]
	for t := range nt {
		if len(names)-len(order) == waitable {
			break
		}
		names = b.orderTierLocked(cands, records, t, FilterWaitable, false, waitable-(len(names)-len(order)), false, names)
	}
	wait := names[len(order):len(names):len(names)]
	names = append(names, order...)
	names = append(names, wait...)
	dOrder := names[len(order)+len(wait) : 2*len(order)+len(wait) : 2*len(order)+len(wait)]
	dWait := names[2*len(order)+len(wait):]

	d := Decision{Candidates: records, Order: dOrder, Waitable: dWait, Affinity: aff, Strategy: s.st.Name()}
	if len(order) > 0 {
		d.Chosen = order[0]
	}
	return Plan{Order: order, Waitable: wait, Decision: d}
}

// filterPinned marks the pinned record while the tiers are ordered, so the
// strategy does not see it twice; it is cleared before Plan returns.
const filterPinned = "pinned"

// orderTierLocked hands the candidates of tier t whose record has filter f
// ("" for survivors, FilterWaitable for waitable ones) and whose Fallback
// mark equals fallback to the strategy, copies the scores it recorded into
// records, and appends at most k of them to names. For survivors it also
// sets each record's Rank. primary is Tier.Primary.
func (b *Balancer) orderTierLocked(cands []Candidate, records []CandidateRecord, t int, f string, fallback bool, k int, primary bool, names []string) []string {
	s := &b.scratch
	lo, hi := s.starts[t], s.starts[t+1]
	s.orig, s.recIdx = s.orig[:0], s.recIdx[:0]
	for j := lo; j < hi; j++ {
		if records[j].Filter != f || records[j].Fallback != fallback {
			continue
		}
		s.orig = append(s.orig, &cands[s.byTier[j]])
		s.recIdx = append(s.recIdx, j)
	}
	n := len(s.orig)
	if n == 0 || k <= 0 {
		return names
	}
	s.scores = resize(s.scores, n)
	clear(s.scores)
	tier := &s.tier
	tier.Candidates = append(tier.Candidates[:0], s.orig...)
	tier.Scores = s.scores
	tier.Priority, tier.Primary, tier.Waitable = s.prios[t], primary, f == FilterWaitable
	got := s.st.Order(tier, k)

	for i, j := range s.recIdx {
		records[j].Scores = s.scores[i]
	}
	taken := 0
	for _, c := range got {
		if taken == k {
			break
		}
		i := slices.Index(s.orig, c)
		if i < 0 || s.orig[i] == nil {
			continue // not from this tier, or returned twice
		}
		s.orig[i] = nil
		if f == "" {
			records[s.recIdx[i]].Rank = len(names) + 1
		}
		names = append(names, c.Name)
		taken++
	}
	clear(tier.Candidates)
	clear(s.orig)
	return names
}

// groupLocked fills prios, starts and byTier: a stable sort of cands by
// Priority. Priorities span 0–100 in practice, so it is a counting sort over
// the priority range, O(n + range); a wider range falls back to binary search
// over the distinct priorities, O(n log tiers).
func (s *scratch) groupLocked(cands []Candidate) {
	s.prios, s.starts = s.prios[:0], s.starts[:0]
	if len(cands) == 0 {
		s.starts = append(s.starts, 0)
		s.byTier = s.byTier[:0]
		return
	}
	lo, hi := cands[0].Priority, cands[0].Priority
	for i := range cands {
		lo, hi = min(lo, cands[i].Priority), max(hi, cands[i].Priority)
	}
	s.tierOf = resize(s.tierOf, len(cands))
	if span := hi - lo; span >= 0 && span < maxCountingSpan {
		// lut counts candidates per priority, then maps priority to tier.
		s.lut = resize(s.lut, span+1)
		clear(s.lut)
		for i := range cands {
			s.lut[cands[i].Priority-lo]++
		}
		s.starts = append(s.starts, 0)
		for v, n := range s.lut {
			if n > 0 {
				s.prios = append(s.prios, lo+v)
				s.starts = append(s.starts, s.starts[len(s.starts)-1]+n)
				s.lut[v] = len(s.prios) - 1
			}
		}
		for i := range cands {
			s.tierOf[i] = s.lut[cands[i].Priority-lo]
		}
	} else {
		for i := range cands {
			if j, found := slices.BinarySearch(s.prios, cands[i].Priority); !found {
				s.prios = slices.Insert(s.prios, j, cands[i].Priority)
			}
		}
		s.starts = resize(s.starts, len(s.prios)+1)
		clear(s.starts)
		for i := range cands {
			t, _ := slices.BinarySearch(s.prios, cands[i].Priority)
			s.tierOf[i] = t
			s.starts[t+1]++
		}
		for t := range len(s.prios) {
			s.starts[t+1] += s.starts[t]
		}
	}
	s.next = append(s.next[:0], s.starts[:len(s.prios)]...)
	s.byTier = resize(s.byTier, len(cands))
	for i, t := range s.tierOf {
		s.byTier[s.next[t]] = i
		s.next[t]++
	}
}

// maxCountingSpan bounds the priority range groupLocked counting-sorts.
const maxCountingSpan = 1024

// resize returns buf with length n, reallocating only if its capacity is
// too small. The contents are unspecified.
func resize[T any](buf []T, n int) []T {
	if cap(buf) < n {
		return make([]T, n)
	}
	return buf[:n]
}

// preferLocked appends the survivors Preferences.Order names, in its order
// and then in tier order for a provider name, ahead of every tier, up to no
// names in all; it marks their records filterPrefOrder so that the
// strategy does not see them again (Plan clears the mark).
func preferLocked(p *Preferences, cands []Candidate, byTier []int, records []CandidateRecord, no int, names []string) []string {
	for _, name := range p.Order {
		for j := range records {
			r := &records[j]
			if len(names) == no {
				return names
			}
			if r.Filter != "" || r.Fallback || !named(name, &cands[byTier[j]]) {
				continue
			}
			names = append(names, r.Name)
			r.Rank, r.Filter = len(names), filterPrefOrder
		}
	}
	return names
}
