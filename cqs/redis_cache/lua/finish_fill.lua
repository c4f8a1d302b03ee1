-- finish_fill: FILLING -> READY if the caller still holds the lease.
-- KEYS: [1] state  [2] visible  [3] payload  [4] receipt  [5] inflight  [6] delayed
--       [7] fill_deleted  [8] cqs:due (per server)  [9] listening  [10] store_deletes
--       [11] cqs:store_delete_queues (per server)  -- the same eleven for every queue script
-- ARGV: [1] the filling state value ("filling:<owner>")
-- Returns: 1 if the queue is now ready, 0 if the lease was lost.
if redis.call('GET', KEYS[1]) ~= ARGV[1] then
  return 0
end
redis.call('SET', KEYS[1], 'ready')  -- a plain SET also drops the lease's expiry
redis.call('DEL', KEYS[7])
return 1
