package state

import (
	"context"
	_ "embed" // the Lua scripts
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"switchyard/internal/affinity"
	"switchyard/internal/clock"
	"switchyard/internal/config"
	"switchyard/internal/outcome"
)

// The Lua scripts run each multi-step update atomically inside Redis.
var (
	//go:embed lua/admit.lua
	admitLua string
	//go:embed lua/settle.lua
	settleLua string

	admitScript  = redis.NewScript(admitLua)
	settleScript = redis.NewScript(settleLua)
)

// Operations, as the fallback and round-trip counters name them.
const (
	OpAdmit    = "admit"
	OpSettle   = "settle"
	OpAffinity = "affinity"
	OpSync     = "sync"
	OpLease    = "lease"
)

// keepMs is the TTL of breaker and statistics keys, refreshed on every
// write: the state of an upstream nobody sends to any more goes away a day
// later, so nothing leaks.
const keepMs = int64(24 * time.Hour / time.Millisecond)

// queuePoll is how often a request queued for a slot on another instance's
// upstream asks Redis again; a slot freed on this instance wakes it at once.
const queuePoll = 20 * time.Millisecond

// RedisOptions configure a Redis.
type RedisOptions struct {
	// Clock gives now. Default: the wall clock.
	Clock clock.Clock
	// Logger receives reachability changes. Default: discard.
	Logger *slog.Logger
	// OnRoundTrip counts each Redis round trip by operation.
	OnRoundTrip func(op string)
	// OnFallback counts each operation served from local state because
	// Redis failed or was known to be down.
	OnFallback func(op string)
	// OnUp reports Redis's reachability when it changes.
	OnUp func(up bool)
	// OnTransition receives the shared breaker transitions this instance's
	// outcomes caused: to is open, half_open or closed.
	OnTransition func(upstream, to, reason string)
}

// Redis is the shared state of state.driver: redis (DESIGN.md §7): the
// breakers, 429 cooldowns, RPM/TPM windows, in-flight leases, slot queue,
// EWMA statistics, spend counters and (RedisAffinity) session bindings that
// every instance under the same key prefix sees. It is authoritative at
// admission — Admit and Settle are one Lua script each, one round trip —
// while planning reads a local View refreshed every sync_interval, so a
// plan is at most that stale but a request is never sent against the
// shared limits.
//
// When Redis fails, the instance falls back to its local state (the caller
// keeps it warm by feeding it every outcome), logs the change and counts
// each fallback; the sync loop keeps trying and switches back when Redis
// answers, re-registering the leases of requests still in flight, so the
// counts converge within lease_ttl/3.
type Redis struct {
	opts     RedisOptions
	clk      clock.Clock
	rdb      *redis.Client
	prefix   string
	instance string
	timeout  time.Duration
	lease    time.Duration
	sync     time.Duration
	local    *Memory
	localAff *affinity.Table // the local sticky table Settle's bindings also go to (Affinity)

	circuit atomic.Pointer[config.Circuit]
	seq     atomic.Uint64
	up      atomic.Bool
	view    atomic.Pointer[map[string]View]
	watch   atomic.Pointer[Watch]

	mu   sync.Mutex        // guards held
	held map[string]string // ticket id → upstream, of every request in flight here
	wake sync.Map          // upstream → chan struct{}: closed when a lease here is released
}

var _ Stats = (*Redis)(nil)

// NewRedis connects to cfg.RedisURL. It does not fail when Redis is down
// (the instance starts on local state and switches when Redis answers), only
// when the URL is invalid. Call Run to keep the view and the leases fresh,
// and Close at the end.
func NewRedis(cfg config.State, circuit config.Circuit, opts RedisOptions) (*Redis, error) {
	ro, err := redis.ParseURL(cfg.RedisURL)
	if err != nil {
		return nil, fmt.Errorf("state.redis_url: %w", err)
	}
	ro.DialTimeout, ro.ReadTimeout, ro.WriteTimeout = cfg.RedisTimeout, cfg.RedisTimeout, cfg.RedisTimeout
	ro.MaxRetries = -1 // a failed call falls back at once; the sync loop retries
	ro.ContextTimeoutEnabled = true
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	host, _ := os.Hostname()
	r := &Redis{
		opts: opts, clk: opts.Clock, rdb: redis.NewClient(ro), prefix: cfg.RedisPrefix,
		instance: fmt.Sprintf("%s-%d-%04x", host, os.Getpid(), rand.Uint32()&0xffff),
		timeout:  cfg.RedisTimeout, lease: cfg.LeaseTTL, sync: cfg.SyncInterval,
		local: NewMemory(DefaultWindow), held: map[string]string{},
	}
	r.circuit.Store(&circuit)
	r.up.Store(true) // optimistic: the first call or sync tells
	return r, nil
}

