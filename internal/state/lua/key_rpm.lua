-- key_rpm: may one more request of a client key go now? The key's requests
-- are counted in 1 s buckets over a sliding 60 s window, as
-- limits.KeyLimiter counts them in process: a request counts until the
-- start of the 60th bucket after its own; a refused one does not count.
--
-- The same window counts a team's requests, or a key's or a team's
-- estimated tokens (ARGV 3), as limits.KeyLimiter.AllowN: n larger than
-- the whole limit passes on an empty window.
--
-- KEYS: 1 bucket hash (second → requests)
-- ARGV: 1 now ms, 2 limit (rpm), 3 n (default 1)
-- Returns {1, 0} when counted, or {0, wait ms} until the window has room.
local now, rpm = tonumber(ARGV[1]), tonumber(ARGV[2])
local n = tonumber(ARGV[3] or '1')
local sec = math.floor(now / 1000)
local h = redis.call('HGETALL', KEYS[1])
local used, live = 0, {}
for i = 1, #h, 2 do
  local s, n = tonumber(h[i]), tonumber(h[i + 1])
  if s <= sec - 60 then
    redis.call('HDEL', KEYS[1], h[i])
  else
    used = used + n
    live[#live + 1] = {s, n}
  end
end
if used == 0 or used + n <= rpm then
  redis.call('HINCRBY', KEYS[1], sec, n)
  redis.call('PEXPIRE', KEYS[1], 61000)
  return {1, 0}
end
table.sort(live, function(a, b) return a[1] < b[1] end)
local need, sum = used + n - rpm, 0
for _, b in ipairs(live) do
  sum = sum + b[2]
  if sum >= need then return {0, math.max((b[1] + 60) * 1000 - now, 1)} end
end
return {0, 60000}
