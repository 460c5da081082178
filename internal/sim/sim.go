package sim

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sort"
	"strconv"
	"time"

	"switchyard/internal/affinity"
	"switchyard/internal/codec"
	"switchyard/internal/config"
	"switchyard/internal/health"
	"switchyard/internal/limits"
	"switchyard/internal/outcome"
	"switchyard/internal/pricing"
	"switchyard/internal/proxy"
	"switchyard/internal/state"
)

// epoch is the simulated wall time of second 0: a Monday 00:00 UTC, so that
// day and month spend periods start with the run.
var epoch = time.Date(2026, time.January, 5, 0, 0, 0, 0, time.UTC)

// Random streams, the second word of each PCG seed: one per concern.
const (
	streamPhase    = 1 << 32 // + phase index: arrivals and request contents
	streamProvider = 2 << 32 // ^ FNV-1a of the upstream name
	streamProbe    = 3 << 32 // probe jitter
)

// upstreamSim is one upstream of the run: its config, its provider model
// and the simulated prober's last RTT.
type upstreamSim struct {
	idx       int
	cfg       config.Upstream
	prices    *pricing.Prices // its price rules over the configuration's catalogue
	prov      *provider
	latencyMs float64       // last successful probe RTT; 0 = unknown
	probeRTT  time.Duration // the RTT of the probe in flight
}

// cost is what the gateway bills for o, an attempt at the client model
// model: its usage at the upstream's price for the model (0 unpriced).
func (u *upstreamSim) cost(o *outcome.Outcome, model string) float64 {
	p, src := u.prices.Lookup(model)
	if !src.Priced() {
		return 0
	}
	return pricing.Cost(pricing.Usage{Input: o.InputTokens, Output: o.OutputTokens, CacheRead: o.CacheReadTokens, CacheWrite: o.CacheWriteTokens}, p)
}

// modelFamily says which client protocol a model's requests use: the
// OpenAI one unless only upstreams that speak Anthropic's for it serve it
// (Anthropic, Vertex for Claude).
type modelFamily struct{ anthropic bool }

// run is one simulation: the scenario, the scheduler, the gateway's real
// request path on the scheduler's virtual clock, and what is being recorded.
type run struct {
	sc     *Scenario
	cfg    *config.Config
	sched  *sched
	srv    *proxy.Server
	key    *config.Key
	auth   []string       // the Authorization header the simulated clients send
	ups    []*upstreamSim // by (priority, name)
	byUp   map[string]*upstreamSim
	family map[string]modelFamily
	// catalogue is the configuration's pricing.catalogue (nil: none).
	catalogue *pricing.Catalogue

	breakers *health.Breakers
	reqs     uint64

	phases   []*phaseGen
	probeRng *rand.Rand
	rec      *recorder
}

// Run simulates sc against cfg with seed and returns the report. Every
// request goes through the gateway's real handler and attempt loop, one at
// a time, in virtual time (sched): nothing sleeps and no socket is opened.
// With sc.Compare it runs sc again with that feature off and adds the
// comparison to the report.
func Run(cfg *config.Config, sc *Scenario, seed uint64) (*Report, error) {
	rp, err := runOnce(cfg, sc, seed)
	c, ok := comparisons[sc.Compare]
	if err != nil || !ok {
		return rp, err
	}
	off, err := runOnce(c.without(cfg), sc, seed)
	if err != nil {
		return nil, err
	}
	rp.compare(sc.Compare, off)
	return rp, nil
}

// runOnce is one run of sc against cfg.
func runOnce(cfg *config.Config, sc *Scenario, seed uint64) (*Report, error) {
	r, err := newRun(cfg, sc, seed)
	if err != nil {
		return nil, err
	}
	r.simulate()
	return r.report(seed), nil
}

// simulate starts the traffic and the probes and runs until nothing is left.
func (r *run) simulate() {
	for i := range r.phases {
		r.sched.AfterFunc(*r.sc.Traffic[i].Start, func() { r.arrive(i) })
	}
	if r.cfg.Health.Interval > 0 {
		for _, u := range r.ups {
			r.sched.AfterFunc(0, func() { r.probe(u) })
		}
	}
	r.sched.run()
	r.sched.stop()
}