// Instance is this gateway instance's id in lease and queue entries.
func (r *Redis) Instance() string { return r.instance }

// Up reports whether Redis answered the last call.
func (r *Redis) Up() bool { return r.up.Load() }

// SetCircuit sets the breaker settings the scripts apply (on reload).
func (r *Redis) SetCircuit(c config.Circuit) { r.circuit.Store(&c) }

// Close closes the connection pool.
func (r *Redis) Close() error { return r.rdb.Close() }

// ctx bounds one operation by redis_timeout.
func (r *Redis) ctx() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), r.timeout)
}

// result notes how a call to Redis went and reports whether it succeeded.
// redis.Nil (a missing key) is an answer, not a failure.
func (r *Redis) result(op string, err error) bool {
	if r.opts.OnRoundTrip != nil {
		r.opts.OnRoundTrip(op)
	}
	if err == nil || errors.Is(err, redis.Nil) {
		r.setUp(true, nil)
		return true
	}
	r.setUp(false, err)
	r.fallback(op)
	return false
}

// fallback counts one operation served from local state.
func (r *Redis) fallback(op string) {
	if r.opts.OnFallback != nil {
		r.opts.OnFallback(op)
	}
}

func (r *Redis) setUp(up bool, err error) {
	if r.up.Swap(up) == up {
		return
	}
	if up {
		r.opts.Logger.Info("redis reachable again: routing state is shared", "prefix", r.prefix)
	} else {
		r.opts.Logger.Warn("redis unreachable: routing on this instance's local state", "err", err)
	}
	if r.opts.OnUp != nil {
		r.opts.OnUp(up)
	}
}

// key returns the key of one upstream's piece of state. The upstream name
// is a hash tag, so that one script's keys share a Redis Cluster slot.
func (r *Redis) key(upstream, what string) string {
	return r.prefix + "u:{" + upstream + "}:" + what
}

// nowMs is now in Unix milliseconds.
func (r *Redis) nowMs() int64 { return r.clk.Now().UnixMilli() }

// Admission is what Admit checks for one request to one upstream.
type Admission struct {
	// Upstream is the upstream's name.
	Upstream string
	// Tokens is the request's estimated tokens, reserved against TPM.
	Tokens int64
	// RPM and TPM are the configured limits; 0 means none.
	RPM, TPM int
	// MaxConcurrency bounds the leases in flight; 0 means none.
	MaxConcurrency int
	// Queue, when enabled and Wait is set, is the upstream's slot queue.
	Queue config.Queue
	// Wait waits in the queue for a slot instead of refusing when all are taken.
	Wait bool
}

// Denial says why Admit refused.
type Denial struct {
	// Reason is breaker, cooldown, rpm, tpm, full, queue_full or
	// queue_timeout.
	Reason string
	// Wait is when the upstream is expected to take a request again; 0
	// when unknown.
	Wait time.Duration
}

// Ticket is an admitted request: Settle ends it.
type Ticket struct {
	upstream string
	id       string
	bucket   int64 // the TPM bucket (Unix seconds) its tokens were reserved in
	tokens   int64
	// Shared is false when Redis could not be asked: the caller's local
	// checks decided, and Settle still gives the lease back.
	Shared bool
	// Probe is true when the request is the shared half-open probe.
	Probe bool
}

