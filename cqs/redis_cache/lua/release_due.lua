-- release_due: make one queue's due in-flight and delayed messages visible (the sweep).
-- KEYS: [1] state  [2] visible  [3] payload  [4] receipt  [5] inflight  [6] delayed
--       [7] recent_deletes  [8] cqs:due (per server)  [9] listening  [10] store_deletes
--       [11] cqs:store_delete_queues (per server)  [12] fifo  [13] group_locks  [14] dedup
--       [15] dedup_expiry  [16] sequence  [17] attempts  [18] attempt_expiry
--       -- the same eighteen for every queue script (keys.py)
-- ARGV: [1] now ms  [2] at most this many messages  [3] queue name  [4] arrivals channel
-- Returns: how many messages became visible. The queue's cqs:due entry is set to its next
-- due time, or removed when nothing is hidden (still <= now if more than ARGV[2] were due).
-- When messages moved and a long poll listens, the queue name is published on the channel.
--!include _common.lua
local moved = move_due(ARGV[1], tonumber(ARGV[2]))
rescore_due(ARGV[3])
if moved > 0 then
  announce(ARGV[4], ARGV[3])
end
return moved
