-- begin_fill: ABSENT -> FILLING for one owner, clearing whatever messages a previous
-- incarnation of the cache left behind, except a standard queue's messages in flight.
-- KEYS: [1] state  [2] visible  [3] payload  [4] receipt  [5] inflight  [6] delayed
--       [7] recent_deletes  [8] cqs:due (per server)  [9] listening  [10] store_deletes
--       [11] cqs:store_delete_queues (per server)  [12] fifo  [13] group_locks  [14] dedup
--       [15] dedup_expiry  [16] sequence  [17] attempts  [18] attempt_expiry
--       -- the same eighteen for every queue script (keys.py)
-- ARGV: [1] the filling state value ("filling:<owner>")  [2] lease in ms  [3] queue name
-- Returns: 1 if this owner now holds the fill lease, 0 if the state was not absent.
-- Keeps listening, store_deletes and recent_deletes (the fill skips those ids), and the
-- FIFO deduplication entries and sequence (the fill merges the store's deduplication
-- records into them).
-- A standard queue's in-flight messages keep their payload, receipt (with the holder's
-- nonce) and time: a cache dropped to be refilled (`reset`) must not hand out again what
-- a consumer holds. The fill skips ids already cached, and removes at its end those the
-- store no longer holds (`finish_fill`). FIFO queues clear them: their group locks are
-- rebuilt from the store.
--!include _common.lua
if not redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then
  return 0
end
local kept = {}
if not IS_FIFO then
  local in_flight = redis.call('ZRANGE', KEYS[5], 0, -1, 'WITHSCORES')
  for index = 1, #in_flight, 2 do
    local id = in_flight[index]
    local payload = redis.call('HGET', KEYS[3], id)
    local receipt = redis.call('HGET', KEYS[4], id)
    if payload and receipt then
      kept[#kept + 1] = {id, in_flight[index + 1], payload, receipt}
    end
  end
end
redis.call('DEL', KEYS[2], KEYS[3], KEYS[4], KEYS[5], KEYS[6], KEYS[12], KEYS[13])
redis.call('ZREM', KEYS[8], ARGV[3])
for _, entry in ipairs(kept) do
  redis.call('HSET', KEYS[3], entry[1], entry[3])
  redis.call('HSET', KEYS[4], entry[1], entry[4])
  redis.call('ZADD', KEYS[5], entry[2], entry[1])
  note_due(entry[2], ARGV[3])
end
return 1
