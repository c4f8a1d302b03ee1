-- delete: remove messages unless they were received again since the caller's receive
-- (then nothing changes: SQS answers such a delete with success and keeps the message).
-- A FIFO queue's message is removed only through the handle of a receive whose visibility
-- timeout has not run out: SQS refuses any other ("The receipt handle has expired."),
-- unless a fill reloaded the message and nobody received it since.
-- One call deletes a whole DeleteMessageBatch: one round trip instead of one per entry.
-- KEYS: [1] state  [2] visible  [3] payload  [4] receipt  [5] inflight  [6] delayed
--       [7] recent_deletes  [8] cqs:due (per server)  [9] listening  [10] store_deletes
--       [11] cqs:store_delete_queues (per server)  [12] fifo  [13] group_locks  [14] dedup
--       [15] dedup_expiry  [16] sequence  [17] attempts  [18] attempt_expiry
--       -- the same eighteen for every queue script (keys.py)
-- ARGV: [1] now ms, then pairs of [message id, receipt nonce from the caller's handle]
-- Returns: one of 'deleted', 'not_cached', 'stale_handle' or (FIFO queues) 'expired_handle'
--          (DeleteOutcome values) per pair.
-- An in-flight message matches the handle when its stored nonce equals the handle's or is
-- empty (loaded in flight by a fill after an outage: the handle came from the store).
-- Every deleted id is remembered (recent_deletes) so that neither a fill nor a delivery from
-- the store brings it back: the store's own delete comes after this one and may land after
-- they read the message, and a reset may come between the two. While the cache is READY,
-- ids older than RECENT_DELETE_MS are let go (every store write has ended by then); while
-- it is not, all stay until the fill finishes.
-- cqs:due is left as is: an early entry costs the sweep one visit, never a late delivery.
--!include _common.lua
local ready = redis.call('GET', KEYS[1]) == 'ready'
local now = tonumber(ARGV[1])
if ready then
  forget_old_deletes(now)
end

local function delete_one(id, nonce)
  local receipt = redis.call('HGET', KEYS[4], id)
  local in_flight = receipt and redis.call('ZSCORE', KEYS[5], id)
  -- A message reloaded by a fill and not received since may hold a live handle from
  -- before the cache was lost: its delete still counts (else a duplicate delivery).
  if IS_FIFO and receipt and receipt_nonce(receipt) ~= RELOADED_NONCE
      and not (in_flight and tonumber(in_flight) > now and handle_matches(receipt, nonce)) then
    return 'expired_handle'  -- visible again, received again since, or its timeout is over
  end
  if in_flight and not handle_matches(receipt, nonce) then
    return 'stale_handle'  -- nothing remembered: the current holder's delete still counts
  end
  redis.call('ZADD', KEYS[7], now, id)
  if not receipt then
    return 'not_cached'
  end
  if in_flight then
    redis.call('ZREM', KEYS[5], id)
    lock_group(id, -1)
  elseif redis.call('ZREM', KEYS[6], id) == 0 then
    -- visible: messages back from flight sit near the head, so the scan stops early
    remove_visible(id)
  end
  forget_message(id)
  return 'deleted'
end

local outcomes = {}
for index = 2, #ARGV, 2 do
  outcomes[#outcomes + 1] = delete_one(ARGV[index], ARGV[index + 1])
end
return outcomes
