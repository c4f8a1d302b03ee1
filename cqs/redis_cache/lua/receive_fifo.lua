-- receive_fifo: hand out up to max_count messages of a FIFO queue, group by group.
-- KEYS: [1] state  [2] visible  [3] payload  [4] receipt  [5] inflight  [6] delayed
--       [7] recent_deletes  [8] cqs:due (per server)  [9] listening  [10] store_deletes
--       [11] cqs:store_delete_queues (per server)  [12] fifo  [13] group_locks  [14] dedup
--       [15] dedup_expiry  [16] sequence  [17] attempts  [18] attempt_expiry
--       -- the same eighteen for every queue script (keys.py)
-- ARGV: [1] now ms  [2] visibility timeout ms (0 = stays visible)  [3] retention ms
--       [4] max count  [5] queue name  [6] arrivals channel
--       [7] max receive count of the queue's RedrivePolicy (0 = none)
--       [8] ReceiveRequestAttemptId ('' = none)  [9] how long an attempt id is kept, ms
--       [10..] one receipt nonce per delivery, in order
-- Returns: nil if the queue is not ready; otherwise two arrays:
--          [1] six values per delivery: id, payload (JSON), receive count, first receive
--              ms, receipt nonce, 1 if it was loaded by a fill and not received since (else 0);
--          [2] two values per dead letter: id, payload (received max-receive-count times:
--              removed from the cache for the caller to move to the dead-letter queue).
-- Order: the visible set is scored by sequence number, so messages of a group leave in
-- sequence order whatever order they were cached in (a refill loads them in store order).
-- A group's visible messages are handed out only up to its first message in flight
-- (group_locks): one back from flight before it is served again, those after it wait, as
-- SQS does. Groups are served in the order of their oldest visible message,
-- each as far as max_count allows ("as many messages of the same group as possible"). The
-- scan looks at the 1000 visible messages with the lowest sequence numbers.
-- An attempt id seen before, whose messages are still in flight under that receive's
-- nonces, gets the same messages again (same receive count, same nonce) and nothing else.
-- Due messages (up to 1000) become visible first, as in receive.lua.
--!include _common.lua
if redis.call('GET', KEYS[1]) ~= 'ready' then
  return false
end
local now, timeout, retention, max_count, queue, max_receives = receive_arguments()
local attempt = ARGV[8]

if attempt ~= '' then
  local lapsed = redis.call('ZRANGEBYSCORE', KEYS[18], '-inf', now, 'LIMIT', 0, 1000)
  if #lapsed > 0 then
    redis.call('HDEL', KEYS[17], unpack(lapsed))
    redis.call('ZREM', KEYS[18], unpack(lapsed))
  end
  local earlier = redis.call('HGET', KEYS[17], attempt)
  if earlier then
    local again = {}
    for id, nonce in string.gmatch(earlier, '([^,:]+):([^,]*)') do
      local receipt = redis.call('HGET', KEYS[4], id)
      local payload = redis.call('HGET', KEYS[3], id)
      if receipt and payload and redis.call('ZSCORE', KEYS[5], id)
          and receipt_nonce(receipt) == nonce then
        local receives, first = string.match(receipt, '^%d+:(%d+):(%d+):')
        again[#again + 1] = id
        again[#again + 1] = payload
        again[#again + 1] = tonumber(receives)
        again[#again + 1] = tonumber(first)
        again[#again + 1] = nonce
        again[#again + 1] = 0
      end
    end
    if #again > 0 then
      return {again, {}}
    end
  end
end

local moved = move_due(ARGV[1], 1000)
if moved > 0 then
  rescore_due(queue)
end

local window = redis.call('ZRANGE', KEYS[2], 0, 999)
local leaving = {}  -- ids that leave the visible set
local groups = {}   -- groups in the order of their oldest visible message
local candidates = {}  -- group -> ids, in sequence order
local bounds = {}  -- group -> its first sequence number in flight, or false (read once)
for _, id in ipairs(window) do
  local sequence, group = fifo_entry(id)
  if not group then
    forget_message(id)  -- half-written
    leaving[#leaving + 1] = id
  else
    if bounds[group] == nil then
      bounds[group] = group_bound(group) or false
    end
    if not bounds[group] or tonumber(sequence) < bounds[group] then
      if not candidates[group] then
        candidates[group] = {}
        groups[#groups + 1] = group
      end
      local list = candidates[group]
      list[#list + 1] = id
    end
  end
end

local deliveries = {}
local dead_letters = {}
local delivered = 0
local handed = {}
for _, group in ipairs(groups) do
  if delivered >= max_count then
    break
  end
  for _, id in ipairs(candidates[group]) do
    if delivered >= max_count then
      break
    end
    local receipt = read_receipt(id)
    local payload = redis.call('HGET', KEYS[3], id)
    if not (payload and receipt) or tonumber(receipt.sent) + retention <= now then
      forget_message(id)  -- expired or half-written: dropped, the group goes on
      leaving[#leaving + 1] = id
    elseif max_receives > 0 and tonumber(receipt.receives) >= max_receives then
      dead_letters[#dead_letters + 1] = id
      dead_letters[#dead_letters + 1] = payload
      forget_message(id)
      leaving[#leaving + 1] = id
    else
      delivered = delivered + 1
      local nonce = ARGV[9 + delivered]
      hand_out(deliveries, id, payload, receipt, nonce, ARGV[1])
      if timeout > 0 then
        redis.call('ZADD', KEYS[5], ms(now + timeout), id)
        lock_group(id, 1)
        leaving[#leaving + 1] = id
      end
      handed[#handed + 1] = id .. ':' .. nonce
    end
  end
end

if #leaving > 0 then
  redis.call('ZREM', KEYS[2], unpack(leaving))
end
if delivered > 0 and timeout > 0 then
  note_due(ms(now + timeout), queue)
end
if attempt ~= '' and delivered > 0 then
  redis.call('HSET', KEYS[17], attempt, table.concat(handed, ','))
  redis.call('ZADD', KEYS[18], ms(now + tonumber(ARGV[9])), attempt)
  redis.call('PEXPIRE', KEYS[17], 2 * tonumber(ARGV[9]))
  redis.call('PEXPIRE', KEYS[18], 2 * tonumber(ARGV[9]))
end
if moved > 0 and visible_count() > 0 then
  announce(ARGV[6], queue)
end
return {deliveries, dead_letters}
