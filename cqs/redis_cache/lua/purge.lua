-- purge: remove every message of the queue, keeping its state.
-- KEYS: [1] state  [2] visible  [3] payload  [4] receipt  [5] inflight  [6] delayed
--       [7] recent_deletes  [8] cqs:due (per server)  [9] listening  [10] store_deletes
--       [11] cqs:store_delete_queues (per server)  [12] fifo  [13] group_locks  [14] dedup
--       [15] dedup_expiry  [16] sequence  [17] attempts  [18] attempt_expiry
--       -- the same eighteen for every queue script (keys.py)
-- ARGV: [1] queue name
-- Returns: 1.
-- Keeps listening and store_deletes (those deletes must still reach the durable store), the
-- FIFO sequence (numbers keep growing) and attempts. Removes the FIFO deduplication entries,
-- as SQS forgets the deduplication ids of purged messages: a send repeating one afterwards is
-- a new message (the durable store drops its deduplication records first).
redis.call('DEL', KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[12], KEYS[13],
  KEYS[14], KEYS[15])
redis.call('ZREM', KEYS[8], ARGV[1])
return 1
