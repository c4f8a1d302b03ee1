-- abandon: give up FIFO admissions whose send could not be stored.
-- KEYS: [1] state  [2] visible  [3] payload  [4] receipt  [5] inflight  [6] delayed
--       [7] recent_deletes  [8] cqs:due (per server)  [9] listening  [10] store_deletes
--       [11] cqs:store_delete_queues (per server)  [12] fifo  [13] group_locks  [14] dedup
--       [15] dedup_expiry  [16] sequence  [17] attempts  [18] attempt_expiry
--       -- the same eighteen for every queue script (keys.py)
-- ARGV: pairs: dedup field, message id
-- Returns: how many entries were removed. An entry is removed only while it is still the
-- pending admission of that message id (a stored entry, or another send's, stays).
local removed = 0
for index = 1, #ARGV, 2 do
  local entry = redis.call('HGET', KEYS[14], ARGV[index])
  local id, stored
  if entry then
    id, stored = string.match(entry, '^(.*):%d+:([01])$')
  end
  if id == ARGV[index + 1] and stored == '0' then
    redis.call('HDEL', KEYS[14], ARGV[index])
    redis.call('ZREM', KEYS[15], ARGV[index])
    removed = removed + 1
  end
end
return removed
