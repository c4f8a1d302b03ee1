-- load: during a fill, cache messages read from the durable store.
-- KEYS: [1] state  [2] visible  [3] payload  [4] receipt  [5] inflight  [6] delayed
--       [7] fill_deleted  [8] cqs:due (per server)  -- the same eight for every queue script
-- ARGV: [1] now ms  [2] queue name, then per message four values:
--       id, sent_timestamp_ms, visible_at_ms, payload (JSON)
-- Returns: how many messages were added. Messages already cached or deleted since the fill
--          began are skipped; nothing is added unless the queue is filling.
--!include _common.lua
if not is_filling(redis.call('GET', KEYS[1])) then
  return 0
end
local now = tonumber(ARGV[1])
local added = 0
for index = 3, #ARGV, 4 do
  if redis.call('SISMEMBER', KEYS[7], ARGV[index]) == 0 then
    added = added + add_message(now, ARGV[2], ARGV[index], ARGV[index + 1], ARGV[index + 2], ARGV[index + 3])
  end
end
return added
