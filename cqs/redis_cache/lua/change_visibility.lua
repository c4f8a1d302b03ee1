-- change_visibility: move a received message's return time.
-- KEYS: [1] state  [2] visible  [3] payload  [4] receipt  [5] inflight  [6] delayed
--       [7] recent_deletes  [8] cqs:due (per server)  [9] listening  [10] store_deletes
--       [11] cqs:store_delete_queues (per server)  [12] fifo  [13] group_locks  [14] dedup
--       [15] dedup_expiry  [16] sequence  [17] attempts  [18] attempt_expiry
--       -- the same eighteen for every queue script (keys.py)
-- ARGV: [1] message id  [2] receipt nonce  [3] new visible-at ms  [4] now ms  [5] queue name
--       [6] arrivals channel
-- Returns: 'changed', 'not_in_flight' (visible to others, or delayed) or 'unknown' (not
--          cached: deleted, or gone with its retention) -- VisibilityOutcome values.
-- As SQS, a visibility change whose receive's timeout has already run out still applies
-- (a consumer's late heartbeat), as long as no receive has handed the message out since:
-- the message goes back in flight, or stays visible when the new time is not after now.
-- While in flight, any handle of the message counts, one from an earlier receive too
-- (SQS applies ChangeMessageVisibility with an old receipt handle to the message).
-- visible-at <= now puts the message back at the head of the visible list (and publishes
-- the queue name on the arrivals channel if a long poll listens).
--!include _common.lua
local id = ARGV[1]
local receipt = redis.call('HGET', KEYS[4], id)
if not receipt then
  return 'unknown'
end
local now = tonumber(ARGV[4])
local visible_at = tonumber(ARGV[3])
local score = redis.call('ZSCORE', KEYS[5], id)
if score and (tonumber(score) > now or handle_matches(receipt, ARGV[2])) then
  if visible_at <= now then
    redis.call('ZREM', KEYS[5], id)
    lock_group(id, -1)
    push_visible({id}, true)
    announce(ARGV[6], ARGV[5])
  else
    redis.call('ZADD', KEYS[5], 'XX', ARGV[3], id)
    note_due(ARGV[3], ARGV[5])
  end
  return 'changed'
end
-- Back among the visible messages: only the latest receive's handle may hide it again.
if score or receipt_nonce(receipt) ~= ARGV[2] or ARGV[2] == '' then
  return 'not_in_flight'
end
if visible_at <= now then
  return 'changed'
end
if remove_visible(id) == 0 then
  return 'not_in_flight'
end
redis.call('ZADD', KEYS[5], ARGV[3], id)
lock_group(id, 1)
note_due(ARGV[3], ARGV[5])
return 'changed'
