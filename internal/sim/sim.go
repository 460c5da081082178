package sim

import (
	"fmt"
	"hash/fnv"
	"math/rand/v2"
	"sort"
	"time"

	"switchyard/internal/affinity"
	"switchyard/internal/config"
	"switchyard/internal/health"
	"switchyard/internal/limits"
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
// and the simulator's share of the gateway state that blocks in serve (the
// FIFO of requests waiting for a slot, the prober's last RTT).
type upstreamSim struct {
	idx       int
	cfg       config.Upstream
	prov      *provider
	queue     []*request
	latencyMs float64       // last successful probe RTT; 0 = unknown
	probeRTT  time.Duration // the RTT of the probe in flight
}

// run is one simulation: the scenario, the engine, the gateway's real
// components on the engine's fake clock, and what is being recorded.
type run struct {
	sc   *Scenario
	cfg  *config.Config
	eng  *engine
	srv  *proxy.Server
	key  *config.Key
	ups  []*upstreamSim // by (priority, name)
	byUp map[string]*upstreamSim

	breakers *health.Breakers
	slots    *limits.Slots
	limiter  *limits.Limiter
	stats    *state.Memory
	spend    *limits.Spend
	keyRPM   *limits.KeyLimiter
	budget   *limits.RetryBudget
	sessions *affinity.Table

	phases   []*phaseGen
	probeRng *rand.Rand
	rec      *recorder
}

// Run simulates sc against cfg with seed and returns the report. Nothing
// runs concurrently and nothing sleeps: the whole run is one event loop.
func Run(cfg *config.Config, sc *Scenario, seed uint64) (*Report, error) {
	r, err := newRun(cfg, sc, seed)
	if err != nil {
		return nil, err
	}
	for i := range r.phases {
		r.eng.schedule(*sc.Traffic[i].Start, event{kind: evArrival, ref: i})
	}
	if cfg.Health.Interval > 0 {
		for _, u := range r.ups {
			r.eng.schedule(0, event{kind: evProbe, ref: u.idx})
		}
	}
	r.eng.run(r.handle)
	return r.report(seed), nil
}

func newRun(cfg *config.Config, sc *Scenario, seed uint64) (*run, error) {
	eng := newEngine(epoch)
	clk := eng.clk
	r := &run{
		sc: sc, cfg: cfg, eng: eng, byUp: map[string]*upstreamSim{},
		slots: limits.NewSlotsWithClock(clk), limiter: limits.NewLimiter(clk),
		stats: state.NewMemory(state.DefaultWindow), spend: limits.NewSpend(clk),
		keyRPM: limits.NewKeyLimiter(clk), budget: limits.NewRetryBudget(clk, cfg.Defaults.RetryBudget),
		sessions: affinity.NewTable(cfg.Affinity.MaxEntries, clk),
		probeRng: rand.New(rand.NewPCG(seed, streamProbe)),
	}
	for i := range cfg.Keys {
		if cfg.Keys[i].Name == sc.Key {
			r.key = &cfg.Keys[i]
		}
	}
	var names []string
	for _, u := range cfg.Upstreams {
		if m, ok := sc.Upstreams[u.Name]; ok {
			h := fnv.New64a()
			h.Write([]byte(u.Name))
			rng := rand.New(rand.NewPCG(seed, streamProvider^h.Sum64()))
			r.ups = append(r.ups, &upstreamSim{cfg: u, prov: newProvider(m, rng, epoch)})
			names = append(names, u.Name)
		}
		r.limiter.Configure(u.Name, u.RateLimit.RPM, u.RateLimit.TPM)
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
	r.breakers = health.NewBreakers(cfg.Circuit, clk, health.WithOnTransition(func(name string, _, to health.State, _ string) {
		if u := r.byUp[name]; u != nil {
			r.rec.breaker(u.idx, eng.now, to)
		}
	}))
	cat, err := proxy.NewCatalog(proxy.CatalogInput{
		Upstreams: cfg.Upstreams, Keys: cfg.Keys, Routes: cfg.Routes, Defaults: cfg.Defaults,
		Affinity: cfg.Affinity, Seed: seed, Now: clk.Now, Clock: clk,
	})
	if err != nil {
		return nil, fmt.Errorf("building the routing table: %w", err)
	}
	r.srv = proxy.New(proxy.Options{
		Clock: clk, State: state.NewLocal(state.LocalOptions{
			Clock: clk, Breakers: r.breakers, Slots: r.slots, Stats: r.stats, Limiter: r.limiter, Keys: r.keyRPM,
		}),
		Spend: r.spend, Affinity: affinity.WithContext(r.sessions),
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

// handle dispatches one event.
func (r *run) handle(ev event) {
	switch ev.kind {
	case evArrival:
		r.arrive(ev.ref)
	case evTurn:
		r.begin(ev.req)
	case evReplan:
		r.tryModel(ev.req)
	case evAttempt:
		if ev.gen == ev.req.gen {
			r.attemptDone(ev.req)
		}
	case evQueueWait:
		if ev.gen == ev.req.gen {
			r.queueExpired(ev.req)
		}
	case evProbe:
		r.probe(r.ups[ev.ref])
	case evProbeDone:
		r.probeDone(r.ups[ev.ref], ev.gen == 1)
	}
}
