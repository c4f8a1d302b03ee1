-- load: during the caller's fill, cache messages read from the durable store.
-- KEYS: [1] state  [2] visible  [3] payload  [4] receipt  [5] inflight  [6] delayed
--       [7] recent_deletes  [8] cqs:due (per server)  [9] listening  [10] store_deletes
--       [11] cqs:store_delete_queues (per server)  [12] fifo  [13] group_locks  [14] dedup
--       [15] dedup_expiry  [16] sequence  [17] attempts  [18] attempt_expiry
--       -- the same eighteen for every queue script (keys.py)
-- ARGV: [1] now ms  [2] queue name  [3] the filling state value ("filling:<owner>"),
--       then per message seven values: id, sent_timestamp_ms, visible_at_ms,
--       hidden_until_ms (0 = not hidden), payload (JSON), message group id and sequence
--       number ('' and '' on standard queues)
-- Returns: how many messages were added, or -1 (nothing added) unless the state is the
--          caller's fill. Skipped: ids already cached, deleted lately or since the fill
--          began (recent_deletes) or waiting for their store delete (store_deletes).
-- A message hidden until after now goes in flight until then, with receive count 1, first
-- receive now and an empty nonce (any handle may delete it or change its visibility).
-- Others are marked reloaded until received (see RELOADED_NONCE).
--!include _common.lua
if redis.call('GET', KEYS[1]) ~= ARGV[3] then
  return -1
end
local now = tonumber(ARGV[1])
local added = 0
for index = 4, #ARGV, 7 do
  local id = ARGV[index]
  local skipped = redis.call('SISMEMBER', KEYS[10], id) == 1
  if not skipped and add_message(
      now, ARGV[2], id, ARGV[index + 1], ARGV[index + 2], ARGV[index + 3], ARGV[index + 4],
      ARGV[index + 5], ARGV[index + 6], true) then
    added = added + 1
  end
end
return added
