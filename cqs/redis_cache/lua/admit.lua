-- admit: before a FIFO send is stored, look its deduplication keys up and number it.
-- KEYS: [1] state  [2] visible  [3] payload  [4] receipt  [5] inflight  [6] delayed
--       [7] recent_deletes  [8] cqs:due (per server)  [9] listening  [10] store_deletes
--       [11] cqs:store_delete_queues (per server)  [12] fifo  [13] group_locks  [14] dedup
--       [15] dedup_expiry  [16] sequence  [17] attempts  [18] attempt_expiry
--       -- the same eighteen for every queue script (keys.py)
-- ARGV: [1] now ms  [2] pending lease ms (how long an unstored admission holds its key)
--       [3] ttl ms of the dedup, sequence keys as a whole (refreshed here)
--       then per message three values: dedup field ('' = not deduplicated, only numbered),
--       a second field only looked up ('' = none: the other DeduplicationScope's key, so
--       messages sent before the scope changed still deduplicate), the message id it would get
-- Returns: {ready, per message three values: outcome, message id, sequence number}.
--          ready is 1 when the cache state is 'ready' (the dedup entries are complete;
--          otherwise the caller also asks the durable store). outcome is 'new' (the key is
--          now held by this message, with a new sequence number), 'duplicate' (an earlier
--          send, stored, or earlier in this same call, owns the key: its id and number are
--          returned) or 'pending' (another send holding the key is still being stored).
-- A field held (not yet stored) by the same message id is 'new' again, with its number.
-- Only the first field is claimed by a new message.
-- Lapsed entries (up to 1000) are dropped first. Sequence numbers grow by one per message
-- and are never below now_ms * 1000, so they keep growing after the keys are lost.
--!include _common.lua
local now = tonumber(ARGV[1])
local lapsed = redis.call('ZRANGEBYSCORE', KEYS[15], '-inf', now, 'LIMIT', 0, 1000)
if #lapsed > 0 then
  redis.call('HDEL', KEYS[14], unpack(lapsed))
  redis.call('ZREM', KEYS[15], unpack(lapsed))
end
local result = {redis.call('GET', KEYS[1]) == 'ready' and 1 or 0}
local admitted = {}
local sequence = tonumber(redis.call('GET', KEYS[16]) or '0')
for index = 4, #ARGV, 3 do
  local field = ARGV[index]
  local entry = field ~= '' and redis.call('HGET', KEYS[14], field)
  if not entry and ARGV[index + 1] ~= '' then
    entry = redis.call('HGET', KEYS[14], ARGV[index + 1])
  end
  local id, number, stored
  if entry then
    id, number, stored = string.match(entry, '^(.*):(%d+):([01])$')
  end
  if entry and id == ARGV[index + 2] and stored == '0' then
    -- admitted before by this same send (it asks again while waiting on another key)
    admitted[id] = true
    result[#result + 1] = 'new'
    result[#result + 1] = id
    result[#result + 1] = number
  elseif entry then
    if stored == '1' or admitted[id] then
      result[#result + 1] = 'duplicate'
    else
      result[#result + 1] = 'pending'
    end
    result[#result + 1] = id
    result[#result + 1] = number
  else
    sequence = math.max(sequence + 1, now * 1000)
    id = ARGV[index + 2]
    admitted[id] = true
    if field ~= '' then
      redis.call('HSET', KEYS[14], field, id .. ':' .. ms(sequence) .. ':0')
      redis.call('ZADD', KEYS[15], ms(now + tonumber(ARGV[2])), field)
    end
    result[#result + 1] = 'new'
    result[#result + 1] = id
    result[#result + 1] = ms(sequence)
  end
end
redis.call('SET', KEYS[16], ms(sequence), 'PX', ARGV[3])
redis.call('PEXPIRE', KEYS[14], ARGV[3])
redis.call('PEXPIRE', KEYS[15], ARGV[3])
return result
