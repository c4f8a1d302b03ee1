-- hide_store_deliveries: which messages claimed in the store may be handed out, hiding them here.
-- KEYS: [1] state  [2] visible  [3] payload  [4] receipt  [5] inflight  [6] delayed
--       [7] recent_deletes  [8] cqs:due (per server)  [9] listening  [10] store_deletes
--       [11] cqs:store_delete_queues (per server)  [12] fifo  [13] group_locks  [14] dedup
--       [15] dedup_expiry  [16] sequence  [17] attempts  [18] attempt_expiry
--       -- the same eighteen for every queue script (keys.py)
-- ARGV: [1] now ms  [2] queue name, then pairs: id, hidden_until_ms (its claim's end)
-- Returns: the ids the caller may hand out. A message cached visible is moved in flight
-- until its time (a fill that read the claims before this one loaded it visible); one
-- already in flight until exactly that time was loaded so by a fill that read this claim.
-- A message the cache does not hold may go out unless the cache is READY or the message
-- was deleted during a fill or waits for its store delete (then it was deleted after the
-- caller read the store). Never one in flight under another delivery, nor one delayed.
--!include _common.lua
local ready = redis.call('GET', KEYS[1]) == 'ready'
local now = tonumber(ARGV[1])
local allowed = {}
for index = 3, #ARGV, 2 do
  local id = ARGV[index]
  local until_ms = ARGV[index + 1]
  local may = hide_visible(now, id, until_ms, ARGV[2])
  if not may then
    local score = redis.call('ZSCORE', KEYS[5], id)
    if score then
      may = tonumber(score) == tonumber(until_ms)
    else
      may = not ready and redis.call('HEXISTS', KEYS[3], id) == 0
        and not redis.call('ZSCORE', KEYS[7], id)
        and redis.call('SISMEMBER', KEYS[10], id) == 0
    end
  end
  if may then
    allowed[#allowed + 1] = id
  end
end
return allowed
