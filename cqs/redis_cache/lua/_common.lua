-- Shared helpers, pasted by scripts.py where a script asks for this file by name.
-- They use the KEYS layout every queue script shares:
--   KEYS[1] state  KEYS[2] visible  KEYS[3] payload  KEYS[4] receipt
--   KEYS[5] inflight  KEYS[6] delayed  KEYS[7] recent_deletes  KEYS[8] cqs:due (per server)
--   KEYS[9] listening  KEYS[10] store_deletes  KEYS[11] cqs:store_delete_queues (per server)
--   KEYS[12] fifo  KEYS[13] group_locks  KEYS[14] dedup  KEYS[15] dedup_expiry
--   KEYS[16] sequence  KEYS[17] attempts  KEYS[18] attempt_expiry  (FIFO queues only)

-- A FIFO queue's name ends in ".fifo" (names are validated so): its visible key is a sorted
-- set of ids scored by sequence number, where a standard queue's is a list in send order.
local IS_FIFO = string.sub(KEYS[1], -12) == '.fifo}:state'

-- The arguments both receive scripts take first (ARGV[1..7], in their headers): now,
-- visibility timeout, retention and max count as numbers, the queue name, and the max
-- receive count of its RedrivePolicy (0 = none). ARGV[6], the arrivals channel, stays text.
local function receive_arguments()
  return tonumber(ARGV[1]), tonumber(ARGV[2]), tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5],
    tonumber(ARGV[7])
end

-- Milliseconds as an integer string (Lua would print large numbers in %.14g).
local function ms(value)
  return string.format('%d', value)
end

local function is_filling(state)
  return state ~= false and state ~= nil and string.sub(state, 1, 8) == 'filling:'
end

-- How long a deleted id is remembered once the cache is READY (recent_deletes): longer than
-- any store write of the delete that follows it in the caller (bounded by the Cassandra
-- request timeout, 5 s by default), so a reset and fill in between cannot reload it.
local RECENT_DELETE_MS = 60000

local function forget_old_deletes(now)
  redis.call('ZREMRANGEBYSCORE', KEYS[7], '-inf', '(' .. ms(now - RECENT_DELETE_MS))
end

-- The nonce of a visible message loaded by a fill and not handed out since: its first
-- delivery from this cache may repeat one made before the cache was lost (a "refill" in
-- the redelivery counters). Never a receive's nonce (those are hex).
local RELOADED_NONCE = '~'

-- The nonce of the latest receive, from "<sent_ms>:<receive_count>:<first_receive_ms>:<nonce>".
local function receipt_nonce(receipt)
  return string.match(receipt, '^%d+:%d+:%d+:(.*)$')
end

-- A message's receipt entry as fields (sent, receives, first, nonce: the strings stored),
-- or nil for a message without a whole one (half-written).
local function read_receipt(id)
  local entry = redis.call('HGET', KEYS[4], id)
  local sent, receives, first, nonce
  if entry then
    sent, receives, first, nonce = string.match(entry, '^(%d+):(%d+):(%d+):(.*)$')
  end
  if not sent then
    return nil
  end
  return {sent = sent, receives = receives, first = first, nonce = nonce}
end

