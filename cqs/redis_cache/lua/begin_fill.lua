-- begin_fill: ABSENT -> FILLING for one owner, clearing whatever messages a previous
-- incarnation of the cache left behind.
-- KEYS: [1] state  [2] visible  [3] payload  [4] receipt  [5] inflight  [6] delayed
--       [7] fill_deleted  [8] cqs:due (per server)  [9] listening  [10] store_deletes
--       [11] cqs:store_delete_queues (per server)  [12] fifo  [13] group_locks  [14] dedup
--       [15] dedup_expiry  [16] sequence  [17] attempts  [18] attempt_expiry
--       -- the same eighteen for every queue script (keys.py)
-- ARGV: [1] the filling state value ("filling:<owner>")  [2] lease in ms  [3] queue name
-- Returns: 1 if this owner now holds the fill lease, 0 if the state was not absent.
-- Keeps listening and store_deletes (the fill skips those ids), and the FIFO deduplication
-- entries and sequence (the fill merges the store's deduplication records into them).
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 0
end
redis.call('DEL', KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[7], KEYS[12], KEYS[13])
redis.call('ZREM', KEYS[8], ARGV[3])
return 1
