-- change_visibility: move an in-flight message's return time.
-- KEYS: [1] state  [2] visible  [3] payload  [4] receipt  [5] inflight  [6] delayed
--       [7] fill_deleted  [8] cqs:due (per server)  [9] listening  [10] store_deletes
--       [11] cqs:store_delete_queues (per server)  [12] fifo  [13] group_locks  [14] dedup
--       [15] dedup_expiry  [16] sequence  [17] attempts  [18] attempt_expiry
--       -- the same eighteen for every queue script (keys.py)
-- ARGV: [1] message id  [2] receipt nonce  [3] new visible-at ms  [4] now ms  [5] queue name
--       [6] arrivals channel
-- Returns: 'changed' or 'not_in_flight' (VisibilityOutcome values).
-- A message whose timeout has passed counts as visible even before the sweep moves it.
-- Any handle of the message counts, even one from an earlier receive (ARGV[2] is unused):
-- SQS applies ChangeMessageVisibility with an old receipt handle to the message.
-- visible-at <= now puts the message back at the head of the visible list (and publishes
-- the queue name on the arrivals channel if a long poll listens).
--!include _common.lua
local id = ARGV[1]
local score = redis.call('ZSCORE', KEYS[5], id)
if not score then
  return 'not_in_flight'
end
if not redis.call('HGET', KEYS[4], id) then
  return 'not_in_flight'
end
local now = tonumber(ARGV[4])
if tonumber(score) <= now then
  return 'not_in_flight'
end
if tonumber(ARGV[3]) <= now then
  redis.call('ZREM', KEYS[5], id)
  lock_group(id, -1)
  push_visible({id}, true)
  announce(ARGV[6], ARGV[5])
else
  redis.call('ZADD', KEYS[5], 'XX', ARGV[3], id)
  note_due(ARGV[3], ARGV[5])
end
return 'changed'
