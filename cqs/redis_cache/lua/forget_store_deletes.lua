-- forget_store_deletes: the durable store took these deletes; stop remembering them.
-- KEYS: [1] state  [2] visible  [3] payload  [4] receipt  [5] inflight  [6] delayed
--       [7] recent_deletes  [8] cqs:due (per server)  [9] listening  [10] store_deletes
--       [11] cqs:store_delete_queues (per server)  [12] fifo  [13] group_locks  [14] dedup
--       [15] dedup_expiry  [16] sequence  [17] attempts  [18] attempt_expiry
--       -- the same eighteen for every queue script (keys.py)
-- ARGV: [1] queue name  [2..] message ids (none: only tidy the index)
-- Returns: how many ids were forgotten.
-- The queue leaves cqs:store_delete_queues once its store_deletes set is empty.
local forgotten = 0
if #ARGV > 1 then
  forgotten = redis.call('SREM', KEYS[10], unpack(ARGV, 2))
end
if redis.call('SCARD', KEYS[10]) == 0 then
  redis.call('SREM', KEYS[11], ARGV[1])
end
return forgotten
