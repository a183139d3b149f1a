-- leaky-bucket (an example external strategy): a bucket that fills by the
-- cost of each admitted request and leaks at ARGV[2] units per second on
-- Redis's clock; a request that would overflow ARGV[1] is refused.
-- KEYS[1] bucket (hash: level, at_us)  ARGV[1] capacity  ARGV[2] leak/s  ARGV[3] cost
-- returns {admitted 0|1, room left (floor), redis time us}
local capacity = tonumber(ARGV[1])
local leak_per_us = tonumber(ARGV[2]) / 1000000
local cost = tonumber(ARGV[3])
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000000 + tonumber(t[2])

local saved = redis.call('HMGET', KEYS[1], 'level', 'at_us')
local level = tonumber(saved[1]) or 0
local at = tonumber(saved[2]) or now
level = math.max(0, level - (now - at) * leak_per_us)

if level + cost > capacity then
  return {0, math.floor(capacity - level), now}
end
level = level + cost
redis.call('HSET', KEYS[1], 'level', level, 'at_us', now)
-- Empty again after level / leak seconds: then the key carries nothing.
redis.call('PEXPIRE', KEYS[1], math.max(1, math.ceil(level / leak_per_us / 1000)))
return {1, math.floor(capacity - level), now}
