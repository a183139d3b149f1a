-- fixed-window-derived-key: the window's key is built inside the script from
-- KEYS[1] and Redis's clock, so it is not declared. On one Redis this works;
-- on a cluster it fails whenever the derived key lives on another node.
-- KEYS[1] base key  ARGV[1] limit  ARGV[2] window ms  ARGV[3] cost
-- returns {admitted 0|1, remaining, redis time us}
local limit = tonumber(ARGV[1])
local window_ms = tonumber(ARGV[2])
local clock = redis.call('TIME')
local now_us = tonumber(clock[1]) * 1000000 + tonumber(clock[2])
local window = math.floor(now_us / 1000 / window_ms)
local counter = KEYS[1] .. ':' .. window
local count = redis.call('INCRBY', counter, tonumber(ARGV[3]))
redis.call('PEXPIRE', counter, window_ms)
local admitted = 0
if count <= limit then admitted = 1 end
return {admitted, math.max(0, limit - count), now_us}
