-- sliding-log-ts-member: THE BUG. A sliding log whose member is the timestamp
-- itself (ZADD key now now). Members are unique, so requests that share a
-- timestamp share one entry: ZCARD undercounts and the limiter over-admits.
-- The timestamp is Redis's (ms or us) or the caller's (ms), per ARGV[4].
-- KEYS[1] zset  ARGV[1] limit  ARGV[2] window ms  ARGV[3] cost
-- ARGV[4] clock: redis-ms | redis-us | caller-ms   ARGV[5] caller now ms
-- returns {admitted 0|1, remaining, redis time us}
local limit = tonumber(ARGV[1])
local window_ms = tonumber(ARGV[2])
local cost = tonumber(ARGV[3])
local clock = redis.call('TIME')
local now_us = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local stamp, span
if ARGV[4] == 'redis-us' then
  stamp, span = now_us, window_ms * 1000
elseif ARGV[4] == 'caller-ms' then
  stamp, span = tonumber(ARGV[5]), window_ms
else
  stamp, span = math.floor(now_us / 1000), window_ms
end

redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', stamp - span)
local held = redis.call('ZCARD', KEYS[1])
if held + cost > limit then
  return {0, limit - held, now_us}
end
for i = 1, cost do
  redis.call('ZADD', KEYS[1], stamp, stamp)
end
redis.call('PEXPIRE', KEYS[1], window_ms)
return {1, limit - held - cost, now_us}
