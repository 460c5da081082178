package state

import (
	"context"
	_ "embed" // the Lua scripts
	"hash/fnv"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"

	"switchyard/internal/affinity"
)

var (
	//go:embed lua/bind_get.lua
	bindGetLua string
	//go:embed lua/bind_set.lua
	bindSetLua string

	bindGetScript = redis.NewScript(bindGetLua)
	bindSetScript = redis.NewScript(bindSetLua)
)

// Bind is a session binding for Settle to make in its round trip.
type Bind struct {
	Key      affinity.Key
	Upstream string
	Policy   affinity.Policy
	// StandIn binds Upstream as the session's stand-in, keeping its home
	// (affinity.Store.BindStandIn); false binds it as the home.
	StandIn bool
}

// writeTo makes the binding in a local table.
func (b Bind) writeTo(t Binder) {
	if b.StandIn {
		t.BindStandIn(b.Key, b.Upstream, b.Policy)
		return
	}
	t.Bind(b.Key, b.Upstream, b.Policy)
}

// RedisAffinity is the sticky table shared through Redis: a session bound
// through one instance is served by the same upstream through every other.
// Bindings carry their TTLs in Redis (sliding and absolute, applied by the
// scripts); affinity.max_entries bounds only the local table. Every Bind is
// written through to the local table too, which serves Get while Redis is
// down, so that sessions stay sticky per instance through an outage.
type RedisAffinity struct {
	r     *Redis
	local *affinity.Table
}

var _ affinity.ContextStore = (*RedisAffinity)(nil)

// Affinity returns the shared sticky table, falling back to local.
// Settle writes the bindings it makes to local as well.
func (r *Redis) Affinity(local *affinity.Table) *RedisAffinity {
	r.localAff = local
	return &RedisAffinity{r: r, local: local}
}

// sessionTag is the hash tag of a session's keys: 16 hex digits of the
// FNV-1a hash of its id, which may hold any byte, braces included.
func sessionTag(session string) string {
	h := fnv.New64a()
	_, _ = h.Write([]byte(session))
	return strconv.FormatUint(h.Sum64()|1<<63, 16) // always 16 digits
}

func policyMs(p affinity.Policy) (sliding, absolute int64) {
	return max(p.Sliding.Milliseconds(), 0), max(p.Absolute.Milliseconds(), 0)
}

// Get returns k's live binding from Redis (one round trip), marking it used.
func (a *RedisAffinity) Get(ctx context.Context, k affinity.Key, pol affinity.Policy) (affinity.Bound, bool) {
	if !a.r.up.Load() {
		a.r.fallback(OpAffinity)
		return a.local.Get(k, pol)
	}
	rctx, cancel := a.r.opCtx(ctx)
	defer cancel()
	sl, ab := policyMs(pol)
	v, err := bindGetScript.Run(rctx, a.r.rdb, []string{a.r.keys.binding(k)}, a.r.nowMs(), sl, ab).StringSlice()
	if err == redis.Nil {
		return affinity.Bound{}, false
	}
	if !a.r.result(ctx, OpAffinity, err) {
		return a.local.Get(k, pol)
	}
	if len(v) != 2 || v[0] == "" {
		return affinity.Bound{}, false
	}
	return affinity.Bound{Home: v[0], StandIn: v[1]}, true
}

// Peek returns k's live binding without marking it used.
func (a *RedisAffinity) Peek(ctx context.Context, k affinity.Key, pol affinity.Policy) (affinity.Binding, bool) {
	if !a.r.up.Load() {
		return a.local.Peek(k, pol)
	}
	bs, ok := a.read(ctx, k.Session, []string{a.r.keys.binding(k)}, pol)
	if !ok {
		return a.local.Peek(k, pol)
	}
	if len(bs) == 0 {
		return affinity.Binding{}, false
	}
	return bs[0], true
}

// Bind binds k to upstream in Redis and in the local table.
func (a *RedisAffinity) Bind(ctx context.Context, k affinity.Key, upstream string, pol affinity.Policy) {
	a.bind(ctx, Bind{Key: k, Upstream: upstream, Policy: pol})
}

// BindStandIn makes upstream k's stand-in in Redis and in the local table.
func (a *RedisAffinity) BindStandIn(ctx context.Context, k affinity.Key, upstream string, pol affinity.Policy) {
	a.bind(ctx, Bind{Key: k, Upstream: upstream, Policy: pol, StandIn: true})
}

