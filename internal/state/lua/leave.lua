-- leave: a queued request gives up (its queue timeout, its caller gone):
-- it leaves the queue and, if it was still in it, gives its flow back what
-- its joining charged (limits.Refund, docs/routing.md#tenants-classes-and-fair-queueing):
-- the flow's finish tag moves back and its refund total forward, both by
-- the amount Go computed. Nothing is refunded for an entry already gone
-- (admitted, or swept as abandoned).
--
-- KEYS: 1 queue zset, 2 joined zset, 3 the flow hash (admit.lua's KEYS[10])
-- ARGV: 1 ticket id, 2 finish tag field, 3 refund total field, 4 the amount
--       ('' when the request had not joined: nothing to refund)
-- Returns 1 when the request was in the queue, else 0.
local gone = redis.call('ZREM', KEYS[1], ARGV[1])
redis.call('ZREM', KEYS[2], ARGV[1])
if gone == 1 and ARGV[4] ~= '' then
  redis.call('HINCRBYFLOAT', KEYS[3], ARGV[2], -tonumber(ARGV[4]))
  redis.call('HINCRBYFLOAT', KEYS[3], ARGV[3], ARGV[4])
end
return gone
