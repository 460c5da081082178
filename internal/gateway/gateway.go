// Package gateway wires Switchyard together from a Config: the store, the
// live state, the proxy and the HTTP server with graceful shutdown. The
// `serve` command and end-to-end tests both build their gateway here, so two
// gateways in one process never share anything.
package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"switchyard/internal/admin"
	"switchyard/internal/affinity"
	"switchyard/internal/balancer"
	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/health"
	"switchyard/internal/limits"
	"switchyard/internal/metrics"
	"switchyard/internal/pricing"
	"switchyard/internal/proxy"
	"switchyard/internal/state"
	"switchyard/internal/store"
	"switchyard/internal/store/postgres"
	"switchyard/internal/store/sqlite"
	"switchyard/internal/tracing"

	"go.opentelemetry.io/otel/trace"
)

// Options are a Gateway's injectable dependencies; zero values pick production defaults.
type Options struct {
	// Logger receives operational logs. Default: discard.
	Logger *slog.Logger
	// Clock drives every timer. Default: the wall clock.
	Clock clock.Clock
	// Transport sends upstream requests. Default: proxy.NewTransport().
	Transport http.RoundTripper
	// Seed seeds the balancers; 0 picks a random seed.
	Seed uint64
	// Store replaces the store named by the config (tests).
	Store store.Store
	// ReadHeaderTimeout bounds reading a request's headers: a client that
	// trickles them (slow-loris) is disconnected without an answer.
	// Default DefaultReadHeaderTimeout.
	ReadHeaderTimeout time.Duration
	// ReadTimeout bounds reading a whole request, headers and body: a
	// client that trickles its body, or sends a chunked body that never
	// ends, has its body read fail (the answer is an error and the
	// connection closes). It never limits the response, so long streams
	// are not cut. Default DefaultReadTimeout.
	ReadTimeout time.Duration
	// Version is the binary's version, the traces' service.version.
	Version string
	// ConfigDir is the directory a relative pricing.catalogue file is
	// read from: the configuration file's. Default: the working directory.
	ConfigDir string
}

// Bounds on reading a client's request (http.Server's ReadHeaderTimeout and
// ReadTimeout), on the client listener and on admin.listen.
const (
	// DefaultReadHeaderTimeout bounds reading the request line and headers.
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultReadTimeout bounds reading the request line, headers and body
	// together: 120 s lets a 10 MiB body (max_body_bytes' default) arrive
	// at about 0.7 Mbit/s. It does not limit the response: net/http clears
	// the read deadline once the body is read (HTTP/1) or bounds only the
	// stream's request body (HTTP/2), so streams of any length go on.
	DefaultReadTimeout = 120 * time.Second
)

// Gateway is one running Switchyard instance.
type Gateway struct {
	cfg      *config.Config
	log      *slog.Logger
	clock    clock.Clock
	seed     uint64
	store    store.Store
	logs     *store.LogWriter
	spend    *limits.Spend
	waiting  *limits.Waiting // requests waiting in upstream queues, by class and key
	sessions *affinity.Table
	affinity affinity.ContextStore // sessions, or the Redis table that writes through to it
	shared   *state.Redis          // the state shared with other instances; nil with state.driver: memory
	local    *state.Local          // this instance's live state (initState)
	state    state.Driver          // what the proxy, prober, admin API and metrics hold: local, or shared over it
	proxy    *proxy.Server
	tracer   *tracing.Provider // nil with tracing off
	ops      *opLog            // the operator's log: breakers, cooldowns, health, refused requests
	prober   *health.Prober
	metrics  *metrics.Metrics
	names    atomic.Pointer[catalogNames] // of the catalog in force, for metrics labels
	recent   *balancer.DecisionRing
	traffic  *admin.Traffic // recent attempts, failures and 429s per upstream, for the admin API
	// transport carries upstream requests and the adapters' own exchanges
	// (Vertex's token requests).
	transport http.RoundTripper
	// catalogue is pricing.catalogue, loaded once by New (nil: none).
	catalogue *pricing.Catalogue

	reloadMu sync.Mutex     // serialises Reload
	admin    *admin.Service // the admin API's domain; one per gateway, so that its changes serialise
	stop     context.CancelFunc
	bg       sync.WaitGroup // background loops (the request-log writer)

	// readHeaderTimeout and readTimeout are the http.Server read bounds (Options).
	readHeaderTimeout, readTimeout time.Duration
}