func (a *RedisAffinity) bind(ctx context.Context, bd Bind) {
	bd.writeTo(a.local)
	if bd.Key.Session == "" || bd.Upstream == "" || !a.r.up.Load() {
		return
	}
	rctx, cancel := a.r.opCtx(ctx)
	defer cancel()
	b := a.r.batch()
	a.r.bindIn(rctx, b, bd, a.r.clk.Now())
	a.r.result(ctx, OpAffinity, b.exec(rctx))
}

// bindIn queues a binding in b. The caller writes it to its local table.
func (r *Redis) bindIn(ctx context.Context, b *batch, bd Bind, now time.Time) {
	if bd.Key.Session == "" || bd.Upstream == "" {
		return
	}
	sl, ab := policyMs(bd.Policy)
	bk := r.keys.binding(bd.Key)
	mode := "0"
	if bd.StandIn {
		mode = "1"
	}
	b.eval(ctx, bindSetScript, []string{bk, r.keys.session(bd.Key.Session)}, now.UnixMilli(), bd.Upstream, sl, ab, bk, mode)
}

// DeleteSession removes session's bindings in Redis and locally.
func (a *RedisAffinity) DeleteSession(ctx context.Context, session string) int {
	n := a.local.DeleteSession(session)
	if !a.r.up.Load() {
		return n
	}
	rctx, cancel := a.r.opCtx(ctx)
	defer cancel()
	idx := a.r.keys.session(session)
	keys, err := a.r.rdb.SMembers(rctx, idx).Result()
	if !a.r.result(ctx, OpAffinity, err) {
		return n
	}
	removed, err := a.r.rdb.Del(rctx, append(keys, idx)...).Result()
	if !a.r.result(ctx, OpAffinity, err) {
		return n
	}
	return max(n, int(removed)-1) // the index itself is not a binding
}

// Lookup returns session's live bindings, from Redis when it answers.
func (a *RedisAffinity) Lookup(ctx context.Context, session string) []affinity.Binding {
	if !a.r.up.Load() {
		return a.local.Lookup(session)
	}
	rctx, cancel := a.r.opCtx(ctx)
	defer cancel()
	keys, err := a.r.rdb.SMembers(rctx, a.r.keys.session(session)).Result()
	if !a.r.result(ctx, OpAffinity, err) {
		return a.local.Lookup(session)
	}
	bs, ok := a.read(ctx, session, keys, affinity.Policy{})
	if !ok {
		return a.local.Lookup(session)
	}
	slices.SortFunc(bs, func(x, y affinity.Binding) int {
		if c := strings.Compare(x.Route, y.Route); c != 0 {
			return c
		}
		return strings.Compare(x.APIKey, y.APIKey)
	})
	return bs
}

// read fetches the bindings stored at keys. Redis expires them by their
// TTLs; pol, when it has limits, also drops any already expired under it.
func (a *RedisAffinity) read(ctx context.Context, session string, keys []string, pol affinity.Policy) ([]affinity.Binding, bool) {
	out := []affinity.Binding{}
	if len(keys) == 0 {
		return out, true
	}
	rctx, cancel := a.r.opCtx(ctx)
	defer cancel()
	pipe := a.r.rdb.Pipeline()
	cmds := make([]*redis.SliceCmd, len(keys))
	ttls := make([]*redis.DurationCmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.HMGet(rctx, k, "up", "created", "used", "stand")
		ttls[i] = pipe.PTTL(rctx, k)
	}
	_, err := pipe.Exec(rctx)
	if !a.r.result(ctx, OpAffinity, err) {
		return nil, false
	}
	now := a.r.clk.Now()
	prefix := a.r.keys.bindingPrefix(session)
	for i, k := range keys {
		v := cmds[i].Val()
		up, _ := v[0].(string)
		if up == "" || !strings.HasPrefix(k, prefix) {
			continue
		}
		parts := strings.SplitN(strings.TrimPrefix(k, prefix), "\x1f", 3)
		if len(parts) != 3 || parts[2] != session {
			continue
		}
		b := affinity.Binding{
			Key:       affinity.Key{APIKey: parts[0], Route: parts[1], Session: parts[2]},
			Upstream:  up,
			CreatedAt: time.UnixMilli(parseInt(v[1])).UTC(),
			LastUsed:  time.UnixMilli(parseInt(v[2])).UTC(),
		}
		b.StandIn, _ = v[3].(string)
		if pol.Sliding > 0 && now.Sub(b.LastUsed) >= pol.Sliding || pol.Absolute > 0 && now.Sub(b.CreatedAt) >= pol.Absolute {
			continue
		}
		if d := ttls[i].Val(); d > 0 {
			b.ExpiresAt = now.Add(d).UTC()
		}
		out = append(out, b)
	}
	return out, true
}
