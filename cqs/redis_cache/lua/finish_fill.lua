-- finish_fill: FILLING -> READY if the caller still holds the lease.
-- KEYS: [1] state  [2] visible  [3] payload  [4] receipt  [5] inflight  [6] delayed
--       [7] recent_deletes  [8] cqs:due (per server)  [9] listening  [10] store_deletes
--       [11] cqs:store_delete_queues (per server)  [12] fifo  [13] group_locks  [14] dedup
--       [15] dedup_expiry  [16] sequence  [17] attempts  [18] attempt_expiry
--       -- the same eighteen for every queue script (keys.py)
-- ARGV: [1] the filling state value ("filling:<owner>")  [2] now ms  [3] queue name
--       [4] how many ids follow that the store no longer holds, then those ids (messages
--       kept in flight through the refill and deleted meanwhile), then pairs: id,
--       hidden_until_ms — messages the caller handed out from the store while it filled
--       (after their page was loaded as visible)
-- Returns: 1 if the queue is now ready, 0 if the lease was lost.
-- Each listed message still in the visible list is moved in flight until its time, with
-- an empty nonce (any handle matches), so it is not delivered again before its timeout.
--!include _common.lua
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
local now = tonumber(ARGV[2])
local gone = tonumber(ARGV[4])
for index = 5, 4 + gone do
  remove_anywhere(ARGV[index])
end
for index = 5 + gone, #ARGV, 2 do
  hide_visible(now, ARGV[index], ARGV[index + 1], ARGV[3])
end
redis.call('SET', KEYS[1], 'ready')  -- a plain SET also drops the lease's expiry
forget_old_deletes(now)
return 1
