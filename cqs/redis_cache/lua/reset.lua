-- reset: the queue's cache missed writes; make it ABSENT, to be refilled from the store.
-- KEYS: [1] state  [2] visible  [3] payload  [4] receipt  [5] inflight  [6] delayed
--       [7] recent_deletes  [8] cqs:due (per server)  [9] listening  [10] store_deletes
--       [11] cqs:store_delete_queues (per server)  [12] fifo  [13] group_locks  [14] dedup
--       [15] dedup_expiry  [16] sequence  [17] attempts  [18] attempt_expiry
--       -- the same eighteen for every queue script (keys.py)
-- ARGV: [1] queue name  [2] 1 to make the cache ABSENT now, 0 for a first batch of ids,
--       then ids of messages deleted in the store while the cache missed the delete
-- Returns: how many of those ids the cache still held (now removed).
-- Unlike `drop`, the messages stay until the next `begin_fill`, which keeps a standard
-- queue's messages in flight: a consumer's delivery is not handed out again by the refill.
-- A FIFO queue's cache is dropped whole, as `drop` does. Recent deletes stay remembered
-- (recent_deletes): the next fill skips them.
--!include _common.lua
local removed = 0
for index = 3, #ARGV do
  if remove_anywhere(ARGV[index]) then
    removed = removed + 1
  end
end
if ARGV[2] == '1' then
  if IS_FIFO then
    redis.call('DEL', KEYS[1], KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[12], KEYS[13])
    redis.call('ZREM', KEYS[8], ARGV[1])
  else
    redis.call('DEL', KEYS[1])
  end
end
return removed
