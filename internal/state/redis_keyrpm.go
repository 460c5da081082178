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
	if rpm <= 0 {
		return true, 0
	}
	ok, wait, shared := d.r.AllowKey(ctx, key, rpm)
	if !shared {
		return d.local.AllowKey(ctx, key, rpm)
	}
	if ok {
		d.local.keys.Allow(key, rpm)
	}
	return ok, wait
}

// AllowKey counts one request of the client key named key against rpm in
// Redis (key_rpm.lua); shared is false when Redis could not be asked.
func (r *Redis) AllowKey(ctx context.Context, key string, rpm int) (ok bool, retryAfter time.Duration, shared bool) {
	if !r.up.Load() {
		r.fallback(OpAdmit)
		return false, 0, false
	}
	rctx, cancel := r.opCtx(ctx)
	defer cancel()
	res, err := keyRPMScript.Run(rctx, r.rdb, []string{r.prefix + "key:{" + key + "}:rpm"}, r.nowMs(), rpm).Slice()
	if !r.result(ctx, OpAdmit, err) || len(res) != 2 {
		return false, 0, false
	}
	if n, _ := res[0].(int64); n == 1 {
		return true, 0, true
	}
	ms, _ := res[1].(int64)
	return false, time.Duration(ms) * time.Millisecond, true
}