func newRun(cfg *config.Config, sc *Scenario, seed uint64) (*run, error) {
	sch := newSched(epoch)
	r := &run{
		sc: sc, cfg: cfg, sched: sch, byUp: map[string]*upstreamSim{}, family: map[string]modelFamily{},
		probeRng: rand.New(rand.NewPCG(seed, streamProbe)),
	}
	// A relative catalogue file is relative to the configuration's
	// directory: the caller has made it absolute (ResolveCatalogue).
	prices, err := pricing.LoadCatalogue(cfg.Pricing.Catalogue, "")
	if err != nil {
		return nil, fmt.Errorf("loading pricing.catalogue: %w", err)
	}
	r.catalogue = prices
	for _, u := range cfg.Upstreams {
		if m, ok := sc.Upstreams[u.Name]; ok {
			h := fnv.New64a()
			h.Write([]byte(u.Name))
			rng := rand.New(rand.NewPCG(seed, streamProvider^h.Sum64()))
			r.ups = append(r.ups, &upstreamSim{cfg: u, prices: pricing.For(&u, prices), prov: newProvider(m, rng, epoch)})
		}
	}
	sort.SliceStable(r.ups, func(i, j int) bool {
		a, b := r.ups[i].cfg, r.ups[j].cfg
		if a.Priority != b.Priority {
			return a.Priority < b.Priority
		}
		return a.Name < b.Name
	})
	for i, u := range r.ups {
		u.idx = i
		r.byUp[u.cfg.Name] = u
	}
	r.rec = newRecorder(sc, r.ups)
	r.breakers = health.NewBreakers(cfg.Circuit, sch, health.WithOnTransition(func(name string, _, to health.State, _ string) {
		if u := r.byUp[name]; u != nil {
			r.rec.breaker(u.idx, sch.now, to)
		}
	}))
	cat, err := r.catalog(seed)
	if err != nil {
		return nil, err
	}
	limiter := limits.NewLimiter(sch)
	for _, u := range cfg.Upstreams {
		limiter.Configure(u.Name, u.RateLimit.RPM, u.RateLimit.TPM)
	}
	sessions := affinity.NewTable(cfg.Affinity.MaxEntries, sch)
	r.srv = proxy.New(proxy.Options{
		Clock: sch, Transport: transport{r}, Go: r.goTask,
		State: state.NewLocal(state.LocalOptions{
			Clock: sch, Breakers: r.breakers, Slots: limits.NewSlotsWithClock(sch),
			Stats: recordingStats{Memory: state.NewMemory(state.DefaultWindow), r: r}, Limiter: limiter,
			Keys: limits.NewKeyLimiter(sch), Sessions: sessions,
			Pins: affinity.NewPinTable(affinity.DefaultMaxPins, cfg.Affinity.ResponseTTL, sch),
		}),
		Spend: limits.NewSpend(sch), Affinity: affinity.WithContext(sessions),
		Logs: logSink{r}, OnDecision: r.decision,
		Latency: func(name string) float64 {
			if u := r.byUp[name]; u != nil {
				return u.latencyMs
			}
			return 0
		},
	}, cat)
	for i := range sc.Traffic {
		r.phases = append(r.phases, newPhaseGen(&sc.Traffic[i], rand.New(rand.NewPCG(seed, streamPhase+uint64(i)))))
	}
	return r, nil
}

// catalog builds the gateway's routing table for the run: every modelled
// upstream points at the simulated transport, and the clients authenticate
// with the scenario's key (or an unrestricted one).
func (r *run) catalog(seed uint64) (*proxy.Catalog, error) {
	cfg := r.cfg
	ups := make([]config.Upstream, 0, len(cfg.Upstreams))
	for _, u := range cfg.Upstreams {
		if s := r.byUp[u.Name]; s != nil {
			u.BaseURL = simHost + strconv.Itoa(s.idx)
		}
		if err := simulatedCredentials(&u); err != nil {
			return nil, err
		}
		ups = append(ups, u)
		for _, m := range u.Models {
			name := m
			if to, ok := u.ModelMap[m]; ok {
				name = to
			}
			fam, _ := familyOf(u, name)
			f, seen := r.family[m]
			r.family[m] = modelFamily{anthropic: fam == codec.FamilyAnthropic && (!seen || f.anthropic)}
		}
	}
	var keys []config.Key
	secret := "sk-" + simKey
	for _, k := range cfg.Keys {
		if k.Name == r.sc.Key {
			k.Key, k.KeySHA256, secret = "sk-sim-"+k.Name, "", "sk-sim-"+k.Name
			kk := k
			r.key = &kk
			keys = append(keys, k)
		}
	}
	if r.key == nil {
		keys = append(keys, config.Key{Name: simKey, Key: secret})
	}
	r.auth = []string{"Bearer " + secret}
	cat, err := proxy.NewCatalog(proxy.CatalogInput{
		Upstreams: ups, Keys: keys, Routes: cfg.Routes, Defaults: cfg.Defaults,
		Affinity: cfg.Affinity, Seed: seed, Now: r.sched.Now, Clock: r.sched, Transport: transport{r}, Catalogue: r.catalogue,
	})
	if err != nil {
		return nil, fmt.Errorf("building the routing table: %w", err)
	}
	return cat, nil
}
