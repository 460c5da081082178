package state

import (
	"context"
	"encoding/json"

	"switchyard/internal/affinity"
)

// The Responses conversations the gateway continues itself
// (docs/routing.md#responses-chains-the-gateway-keeps) shared through Redis:
// one string key per response, prefix + "conv:" + its id, holding the
// affinity.Conversation as JSON and expiring after affinity.response_ttl (the
// TTL of the local table the driver wraps); and per client key a set,
// prefix + "convkey:" + the key's name, of the response ids it kept, so that
// deleting the key deletes them (ForgetKey). Every conversation is written
// through to the local table too, which answers while Redis is down and for
// what was kept while it was. Every call counts as OpAffinity.

// Keep implements Driver: the local table, then one round trip to Redis
// (SET … PX, SADD, PEXPIRE, pipelined), bounded by state.redis_timeout.
func (d *RedisDriver) Keep(ctx context.Context, id string, c affinity.Conversation) {
	d.local.Keep(ctx, id, c)
	if id == "" || len(id) > affinity.MaxStateIDLen {
		return
	}
	if !d.r.up.Load() {
		d.r.fallback(OpAffinity)
		return
	}
	val, err := json.Marshal(c)
	if err != nil {
		return // a bug: Conversation always marshals
	}
	rctx, cancel := d.r.opCtx(ctx)
	defer cancel()
	ttl := d.local.convs.TTL()
	pipe := d.r.rdb.Pipeline()
	pipe.Set(rctx, d.r.keys.conversation(id), val, ttl)
	pipe.SAdd(rctx, d.r.keys.conversations(c.Key), id)
	pipe.PExpire(rctx, d.r.keys.conversations(c.Key), ttl)
	_, err = pipe.Exec(rctx)
	d.r.result(ctx, OpAffinity, err)
}

// Conversation implements Driver: one GET, bounded by state.redis_timeout;
// the local table when Redis is down, fails, or holds nothing for id.
func (d *RedisDriver) Conversation(ctx context.Context, id string) (affinity.Conversation, bool) {
	if id == "" || len(id) > affinity.MaxStateIDLen {
		return affinity.Conversation{}, false
	}
	if !d.r.up.Load() {
		d.r.fallback(OpAffinity)
		return d.local.Conversation(ctx, id)
	}
	rctx, cancel := d.r.opCtx(ctx)
	defer cancel()
	val, err := d.r.rdb.Get(rctx, d.r.keys.conversation(id)).Bytes()
	if !d.r.result(ctx, OpAffinity, err) || len(val) == 0 {
		return d.local.Conversation(ctx, id)
	}
	var c affinity.Conversation
	if json.Unmarshal(val, &c) != nil {
		return d.local.Conversation(ctx, id)
	}
	return c, true
}

// ForgetKey implements Driver: the local table, then the conversations
// Redis indexes under key (SMEMBERS, then one DEL of them and the set).
func (d *RedisDriver) ForgetKey(ctx context.Context, key string) {
	d.local.ForgetKey(ctx, key)
	if !d.r.up.Load() {
		d.r.fallback(OpAffinity)
		return
	}
	rctx, cancel := d.r.opCtx(ctx)
	defer cancel()
	idx := d.r.keys.conversations(key)
	ids, err := d.r.rdb.SMembers(rctx, idx).Result()
	if !d.r.result(ctx, OpAffinity, err) {
		return
	}
	pipe := d.r.rdb.Pipeline()
	for _, id := range ids {
		pipe.Del(rctx, d.r.keys.conversation(id))
	}
	pipe.Del(rctx, idx)
	_, err = pipe.Exec(rctx)
	d.r.result(ctx, OpAffinity, err)
}