-- Hand a message out under `nonce` at `now_text` (ARGV's text of now): one more receive,
-- now its first one if it had none, written back to its receipt entry and appended to
-- `deliveries` as the six fields the adapter reads (id, payload, receive count, first
-- receive, nonce, 1 if its previous nonce was RELOADED_NONCE).
local function hand_out(deliveries, id, payload, receipt, nonce, now_text)
  local receives = tonumber(receipt.receives) + 1
  local first = receipt.first
  if first == '0' then
    first = now_text
  end
  redis.call('HSET', KEYS[4], id, receipt.sent .. ':' .. receives .. ':' .. first .. ':' .. nonce)
  deliveries[#deliveries + 1] = id
  deliveries[#deliveries + 1] = payload
  deliveries[#deliveries + 1] = receives
  deliveries[#deliveries + 1] = tonumber(first)
  deliveries[#deliveries + 1] = nonce
  deliveries[#deliveries + 1] = receipt.nonce == RELOADED_NONCE and 1 or 0
end

-- Whether a handle with `nonce` may act on an in-flight message with this receipt. An empty
-- stored nonce (loaded in flight after an outage, handed out from the store) matches any.
local function handle_matches(receipt, nonce)
  local stored = receipt_nonce(receipt)
  return stored == '' or stored == nonce
end

-- Tell every process's `arrivals` that the queue has visible messages, if a long poll
-- listens on it (ARGV names the channel: channels are not keys). A channel with a hash tag
-- is the queue's own shard channel under Redis Cluster (SPUBLISH reaches the subscribers
-- of the queue's slot only); otherwise it is the server's channel.
local function announce(channel, queue)
  if redis.call('EXISTS', KEYS[9]) == 1 then
    if string.find(channel, '{', 1, true) then
      redis.call('SPUBLISH', channel, queue)
    else
      redis.call('PUBLISH', channel, queue)
    end
  end
end

-- Lower the queue's entry in cqs:due to `at` (ZADD LT adds it when missing).
local function note_due(at, queue)
  redis.call('ZADD', KEYS[8], 'LT', at, queue)
end

-- Set the queue's entry in cqs:due to its earliest in-flight or delayed time, or remove it.
local function rescore_due(queue)
  local first_inflight = redis.call('ZRANGE', KEYS[5], 0, 0, 'WITHSCORES')
  local first_delayed = redis.call('ZRANGE', KEYS[6], 0, 0, 'WITHSCORES')
  local earliest = first_inflight[2]
  if first_delayed[2] and (not earliest or tonumber(first_delayed[2]) < tonumber(earliest)) then
    earliest = first_delayed[2]
  end
  if earliest then
    redis.call('ZADD', KEYS[8], earliest, queue)
  else
    redis.call('ZREM', KEYS[8], queue)
  end
end

-- Forget a cached message: its payload, receipt and FIFO entry.
local function forget_message(id)
  redis.call('HDEL', KEYS[3], id)
  redis.call('HDEL', KEYS[4], id)
  redis.call('HDEL', KEYS[12], id)
end

-- group_locks holds, per message group, the sequence numbers of its messages in flight,
-- ascending, each after a comma (",<n>,<n>"). A value without a comma is a count written
-- by an earlier cqs: it is counted down as before, and holds the whole group meanwhile.
local function is_count(held)
  return string.find(held, ',', 1, true) == nil
end

-- A FIFO message's sequence number and group, from its "<sequence>:<group>" entry in
-- fifo; nothing for a message without one (half-written).
local function fifo_entry(id)
  local entry = redis.call('HGET', KEYS[12], id)
  if entry then
    return string.match(entry, '^(%d+):(.*)$')
  end
  return nil, nil
end

-- A FIFO message went in flight (+1) or left flight (-1): add or remove its sequence number.
local function lock_group(id, delta)
  local sequence, group = fifo_entry(id)
  if not group then
    return
  end
  local held = redis.call('HGET', KEYS[13], group)
  if held and is_count(held) then
    if redis.call('HINCRBY', KEYS[13], group, delta) <= 0 then
      redis.call('HDEL', KEYS[13], group)
    end
    return
  end
  local kept = {}
  local number = tonumber(sequence)
  local placed = false
  for other in string.gmatch(held or '', '%d+') do
    local value = tonumber(other)
    if delta > 0 and not placed and number <= value then
      kept[#kept + 1] = sequence
      placed = true
    end
    if value ~= number then
      kept[#kept + 1] = other
    end
  end
  if delta > 0 and not placed then
    kept[#kept + 1] = sequence
  end
  if #kept == 0 then
    redis.call('HDEL', KEYS[13], group)
  else
    redis.call('HSET', KEYS[13], group, ',' .. table.concat(kept, ','))
  end
end

-- The lowest sequence number of a group's messages in flight (0 for an earlier cqs's
-- count: the whole group is held), or nil when none is in flight. A receive serves the
-- group's visible messages below it only: those after an in-flight one wait for it.
local function group_bound(group)
  local held = redis.call('HGET', KEYS[13], group)
  if not held then
    return nil
  end
  if is_count(held) then
    return 0
  end
  return tonumber(string.match(held, '^,(%d+)'))
end

-- Make messages visible: a standard queue's at the head (back from flight, the first of
-- `ids` first) or at the tail; a FIFO queue's in sequence order wherever they came from.
local function push_visible(ids, at_head)
  if #ids == 0 then
    return
  end
  if IS_FIFO then
    for _, id in ipairs(ids) do
      local entry = redis.call('HGET', KEYS[12], id)
      local sequence = entry and string.match(entry, '^(%d+):')
      if sequence then
        redis.call('ZADD', KEYS[2], sequence, id)
      end
    end
  elseif at_head then
    local reversed = {}
    for index = #ids, 1, -1 do
      reversed[#reversed + 1] = ids[index]
    end
    redis.call('LPUSH', KEYS[2], unpack(reversed))
  else
    redis.call('RPUSH', KEYS[2], unpack(ids))
  end
end

-- Take one message out of the visible messages; returns how many were removed (0 or 1).
local function remove_visible(id)
  if IS_FIFO then
    return redis.call('ZREM', KEYS[2], id)
  end
  return redis.call('LREM', KEYS[2], 1, id)
end

local function visible_count()
  if IS_FIFO then
    return redis.call('ZCARD', KEYS[2])
  end
  return redis.call('LLEN', KEYS[2])
end

-- Make up to `limit` due messages visible: in-flight ones back at the head (earliest due
-- first), delayed ones at the tail. Returns how many moved.
local function move_due(now, limit)
  local moved = 0
  local returning = redis.call('ZRANGEBYSCORE', KEYS[5], '-inf', now, 'LIMIT', 0, limit)
  if #returning > 0 then
    redis.call('ZREM', KEYS[5], unpack(returning))
    for _, id in ipairs(returning) do
      lock_group(id, -1)
    end
    push_visible(returning, true)
    moved = #returning
  end
  if moved < limit then
    local deliverable = redis.call('ZRANGEBYSCORE', KEYS[6], '-inf', now, 'LIMIT', 0, limit - moved)
    if #deliverable > 0 then
      redis.call('ZREM', KEYS[6], unpack(deliverable))
      push_visible(deliverable, false)
      moved = moved + #deliverable
    end
  end
  return moved
end

-- Remove a message from wherever the cache holds it (in flight, delayed or visible) and
-- forget it; a message the store no longer holds. Returns whether it was cached.
local function remove_anywhere(id)
  if redis.call('HEXISTS', KEYS[3], id) == 0 then
    return false
  end
  if redis.call('ZREM', KEYS[5], id) == 1 then
    lock_group(id, -1)
  elseif redis.call('ZREM', KEYS[6], id) == 0 then
    remove_visible(id)
  end
  forget_message(id)
  return true
end

-- If the message is cached visible, move it in flight until `until_ms` (after now) with an
-- empty nonce (any handle matches): a message handed out from the store. Returns whether
-- it moved.
local function hide_visible(now, id, until_ms, queue)
  if tonumber(until_ms) <= now or remove_visible(id) == 0 then
    return false
  end
  local receipt = redis.call('HGET', KEYS[4], id)
  local sent_ms = receipt and string.match(receipt, '^(%d+):') or ms(now)
  redis.call('HSET', KEYS[4], id, sent_ms .. ':1:' .. ms(now) .. ':')
  redis.call('ZADD', KEYS[5], until_ms, id)
  lock_group(id, 1)
  note_due(until_ms, queue)
  return true
end

-- Cache one message unless its id is already cached: in flight until `hidden_until` when
-- that is after now (loaded by a fill; receive count 1, no nonce), else delayed until
-- `visible_at_ms` when that is after now, else visible at the tail. A FIFO message (group
-- not empty) also gets its fifo entry, and the queue's sequence is raised to its number.
-- `reloaded`: loaded by a fill (its nonce is RELOADED_NONCE until it is received).
-- Returns 'inflight', 'delayed' or 'visible' where it went, or false if already cached or
-- deleted lately (recent_deletes).
local function add_message(now, queue, id, sent_ms, visible_at_ms, hidden_until, payload,
                           group, sequence, reloaded)
  -- A deleted message never comes back: not from a fill that read it before the store's
  -- delete landed, nor from a sender's add that reached Redis late (a timed-out command
  -- the kernel still delivered once a cut link healed, after the message was delivered
  -- and deleted).
  if redis.call('ZSCORE', KEYS[7], id) then
    return false
  end
  if redis.call('HSETNX', KEYS[3], id, payload) == 0 then
    return false
  end
  if group ~= '' then
    redis.call('HSET', KEYS[12], id, sequence .. ':' .. group)
    local last = redis.call('GET', KEYS[16])
    if not last or tonumber(last) < tonumber(sequence) then
      redis.call('SET', KEYS[16], sequence)
    end
  end
  if tonumber(hidden_until) > now then
    redis.call('HSET', KEYS[4], id, sent_ms .. ':1:' .. ms(now) .. ':')
    redis.call('ZADD', KEYS[5], hidden_until, id)
    lock_group(id, 1)
    note_due(hidden_until, queue)
    return 'inflight'
  end
  redis.call('HSET', KEYS[4], id, sent_ms .. ':0:0:' .. (reloaded and RELOADED_NONCE or ''))
  if tonumber(visible_at_ms) > now then
    redis.call('ZADD', KEYS[6], visible_at_ms, id)
    note_due(visible_at_ms, queue)
    return 'delayed'
  end
  push_visible({id}, false)
  return 'visible'
end
