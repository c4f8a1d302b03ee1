-- add: cache newly sent messages when the queue is ready or filling.
-- KEYS: [1] state  [2] visible  [3] payload  [4] receipt  [5] inflight  [6] delayed
--       [7] fill_deleted  [8] cqs:due (per server)  [9] listening  [10] store_deletes
--       [11] cqs:store_delete_queues (per server)  -- the same eleven for every queue script
-- ARGV: [1] now ms  [2] queue name  [3] arrivals channel, then per message four values:
--       id, sent_timestamp_ms, visible_at_ms, payload (JSON)
-- Returns: 1 if the cache took the messages (ids already cached are skipped),
--          0 if the state is absent (nothing added: the fill will load them).
-- Publishes the queue name on the arrivals channel when a message became visible and a
-- long poll listens on the queue.
--!include _common.lua
local state = redis.call('GET', KEYS[1])
if state ~= 'ready' and not is_filling(state) then
  return 0
end
local now = tonumber(ARGV[1])
local any_visible = false
for index = 4, #ARGV, 4 do
  local placed = add_message(
    now, ARGV[2], ARGV[index], ARGV[index + 1], ARGV[index + 2], 0, ARGV[index + 3])
  any_visible = any_visible or placed == 'visible'
end
if any_visible then
  announce(ARGV[3], ARGV[2])
end
return 1
