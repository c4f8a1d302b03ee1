-- release_lease: give a lease back, if the caller still holds it.
-- KEYS: [1] the lease key (cqs:{<queue>}:promoter)
-- ARGV: [1] the holder's id
-- Returns: 1 if the lease was the caller's and is gone, 0 otherwise (left as it is).
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('DEL', KEYS[1])
  return 1
end
return 0
