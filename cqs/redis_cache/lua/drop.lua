-- drop: forget the queue's cache entirely (state and messages).
-- KEYS: [1] state  [2] visible  [3] payload  [4] receipt  [5] inflight  [6] delayed
--       [7] recent_deletes  [8] cqs:due (per server)  [9] listening  [10] store_deletes
--       [11] cqs:store_delete_queues (per server)  [12] fifo  [13] group_locks  [14] dedup
--       [15] dedup_expiry  [16] sequence  [17] attempts  [18] attempt_expiry
--       -- the same eighteen for every queue script (keys.py)
-- ARGV: [1] queue name
-- Returns: 1.
-- Keeps listening, store_deletes and the FIFO deduplication entries and sequence: a cache dropped to be refilled must still skip, and
-- the store must still take, the deletes it could not take yet.
redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[12], KEYS[13])
redis.call('ZREM', KEYS[8], ARGV[1])
return 1
