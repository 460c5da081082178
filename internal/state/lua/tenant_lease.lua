-- tenant_lease: may one more request of a client key or a team be in
-- flight now (keys[].max_concurrency, teams[].max_concurrency)? The
-- requests in flight are leases in a sorted set scored by their expiry, as
-- an upstream's are (admit.lua): the holder renews them every lease_ttl/3
-- and removes its own when the request ends, so a dead instance's leases
-- free their slots within lease_ttl.
--
-- KEYS: 1 lease sorted set (lease id → expiry ms)
-- ARGV: 1 now ms, 2 lease id, 3 limit, 4 lease ttl ms
-- Returns 1 when the lease is taken, 0 when limit live leases hold every slot.
local now, limit, ttl = tonumber(ARGV[1]), tonumber(ARGV[3]), tonumber(ARGV[4])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) >= limit then
  return 0
end
redis.call('ZADD', KEYS[1], now + ttl, ARGV[2])
redis.call('PEXPIRE', KEYS[1], ttl * 2)
return 1
