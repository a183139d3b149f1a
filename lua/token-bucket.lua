-- token-bucket: tokens refill continuously at ARGV[2] per second up to
-- ARGV[1]; a request spends ARGV[3]. The clock is Redis's (TIME), so every
-- caller agrees on it. State: one hash, fields tokens and ts (ms).
-- KEYS[1] bucket    ARGV[1] capacity  ARGV[2] rate/s  ARGV[3] cost
-- returns {admitted 0|1, tokens left (floor), redis time us}
local capacity = tonumber(ARGV[1])
local per_sec = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])

local clock = redis.call('TIME')
local now_us = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local now_ms = math.floor(now_us / 1000)

local saved = redis.call('HMGET', KEYS[1], 'tokens', 'ts')
local level = tonumber(saved[1])
local last_ms = tonumber(saved[2])
if level == nil or last_ms == nil then
  level = capacity
  last_ms = now_ms
end

-- Refill for the elapsed time, capped at capacity.
level = math.min(capacity, level + (now_ms - last_ms) * per_sec / 1000)

local admitted = 0
if level >= cost then
  level = level - cost
  admitted = 1
end

redis.call('HSET', KEYS[1], 'tokens', level, 'ts', now_ms)
-- After capacity/rate seconds idle the bucket is full: a missing key means the same.
redis.call('PEXPIRE', KEYS[1], math.ceil(capacity * 1000 / per_sec))
return {admitted, math.floor(level), now_us}
