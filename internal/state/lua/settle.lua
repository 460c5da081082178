-- settle: one attempt has ended. Gives its lease back, corrects its token
-- reservation, starts a 429 cooldown, feeds the breaker and folds the
-- measurements into the shared EWMAs — all in one atomic step.
--
-- Generations (health.Breakers does the same): every state change of the
-- breaker — a trip, the end of the open period, closing — advances its
-- 'gen'. admit.lua hands each attempt the generation it was admitted in,
-- and the outcome feeds the breaker only in that generation: a stream sent
-- before a trip that ends in half-open is not taken for the probe's result.
--
-- KEYS: 1 breaker hash, 2 failure zset, 3 cooldown, 4 tpm hash, 5 lease zset,
--       6 queue zset, 7 statistics hash
-- ARGV: 1 now ms, 2 ticket id, 3 outcome (s success, f failure, a auth
--       error, n neutral), 4 reason, 5 reservation's tpm bucket (s),
--       6 token correction, 7 cooldown ms, 8 failure threshold,
--       9 failure window ms, 10 open ms, 11 success threshold, 12 latency ms,
--       13 ttft ms, 14 tokens/s, 15 alpha, 16 ttl ms of the breaker and
--       statistics keys, 17 cooldown reason, 18 the trip reason of a failed
--       half-open probe (4 is the trip reason while closed; both come from
--       health.TripReason, so that both implementations word them alike),
--       19 probe only: 1 feeds the breaker alone (the active prober),
--       20 the generation the attempt was admitted in (-1: none, as for an
--       attempt admitted while Redis could not be asked: it never counts)
-- Returns the breaker transition: '' (none), 'open', 'half' or 'closed'.
local now, id, outcome, reason = tonumber(ARGV[1]), ARGV[2], ARGV[3], ARGV[4]
local bucket, delta, cool = ARGV[5], tonumber(ARGV[6]), tonumber(ARGV[7])
local threshold, window, open = tonumber(ARGV[8]), tonumber(ARGV[9]), tonumber(ARGV[10])
local succNeeded = tonumber(ARGV[11])
local lat, ttft, tps, alpha = tonumber(ARGV[12]), tonumber(ARGV[13]), tonumber(ARGV[14]), tonumber(ARGV[15])
local keep = tonumber(ARGV[16])
local probeReason, probeOnly = ARGV[18], ARGV[19] == '1'
local admittedIn = tonumber(ARGV[20])

redis.call('ZREM', KEYS[5], id)
redis.call('ZREM', KEYS[6], id)
if delta ~= 0 and redis.call('HEXISTS', KEYS[4], bucket) == 1 then
  redis.call('HINCRBY', KEYS[4], bucket, delta)
end
if cool > 0 and redis.call('PTTL', KEYS[3]) < cool then
  redis.call('SET', KEYS[3], ARGV[17], 'PX', cool)
end

-- breaker
-- trip opens the breaker for its next, doubled open period. The trip count
-- restarts once the breaker has stayed closed for a full window: only a
-- trip from closed can find that (health.Breakers does the same).
local function trip(why, fromClosed)
  local b = redis.call('HMGET', KEYS[1], 'trips', 'closed')
  local trips, closed = tonumber(b[1]) or 0, tonumber(b[2]) or 0
  if fromClosed and closed > 0 and now - closed >= window then trips = 0 end
  trips = trips + 1
  local d = open * math.min(2 ^ (trips - 1), 10)
  redis.call('HINCRBY', KEYS[1], 'gen', 1)
  redis.call('HSET', KEYS[1], 'st', 'open', 'until', now + d, 'trips', trips, 'reason', why, 'pheld', 0, 'succ', 0)
  redis.call('DEL', KEYS[2])
  return 'open'
end
local transition = ''
local b = redis.call('HMGET', KEYS[1], 'st', 'until', 'gen')
local st, gen = b[1] or '', tonumber(b[3]) or 0
if st == 'open' then
  local untl = tonumber(b[2]) or 0
  if now >= untl then
    gen = redis.call('HINCRBY', KEYS[1], 'gen', 1)
    redis.call('HSET', KEYS[1], 'st', 'half', 'succ', 0, 'pheld', 0)
    st, transition = 'half', 'half'
  end
end
if admittedIn ~= gen then
  -- of an earlier generation (or none): counts nowhere
elseif st == '' then
  if outcome == 'a' then
    transition = trip(reason, true)
  elseif outcome == 'f' then
    redis.call('ZADD', KEYS[2], now, id)
    redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - window)
    redis.call('PEXPIRE', KEYS[2], window)
    local n = redis.call('ZCARD', KEYS[2])
    if n >= threshold then
      transition = trip(reason, true)
    end
  end
elseif st == 'half' then
  if outcome == 's' then
    local succ = redis.call('HINCRBY', KEYS[1], 'succ', 1)
    redis.call('HSET', KEYS[1], 'pheld', 0)
    if succ >= succNeeded then
      redis.call('HINCRBY', KEYS[1], 'gen', 1)
      redis.call('HSET', KEYS[1], 'st', '', 'closed', now, 'reason', '', 'succ', 0)
      transition = 'closed'
    end
  elseif outcome == 'a' then
    transition = trip(reason, false)
  elseif outcome == 'f' then
    transition = trip(probeReason, false)
  else
    redis.call('HSET', KEYS[1], 'pheld', 0)
  end
end
if redis.call('EXISTS', KEYS[1]) == 1 then redis.call('PEXPIRE', KEYS[1], keep) end

if probeOnly then return transition end

-- statistics
local function ewma(field, x)
  if x <= 0 then return end
  local old = tonumber(redis.call('HGET', KEYS[7], field)) or 0
  if old == 0 then
    redis.call('HSET', KEYS[7], field, x)
  else
    redis.call('HSET', KEYS[7], field, alpha * x + (1 - alpha) * old)
  end
end
ewma('lat', lat)
ewma('ttft', ttft)
ewma('tps', tps)
if outcome == 'f' or outcome == 'a' then
  redis.call('HINCRBY', KEYS[7], 'fails', 1)
  redis.call('HSET', KEYS[7], 'lastfail', now)
elseif outcome == 's' then
  redis.call('HSET', KEYS[7], 'fails', 0)
end
redis.call('PEXPIRE', KEYS[7], keep)
return transition
