-- receive: hand out up to max_count visible messages and hide them until now + timeout.
-- KEYS: [1] state  [2] visible  [3] payload  [4] receipt  [5] inflight  [6] delayed
--       [7] recent_deletes  [8] cqs:due (per server)  [9] listening  [10] store_deletes
--       [11] cqs:store_delete_queues (per server)  [12] fifo  [13] group_locks  [14] dedup
--       [15] dedup_expiry  [16] sequence  [17] attempts  [18] attempt_expiry
--       -- the same eighteen for every queue script (keys.py)
-- ARGV: [1] now ms  [2] visibility timeout ms (0 = stays visible)  [3] retention ms
--       [4] max count  [5] queue name  [6] arrivals channel
--       [7] max receive count of the queue's RedrivePolicy (0 = none)
--       [8..] one receipt nonce per delivery, in order
-- Returns: nil if the queue is not ready; otherwise two arrays:
--          [1] six values per delivery: id, payload (JSON), receive count, first receive ms,
--              receipt nonce, 1 if it was loaded by a fill and not received since (else 0);
--          [2] two values per dead letter: id, payload. A dead letter is a message already
--              received max-receive-count times: it is removed from the cache instead of
--              being delivered, for the caller to move to the dead-letter queue.
-- Due in-flight and delayed messages (up to 1000) become visible first. Messages older
-- than the retention period are dropped as they are popped (up to 1000 per call). When due
-- messages became visible here and some are left after this receive, the queue name is
-- published on the arrivals channel if a long poll listens (the sweep will not see them).
--!include _common.lua
if redis.call('GET', KEYS[1]) ~= 'ready' then
  return false
end
local now, timeout, retention, max_count, queue, max_receives = receive_arguments()
local moved = move_due(ARGV[1], 1000)
if moved > 0 then
  rescore_due(queue)
end

local deliveries = {}
local dead_letters = {}
local still_visible = {}
local delivered = 0
local skip_budget = 1000
while delivered < max_count and skip_budget > 0 do
  local id = redis.call('LPOP', KEYS[2])
  if not id then
    break
  end
  local receipt = read_receipt(id)
  local payload = redis.call('HGET', KEYS[3], id)
  if not (payload and receipt) or tonumber(receipt.sent) + retention <= now then
    -- expired (or half-written): forget it instead of delivering it
    forget_message(id)
    skip_budget = skip_budget - 1
  elseif max_receives > 0 and tonumber(receipt.receives) >= max_receives then
    redis.call('HDEL', KEYS[3], id)
    redis.call('HDEL', KEYS[4], id)
    dead_letters[#dead_letters + 1] = id
    dead_letters[#dead_letters + 1] = payload
    skip_budget = skip_budget - 1
  else
    delivered = delivered + 1
    hand_out(deliveries, id, payload, receipt, ARGV[7 + delivered], ARGV[1])
    if timeout > 0 then
      redis.call('ZADD', KEYS[5], ms(now + timeout), id)
    else
      still_visible[#still_visible + 1] = id
    end
  end
end

-- pushed back only now, so this call does not pop them twice; first delivered at the head
push_visible(still_visible, true)
if delivered > 0 and timeout > 0 then
  note_due(ms(now + timeout), queue)
end
if moved > 0 and redis.call('LLEN', KEYS[2]) > 0 then
  announce(ARGV[6], queue)
end
return {deliveries, dead_letters}
