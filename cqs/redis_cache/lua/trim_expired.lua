-- trim_expired: drop visible messages older than the retention period from the head.
-- KEYS: [1] state  [2] visible  [3] payload  [4] receipt  [5] inflight  [6] delayed
--       [7] recent_deletes  [8] cqs:due (per server)  [9] listening  [10] store_deletes
--       [11] cqs:store_delete_queues (per server)  [12] fifo  [13] group_locks  [14] dedup
--       [15] dedup_expiry  [16] sequence  [17] attempts  [18] attempt_expiry
--       -- the same eighteen for every queue script (keys.py)
-- ARGV: [1] now ms  [2] retention ms  [3] at most this many messages
-- Returns: how many messages were dropped.
-- Pops from the head while the head message was sent at least the retention period ago
-- (or is half-written); stops at the first live one. The head holds the oldest sends and
-- the messages back from flight (a FIFO queue's head: its lowest sequence numbers, the
-- oldest sends), so one pass finds most expired messages cheaply.
--!include _common.lua
local now = tonumber(ARGV[1])
local retention = tonumber(ARGV[2])
local budget = tonumber(ARGV[3])
local dropped = 0
while dropped < budget do
  local id
  if IS_FIFO then
    id = redis.call('ZRANGE', KEYS[2], 0, 0)[1]
  else
    id = redis.call('LINDEX', KEYS[2], 0)
  end
  if not id then
    break
  end
  local receipt = redis.call('HGET', KEYS[4], id)
  local sent = receipt and string.match(receipt, '^(%d+):')
  if sent and redis.call('HEXISTS', KEYS[3], id) == 1 and tonumber(sent) + retention > now then
    break
  end
  remove_visible(id)
  forget_message(id)
  dropped = dropped + 1
end
return dropped
