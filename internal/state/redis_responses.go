package state

import (
	"context"

	"github.com/redis/go-redis/v9"

	"switchyard/internal/affinity"
)

// The pins of stateful objects
// (docs/routing.md#stateful-calls-pinned-not-sticky) shared through Redis: one
// string key per object, prefix + "pin:" + the StateRef, holding the upstream's
// name and expiring after affinity.response_ttl (the TTL of the local table the
// driver wraps). Every pin is written through to that table too, which answers
// while Redis is down and for the pins made while it was: an object never moves
// to another upstream, so a local record is never wrong, only maybe missing.
// Both calls count as OpAffinity.

// Pin implements Driver: the local table, then one round trip to Redis
// (SET … PX per ref, pipelined), bounded by state.redis_timeout.
func (d *RedisDriver) Pin(ctx context.Context, upstream string, refs ...affinity.StateRef) {
	d.local.Pin(ctx, upstream, refs...)
	if upstream == "" || !d.r.up.Load() {
		if upstream != "" {
			d.r.fallback(OpAffinity)
		}
		return
	}
	rctx, cancel := d.r.opCtx(ctx)
	defer cancel()
	ttl := d.local.pins.TTL()
	pipe := d.r.rdb.Pipeline()
	n := 0
	for _, ref := range refs {
		if ref != "" {
			pipe.Set(rctx, d.r.keys.pin(ref), upstream, ttl)
			n++
		}
	}
	if n == 0 {
		return
	}
	_, err := pipe.Exec(rctx)
	d.r.result(ctx, OpAffinity, err)
}

// Holder implements Driver: one pipelined GET per ref (not an MGET: the
// keys may live in several Redis Cluster slots), one round trip bounded by
// state.redis_timeout; the local table when Redis is down, fails, or knows
// none of them.
func (d *RedisDriver) Holder(ctx context.Context, refs ...affinity.StateRef) (string, affinity.StateRef, bool) {
	keys := make([]string, 0, len(refs))
	asked := make([]affinity.StateRef, 0, len(refs))
	for _, ref := range refs {
		if ref != "" {
			keys, asked = append(keys, d.r.keys.pin(ref)), append(asked, ref)
		}
	}
	if len(keys) == 0 {
		return "", "", false
	}
	if !d.r.up.Load() {
		d.r.fallback(OpAffinity)
		return d.local.Holder(ctx, asked...)
	}
	rctx, cancel := d.r.opCtx(ctx)
	defer cancel()
	pipe := d.r.rdb.Pipeline()
	gets := make([]*redis.StringCmd, len(keys))
	for i, k := range keys {
		gets[i] = pipe.Get(rctx, k)
	}
	if !d.r.result(ctx, OpAffinity, pipeErr(pipe.Exec(rctx))) {
		return d.local.Holder(ctx, asked...)
	}
	for i, g := range gets {
		if up := g.Val(); up != "" {
			return up, asked[i], true
		}
	}
	return d.local.Holder(ctx, asked...)
}
