package state

import (
	"context"
	_ "embed" // the Lua scripts
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/redis/go-redis/v9"

	"switchyard/internal/affinity"
	"switchyard/internal/clock"
	"switchyard/internal/config"
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
	OpTenant   = "tenant"
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

// Redis is the shared state of state.driver: redis (docs/scale-out.md): the
// breakers, 429 cooldowns, RPM/TPM windows, in-flight leases, slot queue,
// EWMA statistics, spend counters and (RedisAffinity) session bindings that
// every instance under the same key prefix sees. It is authoritative at
// admission — Admit and Settle are one Lua script each, one round trip —
// while planning reads a local View refreshed every sync_interval, so a
// plan is at most that stale but a request is never sent against the
// shared limits.
//
// When Redis fails, the instance falls back to its local state, which then
// decides admission under its own limits (RedisDriver; the caller keeps it
// warm by feeding it every admission and outcome), logs the change and
// counts each fallback; the sync loop keeps trying and switches back when
// Redis answers, re-registering the leases of requests still in flight and
// removing the queue entries and leases given up meanwhile, so the counts
// converge within lease_ttl/3.
type Redis struct {
	opts     RedisOptions
	clk      clock.Clock
	rdb      redis.UniversalClient // a server, Sentinel's primary or a Redis Cluster (redisClient)
	reach    *reachability         // what /readyz and the log say about Redis's reachability
	prefix   string
	keys     keyspace // every key's name, under prefix
	instance string
	timeout  time.Duration
	lease    time.Duration
	sync     time.Duration
	localAff *affinity.Table // the local sticky table Settle's bindings also go to (Affinity)

	circuit atomic.Pointer[config.Circuit]
	seq     atomic.Uint64
	up      atomic.Bool
	view    atomic.Pointer[map[string]View]
	watch   atomic.Pointer[Watch]

	mu   sync.Mutex          // guards held and left
	held map[string]string   // lease id → its lease set's key, of every request in flight here under a max_concurrency (an upstream's, a key's, a team's)
	left map[entry]time.Time // queue and lease entries given up while Redis could not be told → when Redis has swept them itself
	wake sync.Map            // upstream → chan struct{}: closed when a lease here is released
}

// NewRedis connects to cfg.RedisURL or cfg.Redis (a server, a
// Sentinel-managed primary or a Redis Cluster). It does not fail when Redis
// is down (the instance starts on local state and switches when Redis
// answers), only when the URL is invalid or the CA file unreadable. Call
// Run to keep the view and the leases fresh, and Close at the end.
func NewRedis(cfg config.State, circuit config.Circuit, opts RedisOptions) (*Redis, error) {
	rdb, reach, err := redisClient(cfg)
	if err != nil {
		return nil, err
	}
	if opts.Clock == nil {
		opts.Clock = clock.Real{}
	}
	if opts.Logger == nil {
		opts.Logger = slog.New(slog.DiscardHandler)
	}
	host, _ := os.Hostname()
	r := &Redis{
		opts: opts, clk: opts.Clock, rdb: rdb, prefix: cfg.RedisPrefix, keys: keyspace(cfg.RedisPrefix),
		reach:    reach,
		instance: fmt.Sprintf("%s-%d-%04x", host, os.Getpid(), rand.Uint32()&0xffff),
		timeout:  cfg.RedisTimeout, lease: cfg.LeaseTTL, sync: cfg.SyncInterval,
		held: map[string]string{}, left: map[entry]time.Time{},
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

// opCtx bounds one operation on behalf of ctx by redis_timeout.
func (r *Redis) opCtx(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, r.timeout)
}

// result notes how a call to Redis made on behalf of ctx went and reports
// whether it succeeded. redis.Nil (a missing key) is an answer, not a
// failure; a call cut short because ctx ended (the caller left) says
// nothing about Redis.
func (r *Redis) result(ctx context.Context, op string, err error) bool {
	if r.opts.OnRoundTrip != nil {
		r.opts.OnRoundTrip(op)
	}
	if err == nil || errors.Is(err, redis.Nil) {
		r.setUp(true, nil)
		return true
	}
	if ctx.Err() != nil {
		return false
	}
	r.setUp(false, err)
	r.fallback(op)
	return false
}

// pipeErr returns the first error of a pipeline's commands other than a
// missing key (redis.Nil), which is an answer: Exec's own error may be a
// redis.Nil that hides a failure of a later command.
func pipeErr(cmds []redis.Cmder, err error) error {
	for _, c := range cmds {
		if e := c.Err(); e != nil && !errors.Is(e, redis.Nil) {
			return e
		}
	}
	if errors.Is(err, redis.Nil) {
		return nil
	}
	return err
}

// fallback counts one operation served from local state.
func (r *Redis) fallback(op string) {
	if r.opts.OnFallback != nil {
		r.opts.OnFallback(op)
	}
}

// setUp notes whether Redis answered; a change is logged (why Redis
// failed, how long the outage lasted) and kept for Status.
func (r *Redis) setUp(up bool, err error) {
	if r.up.Swap(up) == up {
		return
	}
	r.reach.change(r.opts.Logger, up, err, r.clk.Now(), r.prefix)
	if r.opts.OnUp != nil {
		r.opts.OnUp(up)
	}
}

// Status is Redis's reachability as /readyz shows it.
func (r *Redis) Status() Status { return r.reach.status() }

// nowMs is now in Unix milliseconds.
func (r *Redis) nowMs() int64 { return r.clk.Now().UnixMilli() }
