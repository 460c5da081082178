-- admit: may one request be sent to an upstream now? Checks, in order, the
-- breaker, the 429 cooldown, the RPM and TPM windows and the concurrency
-- leases (and the queue in front of them); when all pass it counts the
-- request, reserves its tokens, takes a lease and, in half-open, claims the
-- single probe slot — all in one atomic step. The breaker's generation
-- ('gen', advanced by every state change; see settle.lua) comes back with an
-- admission: the attempt's outcome counts only in that generation.
--
-- The queue is a sorted set whose scores the caller computes
-- (limits.Score, in Go: by class, then fair across teams and keys, or
-- fifo): this script only hands a free slot to the lowest scores. A
-- request that would have to wait first gets {0, 'join', V, F, non-batch
-- waiting, waiting, team, R}: its class's virtual time, its flow's finish
-- tag and refund total from the fair hashes, the counts limits.Shed
-- decides on and, for a key of a team, the team's flow hash in its class
-- (field by field) for limits.JoinTags; it asks again with its score, its
-- flow's new finish tag and its start tag to join (or gets the join reply
-- again, when the flow's finish tag moved meanwhile), and with its score
-- (which ages, and moves with its flow's refunds: limits.Start) on every
-- later call, whose 'full' reply brings its flow's refund total R. Joining
-- records the flow's finish tag (and, for a team's key, its weight); a
-- slot handed over advances the class's virtual time to the start tag.
-- The tags are Go's: this script stores and returns them, it does not
-- read them. leave.lua refunds a request that gives up.
--
-- KEYS: 1 breaker hash, 2 cooldown, 3 rpm zset, 4 tpm hash, 5 lease zset,
--       6 queue zset (score: limits.Score), 7 window hash, 8 fair hash
--       (v:<class> → virtual time; f:<flow> → finish tag and r:<flow> →
--       refund total of a key of no team), 9 joined zset (queue entries by
--       the time they joined, to sweep abandoned ones), 10 the flow hash:
--       the fair hash for a key of no team, else its team's in its class
--       (f:<key> → finish tag, w:<key> → weight, r:<key> → refund total)
-- ARGV: 1 now ms, 2 ticket id, 3 tokens, 4 rpm limit, 5 tpm limit,
--       6 max concurrency, 7 lease ms, 8 probe interval ms, 9 probe lease ms
--       (how long a claimed probe whose outcome never comes blocks the next;
--       probe_interval still spaces them),
--       10 queue: 0 none, 1 wait in it, 11 queue max length, 12 queue timeout ms,
--       13 ttl ms of the breaker and statistics keys, 14 probe only: 1 asks
--       the breaker alone (the active prober): nothing else is checked or counted,
--       15 score ('' before joining), 16 class field (v:<class>),
--       17 finish tag field (in KEYS[10]), 18 the flow's new finish tag,
--       19 start tag, 20 non-batch bound (scores below it are not batch),
--       21 the flow's finish tag the tags were computed from, 22 team: 1
--       returns the flow hash in the join reply, 23 weight field ('': none),
--       24 weight, 25 refund total field
-- Returns {1, probe, in_flight, generation}, {0, reason, wait ms[, R]} or
-- the join reply above; reason is one of breaker, cooldown, rpm, tpm, full,
-- queue_full.
local now = tonumber(ARGV[1])
local id = ARGV[2]
local tokens = tonumber(ARGV[3])
local rpm, tpm, maxc = tonumber(ARGV[4]), tonumber(ARGV[5]), tonumber(ARGV[6])
local lease, pint, plea = tonumber(ARGV[7]), tonumber(ARGV[8]), tonumber(ARGV[9])
local queued, qmax, qtimeout = ARGV[10] == '1', tonumber(ARGV[11]), tonumber(ARGV[12])
local keep = tonumber(ARGV[13])
local probeOnly = ARGV[14] == '1'
local score, vfield, ffield = ARGV[15], ARGV[16], ARGV[17]

-- breaker
local b = redis.call('HMGET', KEYS[1], 'st', 'until', 'pnext', 'pheld', 'gen')
local st = b[1] or ''
local gen = tonumber(b[5]) or 0
local probe = 0
if st == 'open' then
  local untl = tonumber(b[2]) or 0
  if now < untl then return {0, 'breaker', untl - now} end
  gen = redis.call('HINCRBY', KEYS[1], 'gen', 1)
  redis.call('HSET', KEYS[1], 'st', 'half', 'succ', 0, 'pheld', 0)
  st = 'half'
  b[4] = '0'
end
if st == 'half' then
  local pnext, pheld = tonumber(b[3]) or 0, tonumber(b[4]) or 0
  if pheld > now then return {0, 'breaker', math.max(pnext - now, 1)} end
  if now < pnext then return {0, 'breaker', pnext - now} end
  probe = 1
end

if probeOnly then
  if probe == 1 then
    redis.call('HSET', KEYS[1], 'pheld', now + plea, 'pnext', now + pint)
    redis.call('PEXPIRE', KEYS[1], keep)
  end
  return {1, probe, 0, gen}
end

-- 429 cooldown
local cd = redis.call('PTTL', KEYS[2])
if cd > 0 then return {0, 'cooldown', cd} end

