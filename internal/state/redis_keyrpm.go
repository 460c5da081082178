package state

import (
	"context"
	_ "embed" // the Lua script
	"time"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/key_rpm.lua
	keyRPMLua    string
	keyRPMScript = redis.NewScript(keyRPMLua)
)

// AllowKey implements Driver: the client key's rpm counts across every
// instance while Redis answers (one round trip; the local window is fed
// too), and on this instance alone while it is down.
func (d *RedisDriver) AllowKey(ctx context.Context, key string, rpm int) (bool, time.Duration) {
	return d.AllowN(ctx, key, rpm, 1)
}

// AllowN implements Driver as AllowKey does, for any window.
func (d *RedisDriver) AllowN(ctx context.Context, name string, limit int, n int64) (bool, time.Duration) {
	if limit <= 0 {
		return true, 0
	}
	ok, wait, shared := d.r.AllowN(ctx, name, limit, n)
	if !shared {
		return d.local.AllowN(ctx, name, limit, n)
	}
	if ok {
		d.local.keys.AllowN(name, limit, n)
	}
	return ok, wait
}

// AllowKey counts one request of the client key named key against rpm in
// Redis (key_rpm.lua); shared is false when Redis could not be asked.
func (r *Redis) AllowKey(ctx context.Context, key string, rpm int) (ok bool, retryAfter time.Duration, shared bool) {
	return r.AllowN(ctx, key, rpm, 1)
}

// AllowN counts n in the window named name against limit in Redis
// (key_rpm.lua); shared is false when Redis could not be asked.
func (r *Redis) AllowN(ctx context.Context, name string, limit int, n int64) (ok bool, retryAfter time.Duration, shared bool) {
	if !r.up.Load() {
		r.fallback(OpAdmit)
		return false, 0, false
	}
	rctx, cancel := r.opCtx(ctx)
	defer cancel()
	res, err := keyRPMScript.Run(rctx, r.rdb, []string{r.keys.counter(name, "rpm")}, r.nowMs(), limit, n).Slice()
	if !r.result(ctx, OpAdmit, err) || len(res) != 2 {
		return false, 0, false
	}
	if n, _ := res[0].(int64); n == 1 {
		return true, 0, true
	}
	ms, _ := res[1].(int64)
	return false, time.Duration(ms) * time.Millisecond, true
}
