-- defer_store_delete: remember a delete the durable store could not take yet.
-- KEYS: [1] state  [2] visible  [3] payload  [4] receipt  [5] inflight  [6] delayed
--       [7] recent_deletes  [8] cqs:due (per server)  [9] listening  [10] store_deletes
--       [11] cqs:store_delete_queues (per server)  [12] fifo  [13] group_locks  [14] dedup
--       [15] dedup_expiry  [16] sequence  [17] attempts  [18] attempt_expiry
--       -- the same eighteen for every queue script (keys.py)
-- ARGV: [1] queue name  [2] message id
-- Returns: 1.
-- The id joins the queue's store_deletes (fills skip it) and the queue joins the server's
-- cqs:store_delete_queues, where the retrying flusher finds it.
redis.call('SADD', KEYS[10], ARGV[2])
redis.call('SADD', KEYS[11], ARGV[1])
return 1