-- request and token windows (60 s)
local since = now - 60000
if rpm > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[3], '-inf', since)
  if redis.call('ZCARD', KEYS[3]) >= rpm then
    local oldest = redis.call('ZRANGE', KEYS[3], 0, 0, 'WITHSCORES')
    return {0, 'rpm', math.max(tonumber(oldest[2]) + 60000 - now, 1)}
  end
end
local sec = math.floor(now / 1000)
if tpm > 0 then
  local used, first = 0, nil
  local h = redis.call('HGETALL', KEYS[4])
  for i = 1, #h, 2 do
    local s = tonumber(h[i])
    if s <= sec - 60 then
      redis.call('HDEL', KEYS[4], h[i])
    else
      used = used + tonumber(h[i + 1])
      if first == nil or s < first then first = s end
    end
  end
  -- A request larger than the whole limit passes on an empty window, as
  -- the local limiter lets it.
  if used > 0 and used + tokens > tpm then
    return {0, 'tpm', math.max((first + 60) * 1000 - now, 1)}
  end
end

-- concurrency leases, and the queue in front of them
local inflight = 0
if maxc > 0 then
  redis.call('ZREMRANGEBYSCORE', KEYS[5], '-inf', now)
  local stale = now - qtimeout - lease
  for _, old in ipairs(redis.call('ZRANGEBYSCORE', KEYS[9], '-inf', stale)) do
    redis.call('ZREM', KEYS[6], old)
  end
  redis.call('ZREMRANGEBYSCORE', KEYS[9], '-inf', stale)
  if score ~= '' then redis.call('ZADD', KEYS[6], 'XX', score, id) end
  inflight = redis.call('ZCARD', KEYS[5])
  local free = maxc - inflight
  local rank = redis.call('ZRANK', KEYS[6], id)
  local waiting = redis.call('ZCARD', KEYS[6])
  if rank == false then
    -- Not queued: a slot is free only if nobody waits for one.
    if free <= 0 or waiting > 0 then
      if not queued then return {0, 'full', 0} end
      if waiting >= qmax then return {0, 'queue_full', 0} end
      local v = redis.call('HGET', KEYS[8], vfield) or '0'
      local f = redis.call('HGET', KEYS[10], ffield) or ''
      -- Before joining, and whenever another request of the flow joined
      -- since the caller read its tag (ARGV 21), the caller computes its
      -- tags afresh.
      if score == '' or f ~= ARGV[21] then
        local team = {}
        if ARGV[22] == '1' then team = redis.call('HGETALL', KEYS[10]) end
        return {0, 'join', v, f,
          redis.call('ZCOUNT', KEYS[6], '-inf', '(' .. ARGV[20]), waiting, team,
          redis.call('HGET', KEYS[10], ARGV[25]) or '0'}
      end
      redis.call('ZADD', KEYS[6], score, id)
      redis.call('ZADD', KEYS[9], now, id)
      redis.call('PEXPIRE', KEYS[6], qtimeout + lease * 2)
      redis.call('PEXPIRE', KEYS[9], qtimeout + lease * 2)
      redis.call('HSET', KEYS[10], ffield, ARGV[18])
      if ARGV[23] ~= '' then redis.call('HSET', KEYS[10], ARGV[23], ARGV[24]) end
      redis.call('PEXPIRE', KEYS[10], keep)
      return {0, 'full', 0}
    end
  elseif rank >= free then
    return {0, 'full', 0, redis.call('HGET', KEYS[10], ARGV[25]) or '0'}
  else
    redis.call('ZREM', KEYS[6], id)
    redis.call('ZREM', KEYS[9], id)
    if tonumber(ARGV[19]) > (tonumber(redis.call('HGET', KEYS[8], vfield)) or 0) then
      redis.call('HSET', KEYS[8], vfield, ARGV[19])
      redis.call('PEXPIRE', KEYS[8], keep)
    end
  end
  redis.call('ZADD', KEYS[5], now + lease, id)
  redis.call('PEXPIRE', KEYS[5], lease * 2)
  inflight = inflight + 1
end

-- admitted: count it
if rpm > 0 then
  redis.call('ZADD', KEYS[3], now, id)
  redis.call('PEXPIRE', KEYS[3], 61000)
end
if tpm > 0 and tokens > 0 then
  redis.call('HINCRBY', KEYS[4], sec, tokens)
  redis.call('PEXPIRE', KEYS[4], 61000)
end
if redis.call('HINCRBY', KEYS[7], sec, 1) == 1 then
  -- a new second: drop the buckets that have left the window, or steady
  -- traffic (which keeps refreshing the TTL) would grow the hash for ever
  for _, f in ipairs(redis.call('HKEYS', KEYS[7])) do
    if tonumber(f) <= sec - 60 then redis.call('HDEL', KEYS[7], f) end
  end
end
redis.call('PEXPIRE', KEYS[7], 61000)
if probe == 1 then
  redis.call('HSET', KEYS[1], 'pheld', now + plea, 'pnext', now + pint)
  redis.call('PEXPIRE', KEYS[1], keep)
end
return {1, probe, inflight, gen}
