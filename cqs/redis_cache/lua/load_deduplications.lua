-- load_deduplications: merge deduplication records of the durable store into the cache
-- (a fill does it, so FIFO deduplication survives the loss of Redis).
-- KEYS: [1] state  [2] visible  [3] payload  [4] receipt  [5] inflight  [6] delayed
--       [7] recent_deletes  [8] cqs:due (per server)  [9] listening  [10] store_deletes
--       [11] cqs:store_delete_queues (per server)  [12] fifo  [13] group_locks  [14] dedup
--       [15] dedup_expiry  [16] sequence  [17] attempts  [18] attempt_expiry
--       -- the same eighteen for every queue script (keys.py)
-- ARGV: [1] now ms  [2] ttl ms of the dedup keys as a whole, then per record four values:
--       dedup field, message id, sequence number, ms when it lapses
-- Returns: how many entries were added or replaced. Fields already present are kept as they
-- are, except an entry still marked as being stored (':0'): the store's record says that
-- send (or an earlier one with the key) was stored, and an add that failed after the store
-- write never marked it, so it would refuse the key until its lease lapsed and then let a
-- duplicate in.
local now = tonumber(ARGV[1])
local added = 0
for index = 3, #ARGV, 4 do
  local present = redis.call('HGET', KEYS[14], ARGV[index])
  if tonumber(ARGV[index + 3]) > now
      and (not present or string.sub(present, -2) == ':0') then
    redis.call('HSET', KEYS[14], ARGV[index], ARGV[index + 1] .. ':' .. ARGV[index + 2] .. ':1')
    redis.call('ZADD', KEYS[15], ARGV[index + 3], ARGV[index])
    local last = redis.call('GET', KEYS[16])
    if not last or tonumber(last) < tonumber(ARGV[index + 2]) then
      redis.call('SET', KEYS[16], ARGV[index + 2], 'PX', ARGV[2])
    end
    added = added + 1
  end
end
if added > 0 then
  redis.call('PEXPIRE', KEYS[14], ARGV[2])
  redis.call('PEXPIRE', KEYS[15], ARGV[2])
end
return added
