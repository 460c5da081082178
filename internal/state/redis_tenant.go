package state

import (
	"context"
	_ "embed" // the Lua script
	"sync/atomic"

	"github.com/redis/go-redis/v9"
)

var (
	//go:embed lua/tenant_lease.lua
	tenantLeaseLua    string
	tenantLeaseScript = redis.NewScript(tenantLeaseLua)
)

// AcquireTenant implements Driver. While Redis answers, the slots are
// every instance's: a request holds a lease in the counter's lease set
// (tenant_lease.lua, one round trip; one more to release it), renewed with
// the upstreams' leases (Renew), and this instance's local slots count it
// too, to decide alone should Redis go down. While Redis is down, or when
// the call fails, the local slots decide under the same limit, and the
// lease is registered in Redis once it answers again — as an upstream's.
func (d *RedisDriver) AcquireTenant(ctx context.Context, name string, limit int) (func(), bool) {
	if limit <= 0 {
		return d.local.AcquireTenant(ctx, name, limit)
	}
	e, ok, shared := d.r.acquireTenant(ctx, name, limit)
	if shared && !ok {
		return nil, false
	}
	local := limit
	if shared {
		local = 0 // Redis decided; the local slots only count
	}
	release, ok := d.local.tenants.TryAcquire(name, local)
	if !ok {
		return nil, false
	}
	d.r.holdEntry(e)
	l := &tenantLease{r: d.r, e: e, local: release}
	return l.release, true
}

// tenantLease is a key's or a team's slot taken through RedisDriver.
type tenantLease struct {
	r     *Redis
	e     entry  // the lease in Redis
	local func() // gives the local slot back
	done  atomic.Bool
}

// release gives the slot back, locally and in Redis; later calls do nothing.
func (l *tenantLease) release() {
	if !l.done.CompareAndSwap(false, true) {
		return
	}
	l.local()
	l.r.releaseTenant(l.e)
}

// acquireTenant takes a lease in the counter name's lease set when fewer
// than limit live leases are there: e is the lease (taken or not), ok
// whether it was taken, and shared is false when Redis could not be asked.
// The caller holds e (holdEntry) once the request may go.
func (r *Redis) acquireTenant(ctx context.Context, name string, limit int) (e entry, ok, shared bool) {
	e = entry{r.keys.counter(name, "conc"), r.newID()}
	if !r.up.Load() {
		r.fallback(OpTenant)
		return e, false, false
	}
	rctx, cancel := r.opCtx(ctx)
	defer cancel()
	n, err := tenantLeaseScript.Run(rctx, r.rdb, []string{e.key}, r.nowMs(), e.id, limit, r.lease.Milliseconds()).Int64()
	if !r.result(ctx, OpTenant, err) {
		return e, false, false
	}
	return e, n == 1, true
}

// releaseTenant removes lease e, taken by acquireTenant, from Redis; when
// Redis cannot be told, Renew removes it once Redis answers (or it expires
// within lease_ttl).
func (r *Redis) releaseTenant(e entry) {
	r.unhold(e.id)
	if !r.up.Load() {
		r.fallback(OpTenant)
		r.abandon(e, r.lease)
		return
	}
	ctx, cancel := r.opCtx(context.Background())
	defer cancel()
	err := r.rdb.ZRem(ctx, e.key, e.id).Err()
	if !r.result(context.Background(), OpTenant, err) {
		r.abandon(e, r.lease)
	}
}
