-- sweep_lease: take this server's sweep lease, or renew it if the caller holds it.
-- KEYS: [1] cqs:sweeper (per server)
-- ARGV: [1] the sweeper's id  [2] lease ms
-- Returns: 1 if the caller holds the lease now (taken or renewed), 0 if another does.
-- Only the holder sweeps the server (release_due); when it stops renewing, the lease
-- expires and the next caller takes it.
local holder = redis.call('GET', KEYS[1])
if holder == ARGV[1] then
  redis.call('PEXPIRE', KEYS[1], ARGV[2])
  return 1
end
if holder then
  return 0
end
redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
return 1