// New opens the store, upserts the file's upstreams, keys and routes into
// it, and builds the routing table from what the store then holds. When it
// fails it closes what it opened (the Redis client, the store the config
// names); a store passed in opts.Store stays open: it is the caller's.
func New(ctx context.Context, cfg *config.Config, opts Options) (*Gateway, error) {
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Seed == 0 {
		opts.Seed = rand.Uint64()
	}
	if opts.ReadHeaderTimeout <= 0 {
		opts.ReadHeaderTimeout = DefaultReadHeaderTimeout
	}
	if opts.ReadTimeout <= 0 {
		opts.ReadTimeout = DefaultReadTimeout
	}
	if opts.Transport == nil {
		opts.Transport = proxy.NewTransport()
	}
	catalogue, err := pricing.LoadCatalogue(cfg.Pricing.Catalogue, opts.ConfigDir)
	if err != nil {
		return nil, fmt.Errorf("loading pricing.catalogue: %w", err)
	}
	g := &Gateway{catalogue: catalogue,
		cfg: cfg, log: opts.Logger, clock: opts.Clock, seed: opts.Seed, store: opts.Store,
		readHeaderTimeout: opts.ReadHeaderTimeout, readTimeout: opts.ReadTimeout, transport: opts.Transport,
		spend:    limits.NewSpend(opts.Clock),
		sessions: affinity.NewTable(cfg.Affinity.MaxEntries, opts.Clock),
		recent:   balancer.NewDecisionRing(1000),
		ops:      newOpLog(opts.Logger, opts.Clock, cfg.Log.Access),
	}
	g.affinity = affinity.WithContext(g.sessions)
	if err := g.openShared(); err != nil {
		return nil, err
	}
	// fail gives back what New opened before it failed with err: the
	// tracer provider (its batch exporter's goroutine), the Redis client,
	// and the store unless the caller passed it in opts.Store.
	fail := func(err error) (*Gateway, error) {
		if g.tracer != nil {
			// Not ctx: a canceled context would skip the shutdown. It
			// has no span to export yet, so it returns at once.
			_ = g.tracer.Shutdown(context.WithoutCancel(ctx))
		}
		if g.shared != nil {
			_ = g.shared.Close()
		}
		if opts.Store == nil && g.store != nil {
			_ = g.store.Close()
		}
		return nil, err
	}
	g.initState()
	if g.store == nil {
		st, err := openStore(ctx, cfg.Store)
		if err != nil {
			return fail(err)
		}
		g.store = st
	}
	g.metrics = g.newMetrics()
	if g.shared != nil {
		g.metrics.Shared().Enable()
		g.affinity = g.shared.Affinity(g.sessions)
	}
	if err := g.seedStore(ctx, g.cfg); err != nil {
		return fail(err)
	}
	cat, err := g.buildCatalog(ctx)
	if err != nil {
		return fail(err)
	}
	if g.tracer, err = tracing.New(ctx, cfg.Tracing, tracing.Options{Version: opts.Version, Logger: opts.Logger, Clock: opts.Clock}); err != nil {
		return fail(err)
	}
	var tracer trace.Tracer
	if g.tracer != nil {
		tracer = g.tracer.Tracer()
		g.log.Info("tracing on", "collector", tracing.Redacted(cfg.Tracing.OTLPEndpoint), "sample_ratio", cfg.Tracing.SampleRatio)
	}
	totals, err := g.store.LoadSpend(ctx, g.spend.LoadSince())
	if err != nil {
		return fail(fmt.Errorf("loading spend: %w", err))
	}
	g.spend.Load(totals)
	g.spend.OnFlushError(func(err error) { g.log.Warn("spend not saved yet", "err", err) })
	bgCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	g.stop = stop
	sink := loggedSink{ops: g.ops}
	if cfg.Log.Requests {
		g.logs = store.NewLogWriter(g.store, store.LogWriterOptions{
			Clock:   opts.Clock,
			OnError: func(err error) { g.log.Warn("request logs dropped", "err", err) },
		})
		sink.next = g.logs
		g.bg.Add(1)
		go func() {
			defer g.bg.Done()
			g.logs.Run(bgCtx)
		}()
	}
	g.waiting = new(limits.Waiting)
	g.proxy = proxy.New(proxy.Options{
		Clock: opts.Clock, Logger: opts.Logger, Transport: opts.Transport, Waiting: g.waiting,
		State: loggedState{Driver: g.state, ops: g.ops}, Logs: sink, OnDecision: g.recordDecision, Spend: g.spend, Metrics: g.metrics,
		Affinity: g.affinity, Tracer: tracer,
		Latency: func(name string) float64 { return g.prober.LatencyMs(name) },
	}, cat)
	g.prober = health.NewProber(cfg.Health, opts.Clock, rand.New(rand.NewPCG(opts.Seed, 0x9e3779b9)), g.state.ProbeGate(),
		func(ctx context.Context, name string) error { return g.proxy.Probe(ctx, name, cfg.Health.Probe) },
		g.proxy.ActiveUpstreams, health.WithHealthChange(g.ops.health))
	g.ops.serves = func(model string) bool { return g.proxy.Catalog().Serves(model) }
	g.admin = g.newAdminService()
	g.runShared(bgCtx)
	g.bg.Add(3)
	go func() {
		defer g.bg.Done()
		g.ops.run(bgCtx)
	}()
	go func() {
		defer g.bg.Done()
		g.prober.Run(bgCtx)
	}()
	go func() {
		defer g.bg.Done()
		g.spend.RunFlusher(bgCtx, g.store, 5*time.Second)
	}()
	if w, ok := g.store.(store.Watcher); ok {
		// Other instances on the same database change upstreams, keys and
		// routes through their admin API: pick those changes up.
		g.bg.Add(1)
		go func() {
			defer g.bg.Done()
			if err := w.Watch(bgCtx, func() { g.reloadLogged(bgCtx) }); err != nil {
				g.log.Warn("watching the store for changes stopped", "err", err)
			}
		}()
	}
	return g, nil
}

