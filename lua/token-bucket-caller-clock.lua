-- token-bucket-caller-clock: the token bucket of token-bucket.lua, but "now"
-- comes from the caller (ARGV[4], ms). Callers' clocks disagree, and a caller
-- behind the last writer computes a negative refill; only the upper bound is
-- capped, so such refills drain the bucket. Kept as the studies describe it.
-- KEYS[1] bucket  ARGV[1] capacity  ARGV[2] rate/s  ARGV[3] cost  ARGV[4] caller now (ms)
-- returns {admitted 0|1, tokens left (floor), caller now us}
local capacity = tonumber(ARGV[1])
local per_sec = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local now_ms = tonumber(ARGV[4])

local saved = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local level = tonumber(saved[1])
local last_ms = tonumber(saved[2])
if level == nil or last_ms == nil then
  level = capacity
  last_ms = now_ms
end

level = math.min(capacity, level + (now_ms - last_ms) * per_sec / 1000)

local admitted = 0
if level >= cost then
  level = level - cost
  admitted = 1
end

redis.call('HSET', KEYS[1], 'tokens', level, 'ts', now_ms)
redis.call('PEXPIRE', KEYS[1], math.ceil(capacity * 1000 / per_sec))
return {admitted, math.floor(level), now_ms * 1000}
