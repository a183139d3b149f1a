-- sliding-window-log: one sorted-set entry per admitted unit, scored by
-- Redis's time in microseconds; entries older than the window are trimmed
-- first. Members are unique (the caller's request id), so no two requests
-- share an entry.
-- KEYS[1] zset  ARGV[1] limit  ARGV[2] window ms  ARGV[3] cost  ARGV[4] member
-- returns {admitted 0|1, remaining, redis time us}
local limit = tonumber(ARGV[1])
local window_ms = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local clock = redis.call('TIME')
local now_us = tonumber(clock[1]) * 1000000 + tonumber(clock[2])

redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now_us - window_ms * 1000)
local held = redis.call('ZCARD', KEYS[1])
if held + cost > limit then
  return {0, limit - held, now_us}
end
if cost == 1 then
  redis.call('ZADD', KEYS[1], now_us, ARGV[4])
else
  for i = 1, cost do
    redis.call('ZADD', KEYS[1], now_us, ARGV[4] .. ':' .. i)
  end
end
redis.call('PEXPIRE', KEYS[1], window_ms)
return {1, limit - held - cost, now_us}