// openStore opens the store the config names.
func openStore(ctx context.Context, sc config.Store) (store.Store, error) {
	switch sc.Driver {
	case "sqlite":
		st, err := sqlite.Open(ctx, sc.DSN)
		if err != nil {
			return nil, fmt.Errorf("opening sqlite store %s: %w", sc.DSN, err)
		}
		return st, nil
	case "postgres":
		st, err := postgres.Open(ctx, sc.DSN)
		if err != nil {
			return nil, fmt.Errorf("opening postgres store: %w", err)
		}
		return st, nil
	default:
		return nil, fmt.Errorf("store.driver %q: unknown (use sqlite or postgres)", sc.Driver)
	}
}

// seedStore upserts the entities of cfg, the configuration file's;
// client keys are stored as their SHA-256 only.
func (g *Gateway) seedStore(ctx context.Context, cfg *config.Config) error {
	for _, u := range cfg.Upstreams {
		if err := g.store.UpsertUpstream(ctx, u); err != nil {
			return fmt.Errorf("storing upstream %s: %w", u.Name, err)
		}
	}
	for _, k := range cfg.Keys {
		if k.Key != "" {
			k.KeySHA256, k.Key = config.HashKey(k.Key), ""
		}
		if err := g.store.UpsertKey(ctx, k); err != nil {
			return fmt.Errorf("storing key %s: %w", k.Name, err)
		}
	}
	for _, r := range cfg.Routes {
		if err := g.store.UpsertRoute(ctx, r); err != nil {
			return fmt.Errorf("storing route %s: %w", r.Model, err)
		}
	}
	return nil
}

