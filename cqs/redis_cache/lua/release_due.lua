-- release_due: make one queue's due in-flight and delayed messages visible (the sweep).
-- KEYS: [1] state  [2] visible  [3] payload  [4] receipt  [5] inflight  [6] delayed
--       [7] fill_deleted  [8] cqs:due (per server)  -- the same eight for every queue script
-- ARGV: [1] now ms  [2] at most this many messages  [3] queue name
-- Returns: how many messages became visible. The queue's cqs:due entry is set to its next
-- due time, or removed when nothing is hidden (still <= now if more than ARGV[2] were due).
--!include _common.lua
local moved = move_due(ARGV[1], tonumber(ARGV[2]))
rescore_due(ARGV[3])
return moved
