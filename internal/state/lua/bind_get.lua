-- bind_get: the upstream a session is bound to (its home) and its
-- stand-in ('' when none), if the binding is live;
-- a hit marks it used (the sliding TTL restarts), an expired one is removed.
--
-- KEYS: 1 binding hash
-- ARGV: 1 now ms, 2 sliding ms (0 = none), 3 absolute ms (0 = none)
-- Returns {home, stand-in}, or false.
local now, sliding, absolute = tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3])
local b = redis.call('HMGET', KEYS[1], 'up', 'created', 'used', 'stand')
if not b[1] then return false end
local created, used = tonumber(b[2]), tonumber(b[3])
if (sliding > 0 and now - used >= sliding) or (absolute > 0 and now - created >= absolute) then
  redis.call('DEL', KEYS[1])
  return false
end
redis.call('HSET', KEYS[1], 'used', now)
local ttl = 0
if sliding > 0 then ttl = sliding end
if absolute > 0 and (ttl == 0 or created + absolute - now < ttl) then ttl = created + absolute - now end
if ttl > 0 then redis.call('PEXPIRE', KEYS[1], ttl) end
return {b[1], b[4] or ''}