// Admit asks Redis whether one request may go to a.Upstream now and, if so,
// counts it, reserves its tokens and takes a lease: one round trip (a
// queued request asks again every 20 ms, or at once when a slot here frees
// up, until a.Queue.Timeout). When Redis is down it admits with a local
// ticket (Shared false): the caller decides with its local state.
func (r *Redis) Admit(ctx context.Context, a Admission) (Ticket, *Denial) {
	t := Ticket{upstream: a.Upstream, id: r.instance + ":" + strconv.FormatUint(r.seq.Add(1), 36), tokens: max(a.Tokens, 0)}
	wait := a.Wait && a.Queue.Enabled && a.MaxConcurrency > 0
	var deadline <-chan time.Time
	for {
		if !r.up.Load() {
			r.fallback(OpAdmit)
			r.hold(t)
			return t, nil
		}
		now := r.nowMs()
		t.bucket = now / 1000
		c := r.circuit.Load()
		qmode := "0"
		if wait {
			qmode = "1"
		}
		// Take the wake-up channel before asking: a slot freed here between
		// the answer and the wait must not be missed.
		var woken <-chan struct{}
		if wait {
			woken = r.wakeup(a.Upstream)
		}
		rctx, cancel := r.ctx()
		res, err := admitScript.Run(rctx, r.rdb,
			[]string{r.key(a.Upstream, "brk"), r.key(a.Upstream, "cd"), r.key(a.Upstream, "rpm"), r.key(a.Upstream, "tpm"),
				r.key(a.Upstream, "lease"), r.key(a.Upstream, "queue"), r.key(a.Upstream, "win")},
			now, t.id, t.tokens, a.RPM, a.TPM, a.MaxConcurrency, r.lease.Milliseconds(),
			c.ProbeInterval.Milliseconds(), r.lease.Milliseconds(),
			qmode, a.Queue.MaxLength, a.Queue.Timeout.Milliseconds(), keepMs).Slice()
		cancel()
		if !r.result(OpAdmit, err) || len(res) != 3 {
			r.hold(t)
			return t, nil
		}
		if ok, _ := res[0].(int64); ok == 1 {
			t.Shared, t.Probe = true, res[1] == int64(1)
			r.hold(t)
			return t, nil
		}
		reason, _ := res[1].(string)
		ms, _ := res[2].(int64)
		if reason != "full" || !wait {
			return t, &Denial{Reason: reason, Wait: time.Duration(ms) * time.Millisecond}
		}
		if deadline == nil {
			deadline = r.clk.After(a.Queue.Timeout)
		}
		select {
		case <-woken:
		case <-r.clk.After(queuePoll):
		case <-deadline:
			r.leaveQueue(a.Upstream, t.id)
			return t, &Denial{Reason: "queue_timeout"}
		case <-ctx.Done():
			r.leaveQueue(a.Upstream, t.id)
			return t, &Denial{Reason: "queue_timeout"}
		}
	}
}

// wakeup returns a channel closed when a lease on upstream is next released here.
func (r *Redis) wakeup(upstream string) <-chan struct{} {
	ch, _ := r.wake.LoadOrStore(upstream, make(chan struct{}))
	return ch.(chan struct{})
}

// released wakes the requests queued here for upstream.
func (r *Redis) released(upstream string) {
	if ch, ok := r.wake.LoadAndDelete(upstream); ok {
		close(ch.(chan struct{}))
	}
}

// leaveQueue removes a queued request that gave up.
func (r *Redis) leaveQueue(upstream, id string) {
	if !r.up.Load() {
		return
	}
	ctx, cancel := r.ctx()
	defer cancel()
	r.result(OpAdmit, r.rdb.ZRem(ctx, r.key(upstream, "queue"), id).Err())
}

// hold remembers an in-flight ticket, so that its lease is renewed (and
// re-registered after a Redis restart) until Settle.
func (r *Redis) hold(t Ticket) {
	r.mu.Lock()
	r.held[t.id] = t.upstream
	r.mu.Unlock()
}

// The outcome classes as settle.lua takes them.
const (
	wireSuccess     = 's' // closes a half-open breaker and ends the failure streak
	wireFailure     = 'f' // a server error: counts toward tripping the breaker
	wireAuthFailure = 'a' // trips the breaker at once
	wireNeutral     = 'n' // says nothing about health (a 429, a client error, a cancel)
)

// wireOutcome encodes an outcome class for settle.lua.
func wireOutcome(c outcome.Class) byte {
	switch c {
	case outcome.Success:
		return wireSuccess
	case outcome.ServerError:
		return wireFailure
	case outcome.AuthError:
		return wireAuthFailure
	}
	return wireNeutral
}

// Settlement is how an admitted request ended.
type Settlement struct {
	// Outcome is how the attempt ended: its class feeds the shared breaker
	// (Detail its reason), its usage corrects the reservation, a 429's
	// Cooldown and LimitType start a shared cooldown, its measurements
	// feed the shared EWMAs.
	Outcome outcome.Outcome
	// Spend charges usd to the upstream and the client key for the day and month.
	Spend    float64
	SpendKey string
	// Bind, when set, binds a session to the upstream in the same round trip.
	Bind *Bind
}

