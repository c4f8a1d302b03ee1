-- add: cache newly sent messages when the queue is ready or filling.
-- KEYS: [1] state  [2] visible  [3] payload  [4] receipt  [5] inflight  [6] delayed
--       [7] recent_deletes  [8] cqs:due (per server)  [9] listening  [10] store_deletes
--       [11] cqs:store_delete_queues (per server)  [12] fifo  [13] group_locks  [14] dedup
--       [15] dedup_expiry  [16] sequence  [17] attempts  [18] attempt_expiry
--       -- the same eighteen for every queue script (keys.py)
-- ARGV: [1] now ms  [2] queue name  [3] arrivals channel  [4] deduplication interval ms,
--       then per message seven values: id, sent_timestamp_ms, visible_at_ms, payload (JSON),
--       message group id, sequence number, dedup field (the last three '' on standard queues)
-- Returns: 1 if the cache took the messages (ids already cached or deleted lately are
--          skipped),
--          0 if the state is absent (nothing added: the fill will load them).
-- FIFO: the dedup entry of each message (admitted as pending by admit.lua) is marked stored
-- and lapses one deduplication interval after now, whatever the state: the message is in
-- the durable store, so a send with the same deduplication id is now a duplicate.
-- Publishes the queue name on the arrivals channel when a message became visible and a
-- long poll listens on the queue.
--!include _common.lua
local now = tonumber(ARGV[1])
for index = 5, #ARGV, 7 do
  local field = ARGV[index + 6]
  if field ~= '' then
    redis.call('HSET', KEYS[14], field, ARGV[index] .. ':' .. ARGV[index + 5] .. ':1')
    redis.call('ZADD', KEYS[15], ms(now + tonumber(ARGV[4])), field)
  end
end
local state = redis.call('GET', KEYS[1])
if state ~= 'ready' and not is_filling(state) then
  return 0
end
local any_visible = false
for index = 5, #ARGV, 7 do
  local placed = add_message(
    now, ARGV[2], ARGV[index], ARGV[index + 1], ARGV[index + 2], 0, ARGV[index + 3],
    ARGV[index + 4], ARGV[index + 5], false)
  any_visible = any_visible or placed == 'visible'
end
if any_visible then
  announce(ARGV[3], ARGV[2])
end
return 1