// buildCatalog reads the store into a routing table.
func (g *Gateway) buildCatalog(ctx context.Context) (*proxy.Catalog, error) {
	ups, err := g.store.ListUpstreams(ctx)
	if err != nil {
		return nil, fmt.Errorf("loading upstreams: %w", err)
	}
	keys, err := g.store.ListKeys(ctx)
	if err != nil {
		return nil, fmt.Errorf("loading keys: %w", err)
	}
	routes, err := g.store.ListRoutes(ctx)
	if err != nil {
		return nil, fmt.Errorf("loading routes: %w", err)
	}
	for _, u := range ups {
		g.local.Configure(u.Name, u.RateLimit.RPM, u.RateLimit.TPM)
	}
	g.setNames(ups, keys, routes)
	g.watchShared(ups, keys, g.cfg.Teams)
	var prev *proxy.Catalog
	if g.proxy != nil {
		prev = g.proxy.Catalog()
	}
	return proxy.NewCatalog(proxy.CatalogInput{
		Upstreams: ups, Keys: keys, Routes: routes, Defaults: g.cfg.Defaults, Affinity: g.cfg.Affinity,
		Seed: g.seed, Now: g.clock.Now, Clock: g.clock, Previous: prev, Transport: g.transport, Catalogue: g.catalogue,
		Teams: g.cfg.Teams,
	})
}

// Reload rebuilds the routing table from the store and swaps it in without
// dropping in-flight requests.
func (g *Gateway) Reload(ctx context.Context) error {
	g.reloadMu.Lock()
	defer g.reloadMu.Unlock()
	cat, err := g.buildCatalog(ctx)
	if err != nil {
		return err
	}
	g.proxy.SetCatalog(cat)
	return nil
}

// reloadLogged reloads the routing table after a store change, logging a failure.
func (g *Gateway) reloadLogged(ctx context.Context) {
	if err := g.Reload(ctx); err != nil {
		g.log.Warn("reloading after a store change", "err", err)
	}
}

// recordDecision keeps a routing decision in the ring of recent ones,
// counts its attempts per client model for the admin API's shares by route
// (each attempt itself was counted when it was sent) and, with log.level
// debug, logs it as one JSON line.
func (g *Gateway) recordDecision(d *balancer.Decision) {
	g.recent.Add(d)
	if len(d.Tried) > 0 {
		now := g.clock.Now()
		for _, t := range d.Tried {
			g.traffic.AddModel(t.Upstream, d.Model, now)
		}
	}
	if !g.log.Enabled(context.Background(), slog.LevelDebug) {
		return
	}
	b, err := json.Marshal(d)
	if err != nil {
		return
	}
	g.log.Debug("routing decision", "decision", json.RawMessage(b))
}

// Handler returns the gateway's HTTP handler: the client API plus
// /healthz, /readyz, /metrics and /favicon.ico, and, when admin.token is set and
// admin.listen is not, the admin API and dashboard under /admin/.
func (g *Gateway) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
	})
	mux.HandleFunc("GET /readyz", func(w http.ResponseWriter, r *http.Request) {
		ctx, cancel := context.WithTimeout(r.Context(), 2*time.Second)
		defer cancel()
		if err := g.store.Ping(ctx); err != nil {
			writeJSON(w, http.StatusServiceUnavailable, map[string]string{"status": "unavailable", "error": "store unreachable"})
			return
		}
		writeJSON(w, http.StatusOK, g.readiness())
	})
	mux.Handle("GET /metrics", g.metrics.Handler(g.cfg.Metrics.Token))
	mux.Handle("GET /favicon.ico", admin.Favicon()) // a browser at the gateway's address asks for it
	if h := g.AdminHandler(); h != nil && g.cfg.Admin.Listen == "" {
		mux.Handle("/admin/", h)
		mux.Handle("/admin", h)
	}
	mux.Handle("/", g.proxy)
	return mux
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

// DroppedLogs returns how many request logs were dropped (buffer full or store failing).
func (g *Gateway) DroppedLogs() uint64 {
	if g.logs == nil {
		return 0
	}
	return g.logs.Dropped()
}

// RecentDecisions returns up to limit of the latest routing decisions, newest first.
func (g *Gateway) RecentDecisions(limit int) []*balancer.Decision { return g.recent.Recent(limit) }

// Explain computes the routing decision a request would get now, without sending it.
func (g *Gateway) Explain(ctx context.Context, req proxy.ExplainRequest) (*balancer.Decision, error) {
	return g.proxy.Explain(ctx, req)
}

// Store returns the gateway's store.
func (g *Gateway) Store() store.Store { return g.store }