// Settle ends t: one round trip that releases its lease, corrects its
// reservation, feeds the shared breaker and statistics, starts a cooldown,
// charges spend and (re)binds a session. Failures fall back silently: the
// lease expires by itself within lease_ttl.
func (r *Redis) Settle(t Ticket, s Settlement) {
	r.mu.Lock()
	delete(r.held, t.id)
	r.mu.Unlock()
	// Wake the requests queued here once the lease is given back in Redis:
	// woken earlier, they would find the slot still taken and sleep a poll.
	defer r.released(t.upstream)
	if s.Bind != nil && r.localAff != nil {
		r.localAff.Bind(s.Bind.Key, s.Bind.Upstream, s.Bind.Policy)
	}
	if !r.up.Load() {
		r.fallback(OpSettle)
		return
	}
	now := r.clk.Now()
	o := s.Outcome
	delta := int64(0)
	if t.Shared {
		delta = o.Tokens() - t.tokens
	}
	cooldown := time.Duration(0)
	if o.Class == outcome.RateLimited {
		cooldown = o.Cooldown
	}
	c := r.circuit.Load()
	ctx, cancel := r.ctx()
	defer cancel()
	b := r.batch()
	tr := b.eval(ctx, settleScript,
		[]string{r.key(t.upstream, "brk"), r.key(t.upstream, "fails"), r.key(t.upstream, "cd"), r.key(t.upstream, "tpm"),
			r.key(t.upstream, "lease"), r.key(t.upstream, "queue"), r.key(t.upstream, "stats")},
		now.UnixMilli(), t.id, string(wireOutcome(o.Class)), o.Detail, t.bucket, delta, cooldown.Milliseconds(),
		c.FailureThreshold, c.Window.Milliseconds(), c.OpenDuration.Milliseconds(), c.SuccessThreshold,
		ms(o.Latency), ms(o.TTFT), o.TPS, Alpha, keepMs, o.LimitType)
	if s.Spend > 0 {
		r.addSpend(ctx, b, now, ScopeUpstream, t.upstream, s.Spend)
		if s.SpendKey != "" {
			r.addSpend(ctx, b, now, ScopeKey, s.SpendKey, s.Spend)
		}
	}
	if s.Bind != nil {
		r.bindIn(ctx, b, *s.Bind, now)
	}
	err := b.exec(ctx)
	if !r.result(OpSettle, err) {
		return
	}
	if to, _ := tr.res.Text(); to != "" && r.opts.OnTransition != nil {
		r.opts.OnTransition(t.upstream, transitionName(to), o.Detail)
	}
}

// batch is one round trip: commands and scripts queued in a pipeline.
// Scripts go by their hash; one the server does not know (first use, or
// after a restart) is run again by its source.
type batch struct {
	rdb     *redis.Client
	pipe    redis.Pipeliner
	scripts []*scriptCmd
}

// scriptCmd is a script queued in a batch; res holds its reply after exec.
type scriptCmd struct {
	res    *redis.Cmd
	script *redis.Script
	keys   []string
	args   []any
}

func (r *Redis) batch() *batch { return &batch{rdb: r.rdb, pipe: r.rdb.Pipeline()} }

// eval queues script.
func (b *batch) eval(ctx context.Context, script *redis.Script, keys []string, args ...any) *scriptCmd {
	sc := &scriptCmd{res: script.EvalSha(ctx, b.pipe, keys, args...), script: script, keys: keys, args: args}
	b.scripts = append(b.scripts, sc)
	return sc
}

// exec sends the batch and returns the first error other than a missing key.
func (b *batch) exec(ctx context.Context) error {
	cmds, _ := b.pipe.Exec(ctx)
	for _, sc := range b.scripts {
		if err := sc.res.Err(); err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			sc.res = sc.script.Run(ctx, b.rdb, sc.keys, sc.args...)
		}
	}
	for _, c := range cmds {
		err := c.Err()
		if err != nil && redis.HasErrorPrefix(err, "NOSCRIPT") {
			continue // run again above
		}
		if err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
	}
	for _, sc := range b.scripts {
		if err := sc.res.Err(); err != nil && !errors.Is(err, redis.Nil) {
			return err
		}
	}
	return nil
}

// transitionName maps a script's state name (open, half, closed) to the
// breaker's.
func transitionName(s string) string {
	if s == "half" {
		return "half_open"
	}
	return s
}
