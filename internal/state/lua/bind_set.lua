-- bind_set: binds a session to an upstream, as affinity.Table's bind does.
-- As its home: rebinding to the same live upstream keeps the creation time
-- (the absolute TTL keeps running); another upstream, or an expired
-- binding, starts a new binding; either drops the stand-in. As its
-- stand-in: a live binding keeps its home and age and gets the stand-in;
-- without one the upstream becomes the home. The session's index set
-- lists its bindings for the admin API.
--
-- KEYS: 1 binding hash, 2 session index set
-- ARGV: 1 now ms, 2 upstream, 3 sliding ms (0 = none), 4 absolute ms
--       (0 = none), 5 the binding's key, as stored in the index,
--       6 "1" to bind the stand-in, "0" the home
local now, up, sliding, absolute = tonumber(ARGV[1]), ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4])
local b = redis.call('HMGET', KEYS[1], 'up', 'created', 'used')
local created, live = now, false
if b[1] then
  local c, u = tonumber(b[2]), tonumber(b[3])
  live = not ((sliding > 0 and now - u >= sliding) or (absolute > 0 and now - c >= absolute))
  if live and (b[1] == up or ARGV[6] == '1') then created = c end
end
if ARGV[6] == '1' and live then
  redis.call('HSET', KEYS[1], 'stand', up, 'used', now)
else
  redis.call('HSET', KEYS[1], 'up', up, 'created', created, 'used', now)
  redis.call('HDEL', KEYS[1], 'stand')
end
local ttl = 0
if sliding > 0 then ttl = sliding end
if absolute > 0 and (ttl == 0 or created + absolute - now < ttl) then ttl = created + absolute - now end
if ttl <= 0 then ttl = 86400000 end
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('SADD', KEYS[2], ARGV[5])
if redis.call('PTTL', KEYS[2]) < ttl then redis.call('PEXPIRE', KEYS[2], ttl) end
return 1
